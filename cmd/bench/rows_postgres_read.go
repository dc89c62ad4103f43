package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// fxPostgresRead8 is the ~4 KB note postgres-read8 reads, written through
// the first memoryd on PostgreSQL.
var fxPostgresRead8 = &fixture{name: "PostgreSQL read8 note", needs: []*fixture{fxPostgres}, setup: (*bench).setupPostgresRead8}

// pgReadBody is a postgres-read8 request, read8's on the PostgreSQL task.
func (b *bench) pgReadBody() []byte {
	return b.toolBody(b.pgTask, `{"path":"bench/read8.md"}`)
}

// setupPostgresRead8 writes read8's note on PostgreSQL, checks that both
// servers return it and warms them up.
func (b *bench) setupPostgresRead8(ctx context.Context) error {
	var text strings.Builder
	for i := 0; text.Len() < 4000; i++ {
		fmt.Fprintf(&text, "line %03d: the quick brown fox jumps over the lazy dog\n", i)
	}
	args, _ := json.Marshal(map[string]string{"path": "bench/read8.md", "text": text.String()})
	if _, err := b.cl.post(ctx, b.pg[0].url+"/v1/tools/notes_write_file", b.toolBody(b.pgTask, string(args)), false); err != nil {
		return err
	}
	for _, p := range b.pg {
		resp, err := b.cl.post(ctx, p.url+"/v1/tools/notes_read_file", b.pgReadBody(), true)
		if err != nil {
			return err
		}
		var read struct {
			Details struct {
				Text string `json:"text"`
			} `json:"details"`
		}
		if err := json.Unmarshal(resp, &read); err != nil || read.Details.Text != text.String() {
			return fmt.Errorf("%s: notes_read_file did not return the note written (%v): %.200s", p.name, err, resp)
		}
	}
	_, err := b.pgRead8Loop(ctx, 2, 8, b.warmUp())
	return err
}

// pgRead8Loop has clients read the note for dur through the first
// `servers` memoryd servers on PostgreSQL, client c through server c mod
// servers.
func (b *bench) pgRead8Loop(ctx context.Context, servers, clients int, dur time.Duration) (loopResult, error) {
	return loop(ctx, clients, dur, func(ctx context.Context, client int) error {
		_, err := b.cl.post(ctx, b.pg[client%servers].url+"/v1/tools/notes_read_file", b.pgReadBody(), false)
		return err
	})
}

// pgCPU runs fn and returns the CPU seconds the memoryd servers on
// PostgreSQL and the PostgreSQL backends serving their database used
// meanwhile. A backend that connected during fn (a server's pool grows
// under more clients than its warm-up had) counts whole. The backends' is
// -1 when their processes cannot be read (a -postgres server on another
// machine or of another user).
func (b *bench) pgCPU(ctx context.Context, fn func() error) (memoryd, backends float64, err error) {
	servers := []int{b.pg[0].pid(), b.pg[1].pid()}
	m0, err := sumCPU(servers)
	if err != nil {
		return 0, 0, err
	}
	before, berr := b.backendsCPU(ctx)
	if err := fn(); err != nil {
		return 0, 0, err
	}
	m1, err := sumCPU(servers)
	if err != nil {
		return 0, 0, err
	}
	after, berr2 := b.backendsCPU(ctx)
	if berr != nil || berr2 != nil {
		return m1 - m0, -1, nil
	}
	for pid, s := range after {
		backends += s - before[pid] // 0 for a backend new since
	}
	return m1 - m0, backends, nil
}

// sumCPU is the CPU seconds the processes pids have used.
func sumCPU(pids []int) (float64, error) {
	var sum float64
	for _, pid := range pids {
		s, err := cpuSeconds(pid)
		if err != nil {
			return -1, err
		}
		sum += s
	}
	return sum, nil
}

// backendsCPU is the CPU seconds each backend of memoryd's database has
// used, by pid.
func (b *bench) backendsCPU(ctx context.Context) (map[int]float64, error) {
	pids, err := b.pgBackends(ctx)
	if err != nil {
		return nil, err
	}
	out := make(map[int]float64, len(pids))
	for _, pid := range pids {
		if out[pid], err = cpuSeconds(pid); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// pgBackends are the PostgreSQL backends connected to memoryd's database.
func (b *bench) pgBackends(ctx context.Context) ([]int, error) {
	admin, err := sql.Open("pgx", b.pgBase)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	u, err := url.Parse(b.pgDB)
	if err != nil {
		return nil, err
	}
	rows, err := admin.QueryContext(ctx, "SELECT pid FROM pg_stat_activity WHERE datname = $1", strings.TrimPrefix(u.Path, "/"))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var pids []int
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return nil, err
		}
		pids = append(pids, pid)
	}
	return pids, rows.Err()
}

// measurePostgresRead8 pairs 8 clients reading the note through one
// memoryd on PostgreSQL with 8 clients through each of two.
func (b *bench) measurePostgresRead8(ctx context.Context, rep repetition) (sample, error) {
	var one, two loopResult
	var cpuOne, cpuTwo, pgOne, pgTwo float64
	err := rep.pair(func() (err error) {
		cpuOne, pgOne, err = b.pgCPU(ctx, func() (err error) {
			one, err = b.pgRead8Loop(ctx, 1, 8, b.cfg.dur)
			return err
		})
		return err
	}, func() (err error) {
		cpuTwo, pgTwo, err = b.pgCPU(ctx, func() (err error) {
			two, err = b.pgRead8Loop(ctx, 2, 16, b.cfg.dur)
			return err
		})
		return err
	})
	if err != nil {
		return sample{}, err
	}
	// For information, the same 8 clients split between the two servers.
	split, err := b.pgRead8Loop(ctx, 2, 8, b.cfg.dur)
	if err != nil {
		return sample{}, err
	}
	s := sample{fig: one.rate(), ceil: two.rate(), ratio: one.rate() / two.rate()}
	s.add("8 clients, 4 through each server (req/s)", split.rate())
	s.add("one server p50 (s)", percentile(one.lat, 50).Seconds())
	s.add("two servers p50 (s)", percentile(two.lat, 50).Seconds())
	s.add("one server: memoryd CPU per read (s)", cpuOne/float64(one.calls))
	s.add("two servers: memoryd CPU per read (s)", cpuTwo/float64(two.calls))
	if pgOne >= 0 && pgTwo >= 0 {
		s.add("one server: PostgreSQL backends' CPU per read (s)", pgOne/float64(one.calls))
		s.add("two servers: PostgreSQL backends' CPU per read (s)", pgTwo/float64(two.calls))
	}
	b.logf("postgres-read8: one server %s req/s, two servers %s (8 clients each), 4 through each %s",
		num(one.rate(), 0), num(two.rate(), 0), num(split.rate(), 0))
	return s, nil
}

func (b *bench) postgresRead8Notes() string {
	return "PostgreSQL " + b.pgVersion + ", " + b.pgWhere() + ". memoryd: postgres-append16's two servers on one database; " +
		"8 goroutines POSTing `notes_read_file` `{\"path\":\"bench/read8.md\"}` (read8's ~4 KB note, written on the PostgreSQL task; a new call_id each) " +
		"back to back for " + b.cfg.dur.String() + " through the first server (the figure), and 8 through each of the two servers (the second figure: " +
		"two servers serving twice what one does give a ratio of 0.5); for information, 8 in all, 4 through each. " +
		"CPU per read: the memoryd servers' and the PostgreSQL backends' connected to their database (from /proc), over the loop, per read."
}
