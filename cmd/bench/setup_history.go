package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// fxHistory is one memoryd serving a generated history of about
// -history-bytes, and the search ceiling built from it.
var fxHistory = &fixture{name: "history server and search ceiling", setup: (*bench).setupHistory}

// maxSyncRequest bounds one history sync request body, under memoryd's
// limit of 8 MiB.
const maxSyncRequest = 6_000_000

// setupHistory syncs a Pi session of about -history-bytes into memoryd and
// builds the search ceiling, then restarts memoryd and checks both searches.
func (b *bench) setupHistory(ctx context.Context) error {
	t0 := time.Now()
	b.logf("history: generating %s of Pi session entries (sessiongen.Large)", mb(b.cfg.historyBytes))
	sess := sessiongen.Large(int(b.cfg.historyBytes))
	if len(sess.Branch) != len(sess.Entries) {
		return fmt.Errorf("sessiongen.Large is no longer linear (%d entries, branch of %d)", len(sess.Entries), len(sess.Branch))
	}
	total := int64(sess.Bytes())
	b.logf("history: %d entries, %s, generated in %v", len(sess.Entries), mb(total), time.Since(t0).Round(time.Millisecond))

	db := filepath.Join(b.scratch, "history.db")
	p, err := b.startMemoryd(ctx, "memoryd(history)", db)
	if err != nil {
		return err
	}
	b.hist = p
	if b.histTask, err = b.attach(ctx, p, "history"); err != nil {
		return err
	}
	if err := b.syncHistory(ctx, sess); err != nil {
		return err
	}
	branch := sess.Branch
	sess = sessiongen.Session{} // free the gigabyte before measuring anything
	runtime.GC()
	debug.FreeOSMemory()
	if b.histBranch, err = b.syncProbe(ctx, branch); err != nil {
		return err
	}
	// The ingest's own peak, which the rss row does not cover, as it reads
	// a restarted server.
	hwm, rss, err := procMemory(b.hist.pid())
	if err != nil {
		return err
	}
	b.info = append(b.info, fmt.Sprintf("History server memory at the end of the ingest (VmHWM is the peak over the whole ingest, requests ≤ %s): VmHWM %s, VmRSS %s.",
		mb(maxSyncRequest), mb(hwm), mb(rss)))
	err = b.hist.stop()
	b.hist = nil
	if err != nil {
		return err
	}
	b.recordSize("history.db after the history ingest", db)
	if err := b.buildCeiling(ctx, db); err != nil {
		return err
	}
	t1 := time.Now()
	if b.hist, err = b.startMemoryd(ctx, "memoryd(history)", db); err != nil {
		return err
	}
	pos, err := b.cl.health(ctx, b.hist.url)
	if err != nil {
		return err
	}
	b.info = append(b.info, fmt.Sprintf("History server restart on the %s database (position %s): %s to the first 200 from /healthz.",
		fileSize(db), num(float64(pos), 0), ms(time.Since(t1).Seconds())))
	hwm, rss, err = procMemory(b.hist.pid())
	if err != nil {
		return err
	}
	b.info = append(b.info, fmt.Sprintf("History server memory after the restart, before any search: VmHWM %s, VmRSS %s.", mb(hwm), mb(rss)))
	b.logf("memoryd(history) restarted at %s; warming both searches", b.hist.url)
	for i, needle := range []string{b.rare, b.common} {
		took, err := b.searchMemoryd(ctx, needle)
		if err != nil {
			return err
		}
		if i == 0 {
			b.info = append(b.info, fmt.Sprintf("The server's first search after the restart (%q, untimed in the rows: it loads the chunk filters, docs/performance.md): %s.",
				needle, ms(took.Seconds())))
		}
		if _, err := b.searchCeiling(ctx, needle); err != nil {
			return err
		}
	}
	return nil
}

