package main

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"time"
)

// pgAppendBody is a notes_append_to_file on the PostgreSQL task.
// It starts a new file every 1,000 appends, so notes stay small.
func (b *bench) pgAppendBody() []byte {
	n := b.pgAppends.Add(1)
	return b.toolBody(b.pgTask, fmt.Sprintf(`{"path":"bench/pg-%d.md","text":"- appended line %d of the benchmark\n"}`, n/1000, n))
}

// pgAppendLoop has 16 clients append back to back for dur through the
// first `servers` memoryd servers on PostgreSQL, client c through server
// c mod servers.
func (b *bench) pgAppendLoop(ctx context.Context, servers int, dur time.Duration) (loopResult, error) {
	return loop(ctx, 16, dur, func(ctx context.Context, client int) error {
		_, err := b.cl.post(ctx, b.pg[client%servers].url+"/v1/tools/notes_append_to_file", b.pgAppendBody(), false)
		return err
	})
}

// pgRawSchema is the raw PostgreSQL ceiling's table, the raw SQLite
// ceiling's with a sequence, for the plainest durable event insert.
const pgRawSchema = `
CREATE TABLE IF NOT EXISTS events (seq BIGINT PRIMARY KEY, stream_id TEXT, stream_seq BIGINT, type TEXT, ulid TEXT UNIQUE, ts BIGINT, body TEXT, UNIQUE (stream_id, stream_seq));
CREATE INDEX IF NOT EXISTS events_type ON events (type);
TRUNCATE events;
CREATE SEQUENCE IF NOT EXISTS events_seq;`

// pgRawWrite inserts rows for dur from 16 connections, one row per
// transaction. With locked, each first takes the advisory lock memoryd's
// writers take and gives the row the next position, as memoryd's log does.
func (b *bench) pgRawWrite(ctx context.Context, locked bool, dur time.Duration) (loopResult, error) {
	db, err := sql.Open("pgx", b.pgRaw)
	if err != nil {
		return loopResult{}, err
	}
	defer db.Close()
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(16)
	if _, err := db.ExecContext(ctx, pgRawSchema); err != nil {
		return loopResult{}, err
	}
	var n atomic.Int64
	body := `{"task_id":"01BENCH","agent":"/root","path":"bench/x.md","text":"- appended line of the benchmark\n","by":"/root"}`
	return loop(ctx, 16, dur, func(ctx context.Context, client int) error {
		i := n.Add(1)
		stream := fmt.Sprintf("bench-%d", client)
		if !locked {
			_, err := db.ExecContext(ctx, `INSERT INTO events (seq, stream_id, stream_seq, type, ulid, ts, body) VALUES (nextval('events_seq'), $1, $2, 'note.appended', $3, $4, $5)`,
				stream, i, fmt.Sprintf("U%025d", i), time.Now().UnixNano(), body)
			return err
		}
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock(7)"); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO events (seq, stream_id, stream_seq, type, ulid, ts, body) SELECT coalesce(max(seq), 0) + 1, $1, $2, 'note.appended', $3, $4, $5 FROM events`,
			stream, i, fmt.Sprintf("L%025d", i), time.Now().UnixNano(), body); err != nil {
			return err
		}
		return tx.Commit()
	})
}

// measurePostgresAppend16 pairs 16 clients appending through one memoryd
// on PostgreSQL with the raw ceiling.
func (b *bench) measurePostgresAppend16(ctx context.Context, rep repetition) (sample, error) {
	var one, raw loopResult
	var cpuOne, pgOne float64
	err := rep.pair(func() (err error) {
		cpuOne, pgOne, err = b.pgCPU(ctx, func() (err error) {
			one, err = b.pgAppendLoop(ctx, 1, b.cfg.dur)
			return err
		})
		return err
	}, func() (err error) {
		raw, err = b.pgRawWrite(ctx, false, b.cfg.dur)
		return err
	})
	if err != nil {
		return sample{}, err
	}
	// For information, the same 16 clients append through two servers on the
	// same database, and the raw inserts take memoryd's lock and positions.
	var two loopResult
	cpuTwo, pgTwo, err := b.pgCPU(ctx, func() (err error) {
		two, err = b.pgAppendLoop(ctx, 2, b.cfg.dur)
		return err
	})
	if err != nil {
		return sample{}, err
	}
	locked, err := b.pgRawWrite(ctx, true, b.cfg.dur)
	if err != nil {
		return sample{}, err
	}
	s := sample{fig: one.rate(), ceil: raw.rate(), ratio: one.rate() / raw.rate()}
	s.add("two memoryd servers on the same database (appends/s)", two.rate())
	s.add("two servers / raw PostgreSQL (×)", two.rate()/raw.rate())
	s.add("raw, with the append lock and max+1 positions (rows/s)", locked.rate())
	s.add("raw with the lock / raw (×): what gapless positions cost", locked.rate()/raw.rate())
	s.add("one server: append latency p50 (s)", percentile(one.lat, 50).Seconds())
	s.add("two servers: append latency p50 (s)", percentile(two.lat, 50).Seconds())
	s.add("raw insert transaction p50 (s)", percentile(raw.lat, 50).Seconds())
	s.add("one server: memoryd CPU per append (s)", cpuOne/float64(one.calls))
	s.add("two servers: memoryd CPU per append (s)", cpuTwo/float64(two.calls))
	if pgOne >= 0 && pgTwo >= 0 {
		s.add("one server: PostgreSQL backends' CPU per append (s)", pgOne/float64(one.calls))
		s.add("two servers: PostgreSQL backends' CPU per append (s)", pgTwo/float64(two.calls))
	}
	b.logf("postgres-append16: one server %s appends/s, two servers %s, raw %s rows/s, raw with the lock %s",
		num(one.rate(), 0), num(two.rate(), 0), num(raw.rate(), 0), num(locked.rate(), 0))
	return s, nil
}

func (b *bench) postgresAppend16Notes() string {
	dur := b.cfg.dur.String()
	return "PostgreSQL " + b.pgVersion + ", " + b.pgWhere() + ". memoryd: two `memoryd serve --db postgres://…` processes on one database; " +
		"16 goroutines POSTing `notes_append_to_file` back to back for " + dur + " to one task (a new call_id per request, a new file per 1,000 appends), " +
		"all through the first server (the figure), then 8 through each server (an information line). " +
		"Ceiling: raw PostgreSQL on the same server, 16 connections each inserting one row per transaction (autocommit, " +
		"`synchronous_commit` as the server has it) into the raw SQLite ceiling's event table (a primary key, two unique indexes, one more index) for " + dur + ". " +
		"For information, the same raw inserts each taking the advisory lock memoryd's writers take and the next position (max + 1), " +
		"which is what positions that are gapless and in commit order across servers cost."
}

// pgWhere says which PostgreSQL server the row ran on.
func (b *bench) pgWhere() string {
	if b.cfg.postgres != "" {
		return "the server given with -postgres"
	}
	return "a private server started by scripts/local-postgres (default settings, a Unix socket)"
}
