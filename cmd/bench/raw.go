package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
	_ "modernc.org/sqlite"

	"github.com/memoryd/memoryd/internal/eventlog"
)

// The raw ceilings do the same work with SQLite alone, as the plainest
// durable event insert. They use one table with three indexes, WAL, one
// connection, and one prepared INSERT reused through tx.Stmt.

const rawSchema = `
CREATE TABLE events (seq INTEGER PRIMARY KEY, stream_id TEXT, stream_seq INT, type TEXT, ulid TEXT, ts INT, body TEXT);
CREATE UNIQUE INDEX events_stream ON events (stream_id, stream_seq);
CREATE INDEX events_type ON events (type);
CREATE UNIQUE INDEX events_ulid ON events (ulid);`

const rawInsert = `INSERT INTO events (stream_id, stream_seq, type, ulid, ts, body) VALUES (?, ?, ?, ?, ?, ?)`

// openRaw creates a fresh raw event database at path and prepares the INSERT.
// sync is FULL for the append ceilings and OFF for the replay's, as memoryd
// replays.
func openRaw(ctx context.Context, path, sync string) (*sql.DB, *sql.Stmt, error) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			return nil, nil, err
		}
	}
	db, err := sql.Open("sqlite", eventlog.FileURI(path, url.Values{"_pragma": {"journal_mode(WAL)", "synchronous(" + sync + ")", "busy_timeout(5000)"}}))
	if err != nil {
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	var mode string
	var syncMode int
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		db.Close()
		return nil, nil, fmt.Errorf("raw database %s: journal_mode is %q (%v), want wal", path, mode, err)
	}
	want := map[string]int{"OFF": 0, "FULL": 2}[sync]
	if err := db.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&syncMode); err != nil || syncMode != want {
		db.Close()
		return nil, nil, fmt.Errorf("raw database %s: synchronous is %d (%v), want %d (%s)", path, syncMode, err, want, sync)
	}
	if _, err := db.ExecContext(ctx, rawSchema); err != nil {
		db.Close()
		return nil, nil, err
	}
	stmt, err := db.PrepareContext(ctx, rawInsert)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, stmt, nil
}

// removeDB removes a database file and its WAL and shared-memory files.
func removeDB(path string) {
	for _, suffix := range []string{"", "-wal", "-shm"} {
		os.Remove(path + suffix)
	}
}

// rawEventGen makes the raw ceilings' events over 1,000 streams and 10 types.
// Each has a time-ordered ULID and a ~1,000-byte lowercase JSON body.
type rawEventGen struct {
	rng      *rand.Rand
	entropy  *ulid.MonotonicEntropy
	versions [1000]int64
	letters  string
}

func newRawEventGen() *rawEventGen {
	g := &rawEventGen{rng: rand.New(rand.NewPCG(1, 2)), entropy: ulid.Monotonic(rand.NewChaCha8([32]byte{7}), 0)}
	b := make([]byte, 64<<10)
	for i := range b {
		b[i] = 'a' + byte(g.rng.IntN(26))
	}
	g.letters = string(b)
	return g
}

var rawTypes = func() [10]string {
	var t [10]string
	for i := range t {
		t[i] = "bench.type_" + strconv.Itoa(i)
	}
	return t
}()

var rawStreams = func() [1000]string {
	var s [1000]string
	for i := range s {
		s[i] = fmt.Sprintf("01BENCHSTREAM%04d/root", i)
	}
	return s
}()

// exec inserts one event with a ~1,000-byte body.
func (g *rawEventGen) exec(ctx context.Context, st *sql.Stmt) error {
	off := g.rng.IntN(len(g.letters) - 1000)
	return g.execBody(ctx, st, `{"text":"`+g.letters[off:off+988]+`"}`)
}

// execBody inserts one event with body.
func (g *rawEventGen) execBody(ctx context.Context, st *sql.Stmt, body string) error {
	s := g.rng.IntN(len(rawStreams))
	g.versions[s]++
	now := time.Now()
	id := ulid.MustNew(ulid.Timestamp(now), g.entropy).String()
	_, err := st.ExecContext(ctx, rawStreams[s], g.versions[s], rawTypes[g.rng.IntN(len(rawTypes))], id, now.UnixNano(), body)
	return err
}

