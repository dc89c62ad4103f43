package eventlog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/pgtest"
)

// openPostgresPair opens two stores on one new PostgreSQL database: two
// servers sharing a log.
func openPostgresPair(t *testing.T) (*Store, *Store) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	open := func() *Store {
		s, err := Open(context.Background(), dsn, Options{Projector: testProjector{}})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	return open(), open()
}

// TestPostgresTwoStoresAppendGapless: appends through two stores on one
// database, concurrently, to streams of their own and to one they share,
// are all kept, once each, at gapless positions in commit order, with
// gapless stream versions; every acknowledged event is where its
// acknowledgement said.
func TestPostgresTwoStoresAppendGapless(t *testing.T) {
	a, b := openPostgresPair(t)
	const writers, each = 4, 25
	var (
		mu  sync.Mutex
		got []events.Event
		wg  sync.WaitGroup
	)
	errs := make(chan error, 2*writers*each)
	for si, s := range []*Store{a, b} {
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				own := fmt.Sprintf("task-%d-%d", si, w)
				for i := range each {
					stream := own
					if i%3 == 0 {
						stream = "shared"
					}
					var out []events.Event
					err := s.Update(context.Background(), "req", func(tx *Tx) error {
						var err error
						out, err = tx.Append(context.Background(), stream, AnyVersion,
							events.Pending{Type: events.TypeNoteAppended, Data: note(stream, "/root", fmt.Sprint(si, w, i))})
						return err
					})
					if err != nil {
						errs <- err
						return
					}
					mu.Lock()
					got = append(got, out...)
					mu.Unlock()
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("append: %v", err)
	}
	all := readAll(t, b)
	if len(all) != 2*writers*each || len(got) != len(all) {
		t.Fatalf("%d events in the log, %d acknowledged, want %d", len(all), len(got), 2*writers*each)
	}
	byPos := map[int64]events.Event{}
	versions := map[string]int64{}
	for i, ev := range all {
		if ev.Position != int64(i+1) {
			t.Fatalf("event %d at position %d: positions have a gap", i, ev.Position)
		}
		if ev.StreamVersion != versions[ev.Stream]+1 {
			t.Fatalf("stream %s: version %d after %d", ev.Stream, ev.StreamVersion, versions[ev.Stream])
		}
		versions[ev.Stream] = ev.StreamVersion
		byPos[ev.Position] = ev
	}
	for _, ev := range got {
		if stored := byPos[ev.Position]; stored.ID != ev.ID || string(stored.Data) != string(ev.Data) {
			t.Fatalf("acknowledged %s at %d, the log has %s there", ev.ID, ev.Position, stored.ID)
		}
	}
}

// TestPostgresSeesOtherStoresCommits: what one store committed is read
// through the other at once, and the other's writer, whose stream versions
// were learnt before, appends after it instead of over it.
func TestPostgresSeesOtherStoresCommits(t *testing.T) {
	a, b := openPostgresPair(t)
	if _, err := appendOne(t, a, "s", 0, events.TypeNoteAppended, note("s", "/root", "a1")); err != nil {
		t.Fatal(err)
	}
	if _, err := appendOne(t, b, "s", 1, events.TypeNoteAppended, note("s", "/root", "b2")); err != nil {
		t.Fatalf("b appends after a's commit: %v", err)
	}
	// a's writer knew s at version 1: it must learn b's commit.
	if _, err := appendOne(t, a, "s", 1, events.TypeNoteAppended, note("s", "/root", "a-stale")); !errors.Is(err, ErrConflict) {
		t.Fatalf("a appends at a stale version: %v, want a conflict", err)
	}
	out, err := appendOne(t, a, "s", 2, events.TypeNoteAppended, note("s", "/root", "a3"))
	if err != nil || out[0].Position != 3 || out[0].StreamVersion != 3 {
		t.Fatalf("a appends at version 2: %v %+v", err, out)
	}
	if p := lastPosition(t, b); p != 3 {
		t.Fatalf("b reads last position %d, want 3", p)
	}
	rtx, err := b.BeginRead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer rtx.Close()
	if p, err := PositionIn(context.Background(), rtx.DB()); err != nil || p != 3 {
		t.Fatalf("b's read transaction: %d, %v", p, err)
	}
	// The snapshot holds while a appends.
	if _, err := appendOne(t, a, "s", 3, events.TypeNoteAppended, note("s", "/root", "a4")); err != nil {
		t.Fatal(err)
	}
	if p, err := PositionIn(context.Background(), rtx.DB()); err != nil || p != 3 {
		t.Fatalf("b's read transaction after a's append: %d, %v (a snapshot must not move)", p, err)
	}
}

// TestPostgresConflictAcrossStores: two stores appending to one stream at
// the same expected version: exactly one wins, the other gets a conflict.
func TestPostgresConflictAcrossStores(t *testing.T) {
	a, b := openPostgresPair(t)
	for round := range 20 {
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for i, s := range []*Store{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[i] = appendOne(t, s, "race", int64(round), events.TypeNoteAppended, note("race", "/root", fmt.Sprint(round, i)))
			}()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, ErrConflict):
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if ok != 1 {
			t.Fatalf("round %d: %d appends at version %d succeeded, want 1 (%v)", round, ok, round, errs)
		}
	}
}

// TestPostgresUnreachable: while the database refuses connections (its
// connections cut, new ones refused, as when the server restarts or the
// network fails), writes and reads fail as ErrUnavailable and nothing is
// half-written; once it accepts them again the store recovers by itself.
func TestPostgresUnreachable(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	s, err := Open(ctx, dsn, Options{Projector: testProjector{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := appendOne(t, s, "s", 0, events.TypeNoteAppended, note("s", "/root", "before")); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	admin, err := pgx.Connect(ctx, os.Getenv("MEMORYD_TEST_POSTGRES"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	db := pgx.Identifier{cfg.Database}.Sanitize()
	cut := func(allow bool) {
		t.Helper()
		if _, err := admin.Exec(ctx, fmt.Sprintf("ALTER DATABASE %s ALLOW_CONNECTIONS %t", db, allow)); err != nil {
			t.Fatal(err)
		}
		if !allow {
			if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1", cfg.Database); err != nil {
				t.Fatal(err)
			}
		}
	}
	cut(false)
	defer cut(true)
	if _, err := appendOne(t, s, "s", 1, events.TypeNoteAppended, note("s", "/root", "while cut")); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("append while the database refuses connections: %v, want ErrUnavailable", err)
	}
	if _, err := s.LastPosition(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("read while the database refuses connections: %v, want ErrUnavailable", err)
	}
	if _, err := s.BeginRead(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("read transaction while the database refuses connections: %v, want ErrUnavailable", err)
	}
	cut(true)
	out, err := appendOne(t, s, "s", 1, events.TypeNoteAppended, note("s", "/root", "after"))
	if err != nil {
		t.Fatalf("append once the database is back: %v", err)
	}
	if out[0].Position != 2 {
		t.Fatalf("append after the cut at position %d, want 2 (nothing of the refused one kept)", out[0].Position)
	}
	all := readAll(t, s)
	if len(all) != 2 || !strings.Contains(string(all[1].Data), "after") {
		t.Fatalf("log after the cut: %d events, %+v", len(all), all)
	}
}
