package projections

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
)

// TestTxStateSharedWithTheWriteTransaction: a Reader of a write
// transaction (TxReader) and the projector share the transaction's state:
// the note row AgentWithNoteWrite read is remembered for the write's applier,
// and an entry handed ahead (WillRecordEntry) is the one its projection
// records, without rendering it again, unless it was recorded with other
// bytes. A Reader over the transaction's queries alone (NewReader) shares
// nothing.
func TestTxStateSharedWithTheWriteTransaction(t *testing.T) {
	ctx := context.Background()
	store, err := eventlog.Open(ctx, filepath.Join(t.TempDir(), "memory.db"), eventlog.Options{Projector: Projector{}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	registerNoteAgents(t, store)
	raw := json.RawMessage(`{"type":"message","id":"e1","message":{"role":"user","content":"hello"}}`)
	other := json.RawMessage(`{"type":"message","id":"e2","message":{"role":"user","content":"other bytes"}}`)
	err = store.Update(ctx, "", func(tx *eventlog.Tx) error {
		st := stateOf(tx)
		if st == nil {
			t.Fatal("no projections state in a store opened with Projector")
		}
		if NewReader(tx.DB()).tx != nil {
			t.Error("NewReader over a write transaction's queries has its state")
		}
		if _, _, err := TxReader(tx).AgentWithNoteWrite(ctx, "t1", "/root", address.NotePath{Agent: "/root", Path: "a.md"}, "c1"); err != nil {
			return err
		}
		if n, ok := st.note(noteKey{"t1", "/root", "a.md"}); !ok || n.exists {
			t.Errorf("after AgentWithNoteWrite the state holds %+v, %v; want a note that does not exist", n, ok)
		}
		e, err := RenderEntry(raw)
		if err != nil {
			return err
		}
		e.r.Role = "handed" // what only the handed rendering says
		WillRecordEntry(tx, "t1", "/root", "e1", e)
		WillRecordEntry(tx, "t1", "/root", "e2", e) // its bytes are not e2's
		if _, err := tx.Append(ctx, "t1/root", eventlog.AnyVersion,
			events.Pending{Type: events.TypeHistoryEntryRecorded, Data: events.HistoryEntryRecorded{TaskID: "t1", Agent: "/root", EntryID: "e1", Entry: raw}},
			events.Pending{Type: events.TypeHistoryEntryRecorded, Data: events.HistoryEntryRecorded{TaskID: "t1", Agent: "/root", EntryID: "e2", Entry: other}}); err != nil {
			return err
		}
		if len(st.rendered) != 0 {
			t.Errorf("%d entries handed ahead left in the state after they were recorded", len(st.rendered))
		}
		for id, want := range map[string]string{"e1": "handed", "e2": "user"} {
			var role string
			if err := tx.DB().QueryRowContext(ctx, `SELECT role FROM history_entries WHERE entry_id = ?`, id).Scan(&role); err != nil {
				return err
			}
			if role != want {
				t.Errorf("%s recorded with role %q, want %q", id, role, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
