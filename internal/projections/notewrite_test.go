package projections

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
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

// TestNoteWriteStateFetchedAhead: a note write announced with
// WillWriteNote learns the caller's row and the note's write state in
// one query, and both are what the two separate queries return; a
// NoteWriteState for anything else than what was announced queries.
func TestNoteWriteStateFetchedAhead(t *testing.T) {
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
	type state struct {
		agent Agent
		fence fence.State
		write NoteWriteState
	}
	run := func(ahead bool, announced noteWriteKey, caller, noteAgent, path, callID string) (state, int, error) {
		db := &countingDB{DBTX: rt.DB()}
		r := NewReader(db)
		if ahead {
			r.WillWriteNote(announced.note.taskID, announced.note.agent, announced.note.path, announced.callID)
		}
		var s state
		var err error
		if s.agent, s.fence, err = r.AgentWithState(ctx, "t1", caller); err != nil {
			return s, db.queries, err
		}
		s.write, err = r.NoteWriteState(ctx, "t1", noteAgent, path, caller, callID)
		return s, db.queries, err
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
		want, n, err := run(false, noteWriteKey{}, c.caller, c.noteAgent, c.path, c.callID)
		if err != nil || n != 2 {
			t.Fatalf("%+v unannounced: %v, %d queries", c, err, n)
		}
		if w := want.write; w.Called != c.called || w.Size != c.size || w.Revision != c.revision || w.Called && w.Result.Path == "" {
			t.Errorf("%+v: %+v", c, w)
		}
		got, n, err := run(true, noteWriteKey{noteKey{"t1", c.noteAgent, c.path}, c.callID}, c.caller, c.noteAgent, c.path, c.callID)
		if err != nil {
			t.Fatalf("%+v announced: %v", c, err)
		}
		if n != 1 {
			t.Errorf("%+v announced: %d queries, want 1", c, n)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%+v announced:\n got %+v\nwant %+v", c, got, want)
		}
	}

	// Announced one write, asked about another: each mismatch queries.
	announced := noteWriteKey{noteKey{"t1", "/root", "a.md"}, "c2"}
	for _, c := range []struct{ caller, noteAgent, path, callID string }{
		{"/root", "/root", "missing.md", "c2"},
		{"/root", "/root/sub", "a.md", "c2"},
		{"/root", "/root", "a.md", "c1"},
	} {
		want, _, _ := run(false, noteWriteKey{}, c.caller, c.noteAgent, c.path, c.callID)
		got, n, err := run(true, announced, c.caller, c.noteAgent, c.path, c.callID)
		if err != nil || n != 2 || !reflect.DeepEqual(got, want) {
			t.Errorf("%+v after announcing %+v: %v, %d queries, got %+v want %+v", c, announced, err, n, got.write, want.write)
		}
	}
	if _, _, err := run(true, announced, "/root/nobody", "/root", "a.md", "c2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("an unregistered caller: %v, want ErrNotFound", err)
	}
	if _, err := NewReader(rt.DB()).NoteWriteState(ctx, "t1", "/root", "a.md", "/root/nobody", "c2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("NoteWriteState for an unregistered caller: %v, want ErrNotFound", err)
	}
}
