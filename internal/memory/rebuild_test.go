package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
)

// rebuildWorkload runs a mixed workload: two tasks, a root with a named and
// an automatic child, writes, appends, overwrites, cross-agent writes,
// idempotent retries, a reattach and refused calls. It returns the agents.
func rebuildWorkload(t *testing.T, s *Service) []CallContext {
	t.Helper()
	ctx := context.Background()
	root := mustAttach(t, s, "/s/root.jsonl")
	reviewer := mustAttachChild(t, s, root.TaskID, "/s/reviewer.jsonl", "reviewer")
	res, err := s.Attach(ctx, AttachRequest{SessionKey: "/s/auto.jsonl", Task: &TaskRef{TaskID: root.TaskID}}, "req-auto")
	if err != nil {
		t.Fatal(err)
	}
	auto := CallContext{TaskID: res.TaskID, Agent: res.Agent}
	res, err = s.Attach(ctx, AttachRequest{SessionKey: "/s/checker.jsonl",
		Task: &TaskRef{TaskID: root.TaskID, ParentAgent: "/root/reviewer", AgentName: "checker"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	checker := CallContext{TaskID: res.TaskID, Agent: res.Agent}
	ctxWindow := int64(100000)
	if _, err := s.Attach(ctx, AttachRequest{SessionKey: "/s/root.jsonl", SessionID: "second",
		Budget: &BudgetInput{ContextWindow: &ctxWindow}}, "req-reattach"); err != nil {
		t.Fatal(err)
	}
	other := mustAttach(t, s, "/s/other.jsonl")

	with := func(cc CallContext, callID string) CallContext { cc.CallID = callID; return cc }
	mustCall(t, s, with(root, "c1"), "notes_write_file", `{"path":"checkpoint.md","text":"goal: ship\nstatus: start"}`)
	mustCall(t, s, with(root, "c2"), "notes_append_to_file", `{"path":"log.md","text":"- one\n"}`)
	mustCall(t, s, with(root, "c3"), "notes_append_to_file", `{"path":"log.md","text":"- two ✅\n"}`)
	mustCall(t, s, root, "notes_append_to_file", `{"path":"log.md","text":"- three, no call id\n"}`)
	mustCall(t, s, with(root, "c4"), "notes_write_file", `{"path":"checkpoint.md","text":"goal: ship\nstatus: overwritten"}`)
	mustCall(t, s, with(root, "c5"), "notes_write_file", `{"path":"/root/reviewer/notes/todo.md","text":"review the importer"}`)
	mustCall(t, s, with(reviewer, "c5"), "notes_append_to_file", `{"path":"todo.md","text":"\n- done"}`) // same call id, other agent
	mustCall(t, s, with(reviewer, "r1"), "notes_write_file", `{"path":"/root/notes/from-reviewer.md","text":"reviewed"}`)
	mustCall(t, s, with(checker, "k1"), "notes_append_to_file", `{"path":"/root/reviewer/notes/todo.md","text":"\n- checked"}`)
	mustCall(t, s, with(auto, "a1"), "notes_write_file", `{"path":"deep/nested/file.md","text":"auto"}`)
	mustCall(t, s, with(other, "c1"), "notes_write_file", `{"path":"checkpoint.md","text":"another task, same call id"}`)

	// Idempotent retries return the first result and write nothing.
	for _, retry := range []struct {
		cc         CallContext
		tool, args string
	}{
		{with(root, "c3"), "notes_append_to_file", `{"path":"log.md","text":"- two ✅\n"}`},
		{with(root, "c5"), "notes_write_file", `{"path":"/root/reviewer/notes/todo.md","text":"review the importer"}`},
		{with(reviewer, "c5"), "notes_append_to_file", `{"path":"todo.md","text":"\n- done"}`},
	} {
		before := rbPosition(t, s)
		got := mustCall(t, s, retry.cc, retry.tool, retry.args)
		if p := rbPosition(t, s); p != before {
			t.Fatalf("retry of %s wrote %d events", retry.cc.CallID, p-before)
		}
		if d := detailsMap(t, got); d["created"] == nil || d["revision"] == nil {
			t.Fatalf("retry result %v", d)
		}
	}
	// Refused calls write nothing.
	before := rbPosition(t, s)
	for _, bad := range []struct {
		cc         CallContext
		tool, args string
		want       error
	}{
		{with(root, "c1"), "notes_write_file", `{"path":"checkpoint.md","text":"different"}`, ErrConflict},
		{other, "notes_write_file", `{"path":"/root/reviewer/notes/x.md","text":"x"}`, ErrForbidden},
		{root, "notes_append_to_file", `{"path":"../escape.md","text":"x"}`, ErrInvalidArgument},
	} {
		if _, err := call(t, s, bad.cc, bad.tool, bad.args); !errors.Is(err, bad.want) {
			t.Fatalf("%s %s: %v, want %v", bad.tool, bad.args, err, bad.want)
		}
	}
	if p := rbPosition(t, s); p != before {
		t.Fatalf("refused calls wrote %d events", p-before)
	}
	return []CallContext{root, reviewer, auto, checker, other}
}

// rbPosition returns the position of the newest event.
func rbPosition(tb testing.TB, s *Service) int64 {
	tb.Helper()
	p, err := s.Store().LastPosition(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// rbDigest fingerprints the service's projections.
func rbDigest(tb testing.TB, s *Service) []projections.TableDigest {
	tb.Helper()
	d, err := projections.Digest(context.Background(), s.Store())
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// rbReads runs the read tools for every agent and returns the results.
func rbReads(tb testing.TB, s *Service, agents []CallContext) []string {
	tb.Helper()
	var out []string
	for _, cc := range agents {
		for _, c := range []struct{ tool, args string }{
			{"notes_list_files_by_prefix", `{"file_order_by":"updated_at"}`},
			{"notes_list_files_by_prefix", `{"prefix":"/root/reviewer/notes/"}`},
			{"notes_read_file", `{"path":"/root/notes/log.md"}`},
			{"notes_read_file", `{"path":"/root/reviewer/notes/todo.md"}`},
			{"notes_search_contents", `{"query":"e"}`},
			{"get_context_remaining", `{}`},
		} {
			res, err := call(tb, s, cc, c.tool, c.args)
			b, _ := json.Marshal(res)
			msg := "<nil>"
			if err != nil {
				msg = err.Error()
			}
			out = append(out, cc.Agent+" "+c.tool+" "+c.args+": "+msg+" "+string(b))
		}
	}
	return out
}

// rbDBPath returns the file of the service's database.
func rbDBPath(tb testing.TB, s *Service) string {
	tb.Helper()
	var seq int
	var name, file string
	if err := s.Store().Reader().QueryRow(`PRAGMA database_list`).Scan(&seq, &name, &file); err != nil {
		tb.Fatal(err)
	}
	return file
}

func TestRebuildEqualsLive(t *testing.T) {
	ctx := context.Background()
	s := mustOpenSQLite(t)
	agents := rebuildWorkload(t, s)
	live := rbDigest(t, s)
	liveReads := rbReads(t, s, agents)
	rows := map[string]int64{}
	for _, d := range live {
		rows[d.Table] = d.Rows
	}
	if rows["tasks"] != 2 || rows["agents"] != 5 || rows["notes"] < 6 || rows["note_calls"] < 8 {
		t.Fatalf("the workload left too little to compare: %+v", live)
	}

	for i := range 2 { // a rebuild is repeatable
		if err := projections.Rebuild(ctx, s.Store()); err != nil {
			t.Fatalf("rebuild %d: %v", i, err)
		}
		if got := rbDigest(t, s); !reflect.DeepEqual(got, live) {
			t.Fatalf("rebuild %d: digest\n %+v\nwant live\n %+v", i, got, live)
		}
	}
	if got := rbReads(t, s, agents); !reflect.DeepEqual(got, liveReads) {
		t.Errorf("tool results differ after a rebuild:\n got %v\nwant %v", got, liveReads)
	}

	// Damage the projections behind the store's back: Rebuild repairs them.
	raw, err := sql.Open("sqlite", eventlog.FileURI(rbDBPath(t, s), url.Values{"_pragma": {"busy_timeout(5000)"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	tampered := "CAST('tampered' AS BLOB)"
	if sealer := s.Store().Sealer(); sealer != nil { // damage that opens
		tampered = fmt.Sprintf("X'%x'", sealer.Seal("note_parts.text", []byte("tampered")))
	}
	for _, q := range []string{
		`DELETE FROM notes WHERE path = 'log.md'`,
		`UPDATE note_parts SET text = ` + tampered,
		`UPDATE notes SET bytes = 8`,
		`DELETE FROM note_calls`,
		`UPDATE agents SET session_id = 'tampered'`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if got := rbDigest(t, s); reflect.DeepEqual(got, live) {
		t.Fatal("digest did not notice the damage")
	}
	if err := projections.Rebuild(ctx, s.Store()); err != nil {
		t.Fatal(err)
	}
	if got := rbDigest(t, s); !reflect.DeepEqual(got, live) {
		t.Fatalf("rebuild after damage: digest\n %+v\nwant\n %+v", got, live)
	}

	// The exported events imported into a fresh store give the same state.
	var log []events.Event
	if err := s.Store().Each(ctx, eventlog.Filter{Limit: 7}, func(ev events.Event) error {
		log = append(log, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	imported := mustOpenAt(t, filepath.Join(t.TempDir(), "imported.db"), OpenOptions{})
	i := 0
	n, err := imported.store.Import(ctx, func() (events.Event, bool, error) {
		if i == len(log) {
			return events.Event{}, false, nil
		}
		i++
		return log[i-1], true, nil
	})
	if err != nil || n != int64(len(log)) {
		t.Fatalf("import: %d %v", n, err)
	}
	if got := rbDigest(t, imported); !reflect.DeepEqual(got, live) {
		t.Fatalf("imported digest\n %+v\nwant live\n %+v", got, live)
	}
	if got := rbReads(t, imported, agents); !reflect.DeepEqual(got, liveReads) {
		t.Errorf("tool results differ after an import:\n got %v\nwant %v", got, liveReads)
	}
	if projections.Combined(rbDigest(t, imported)) != projections.Combined(live) {
		t.Error("combined digests differ")
	}
}
