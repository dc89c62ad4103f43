package eventlog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/pgtest"
)

// TestPostgresPipelinedBatch: requests committed together, their inserts
// sent in one round trip each, keep their own outcomes. A request whose
// projection row breaks a unique index (an error the server reports only
// when the queue is sent) fails as a conflict, as does one failing in Go
// after its writes, and a read sees the request's writes before it; the
// others commit, gapless, with their projection rows and nothing of the
// failed ones.
func TestPostgresPipelinedBatch(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`CREATE TABLE pipe_applied (position BIGINT PRIMARY KEY, key TEXT NOT NULL UNIQUE)`); err != nil {
		t.Fatal(err)
	}
	apply := func(ctx context.Context, db DBTX, ev events.Event) error {
		var n events.NoteAppended
		if err := json.Unmarshal(ev.Data, &n); err != nil {
			return err
		}
		key, _, _ := strings.Cut(n.Text, "/")
		_, err := db.ExecContext(ctx, `INSERT INTO pipe_applied (position, key) VALUES ($1, $2)`, ev.Position, key)
		return err
	}
	s, err := Open(ctx, dsn, Options{Projector: testProjector{apply: apply}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	errGo := errors.New("failed in Go after its writes")
	// Request i appends key k<i>; every fifth repeats key k0, a unique
	// violation; every seventh fails in Go after its append; the others
	// read their own row back before they end.
	run := func(i int) error {
		key := fmt.Sprintf("k%d", i)
		if i%5 == 4 {
			key = "k0"
		}
		return s.Update(ctx, "req", func(tx *Tx) error {
			if _, err := tx.Append(ctx, "s", AnyVersion, events.Pending{Type: events.TypeNoteAppended,
				Data: events.NoteAppended{TaskID: "t", Agent: "/root", Path: "a.md", Text: key + "/" + fmt.Sprint(i), By: "/root"}}); err != nil {
				return err
			}
			if i%7 == 6 {
				return errGo
			}
			if i%5 == 4 {
				return nil
			}
			var got string
			if err := tx.DB().QueryRowContext(ctx, `SELECT key FROM pipe_applied WHERE position = $1`, tx.last).Scan(&got); err != nil || got != key {
				return fmt.Errorf("request %d reads its own row: %q, %v", i, got, err)
			}
			return nil
		})
	}
	if err := run(0); err != nil {
		t.Fatal(err)
	}
	// Hold the writer in a request while the others queue up, so that
	// they commit in batches.
	hold, held := make(chan struct{}), make(chan struct{})
	go s.Update(ctx, "hold", func(*Tx) error { close(held); <-hold; return nil })
	<-held
	const n = 60
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 1; i < n; i++ {
		wg.Go(func() { errs[i] = run(i) })
	}
	close(hold)
	wg.Wait()
	want := 1
	for i := 1; i < n; i++ {
		switch {
		case i%5 == 4:
			if !errors.Is(errs[i], ErrConflict) {
				t.Errorf("request %d, a duplicate key: %v, want a conflict", i, errs[i])
			}
		case i%7 == 6:
			if !errors.Is(errs[i], errGo) {
				t.Errorf("request %d: %v, want its own error", i, errs[i])
			}
		case errs[i] != nil:
			t.Errorf("request %d: %v", i, errs[i])
		default:
			want++
		}
	}
	all := readAll(t, s)
	if len(all) != want {
		t.Fatalf("%d events, want %d", len(all), want)
	}
	for i, ev := range all {
		if ev.Position != int64(i+1) || ev.StreamVersion != int64(i+1) {
			t.Fatalf("event %d at position %d, version %d: not gapless", i, ev.Position, ev.StreamVersion)
		}
	}
	var rows, bad int
	if err := raw.QueryRow(`SELECT count(*), count(*) FILTER (WHERE position NOT IN (SELECT position FROM events)) FROM pipe_applied`).Scan(&rows, &bad); err != nil {
		t.Fatal(err)
	}
	if rows != want || bad != 0 {
		t.Fatalf("%d projection rows (%d of no event), want %d", rows, bad, want)
	}
	// The writer's connection is still in order.
	if _, err := appendOne(t, s, "s", int64(want), events.TypeNoteAppended, note("t", "/root", "after/")); err != nil {
		t.Fatal(err)
	}
}

// TestPostgresPipelinedRowsAffected: a queued statement's result is known
// once the queue is sent, which reading it does.
func TestPostgresPipelinedRowsAffected(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, pgtest.NewDatabase(t), Options{Projector: testProjector{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 3 {
		if _, err := appendOne(t, s, "s", int64(i), events.TypeNoteAppended, note("t", "/root", "x")); err != nil {
			t.Fatal(err)
		}
	}
	err = s.Update(ctx, "", func(tx *Tx) error {
		res, err := tx.DB().ExecContext(ctx, `UPDATE events SET request_id = 'r' WHERE position <= 2`)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n != 2 {
			return fmt.Errorf("rows affected %d, %v, want 2", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPostgresBeginReadsTheTip: the last position read with BEGIN is
// LastPosition's, after this store's appends and another's.
func TestPostgresBeginReadsTheTip(t *testing.T) {
	a, b := openPostgresPair(t)
	for i := range 4 {
		s := []*Store{a, b}[i%2]
		if _, err := appendOne(t, s, "s", AnyVersion, events.TypeNoteAppended, note("t", "/root", "x")); err != nil {
			t.Fatal(err)
		}
		err := s.Update(context.Background(), "", func(tx *Tx) error {
			want, err := tx.q.LastPosition(context.Background())
			if err != nil {
				return err
			}
			if got := s.tip.last; got != want || got != int64(i+1) {
				return fmt.Errorf("tip %d, LastPosition %d, want %d", got, want, i+1)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestPostgresPipelinedLongRequest: a request with more writes than the
// queue holds sends them as it goes and keeps the outcome of one request:
// all of them, or none once one fails.
func TestPostgresPipelinedLongRequest(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, pgtest.NewDatabase(t), Options{Projector: testProjector{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	write := func(first, n int) error {
		return s.Update(ctx, "", func(tx *Tx) error {
			for i := range n {
				if _, err := tx.DB().ExecContext(ctx, `UPDATE events SET request_id = $1 WHERE position = $2`, fmt.Sprint(i), first+i); err != nil {
					return err
				}
			}
			_, err := tx.Append(ctx, "s", AnyVersion, events.Pending{Type: events.TypeNoteAppended, Data: note("t", "/root", "x")})
			return err
		})
	}
	if err := write(0, 3*maxQueued); err != nil {
		t.Fatal(err)
	}
	err = s.Update(ctx, "", func(tx *Tx) error {
		for i := range 3 * maxQueued {
			if _, err := tx.Append(ctx, "s", AnyVersion, events.Pending{Type: events.TypeNoteAppended, Data: note("t", "/root", "y")}); err != nil {
				return err
			}
			if i == 2*maxQueued {
				// A second event at the position just taken.
				if _, err := tx.DB().ExecContext(ctx, `INSERT INTO events SELECT * FROM events WHERE position = $1`, tx.last); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("a long request with a duplicate event: %v, want a conflict", err)
	}
	if all := readAll(t, s); len(all) != 1 {
		t.Fatalf("%d events, want the first request's 1", len(all))
	}
}
