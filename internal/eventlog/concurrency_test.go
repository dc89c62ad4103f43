package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
)

// concOpen opens a store whose applier writes one row per event into
// conc_applied, so a reader can compare the log with "its projection" in
// one snapshot.
func concOpen(tb testing.TB) *Store {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "memory.db")
	raw, err := sql.Open("sqlite", FileURI(path, nil))
	if err != nil {
		tb.Fatal(err)
	}
	_, err = raw.Exec(`CREATE TABLE conc_applied (position INTEGER PRIMARY KEY, stream TEXT NOT NULL, version INTEGER NOT NULL)`)
	raw.Close()
	if err != nil {
		tb.Fatal(err)
	}
	apply := func(ctx context.Context, db DBTX, ev events.Event) error {
		_, err := db.ExecContext(ctx, `INSERT INTO conc_applied (position, stream, version) VALUES (?, ?, ?)`,
			ev.Position, ev.Stream, ev.StreamVersion)
		return err
	}
	s, err := Open(context.Background(), path, Options{Projector: testProjector{apply: apply}})
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

// TestConcurrentSameVersionExactlyOneWins: N writers race on one stream,
// each always appending at the version it last saw. For every version
// exactly one append wins; every other attempt at that version gets
// ErrConflict and leaves nothing behind (no event, no applier row). Group
// commit puts several racers in one transaction: the savepoint of each
// loser is rolled back alone.
func TestConcurrentSameVersionExactlyOneWins(t *testing.T) {
	const writers, versions = 8, 120
	s := concOpen(t)
	ctx := context.Background()
	stream := events.Stream("01TASKCONC", "/root")
	var (
		wg        sync.WaitGroup
		conflicts atomic.Int64
		mu        sync.Mutex
		winner    = map[int64]int{} // version → writer
	)
	start := make(chan struct{})
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			seen := int64(0)
			for seen < versions {
				var evs []events.Event
				err := s.Update(ctx, fmt.Sprintf("w%d", w), func(tx *Tx) error {
					var err error
					evs, err = tx.Append(ctx, stream, seen, events.Pending{Type: events.TypeNoteAppended,
						Data: events.NoteAppended{TaskID: "01TASKCONC", Agent: "/root", Path: "a.md", Text: fmt.Sprintf("w%d@%d", w, seen+1), By: "/root"}})
					return err
				})
				switch {
				case err == nil:
					if len(evs) != 1 || evs[0].StreamVersion != seen+1 {
						t.Errorf("writer %d: won at %d with %+v", w, seen, evs)
						return
					}
					mu.Lock()
					if prev, dup := winner[seen+1]; dup {
						t.Errorf("version %d won by writers %d and %d", seen+1, prev, w)
					}
					winner[seen+1] = w
					mu.Unlock()
					seen++
				case errors.Is(err, ErrConflict):
					conflicts.Add(1)
					var v int64
					if err := s.Update(ctx, "", func(tx *Tx) error {
						var err error
						v, err = tx.StreamVersion(ctx, stream)
						return err
					}); err != nil {
						t.Errorf("writer %d: stream version: %v", w, err)
						return
					}
					if v <= seen {
						t.Errorf("writer %d: conflict at %d but the stream is at %d", w, seen, v)
						return
					}
					seen = v
				default:
					t.Errorf("writer %d: %v, want nil or ErrConflict", w, err)
					return
				}
			}
		}()
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if len(winner) != versions {
		t.Fatalf("%d versions won, want %d", len(winner), versions)
	}
	evs, err := s.Read(ctx, Filter{Limit: 5000})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != versions {
		t.Fatalf("%d events, want %d: a losing attempt was kept", len(evs), versions)
	}
	for i, ev := range evs {
		if ev.Position != int64(i+1) || ev.StreamVersion != int64(i+1) {
			t.Fatalf("event %d at position %d version %d: want both %d", i, ev.Position, ev.StreamVersion, i+1)
		}
		if want := fmt.Sprintf(`"text":"w%d@%d"`, winner[ev.StreamVersion], ev.StreamVersion); !strings.Contains(string(ev.Data), want) {
			t.Errorf("version %d holds %s, want the winner's %s", ev.StreamVersion, ev.Data, want)
		}
	}
	var rows, maxPos int64
	if err := s.Reader().QueryRow(`SELECT count(*), coalesce(max(position), 0) FROM conc_applied`).Scan(&rows, &maxPos); err != nil {
		t.Fatal(err)
	}
	if rows != versions || maxPos != versions {
		t.Errorf("applier rows %d (max position %d), want %d: a conflicting attempt left projection rows", rows, maxPos, versions)
	}
	if conflicts.Load() == 0 {
		t.Errorf("no conflicts in %d racing appends: the race did not happen", versions)
	}
	t.Logf("%d versions, %d conflicts", versions, conflicts.Load())
}