// rawWrite inserts events into a fresh raw database at path for dur in
// transactions of batch inserts. It returns the rows inserted, the time
// taken and every transaction's latency, sorted.
func rawWrite(ctx context.Context, path string, batch int, dur time.Duration) (loopResult, error) {
	db, stmt, err := openRaw(ctx, path, "FULL")
	if err != nil {
		return loopResult{}, err
	}
	defer removeDB(path)
	defer db.Close()
	g := newRawEventGen()
	var res loopResult
	start := time.Now()
	deadline := start.Add(dur)
	rows := 0
	for time.Now().Before(deadline) {
		t := time.Now()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return res, err
		}
		st := tx.StmtContext(ctx, stmt)
		for range batch {
			if err := g.exec(ctx, st); err != nil {
				tx.Rollback()
				return res, err
			}
		}
		if err := tx.Commit(); err != nil {
			return res, err
		}
		res.lat = append(res.lat, time.Since(t))
		rows += batch
	}
	res.elapsed = time.Since(start)
	res.calls = rows
	slices.Sort(res.lat)
	if err := stmt.Close(); err != nil {
		return res, err
	}
	return res, db.Close()
}

// logEvent is the part of an exported event envelope the raw replay uses.
type logEvent struct {
	Position      int64           `json:"position"`
	ID            string          `json:"id"`
	Stream        string          `json:"stream"`
	StreamVersion int64           `json:"stream_version"`
	Type          string          `json:"type"`
	Data          json.RawMessage `json:"data"`
}

// rawReplay inserts the exported log at logPath into a fresh raw database at
// dbPath in transactions of 1,000. It returns the events inserted and the
// wall time from opening the database to closing it.
func rawReplay(ctx context.Context, logPath, dbPath string) (int, time.Duration, error) {
	start := time.Now()
	f, err := os.Open(logPath)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	db, stmt, err := openRaw(ctx, dbPath, "OFF")
	if err != nil {
		return 0, 0, err
	}
	defer removeDB(dbPath)
	defer db.Close()
	sc := bufio.NewScanner(bufio.NewReaderSize(f, 1<<20))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	n := 0
	var tx *sql.Tx
	var st *sql.Stmt
	for sc.Scan() {
		if tx == nil {
			if tx, err = db.BeginTx(ctx, nil); err != nil {
				return n, 0, err
			}
			st = tx.StmtContext(ctx, stmt)
		}
		var ev logEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			tx.Rollback()
			return n, 0, fmt.Errorf("%s line %d: %w", logPath, n+1, err)
		}
		// The stream version is stream_seq, the id the ulid, the position ts.
		if _, err := st.ExecContext(ctx, ev.Stream, ev.StreamVersion, ev.Type, ev.ID, ev.Position, string(ev.Data)); err != nil {
			tx.Rollback()
			return n, 0, err
		}
		n++
		if n%1000 == 0 {
			if err := tx.Commit(); err != nil {
				return n, 0, err
			}
			tx = nil
		}
	}
	if err := sc.Err(); err != nil {
		if tx != nil {
			tx.Rollback()
		}
		return n, 0, err
	}
	if tx != nil {
		if err := tx.Commit(); err != nil {
			return n, 0, err
		}
	}
	if err := stmt.Close(); err != nil {
		return n, 0, err
	}
	if err := db.Close(); err != nil {
		return n, 0, err
	}
	return n, time.Since(start), nil
}

// globPattern is the GLOB pattern of a literal substring.
// It escapes *, ? and [ in the needle as [*], [?] and [[].
func globPattern(needle string) string {
	var b strings.Builder
	b.WriteByte('*')
	for _, r := range needle {
		switch r {
		case '*', '?', '[':
			b.WriteByte('[')
			b.WriteRune(r)
			b.WriteByte(']')
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('*')
	return b.String()
}

// globCount is the search ceiling, counting the rows of the ceiling
// database's table t whose body contains needle by a full GLOB scan.
func globCount(ctx context.Context, db *sql.DB, needle string) (int, time.Duration, error) {
	start := time.Now()
	var n int
	err := db.QueryRowContext(ctx, "SELECT count(*) FROM t WHERE body GLOB ?", globPattern(needle)).Scan(&n)
	return n, time.Since(start), err
}

// sqliteVersion is the version of the linked SQLite.
func sqliteVersion(ctx context.Context) (string, error) {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		return "", err
	}
	defer db.Close()
	var v string
	err = db.QueryRowContext(ctx, "select sqlite_version()").Scan(&v)
	return v, err
}
