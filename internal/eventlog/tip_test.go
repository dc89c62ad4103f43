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

// checkLog checks that the log's positions are 1..n and that every
// stream's versions count up from 1 in position order.
func checkLog(t *testing.T, evs []events.Event) {
	t.Helper()
	versions := map[string]int64{}
	for i, ev := range evs {
		if ev.Position != int64(i+1) {
			t.Fatalf("event %d at position %d", i, ev.Position)
		}
		versions[ev.Stream]++
		if ev.StreamVersion != versions[ev.Stream] {
			t.Fatalf("event at %d: stream %s version %d, want %d", ev.Position, ev.Stream, ev.StreamVersion, versions[ev.Stream])
		}
	}
}

// TestTipAfterFailures: the writer remembers where the log ends, so a
// request that appended and then failed (rolled back alone, in a batch
// of concurrent requests, or on its own) must leave no trace in what it
// remembers: the next appends continue the committed log.
func TestTipAfterFailures(t *testing.T) {
	s := openStore(t, nil)
	ctx := context.Background()
	boom := errors.New("boom")
	var wg sync.WaitGroup
	var mu sync.Mutex
	committed := 0
	for c := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				stream := fmt.Sprintf("t1/root/%d", (c+i)%3)
				fail := (c+i)%4 == 0
				err := s.Update(ctx, "", func(tx *Tx) error {
					if _, err := tx.Append(ctx, stream, AnyVersion, events.Pending{Type: events.TypeNoteAppended, Data: note("t1", "/root", "x")},
						events.Pending{Type: events.TypeNoteAppended, Data: note("t1", "/root", "y")}); err != nil {
						return err
					}
					if fail {
						return boom
					}
					return nil
				})
				if fail != errors.Is(err, boom) || (!fail && err != nil) {
					t.Errorf("request %d/%d: %v", c, i, err)
					return
				}
				if !fail {
					mu.Lock()
					committed += 2
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	evs := readAll(t, s)
	if len(evs) != committed {
		t.Fatalf("%d events, want %d", len(evs), committed)
	}
	checkLog(t, evs)
}

// TestTipAfterAnotherProcess: a second store on the same file (another
// process) appends behind the first one's back; the first notices
// (data_version) and continues the log without a conflict.
func TestTipAfterAnotherProcess(t *testing.T) {
	s := openStore(t, nil)
	other := openOther(t, s)
	for i := range 6 {
		st := s
		if i%2 == 1 {
			st = other
		}
		if _, err := appendOne(t, st, "t1/root", AnyVersion, events.TypeNoteAppended, note("t1", "/root", "x")); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
	evs := readAll(t, s)
	if len(evs) != 6 {
		t.Fatalf("%d events, want 6", len(evs))
	}
	checkLog(t, evs)
}

// TestTxProjectionForgetsRolledBackRequests: what a request of a batch
// kept in the transaction's projection state is gone when that request
// fails and is rolled back (the writer calls Rollback), deferral included,
// so that a later request of the same batch cannot see it. (A read
// transaction has no projection state: ReadTx has none to give.)
func TestTxProjectionForgetsRolledBackRequests(t *testing.T) {
	s := openStore(t, nil)
	ctx := context.Background()
	state := func(tx *Tx) *testTx { return tx.Projection().(*testTx) }
	release := make(chan struct{})
	held := make(chan struct{})
	go func() { // holds the writer while the others queue up into one batch
		_ = s.Update(ctx, "", func(tx *Tx) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	results := make(chan error, 4)
	seen := make(chan any, 2)
	deferring := make(chan bool, 1)
	put := func(v string, fail bool) {
		results <- s.Update(ctx, "", func(tx *Tx) error {
			if _, err := tx.Append(ctx, "t1/root", AnyVersion, events.Pending{Type: events.TypeNoteAppended, Data: note("t1", "/root", v)}); err != nil {
				return err
			}
			state(tx).kept = v
			if fail {
				tx.DeferProjections()
				return errors.New("boom")
			}
			return nil
		})
	}
	// a, b (defers, fails), then a reader that keeps "c" and reports
	// what the state held before: nothing (b's rollback emptied it, a's
	// value with it), never "b", and no deferral. Then a last request
	// sees "c": the reader and it shared a batch and a state, so the
	// test did test one.
	go put("a", false)
	time.Sleep(20 * time.Millisecond)
	go put("b", true)
	time.Sleep(20 * time.Millisecond)
	go func() {
		results <- s.Update(ctx, "", func(tx *Tx) error {
			st := state(tx)
			seen <- st.kept
			deferring <- st.deferring
			st.kept = "c"
			return nil
		})
	}()
	time.Sleep(20 * time.Millisecond)
	go func() {
		results <- s.Update(ctx, "", func(tx *Tx) error {
			seen <- state(tx).kept
			return nil
		})
	}()
	time.Sleep(20 * time.Millisecond)
	close(release)
	for range 4 {
		<-results
	}
	if v := <-seen; v == "b" {
		t.Fatal("a request saw what a rolled-back request of its batch kept")
	}
	if <-deferring {
		t.Fatal("a request of the batch deferred because a rolled-back request had")
	}
	if v := <-seen; v != "c" {
		t.Fatalf("the last request saw %v, not the previous request's c: the requests did not share a batch", v)
	}
}