// TestReadersNeverSeeAPartialUpdate: writers commit updates of three
// events each (to two streams) while readers, each in one read
// transaction, check that the log holds whole updates only and that the
// applier's rows match the log exactly: an update's events and projection
// rows become visible together.
func TestReadersNeverSeeAPartialUpdate(t *testing.T) {
	const writers, updates = 4, 40
	s := concOpen(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	done := make(chan struct{})
	var wwg sync.WaitGroup
	for w := range writers {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			a, b := events.Stream(fmt.Sprintf("01TASK%d", w), "/root"), events.Stream(fmt.Sprintf("01TASK%d", w), "/root/child")
			for i := range updates {
				err := s.Update(ctx, "", func(tx *Tx) error {
					p := events.Pending{Type: events.TypeNoteAppended, Data: events.NoteAppended{TaskID: "t", Agent: "/root", Path: "a.md", Text: fmt.Sprint(i), By: "/root"}}
					if _, err := tx.Append(ctx, a, AnyVersion, p, p); err != nil {
						return err
					}
					_, err := tx.Append(ctx, b, int64(i), p)
					return err
				})
				if err != nil {
					t.Errorf("writer %d update %d: %v", w, i, err)
					return
				}
			}
		}()
	}
	var snapshots atomic.Int64
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				rtx, err := s.BeginRead(ctx)
				if err != nil {
					t.Errorf("begin read: %v", err)
					return
				}
				tx := rtx.DB()
				var n, last, applied, appliedMax, mismatched int64
				err = tx.QueryRowContext(ctx, `SELECT count(*), coalesce(max(position), 0) FROM events`).Scan(&n, &last)
				if err == nil {
					err = tx.QueryRowContext(ctx, `SELECT count(*), coalesce(max(position), 0) FROM conc_applied`).Scan(&applied, &appliedMax)
				}
				if err == nil {
					err = tx.QueryRowContext(ctx, `SELECT count(*) FROM events e LEFT JOIN conc_applied a ON a.position = e.position
						WHERE a.position IS NULL OR a.stream != e.stream OR a.version != e.stream_version`).Scan(&mismatched)
				}
				if cerr := rtx.Close(); err == nil {
					err = cerr
				}
				if err != nil {
					t.Errorf("read: %v", err)
					return
				}
				snapshots.Add(1)
				if n%3 != 0 || n != last || applied != n || appliedMax != last || mismatched != 0 {
					t.Errorf("snapshot: %d events (last %d), %d applier rows (last %d), %d mismatched: a partial update is visible",
						n, last, applied, appliedMax, mismatched)
					return
				}
			}
		}()
	}
	wwg.Wait()
	close(done)
	wg.Wait()
	if p := lastPositionOf(t, s); p != writers*updates*3 {
		t.Errorf("log at %d, want %d", p, writers*updates*3)
	}
	if snapshots.Load() < 10 {
		t.Errorf("only %d snapshots read during the writes", snapshots.Load())
	}
}

func lastPositionOf(tb testing.TB, s *Store) int64 {
	tb.Helper()
	p, err := s.LastPosition(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// TestCancelledUpdateWritesNothing: an Update whose context ends while it
// waits for the writer is refused and leaves nothing, and the others of its
// batch still commit.
func TestCancelledUpdateWritesNothing(t *testing.T) {
	s := concOpen(t)
	ctx := context.Background()
	stream := events.Stream("01TASKCANCEL", "/root")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := ctx
			if i%2 == 1 {
				c = cancelled
			}
			errs[i] = s.Update(c, "", func(tx *Tx) error {
				_, err := tx.Append(c, stream, AnyVersion, events.Pending{Type: events.TypeNoteAppended,
					Data: events.NoteAppended{TaskID: "t", Agent: "/root", Path: "a.md", Text: fmt.Sprint(i), By: "/root"}})
				return err
			})
		}()
	}
	wg.Wait()
	ok := 0
	for i, err := range errs {
		switch {
		case i%2 == 1 && err == nil:
			t.Errorf("update %d with a cancelled context succeeded", i)
		case i%2 == 1:
		case err == nil:
			ok++
		default:
			t.Errorf("update %d: %v", i, err)
		}
	}
	if p := lastPositionOf(t, s); p != int64(ok) || ok != 10 {
		t.Errorf("log at %d after %d successful updates, want 10", p, ok)
	}
	var n int64
	if err := s.Reader().QueryRow(`SELECT count(*) FROM conc_applied`).Scan(&n); err != nil || n != int64(ok) {
		t.Errorf("applier rows %d (%v), want %d", n, err, ok)
	}
}
