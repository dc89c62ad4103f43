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

// TestImportDefersProjections: an import tells the projector to defer its
// writes and flushes it once, after its last event and before it commits;
// appends never defer; the flush ends the deferral; a failed import
// flushes nothing; a request that defers and returns without flushing is
// flushed by the writer before it commits.
func TestImportDefersProjections(t *testing.T) {
	ctx := context.Background()
	log := exportLog(t)
	var seen []string // "apply deferring", "apply eager", "flush"
	open := func() *Store {
		s, err := Open(ctx, filepath.Join(t.TempDir(), "memory.db"), Options{Projector: testProjector{calls: &seen}})
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

	s := open()
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
		if err := tx.FlushProjections(ctx); err != nil { // not deferring: nothing to flush
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
	err = s.Update(ctx, "", func(tx *Tx) error {
		tx.DeferProjections()
		_, err := tx.Append(ctx, log[0].Stream, AnyVersion, events.Pending{Type: events.TypeNoteAppended, Data: note("01TASKA", "/root", "never flushed")})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	want("a request that defers and does not flush", "apply deferring", 1, true)

	bad := append([]events.Event(nil), log...)
	bad[len(bad)-1].ID = "not-a-ulid"
	s = open()
	if _, err := s.Import(ctx, iterate(bad)); !errors.Is(err, events.ErrInvalidEvent) {
		t.Fatalf("import of a bad log: %v, want ErrInvalidEvent", err)
	}
	want("failed import", "apply deferring", len(log)-1, false)
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
