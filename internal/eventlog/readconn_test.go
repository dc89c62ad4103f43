package eventlog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/events"
)

// slowQuery runs long enough (a few hundred ms) to be interrupted.
const slowQuery = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000000) SELECT count(*) FROM c`

// TestReadTxCancelledQueriesLeaveUsableConnections: read transactions
// whose queries are interrupted by their context (a client that hung up)
// hand back no connection that would fail or interrupt the next
// transaction: every later read succeeds and sees the log. (The driver
// clears an interrupt when its statement ends; Close also drops a
// connection the driver calls invalid, and BeginRead replaces one that
// fails to BEGIN, which this test does not reach.)
func TestReadTxCancelledQueriesLeaveUsableConnections(t *testing.T) {
	s := concOpen(t)
	ctx := context.Background()
	stream := events.Stream("01TASKREADCONN", "/root")
	if _, err := appendOne(t, s, stream, 0, events.TypeNoteAppended,
		events.NoteAppended{TaskID: "t", Agent: "/root", Path: "a.md", Text: "x", By: "/root"}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			qctx, cancel := context.WithTimeout(ctx, time.Duration(1+i%4)*time.Millisecond)
			defer cancel()
			rtx, err := s.BeginRead(qctx)
			if err != nil {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("begin: %v", err)
				}
				return
			}
			var n int64
			err = rtx.DB().QueryRowContext(qctx, slowQuery).Scan(&n)
			if err == nil {
				t.Errorf("the slow query finished (%d) within its deadline", n)
			}
			// The transaction is closed after the context is done, as
			// readAt's deferred Close does.
			<-qctx.Done()
			rtx.Close()
		}()
	}
	wg.Wait()
	for i := range 40 { // more than the connections kept
		rtx, err := s.BeginRead(ctx)
		if err != nil {
			t.Fatalf("read %d after the cancellations: begin: %v", i, err)
		}
		var n int64
		if err := rtx.DB().QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("read %d after the cancellations: %d events, %v", i, n, err)
		}
		if err := rtx.Close(); err != nil {
			t.Fatalf("read %d: close: %v", i, err)
		}
	}
}

// TestReadConnsBounded: read transactions hold at most Readers
// connections; one more waits for a Close (its context bounds the wait),
// and the pool's own queries still run meanwhile.
func TestReadConnsBounded(t *testing.T) {
	s := concOpen(t) // default Readers: at least 8
	ctx := context.Background()
	readers := s.readConns.max
	var held []*ReadTx
	for i := range readers {
		rtx, err := s.BeginRead(ctx)
		if err != nil {
			t.Fatalf("read transaction %d of %d: %v", i+1, readers, err)
		}
		var n int64
		if err := rtx.DB().QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		held = append(held, rtx)
	}
	wctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := s.BeginRead(wctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a read transaction past the bound: %v, want it to wait until its deadline", err)
	}
	if _, err := s.LastPosition(ctx); err != nil { // the pool's own queries
		t.Fatalf("LastPosition with every reader held: %v", err)
	}
	got := beginAndWait(t, s)
	held[0].Close()
	if err := <-got; err != nil {
		t.Fatalf("the waiting read transaction, once one closed: %v", err)
	}
	// A connection dropped after an error lets a waiting transaction
	// open another.
	rtx, err := s.BeginRead(ctx) // the one held[0] gave back: all held again
	if err != nil {
		t.Fatal(err)
	}
	got = beginAndWait(t, s)
	s.readConns.discard(rtx.c)
	rtx.c = nil
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the waiting read transaction, once one was dropped: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("a read transaction still waits after a connection was dropped")
	}
	for _, rtx := range held {
		if err := rtx.Close(); err != nil { // the first a second time
			t.Fatal(err)
		}
	}
}

// beginAndWait starts a read transaction (closed once it begins) in the
// background, checks that it waits, and returns where its error will come.
func beginAndWait(t *testing.T, s *Store) chan error {
	t.Helper()
	got := make(chan error, 1)
	go func() {
		rtx, err := s.BeginRead(context.Background())
		if err == nil {
			err = rtx.Close()
		}
		got <- err
	}()
	select {
	case err := <-got:
		t.Fatalf("a read transaction past the bound did not wait (%v)", err)
	case <-time.After(20 * time.Millisecond):
	}
	return got
}

// TestReadTxAcrossClose: after Close no read transaction starts (the
// store is unavailable), and one open at Close still ends cleanly.
func TestReadTxAcrossClose(t *testing.T) {
	s := concOpen(t)
	ctx := context.Background()
	open, err := s.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := open.DB().QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	idle, err := s.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	idle.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := open.Close(); err != nil {
		t.Fatalf("closing a read transaction left open across the store's Close: %v", err)
	}
	if _, err := s.BeginRead(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("BeginRead after Close: %v, want ErrUnavailable", err)
	}
	if s.readConns.opened != 0 {
		t.Fatalf("%d kept connections still open after Close", s.readConns.opened)
	}
}

// TestReadTxWaitEndsAtClose: a transaction waiting for a connection when
// the store closes is refused at once.
func TestReadTxWaitEndsAtClose(t *testing.T) {
	s := concOpen(t)
	ctx := context.Background()
	for range s.readConns.max {
		rtx, err := s.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rtx.Close()
	}
	got := make(chan error, 1)
	go func() {
		_, err := s.BeginRead(ctx)
		got <- err
	}()
	time.Sleep(20 * time.Millisecond)
	s.readConns.close()
	select {
	case err := <-got:
		if !errors.Is(err, ErrUnavailable) {
			t.Fatalf("the waiting transaction at close: %v, want ErrUnavailable", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("a read transaction still waits after the store closed")
	}
}

// TestReadConnStatementsBounded: a connection keeps at most maxConnStmts
// statements; queries past it still run.
func TestReadConnStatementsBounded(t *testing.T) {
	s := concOpen(t)
	ctx := context.Background()
	rtx, err := s.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rtx.Close()
	for i := range maxConnStmts + 10 {
		var v int
		if err := rtx.DB().QueryRowContext(ctx, fmt.Sprintf("SELECT %d", i)).Scan(&v); err != nil || v != i {
			t.Fatalf("query %d: %d, %v", i, v, err)
		}
	}
	if n := len(rtx.c.stmts); n != maxConnStmts {
		t.Fatalf("%d statements kept, want %d", n, maxConnStmts)
	}
}

// TestEachReader: EachReader runs its function once on each connection
// read transactions may keep, idle or opened for it, each in a read
// transaction; it skips those in use instead of waiting, gives them all
// back, and stops at an error.
func TestEachReader(t *testing.T) {
	s := concOpen(t)
	ctx := context.Background()
	readers := s.readConns.max
	held, err := s.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[*keptConn]bool{}
	err = s.EachReader(ctx, func(tx *ReadTx) error {
		seen[tx.c] = true
		var n int64
		return tx.DB().QueryRowContext(ctx, `SELECT count(*) FROM events`).Scan(&n)
	})
	if err != nil || len(seen) != readers-1 || seen[held.c] {
		t.Fatalf("with one reader held: ran on %d connections (the held one: %v), %v; want %d others", len(seen), seen[held.c], err, readers-1)
	}
	held.Close()
	clear(seen)
	if err := s.EachReader(ctx, func(tx *ReadTx) error { seen[tx.c] = true; return nil }); err != nil || len(seen) != readers {
		t.Fatalf("ran on %d connections, %v; want %d", len(seen), err, readers)
	}
	stop, calls := errors.New("stop"), 0
	if err := s.EachReader(ctx, func(*ReadTx) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Fatalf("a failing function: %d calls, %v", calls, err)
	}
	// Every connection was given back: as many read transactions as the
	// bound begin without waiting.
	for range readers {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		rtx, err := s.BeginRead(wctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		defer rtx.Close()
	}
}
