package eventlog

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/events"
)

// TestWriterSurvivesInterruptedRequests: requests whose statements are
// interrupted by their context (a client that hung up), alone in their
// batch or among others, fail alone; the writer's connection stays usable
// and every other request is committed.
func TestWriterSurvivesInterruptedRequests(t *testing.T) {
	s := concOpen(t)
	ctx := context.Background()
	stream := events.Stream("01TASKWRITERCONN", "/root")
	appendNote := func(c context.Context, tx *Tx, i int) error {
		_, err := tx.Append(c, stream, AnyVersion, events.Pending{Type: events.TypeNoteAppended,
			Data: events.NoteAppended{TaskID: "t", Agent: "/root", Path: "a.md", Text: fmt.Sprint(i), By: "/root"}})
		return err
	}
	var mu sync.Mutex
	ok := 0
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Go(func() {
			if i%3 != 0 {
				if err := s.Update(ctx, "", func(tx *Tx) error { return appendNote(ctx, tx, i) }); err != nil {
					t.Errorf("update %d: %v", i, err)
					return
				}
				mu.Lock()
				ok++
				mu.Unlock()
				return
			}
			qctx, cancel := context.WithTimeout(ctx, time.Duration(1+i%4)*time.Millisecond)
			defer cancel()
			err := s.Update(qctx, "", func(tx *Tx) error {
				if err := appendNote(qctx, tx, i); err != nil {
					return err
				}
				var n int64
				return tx.DB().QueryRowContext(qctx, slowQuery).Scan(&n)
			})
			if err == nil {
				t.Errorf("update %d: the slow query finished within its deadline", i)
			}
		})
	}
	wg.Wait()
	for i := range 20 {
		if err := s.Update(ctx, "", func(tx *Tx) error { return appendNote(ctx, tx, 100+i) }); err != nil {
			t.Fatalf("update %d after the interruptions: %v", i, err)
		}
		ok++
	}
	if p := lastPositionOf(t, s); p != int64(ok) {
		t.Errorf("log at %d after %d successful updates", p, ok)
	}
	var n int64
	if err := s.Reader().QueryRow(`SELECT count(*) FROM conc_applied`).Scan(&n); err != nil || n != int64(ok) {
		t.Errorf("applier rows %d (%v), want %d", n, err, ok)
	}
}

