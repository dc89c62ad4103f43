package eventlog

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
)

// TestImportDefersProjectionsOnlyWithFlush: an import lets the applier
// defer its writes (TxDeferring) and calls Options.Flush once, after its
// last event and before it commits; appends never defer; the flush ends
// the deferral; a store without Flush never defers; a failed import
// flushes nothing.
func TestImportDefersProjectionsOnlyWithFlush(t *testing.T) {
	ctx := context.Background()
	log := exportLog(t)
	var seen []string // "apply deferring", "apply eager", "flush"
	apply := func(_ context.Context, db DBTX, _ events.Event) error {
		if TxDeferring(db) {
			seen = append(seen, "apply deferring")
		} else {
			seen = append(seen, "apply eager")
		}
		return nil
	}
	flush := func(_ context.Context, db DBTX) error {
		if !TxDeferring(db) {
			t.Error("Flush called outside a deferring request")
		}
		seen = append(seen, "flush")
		return nil
	}
	open := func(flush func(context.Context, DBTX) error) *Store {
		s, err := Open(ctx, filepath.Join(t.TempDir(), "memory.db"), Options{Apply: apply, Flush: flush})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	want := func(what string, apply string, n int, flushed bool) {
		t.Helper()
		w := slices.Repeat([]string{apply}, n)
		if flushed {
			w = append(w, "flush")
		}
		if !slices.Equal(seen, w) {
			t.Fatalf("%s: %s, want %s", what, runs(seen), runs(w))
		}
		seen = nil
	}

	s := open(flush)
	if _, err := s.Import(ctx, iterate(log)); err != nil {
		t.Fatal(err)
	}
	want("import", "apply deferring", len(log), true)
	if _, err := appendOne(t, s, log[0].Stream, AnyVersion, events.TypeNoteAppended, note("01TASKA", "/root", "live")); err != nil {
		t.Fatal(err)
	}
	want("append after the import", "apply eager", 1, false)
	err := s.Update(ctx, "", func(tx *Tx) error {
		tx.DeferProjections()
		if _, err := tx.Append(ctx, log[0].Stream, AnyVersion, events.Pending{Type: events.TypeNoteAppended, Data: note("01TASKA", "/root", "deferred")}); err != nil {
			return err
		}
		if err := tx.FlushProjections(ctx); err != nil {
			return err
		}
		_, err := tx.Append(ctx, log[0].Stream, AnyVersion, events.Pending{Type: events.TypeNoteAppended, Data: note("01TASKA", "/root", "after the flush")})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(seen, []string{"apply deferring", "flush", "apply eager"}) {
		t.Fatalf("a request that defers, flushes and appends again: %s", runs(seen))
	}
	seen = nil

	bad := append([]events.Event(nil), log...)
	bad[len(bad)-1].ID = "not-a-ulid"
	s = open(flush)
	if _, err := s.Import(ctx, iterate(bad)); !errors.Is(err, events.ErrInvalidEvent) {
		t.Fatalf("import of a bad log: %v, want ErrInvalidEvent", err)
	}
	want("failed import", "apply deferring", len(log)-1, false)

	s = open(nil)
	if _, err := s.Import(ctx, iterate(log)); err != nil {
		t.Fatal(err)
	}
	want("import without Flush", "apply eager", len(log), false)
}

// runs writes calls as runs of equal calls: "5×apply deferring, 1×flush".
func runs(calls []string) string {
	out := ""
	for i := 0; i < len(calls); {
		j := i
		for j < len(calls) && calls[j] == calls[i] {
			j++
		}
		if out != "" {
			out += ", "
		}
		out += fmt.Sprintf("%d×%s", j-i, calls[i])
		i = j
	}
	return "[" + out + "]"
}
