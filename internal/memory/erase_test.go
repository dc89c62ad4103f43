package memory

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// TestEraseDropsWhatTheServiceKeeps: an erasure drops the task's cached
// note reads, its history chunk filters and its host call bindings, runs
// the OnErase hooks with its id, and keeps another task's.
func TestEraseDropsWhatTheServiceKeeps(t *testing.T) {
	ctx := context.Background()
	s := mustOpenSQLite(t) // the note cache needs SQLite's commit stamp
	a := mustAttach(t, s, "/sessions/erase-a.jsonl")
	b := mustAttach(t, s, "/sessions/erase-b.jsonl")
	var hooked []string
	s.OnErase(func(task string) { hooked = append(hooked, task) })
	for _, cc := range []CallContext{a, b} {
		syncBatches(t, s, cc, sessiongen.Large(512<<10), 8<<20)
		mustCall(t, s, cc, "notes_write_file", `{"path":"n.md","text":"a note"}`)
		mustCall(t, s, cc, "notes_read_file", `{"path":"n.md"}`)
		if err := s.BindHostCall("host-"+cc.TaskID, cc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.filters.Preload(ctx, s.store, projections.PreloadOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, cc := range []CallContext{a, b} {
		if !s.notes.Holds(cc.TaskID) || s.filters.Loaded(cc.TaskID, cc.Agent) == 0 {
			t.Fatalf("%s: nothing cached to drop (note cache %v, filters %d)", cc.TaskID, s.notes.Holds(cc.TaskID), s.filters.Loaded(cc.TaskID, cc.Agent))
		}
	}
	res, err := s.EraseTask(ctx, a.TaskID, "req-erase", EraseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.notes.Holds(a.TaskID) || s.filters.Loaded(a.TaskID, a.Agent) != 0 {
		t.Error("the erased task's note reads or chunk filters are kept")
	}
	if !s.notes.Holds(b.TaskID) || s.filters.Loaded(b.TaskID, b.Agent) == 0 {
		t.Error("another task's note reads or chunk filters were dropped")
	}
	if _, err := s.HostCall("host-" + a.TaskID); err == nil {
		t.Error("the erased task's host call binding is kept")
	}
	if _, err := s.HostCall("host-" + b.TaskID); err != nil {
		t.Errorf("another task's host call binding: %v", err)
	}
	if len(hooked) != 1 || hooked[0] != a.TaskID {
		t.Errorf("OnErase hooks called with %q", hooked)
	}
	if res.Rows["history_chunks"] == 0 || res.Rows["history_entries"] == 0 || res.Rows["notes"] != 1 {
		t.Errorf("rows erased: %v", res.Rows)
	}
	evs, err := s.Events(ctx, res.Position-1, a.TaskID, 10)
	if err != nil || len(evs) != 1 || evs[0].Type != events.TypeTaskErased || evs[0].RequestID != "req-erase" {
		t.Errorf("the erasure: %+v %v", evs, err)
	}
	// The erased task's tools and a second erasure are not found.
	if _, err := call(t, s, a, "notes_read_file", `{"path":"n.md"}`); !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrForbidden) {
		t.Errorf("a read of the erased task: %v", err)
	}
	if _, err := s.EraseTask(ctx, a.TaskID, "", EraseOptions{}); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "erased already") {
		t.Errorf("a second erasure: %v", err)
	}
	for _, bad := range []string{"", "a/b", "a\x00b", strings.Repeat("x", 257), "\xff"} {
		if _, err := s.EraseTask(ctx, bad, "", EraseOptions{}); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("EraseTask(%q): %v", bad, err)
		}
	}
}

// TestEraseFromAnotherProcess: a task erased through another Service on
// the same database (memoryd forget while memoryd serves it) gets no
// audit record from this one afterwards, though its audit had found the
// agent registered: the log's epoch changed, so it looks again.
func TestEraseFromAnotherProcess(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "memory.db")
	opts := testOptions()
	opts.AuditCalls = true
	serving := mustOpenAt(t, path, opts)
	cc := mustAttach(t, serving, "/sessions/other-process.jsonl")
	mustCall(t, serving, cc, "notes_write_file", `{"path":"n.md","text":"secret words"}`)
	for range 3 {
		mustCall(t, serving, cc, "notes_read_file", `{"path":"n.md"}`)
	}
	serving.audit.close() // its records written, the agent known
	serving.audit = newAuditor(serving.store, serving.audit.log)
	serving.audit.known[events.Stream(cc.TaskID, cc.Agent)] = true // as the closed one had found it
	serving.audit.knownEpoch = currentEpoch(t, serving.store)

	forgetting := mustOpenAt(t, path, testOptions())
	res, err := forgetting.EraseTask(ctx, cc.TaskID, "", EraseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	forgetting.Close()
	for range 3 { // the session goes on calling, refused, audited if registered
		if _, err := call(t, serving, cc, "notes_read_file", `{"path":"n.md"}`); err == nil {
			t.Fatal("a read of the erased task succeeded")
		}
		if _, err := call(t, serving, cc, "history_search_contents", `{"query":"secret words"}`); err == nil {
			t.Fatal("a search of the erased task succeeded")
		}
	}
	serving.StopAudit()
	evs, err := serving.Events(ctx, res.Position, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		t.Errorf("an event after the erasure: %d %s %s", ev.Position, ev.Type, ev.Data)
	}
}

// currentEpoch is the store's log epoch as a write transaction sees it.
func currentEpoch(t *testing.T, s *eventlog.Store) int64 {
	t.Helper()
	var e int64
	if err := s.Update(context.Background(), "", func(tx *eventlog.Tx) error { e = tx.Epoch(); return nil }); err != nil {
		t.Fatal(err)
	}
	return e
}