// TestWriterKeepsItsConnectionWhileAnotherWrites: a batch that cannot
// begin because another connection holds the write lock fails as
// unavailable; the writer keeps its connection (nothing is wrong with it)
// and the next batch commits once the lock is released.
func TestWriterKeepsItsConnectionWhileAnotherWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memory.db")
	s, err := Open(ctx, path, Options{Projector: testProjector{}, BusyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := appendOne(t, s, "t1/root", AnyVersion, events.TypeNoteAppended, note("t1", "/root", "a")); err != nil {
		t.Fatal(err)
	}
	kept := s.wconn // the writer is idle: Update's return ordered its writes before this read
	other, err := sql.Open("sqlite", FileURI(path, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if _, err := appendOne(t, s, "t1/root", AnyVersion, events.TypeNoteAppended, note("t1", "/root", "b")); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("append while another connection writes: %v, want unavailable", err)
	}
	if s.wconn != kept {
		t.Error("the writer dropped its connection after a busy BEGIN")
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if _, err := appendOne(t, s, "t1/root", AnyVersion, events.TypeNoteAppended, note("t1", "/root", "c")); err != nil {
		t.Fatalf("append after the other connection's rollback: %v", err)
	}
	if evs := readAll(t, s); len(evs) != 2 {
		t.Fatalf("%d events, want 2", len(evs))
	}
}

// TestWriterReplacesABrokenConnection: when the writer's connection can no
// longer begin a transaction (here: closed under it, statements and
// SQLite connection), the batch takes a new connection from the pool,
// learns the log's end again and commits.
func TestWriterReplacesABrokenConnection(t *testing.T) {
	s := openStore(t, nil)
	if _, err := appendOne(t, s, "t1/root", AnyVersion, events.TypeNoteAppended, note("t1", "/root", "a")); err != nil {
		t.Fatal(err)
	}
	broken := s.wconn
	broken.close(driver.ErrBadConn) // its statements, then its SQLite connection
	// Another process appends meanwhile: the new connection must learn
	// the log's end, not trust what the old one knew.
	other := openOther(t, s)
	if _, err := appendOne(t, other, "t1/root", AnyVersion, events.TypeNoteAppended, note("t1", "/root", "b")); err != nil {
		t.Fatal(err)
	}
	if _, err := appendOne(t, s, "t1/root", AnyVersion, events.TypeNoteAppended, note("t1", "/root", "c")); err != nil {
		t.Fatalf("append after the connection broke: %v", err)
	}
	if s.wconn == broken {
		t.Error("the writer kept its broken connection")
	}
	evs := readAll(t, s)
	if len(evs) != 3 {
		t.Fatalf("%d events, want 3", len(evs))
	}
	checkLog(t, evs)
}

// TestWriterDropsAConnectionItCannotRollBack: when the writer's ROLLBACK
// fails, it cannot tell whether a transaction is still open on its
// connection, so it takes a new one; the next batch begins and commits.
// (Here a request commits the transaction itself, which no request of
// memoryd does, so that the writer's ROLLBACK finds none.)
func TestWriterDropsAConnectionItCannotRollBack(t *testing.T) {
	s := openStore(t, nil)
	ctx := context.Background()
	if _, err := appendOne(t, s, "t1/root", AnyVersion, events.TypeNoteAppended, note("t1", "/root", "a")); err != nil {
		t.Fatal(err)
	}
	kept := s.wconn
	errRequest := errors.New("the request failed after committing")
	err := s.Update(ctx, "", func(tx *Tx) error {
		if _, err := tx.DB().ExecContext(ctx, "COMMIT"); err != nil {
			return err
		}
		return errRequest
	})
	if !errors.Is(err, errRequest) {
		t.Fatalf("update: %v", err)
	}
	if s.wconn == kept {
		t.Error("the writer kept a connection whose ROLLBACK failed")
	}
	if _, err := appendOne(t, s, "t1/root", AnyVersion, events.TypeNoteAppended, note("t1", "/root", "b")); err != nil {
		t.Fatalf("append after the failed rollback: %v", err)
	}
	evs := readAll(t, s)
	if len(evs) != 2 {
		t.Fatalf("%d events, want 2", len(evs))
	}
	checkLog(t, evs)
}

// openOther opens a second store on s's database, as another process
// would.
func openOther(t *testing.T, s *Store) *Store {
	t.Helper()
	var seq int
	var name, path string
	if err := s.Reader().QueryRow(`PRAGMA database_list`).Scan(&seq, &name, &path); err != nil {
		t.Fatal(err)
	}
	other, err := Open(context.Background(), path, Options{Projector: testProjector{},
		Now: func() time.Time { return time.Date(2026, 12, 2, 11, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	return other
}

// TestWriterRerunsABatchSQLiteRolledBack: when a request's own interrupt
// makes SQLite roll back the whole transaction (an interrupted write
// statement does), the batch's other requests run again and commit; only
// that request fails. Here the request rolls the transaction back itself,
// with its context canceled, as the interrupt would.
func TestWriterRerunsABatchSQLiteRolledBack(t *testing.T) {
	s := concOpen(t)
	ctx := context.Background()
	stream := events.Stream("01TASKWRITERRERUN", "/root")
	appendNote := func(tx *Tx, i int) error {
		_, err := tx.Append(ctx, stream, AnyVersion, events.Pending{Type: events.TypeNoteAppended,
			Data: events.NoteAppended{TaskID: "t", Agent: "/root", Path: "a.md", Text: fmt.Sprint(i), By: "/root"}})
		return err
	}
	release := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // holds the writer while the others queue into one batch
		if err := s.Update(ctx, "", func(tx *Tx) error { <-release; return appendNote(tx, -1) }); err != nil {
			t.Errorf("holder: %v", err)
		}
	})
	time.Sleep(20 * time.Millisecond) // the holder's batch starts (not an assertion: only makes the batch below likely)
	const n = 8
	for i := range n {
		wg.Go(func() {
			if i != n/2 {
				if err := s.Update(ctx, "", func(tx *Tx) error { return appendNote(tx, i) }); err != nil {
					t.Errorf("update %d: %v", i, err)
				}
				return
			}
			qctx, cancel := context.WithCancel(ctx)
			err := s.Update(qctx, "", func(tx *Tx) error {
				if err := appendNote(tx, i); err != nil {
					return err
				}
				cancel()
				if _, err := tx.DB().ExecContext(ctx, "ROLLBACK"); err != nil {
					return err
				}
				return context.Canceled
			})
			if err == nil {
				t.Errorf("update %d: the rolled-back request succeeded", i)
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // the others queue behind the holder
	close(release)
	wg.Wait()
	evs, err := s.Read(ctx, Filter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != n { // the holder's and n-1 others
		t.Fatalf("%d events committed, want %d", len(evs), n)
	}
}
