package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
)

// countingDB counts the queries run through it.
type countingDB struct {
	eventlog.DBTX
	queries int
}

func (c *countingDB) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	c.queries++
	return c.DBTX.QueryContext(ctx, q, args...)
}

func (c *countingDB) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	c.queries++
	return c.DBTX.QueryRowContext(ctx, q, args...)
}

// TestCombinedCallerReads: AgentWithNoteWrite learns the caller's row and
// the note's write state in one query, and AgentWithNote the caller's row
// and the note; each is what the separate reads return (AgentWithState,
// Note, the call's stored result). An unregistered caller is ErrNotFound.
func TestCombinedCallerReads(t *testing.T) {
	ctx := context.Background()
	store, err := eventlog.Open(ctx, filepath.Join(t.TempDir(), "memory.db"), eventlog.Options{Projector: Projector{}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	window := int64(1000)
	budget := events.Budget{ContextWindow: &window, NotesMaxFileBytes: 1 << 20}
	err = store.Update(ctx, "", func(tx *eventlog.Tx) error {
		if _, err := tx.Append(ctx, "t1", eventlog.AnyVersion, events.Pending{Type: events.TypeTaskCreated,
			Data: events.TaskCreated{TaskID: "t1", SessionKey: "/s/root.jsonl"}}); err != nil {
			return err
		}
		for _, a := range []events.AgentRegistered{
			{TaskID: "t1", Agent: "/root", SessionKey: "/s/root.jsonl", Budget: budget},
			{TaskID: "t1", Agent: "/root/sub", ParentAgent: "/root", SessionKey: "/s/sub.jsonl", Budget: budget},
		} {
			if _, err := tx.Append(ctx, "t1"+a.Agent, eventlog.AnyVersion, events.Pending{Type: events.TypeAgentRegistered, Data: a}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	appendNoteOps(t, store, []noteOp{
		{agent: "/root", path: "a.md", text: "one\n", callID: "c1"},
		{agent: "/root", path: "a.md", text: "two\n", callID: "c2"},
		{agent: "/root/sub", path: "b.md", text: "sub\n", callID: "c3"},
	})

	rt, err := store.BeginRead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	// separately reads the caller and the note without the combined
	// queries: what they must return.
	separately := func(caller, noteAgent, path, callID string) (AgentState, Note, NoteWriteState, bool) {
		r := NewReader(rt.DB())
		as, err := r.AgentWithState(ctx, "t1", caller)
		if err != nil {
			t.Fatal(err)
		}
		var w NoteWriteState
		n, err := r.Note(ctx, "t1", noteAgent, path)
		found := err == nil
		if err != nil && !errors.Is(err, ErrNotFound) {
			t.Fatal(err)
		}
		w.Size, w.Revision = n.Bytes, n.Revision
		var result string
		err = rt.DB().QueryRowContext(ctx, "SELECT request_key, result FROM note_calls WHERE task_id = 't1' AND agent = ? AND call_id = ?",
			caller, callID).Scan(&w.RequestKey, &result)
		if w.Called = err == nil && callID != ""; w.Called {
			if err := json.Unmarshal([]byte(result), &w.Result); err != nil {
				t.Fatal(err)
			}
		} else if err != nil && !errors.Is(err, sql.ErrNoRows) {
			t.Fatal(err)
		}
		return as, n, w, found
	}
	// The setup: /root's a.md is "one\ntwo\n" (calls c1, c2 of /root),
	// /root/sub's b.md is "sub\n" (call c3 of /root/sub).
	for _, c := range []struct {
		caller, noteAgent, path, callID string
		called                          bool
		size, revision                  int64
	}{
		{"/root", "/root", "a.md", "c2", true, 8, 2},          // the note, and a call that wrote it
		{"/root", "/root", "a.md", "c9", false, 8, 2},         // a new call
		{"/root", "/root", "missing.md", "c1", true, 0, 0},    // no such note, a used call
		{"/root", "/root/sub", "b.md", "", false, 4, 1},       // another agent's note, no call_id
		{"/root/sub", "/root/sub", "b.md", "c1", false, 4, 1}, // c1 is /root's, not the caller's
		{"/root/sub", "/root/sub", "b.md", "c3", true, 4, 1},
		{"/root", "/root/sub", "b.md", "c3", false, 4, 1}, // c3 is the note owner's call, not the caller's
		{"/root/sub", "/root", "a.md", "c2", false, 8, 2},
	} {
		wantAgent, wantNote, wantWrite, wantFound := separately(c.caller, c.noteAgent, c.path, c.callID)
		if w := wantWrite; w.Called != c.called || w.Size != c.size || w.Revision != c.revision || w.Called && w.Result.Path == "" {
			t.Errorf("%+v: %+v", c, w)
		}
		note := address.NotePath{Agent: c.noteAgent, Path: c.path}

		db := &countingDB{DBTX: rt.DB()}
		as, w, err := NewReader(db).AgentWithNoteWrite(ctx, "t1", c.caller, note, c.callID)
		if err != nil {
			t.Fatalf("%+v AgentWithNoteWrite: %v", c, err)
		}
		if db.queries != 1 {
			t.Errorf("%+v AgentWithNoteWrite: %d queries, want 1", c, db.queries)
		}
		if !reflect.DeepEqual(as, wantAgent) || !reflect.DeepEqual(w, wantWrite) {
			t.Errorf("%+v AgentWithNoteWrite:\n got %+v %+v\nwant %+v %+v", c, as, w, wantAgent, wantWrite)
		}

		db = &countingDB{DBTX: rt.DB()}
		as, n, found, err := NewReader(db).AgentWithNote(ctx, "t1", c.caller, note)
		if err != nil {
			t.Fatalf("%+v AgentWithNote: %v", c, err)
		}
		if db.queries != 1 {
			t.Errorf("%+v AgentWithNote: %d queries, want 1", c, db.queries)
		}
		if !reflect.DeepEqual(as, wantAgent) || !reflect.DeepEqual(n, wantNote) || found != wantFound {
			t.Errorf("%+v AgentWithNote:\n got %+v %+v %v\nwant %+v %+v %v", c, as, n, found, wantAgent, wantNote, wantFound)
		}
	}

	note := address.NotePath{Agent: "/root", Path: "a.md"}
	if _, _, err := NewReader(rt.DB()).AgentWithNoteWrite(ctx, "t1", "/root/nobody", note, "c2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("AgentWithNoteWrite for an unregistered caller: %v, want ErrNotFound", err)
	}
	if _, _, _, err := NewReader(rt.DB()).AgentWithNote(ctx, "t1", "/root/nobody", note); !errors.Is(err, ErrNotFound) {
		t.Errorf("AgentWithNote for an unregistered caller: %v, want ErrNotFound", err)
	}
	if _, err := NewReader(rt.DB()).AgentWithState(ctx, "t1", "/root/nobody"); !errors.Is(err, ErrNotFound) {
		t.Errorf("AgentWithState for an unregistered caller: %v, want ErrNotFound", err)
	}
}
