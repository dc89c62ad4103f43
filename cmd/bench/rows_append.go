package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"
)

// appendBody is client c's next notes_append_to_file.
// Each client starts a new file every 1,000 appends, so notes stay small.
func (b *bench) appendBody(c int) []byte {
	n := b.appends[c]
	b.appends[c]++
	return b.toolBody(b.notesTask, fmt.Sprintf(`{"path":"bench/%d-%d.md","text":"- appended line %d of the benchmark\n"}`, c, n/1000, n))
}

// append16Loop has 16 clients append through p back to back for dur.
func (b *bench) append16Loop(ctx context.Context, p *proc, dur time.Duration) (loopResult, error) {
	return loop(ctx, 16, dur, func(ctx context.Context, client int) error {
		_, err := b.cl.post(ctx, p.url+"/v1/tools/notes_append_to_file", b.appendBody(client), false)
		return err
	})
}

// measureAppend16 pairs 16 clients appending through memoryd with the
// same requests to the durable reference.
func (b *bench) measureAppend16(ctx context.Context, rep repetition) (sample, error) {
	var f, d loopResult
	var cpu, cpuD float64
	err := rep.pair(func() (err error) {
		cpu, err = cpuOf(b.notes.pid(), func() (err error) {
			f, err = b.append16Loop(ctx, b.notes, b.cfg.dur)
			return err
		})
		return err
	}, func() (err error) {
		cpuD, err = cpuOf(b.durableAppend.pid(), func() (err error) {
			d, err = b.append16Loop(ctx, b.durableAppend, b.cfg.dur)
			return err
		})
		return err
	})
	if err != nil {
		return sample{}, err
	}
	// For information, raw SQLite inserts 1,000 rows per FULL transaction
	// and the same requests go to the bare server. Both run after the pair,
	// so their order does not change between repetitions.
	raw, err := rawWrite(ctx, filepath.Join(b.scratch, "raw-append16.db"), 1000, b.cfg.dur)
	if err != nil {
		return sample{}, err
	}
	bare, err := b.append16Loop(ctx, b.bareAppend, b.cfg.dur)
	if err != nil {
		return sample{}, err
	}
	s := sample{fig: f.rate(), ceil: d.rate(), ratio: f.rate() / d.rate()}
	s.add("raw SQLite, 1,000 inserts a FULL transaction (rows/s)", raw.rate())
	s.add("memoryd / raw SQLite (×)", f.rate()/raw.rate())
	s.add("durable reference / raw SQLite (×)", d.rate()/raw.rate())
	s.add("bound: bare net/http, same requests (req/s)", bare.rate())
	s.add("bound: bare net/http / raw SQLite (×)", bare.rate()/raw.rate())
	s.add("memoryd append latency p50 (s)", percentile(f.lat, 50).Seconds())
	s.add("memoryd append latency p99 (s)", percentile(f.lat, 99).Seconds())
	s.add("durable reference latency p50 (s)", percentile(d.lat, 50).Seconds())
	s.add("raw 1000-row transaction p50 (s)", percentile(raw.lat, 50).Seconds())
	s.add("memoryd CPU per append (s)", cpu/float64(f.calls))
	s.add("durable reference CPU per append (s)", cpuD/float64(d.calls))
	s.add("memoryd CPU use (cores)", cpu/f.elapsed.Seconds())
	b.logf("append16: memoryd %s appends/s, durable reference %s req/s, raw %s rows/s", num(f.rate(), 0), num(d.rate(), 0), num(raw.rate(), 0))
	return s, nil
}

func (b *bench) append16Notes() string {
	dur := b.cfg.dur.String()
	return "memoryd: 16 goroutines, each POSTing `notes_append_to_file` back to back for " + dur + " with a new call_id per request " +
		"(`{\"path\":\"bench/<client>-<n/1000>.md\",\"text\":\"- appended line <n> of the benchmark\\n\"}`, a new file per 1,000 appends per client), " +
		"keep-alive connections, every response checked for 200; figure = 200s / wall time. " +
		"Ceiling, the durable reference: the same loop with the same requests against `bench " + durableVerb + "` (its own process), which answers with the bytes " +
		"of one memoryd append response (" + num(float64(b.appendBytes), 0) + " bytes) only once it has inserted the request's body as one row of a fresh database " +
		"with the raw loop's schema and settings (below; synchronous=FULL), from a single writer that commits the requests waiting together in one transaction " +
		"(group commit, at most 256); it parses, checks and projects nothing: about the least a durable HTTP append server does here. req/s; ratio = figure / ceiling. " +
		"For information, after each pair: raw SQLite in this process (modernc), the raw insert loop: table events with UNIQUE(stream_id, stream_seq), INDEX(type), UNIQUE(ulid), " +
		"WAL, synchronous=FULL, one connection, busy_timeout=5000, one prepared INSERT through tx.Stmt, ~1,000-byte lowercase JSON bodies, " +
		"1,000 inserts per transaction for " + dur + " on a fresh file in the scratch folder (rows/s: no server whose 16 clients each wait for their answer " +
		"gathers 1,000 rows a transaction, so it is no ceiling for this row); and the bound: the same 16-client loop against a bare net/http server " +
		"in its own process (`bench " + bareVerb + "`) that reads each body, answers with the same bytes and stores nothing."
}

// measureAppend1 pairs the p50 latency of one client appending through
// memoryd with raw SQLite's, committing one insert per FULL transaction.
func (b *bench) measureAppend1(ctx context.Context, rep repetition) (sample, error) {
	var f, c loopResult
	var cpu float64
	err := rep.pair(func() (err error) {
		cpu, err = cpuOf(b.notes.pid(), func() (err error) {
			f, err = loop(ctx, 1, b.cfg.dur, func(ctx context.Context, _ int) error {
				_, err := b.cl.post(ctx, b.notes.url+"/v1/tools/notes_append_to_file", b.appendBody(16), false)
				return err
			})
			return err
		})
		return err
	}, func() (err error) {
		c, err = rawWrite(ctx, filepath.Join(b.scratch, "raw-append1.db"), 1, b.cfg.dur)
		return err
	})
	if err != nil {
		return sample{}, err
	}
	fp50, cp50 := percentile(f.lat, 50).Seconds(), percentile(c.lat, 50).Seconds()
	s := sample{fig: fp50, ceil: cp50, ratio: fp50 / cp50}
	s.add("memoryd p99 (s)", percentile(f.lat, 99).Seconds())
	s.add("raw p99 (s)", percentile(c.lat, 99).Seconds())
	s.add("memoryd appends/s", f.rate())
	s.add("raw transactions/s", c.rate())
	s.add("memoryd CPU per append (s)", cpu/float64(f.calls))
	b.logf("append1: memoryd p50 %s (p99 %s), raw p50 %s (p99 %s)", ms(fp50), ms(percentile(f.lat, 99).Seconds()),
		ms(cp50), ms(percentile(c.lat, 99).Seconds()))
	return s, nil
}

func (b *bench) append1Notes() string {
	dur := b.cfg.dur.String()
	return "memoryd: one client appending sequentially (as in append16) for " + dur + "; figure = p50 of the HTTP round trip of each append. " +
		"Ceiling: the same raw SQLite loop with 1 insert per transaction (FULL) for " + dur + "; p50 of BEGIN…COMMIT. Ratio = figure / ceiling (lower is better)."
}
