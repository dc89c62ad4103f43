package projections

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
)

// noteOp is one note event of a generated log.
type noteOp struct {
	agent, path, text string
	write             bool // notes_write_file; else an append
	callID            string
}

// appendNoteOps appends ops one event at a time, each in its own
// transaction, as a live server applies them.
func appendNoteOps(t *testing.T, store *eventlog.Store, ops []noteOp) {
	t.Helper()
	ctx := context.Background()
	for _, op := range ops {
		typ, data := events.TypeNoteAppended, any(events.NoteAppended{TaskID: "t1", Agent: op.agent, Path: op.path, Text: op.text, By: op.agent, CallID: op.callID})
		if op.write {
			typ, data = events.TypeNoteWritten, events.NoteWritten{TaskID: "t1", Agent: op.agent, Path: op.path, Text: op.text, By: op.agent, CallID: op.callID}
		}
		err := store.Update(ctx, "", func(tx *eventlog.Tx) error {
			_, err := tx.Append(ctx, "t1"+op.agent, eventlog.AnyVersion, events.Pending{Type: typ, Data: data})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// registerNoteAgents registers the task and the agents of randomNoteOps,
// so that an import of their log passes the import check (checkImported).
func registerNoteAgents(t *testing.T, store *eventlog.Store) {
	t.Helper()
	ctx := context.Background()
	budget := events.Budget{NotesMaxFileBytes: events.MaxNoteBytes}
	err := store.Update(ctx, "", func(tx *eventlog.Tx) error {
		if _, err := tx.Append(ctx, "t1/root", 0,
			events.Pending{Type: events.TypeTaskCreated, Data: events.TaskCreated{TaskID: "t1", SessionKey: "s1"}},
			events.Pending{Type: events.TypeAgentRegistered, Data: events.AgentRegistered{TaskID: "t1", Agent: "/root", SessionKey: "s1", Budget: budget}}); err != nil {
			return err
		}
		_, err := tx.Append(ctx, "t1/root/sub", 0, events.Pending{Type: events.TypeAgentRegistered,
			Data: events.AgentRegistered{TaskID: "t1", Agent: "/root/sub", ParentAgent: "/root", SessionKey: "s2", Budget: budget}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// randomNoteOps returns n note events over a few notes of two agents,
// with empty, multi-byte and NUL texts, overwrites and call ids, and model
// the texts they leave.
func randomNoteOps(r *rand.Rand, n int, model map[string]string) []noteOp {
	agents := []string{"/root", "/root/sub"}
	paths := []string{"a.md", "b.md", "deep/c.md", "d.md"}
	texts := []string{"", "x", "yz\n", "- line\n", "é😀\n", "nul\x00\n"}
	ops := make([]noteOp, n)
	for i := range ops {
		op := noteOp{agent: agents[r.IntN(len(agents))], path: paths[r.IntN(len(paths))], text: texts[r.IntN(len(texts))], write: r.IntN(15) == 0}
		if r.IntN(3) == 0 {
			op.callID = fmt.Sprintf("toolu_%d_%d", n, i)
		}
		key := op.agent + " " + op.path
		if op.write {
			model[key] = op.text
		} else {
			model[key] += op.text
		}
		ops[i] = op
	}
	return ops
}

// checkNotes checks that every note of store reads back its model text,
// that bytes is its length, and that its parts are numbered 0 to parts-1
// with parts ≤ maxNoteParts (what an append applied one at a time relies
// on); it returns the most parts a note has.
func checkNotes(t *testing.T, what string, store *eventlog.Store, model map[string]string) int64 {
	t.Helper()
	ctx := context.Background()
	r := NewReader(store.Reader())
	for key, want := range model {
		var agent, path string
		fmt.Sscan(key, &agent, &path)
		n, err := r.Note(ctx, "t1", agent, path)
		if err != nil || n.Content != want || n.Bytes != int64(len(want)) {
			t.Fatalf("%s: %s reads %q (%d bytes), %v; want %q", what, key, n.Content, n.Bytes, err, want)
		}
	}
	rows, err := store.Reader().QueryContext(ctx, `SELECT n.agent, n.path, n.parts, count(p.part), coalesce(min(p.part), -1), coalesce(max(p.part), -1)
		FROM notes n LEFT JOIN note_parts p USING (task_id, agent, path) GROUP BY n.task_id, n.agent, n.path`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var most, notes int64
	for rows.Next() {
		var agent, path string
		var parts, count, lo, hi int64
		if err := rows.Scan(&agent, &path, &parts, &count, &lo, &hi); err != nil {
			t.Fatal(err)
		}
		if parts != count || lo != 0 || hi != parts-1 || parts > maxNoteParts {
			t.Fatalf("%s: %s %s has parts=%d but %d part rows numbered %d to %d", what, agent, path, parts, count, lo, hi)
		}
		most = max(most, parts)
		notes++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if notes != int64(len(model)) {
		t.Fatalf("%s: %d notes, want %d", what, notes, len(model))
	}
	return most
}

func openDeferring(t *testing.T) *eventlog.Store {
	t.Helper()
	return openDeferringWith(t, noteFlush{})
}

// openDeferringWith is openDeferring with flush bounding the notes a
// deferring request holds.
func openDeferringWith(t *testing.T, flush noteFlush) *eventlog.Store {
	t.Helper()
	store, err := open(context.Background(), eventlog.ParseLocation(filepath.Join(t.TempDir(), "memory.db")), eventlog.Options{Synchronous: "off"}, nil, flush)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return store
}

func digestOf(t *testing.T, store *eventlog.Store) string {
	t.Helper()
	d, err := Digest(context.Background(), store)
	if err != nil {
		t.Fatal(err)
	}
	return Combined(d)
}

// TestDeferredNotesMatchOneAtATime: a log of note writes and appends
// applied one event at a time (live), imported in one transaction (the
// notes deferred to its end, or flushed every few notes), continued in
// segments, and rebuilt, gives the same notes: the same texts, sizes,
// revisions and call results, the same digest, no row Diff finds. The
// deferred stores cut the texts into fewer parts, numbered so that
// appends applied one at a time afterwards keep working.
func TestDeferredNotesMatchOneAtATime(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 9))
	model := map[string]string{}
	ops := randomNoteOps(r, 900, model)
	live, err := eventlog.Open(ctx, filepath.Join(t.TempDir(), "live.db"), eventlog.Options{Projector: Projector{}})
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	registerNoteAgents(t, live)
	appendNoteOps(t, live, ops)
	if most := checkNotes(t, "live", live, model); most < 2 {
		t.Fatalf("the live notes have at most %d parts: the log does not exercise parts", most)
	}
	logEvents, err := live.Read(ctx, eventlog.Filter{Limit: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	want := digestOf(t, live)
	feed := func(evs []events.Event) func() (events.Event, bool, error) {
		return func() (events.Event, bool, error) {
			if len(evs) == 0 {
				return events.Event{}, false, nil
			}
			ev := evs[0]
			evs = evs[1:]
			return ev, true, nil
		}
	}
	for _, c := range []struct {
		name           string
		bytes, notes   int
		segment        int
		wantOnePartMax bool
	}{
		{"one import", 0, 0, 0, true}, // the defaults
		{"flushed every 3 notes", 0, 3, 0, false},
		{"flushed every 20 bytes", 20, 0, 0, false},
		{"segments of 37", 0, 0, 37, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			store := openDeferringWith(t, noteFlush{bytes: c.bytes, notes: c.notes})
			if c.segment == 0 {
				if _, err := store.Import(ctx, feed(logEvents)); err != nil {
					t.Fatal(err)
				}
			} else {
				for i := 0; i < len(logEvents); i += c.segment {
					if _, err := store.Continue(ctx, feed(logEvents[i:min(i+c.segment, len(logEvents))])); err != nil {
						t.Fatal(err)
					}
				}
			}
			most := checkNotes(t, c.name, store, model)
			if c.wantOnePartMax && most != 1 {
				t.Fatalf("one import left a note in %d parts: its appends were not deferred", most)
			}
			if got := digestOf(t, store); got != want {
				t.Fatalf("digest %s, want the live store's %s", got, want)
			}
			if diffs, err := Diff(ctx, live, store, 3); err != nil || len(diffs) != 0 {
				t.Fatalf("Diff: %+v, %v", diffs, err)
			}
			// Appends applied one at a time after the deferred ones, and
			// a rebuild (deferred), which changes nothing.
			model := maps.Clone(model)
			appendNoteOps(t, store, randomNoteOps(r, 120, model))
			checkNotes(t, c.name+", then live appends", store, model)
			before := digestOf(t, store)
			if err := Rebuild(ctx, store); err != nil {
				t.Fatal(err)
			}
			checkNotes(t, c.name+", rebuilt", store, model)
			if got := digestOf(t, store); got != before {
				t.Fatalf("a rebuild changed the digest from %s to %s", before, got)
			}
		})
	}
}