// syncHistory sends the session's entries in order, each request carrying
// the branch from the root to its last entry, in bodies of at most
// maxSyncRequest bytes.
func (b *bench) syncHistory(ctx context.Context, sess sessiongen.Session) error {
	head := fmt.Sprintf(`{"context":{"task_id":%q,"agent":"/root"},"entries":[`, b.histTask)
	const mid, end = `],"branch":[`, `]}`
	start := time.Now()
	lastReport := start
	var sent, branchBytes int64
	var requests int
	var firstTenth, lastTenth time.Duration
	total := int64(sess.Bytes())
	var body bytes.Buffer
	for i := 0; i < len(sess.Entries); {
		j, eb, bb := i, int64(0), branchBytes
		for j < len(sess.Entries) && j-i < memory.MaxSyncEntries {
			add, addB := int64(len(sess.Entries[j])+1), int64(len(sess.Branch[j])+3)
			if j > i && int64(len(head)+len(mid)+len(end))+eb+add+bb+addB > maxSyncRequest {
				break
			}
			eb, bb, j = eb+add, bb+addB, j+1
		}
		body.Reset()
		body.WriteString(head)
		for k, e := range sess.Entries[i:j] {
			if k > 0 {
				body.WriteByte(',')
			}
			body.Write(e)
		}
		body.WriteString(mid)
		for k, id := range sess.Branch[:j] {
			if k > 0 {
				body.WriteByte(',')
			}
			body.WriteByte('"')
			body.WriteString(id)
			body.WriteByte('"')
		}
		body.WriteString(end)
		t := time.Now()
		var res struct {
			Stored    int `json:"stored"`
			Unchanged int `json:"unchanged"`
		}
		if err := b.cl.postJSON(ctx, b.hist.url+"/v1/history/sync", body.Bytes(), &res); err != nil {
			return fmt.Errorf("history sync of entries %d–%d: %w", i, j-1, err)
		}
		if res.Stored+res.Unchanged != j-i {
			return fmt.Errorf("history sync of entries %d–%d: stored %d + unchanged %d, want %d", i, j-1, res.Stored, res.Unchanged, j-i)
		}
		took := time.Since(t)
		for _, e := range sess.Entries[i:j] {
			before := sent
			sent += int64(len(e))
			if before < total/10 {
				firstTenth += took * time.Duration(len(e)) / time.Duration(eb)
			}
			if sent > total-total/10 {
				lastTenth += took * time.Duration(len(e)) / time.Duration(eb)
			}
		}
		requests++
		branchBytes = bb
		i = j
		if time.Since(lastReport) > 5*time.Second || i == len(sess.Entries) {
			lastReport = time.Now()
			el := time.Since(start).Seconds()
			b.logf("history sync: %3.0f%% %s of %s, %d entries, %d requests: %.1f MB/s, %s entries/s",
				100*float64(sent)/float64(total), mb(sent), mb(total), i, requests, float64(sent)/1e6/el, num(float64(i)/el, 0))
		}
	}
	el := time.Since(start)
	b.oneShots = append(b.oneShots, namedValue{"history ingest, POST /v1/history/sync of the whole session (s)", el.Seconds()})
	tenth := float64(total/10) / 1e6
	firstTenth, lastTenth = max(firstTenth, time.Microsecond), max(lastTenth, time.Microsecond)
	b.info = append(b.info, fmt.Sprintf("History ingest (POST /v1/history/sync, one client, bodies ≤ %s carrying the whole branch so far): "+
		"%s entries, %s in %d requests in %s: **%.1f MB/s, %s entries/s** (first tenth of the bytes %.1f MB/s, last tenth %.1f MB/s).",
		mb(maxSyncRequest), num(float64(len(sess.Entries)), 0), mb(total), requests, el.Round(100*time.Millisecond),
		float64(total)/1e6/el.Seconds(), num(float64(len(sess.Entries))/el.Seconds(), 0),
		tenth/firstTenth.Seconds(), tenth/lastTenth.Seconds()))
	return nil
}

// syncProbe times what a client pays per turn once the history is large.
// It sends three syncs of one new user message, each carrying the whole
// branch as the contract requires, and returns the branch with them.
func (b *bench) syncProbe(ctx context.Context, branch []string) ([]string, error) {
	known := make(map[string]bool, len(branch))
	for _, id := range branch {
		known[id] = true
	}
	var took []float64
	var size int
	for i := range 3 {
		id := fmt.Sprintf("be5c%04x", i)
		for known[id] {
			id = fmt.Sprintf("%08x", len(known)+i)
		}
		known[id] = true
		// The probe's text holds no needle.
		entry := fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2027-01-01T00:00:0%dZ","message":{"role":"user","content":"probe %d: one more turn","timestamp":%d}}`,
			id, branch[len(branch)-1], i, i, 1798761600000+i)
		branch = append(branch, id)
		var body bytes.Buffer
		fmt.Fprintf(&body, `{"context":{"task_id":%q,"agent":"/root"},"entries":[%s],"branch":`, b.histTask, entry)
		ids, err := json.Marshal(branch)
		if err != nil {
			return nil, err
		}
		body.Write(ids)
		body.WriteString("}")
		size = body.Len()
		var res struct {
			Stored int `json:"stored"`
		}
		t := time.Now()
		if err := b.cl.postJSON(ctx, b.hist.url+"/v1/history/sync", body.Bytes(), &res); err != nil {
			return nil, fmt.Errorf("sync probe: %w", err)
		}
		took = append(took, time.Since(t).Seconds())
		if res.Stored != 1 {
			return nil, fmt.Errorf("sync probe: stored %d entries, want 1", res.Stored)
		}
	}
	b.info = append(b.info, fmt.Sprintf("One more turn on the full history: a sync of 1 new entry with the whole branch (%s ids, a %s body) "+
		"took %s per request (3 requests).", num(float64(len(branch)), 0), mb(int64(size)), spreadOf(took).format(ms)))
	b.logf("sync probe: %s per one-entry sync", spreadOf(took).format(ms))
	return branch, nil
}

// fileSize is the size of the database at path with its WAL, in MB.
func fileSize(path string) string {
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(path + suffix); err == nil {
			n += fi.Size()
		}
	}
	return mb(n)
}
