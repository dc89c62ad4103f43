package projections

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
)

// TestRebuildInATransactionThatWroteANote: a rebuild that shares its
// transaction with a note write (the memo of that transaction remembers
// the note's row) rebuilds the note from the log, not from the memory of
// a row its deletes removed.
func TestRebuildInATransactionThatWroteANote(t *testing.T) {
	ctx := context.Background()
	store, err := eventlog.Open(ctx, filepath.Join(t.TempDir(), "memory.db"), eventlog.Options{Projector: Projector{}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	note := events.NoteWritten{TaskID: "t1", Agent: "/root", Path: "a.md", Text: "hello", By: "/root"}
	err = store.Update(ctx, "", func(tx *eventlog.Tx) error {
		if _, err := tx.Append(ctx, "t1/root", eventlog.AnyVersion, events.Pending{Type: events.TypeNoteWritten, Data: note}); err != nil {
			return err
		}
		return rebuild(ctx, tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	n, err := NewReader(store.Reader()).Note(ctx, "t1", "/root", "a.md")
	if err != nil || n.Content != "hello" || n.Revision != 1 {
		t.Fatalf("note after the rebuild: %+v, %v", n, err)
	}
	var parts int
	if err := store.Reader().QueryRow(`SELECT count(*) FROM note_parts`).Scan(&parts); err != nil || parts != 1 {
		t.Fatalf("%d note parts (%v), want 1", parts, err)
	}
}
