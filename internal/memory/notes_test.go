package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
)

// notesEnv is the world one TestNotesEdgeCases row runs in: a task of its
// own (its root may have a budget) with the child /root/agent_x, plus a
// shared second task whose child /root/stranger is not in the row's task.
type notesEnv struct {
	s        *Service
	name     string
	actors   map[string]CallContext
	setupRes []ToolResult
}

// Child agents of a row's task, and the agent of the other task.
const (
	childName    = "agent_x"
	childAgent   = "/root/agent_x"
	strangerPath = "/root/stranger/notes/c.md"
	nobodyPath   = "/root/nobody/notes/c.md"
)

// cc returns the call context of a named actor, attaching it on first use:
// root and child (/root/agent_x) of the row's task; reviewer
// (/root/reviewer) and checker (/root/reviewer/checker) in it too; other
// and stranger, the root and /root/stranger of the shared other task;
// foreign (/root/stranger), ghost (/root/nobody) and uppercase
// (/root/Agent) claiming to be in the row's task; badtask, /root of a task
// that does not exist.
func (e *notesEnv) cc(tb testing.TB, actor string) CallContext {
	tb.Helper()
	if actor == "" {
		actor = "root"
	}
	if cc, ok := e.actors[actor]; ok {
		return cc
	}
	var cc CallContext
	switch actor {
	case "child":
		cc = mustAttachChild(tb, e.s, e.cc(tb, "root").TaskID, e.name+"/child", childName)
	case "reviewer":
		cc = mustAttachChild(tb, e.s, e.cc(tb, "root").TaskID, e.name+"/reviewer", "reviewer")
	case "checker":
		e.cc(tb, "reviewer")
		res, err := e.s.Attach(context.Background(), AttachRequest{SessionKey: e.name + "/checker",
			Task: &TaskRef{TaskID: e.cc(tb, "root").TaskID, ParentAgent: "/root/reviewer", AgentName: "checker"}}, "")
		if err != nil {
			tb.Fatalf("attach checker: %v", err)
		}
		if res.Agent != "/root/reviewer/checker" {
			tb.Fatalf("checker attached as %s, want /root/reviewer/checker", res.Agent)
		}
		cc = CallContext{TaskID: res.TaskID, Agent: res.Agent}
	case "foreign":
		cc = CallContext{TaskID: e.cc(tb, "root").TaskID, Agent: "/root/stranger"}
	case "ghost":
		cc = CallContext{TaskID: e.cc(tb, "root").TaskID, Agent: "/root/nobody"}
	case "badtask":
		cc = CallContext{TaskID: "01JNOSUCHTASK0000000000000", Agent: "/root"}
	case "uppercase":
		cc = CallContext{TaskID: e.cc(tb, "root").TaskID, Agent: "/root/Agent"}
	default:
		tb.Fatalf("unknown actor %q", actor)
	}
	e.actors[actor] = cc
	return cc
}

// attachWithBudget attaches a new root session with a budget.
func attachWithBudget(tb testing.TB, s *Service, sessionKey string, b *BudgetInput) CallContext {
	tb.Helper()
	res, err := s.Attach(context.Background(), AttachRequest{SessionKey: sessionKey, Budget: b}, "")
	if err != nil {
		tb.Fatalf("attach %s: %v", sessionKey, err)
	}
	return CallContext{TaskID: res.TaskID, Agent: res.Agent}
}

func capBytes(n int64) *BudgetInput { return &BudgetInput{NotesMaxFileBytes: &n} }

func outputChars(n int64) *BudgetInput { return &BudgetInput{MaxToolOutputChars: &n} }

// jsonArgs marshals tool arguments.
func jsonArgs(tb testing.TB, v map[string]any) string {
	tb.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// args marshals tool arguments given as key, value pairs.
func args(kv ...any) string {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// wantFields checks that every top-level field of the JSON object want
// has the same value in got.
func wantFields(tb testing.TB, got map[string]any, want string) {
	tb.Helper()
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		tb.Fatalf("bad want %s: %v", want, err)
	}
	for k, v := range w {
		g, ok := got[k]
		if !ok {
			tb.Errorf("details has no field %q (details %v)", k, got)
			continue
		}
		if !reflect.DeepEqual(g, v) {
			tb.Errorf("details.%s = %#v, want %#v", k, g, v)
		}
	}
}

// filePaths returns details.files[].path of a list or search result.
func filePaths(tb testing.TB, d map[string]any) []string {
	tb.Helper()
	files, ok := d["files"].([]any)
	if !ok {
		tb.Fatalf("details.files is %T, want an array (details %v)", d["files"], d)
	}
	out := []string{}
	for _, f := range files {
		out = append(out, f.(map[string]any)["path"].(string))
	}
	return out
}

// fileField returns details.files[i][field].
func fileField(tb testing.TB, d map[string]any, i int, field string) any {
	tb.Helper()
	files := d["files"].([]any)
	if i >= len(files) {
		tb.Fatalf("details.files has %d entries, want more than %d", len(files), i)
	}
	return files[i].(map[string]any)[field]
}

// readText reads a whole note (it must fit one page) as actor.
func readText(tb testing.TB, s *Service, cc CallContext, path string) string {
	tb.Helper()
	d := detailsMap(tb, mustCall(tb, s, cc, "notes_read_file", args("path", path)))
	if d["next_offset_chars"] != nil {
		tb.Fatalf("read %s: more than one page", path)
	}
	return d["text"].(string)
}

// logState is what a failed request must leave unchanged.
type logState struct {
	position int64
	digest   []projections.TableDigest
}

func stateOf(tb testing.TB, s *Service) logState {
	tb.Helper()
	ctx := context.Background()
	pos, err := s.Store().LastPosition(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	d, err := projections.Digest(ctx, s.Store())
	if err != nil {
		tb.Fatal(err)
	}
	return logState{pos, d}
}

func checkUnchanged(tb testing.TB, s *Service, before logState) {
	tb.Helper()
	after := stateOf(tb, s)
	if after.position != before.position {
		tb.Errorf("event log moved from position %d to %d on a failed request", before.position, after.position)
	}
	if !reflect.DeepEqual(after.digest, before.digest) {
		tb.Errorf("projections changed on a failed request:\nbefore %v\nafter  %v", before.digest, after.digest)
	}
}

// checkError checks that err is a client-safe *Error of kind.
func checkError(tb testing.TB, err, kind error, msg string) *Error {
	tb.Helper()
	if err == nil {
		tb.Fatalf("succeeded, want %v", kind)
	}
	if !errors.Is(err, kind) {
		tb.Fatalf("error %q is not %v", err, kind)
	}
	var e *Error
	if !errors.As(err, &e) {
		tb.Fatalf("error %q (%T) is not a *memory.Error", err, err)
	}
	if e.Message == "" || strings.Contains(strings.ToLower(e.Message), "sql") {
		tb.Errorf("error message %q is empty or leaks internals", e.Message)
	}
	if msg != "" && !strings.Contains(e.Message, msg) {
		tb.Errorf("error message %q does not contain %q", e.Message, msg)
	}
	return e
}

// checkTooLarge checks a too_large error's details.
func checkTooLarge(tb testing.TB, err error, bytes, limit, remaining int64) {
	tb.Helper()
	e := checkError(tb, err, ErrTooLarge, "")
	want := map[string]any{"bytes": bytes, "limit": limit, "remaining": remaining}
	if !reflect.DeepEqual(e.Details, want) {
		tb.Errorf("too_large details = %#v, want %#v", e.Details, want)
	}
}

type noteStep struct {
	as, tool, args string
}

func write(as, path, text string) noteStep {
	return noteStep{as, "notes_write_file", args("path", path, "text", text)}
}

func appendTo(as, path, text string) noteStep {
	return noteStep{as, "notes_append_to_file", args("path", path, "text", text)}
}

type notesCase struct {
	name   string
	budget *BudgetInput // of the row's root agent
	setup  []noteStep   // must succeed; results in env.setupRes
	as     string       // actor of the call (default root)
	tool   string
	args   string
	want   string   // JSON object: fields details must have
	paths  []string // non-nil: details.files[].path, in order
	err    error    // expected error kind
	msg    string   // substring of the error message
	tooBig []int64  // bytes, limit, remaining of a too_large error
	check  func(t *testing.T, e *notesEnv, d map[string]any)
	run    func(t *testing.T, e *notesEnv) // instead of tool/args
	fresh  bool                            // a database of its own (no other task)
}

const abc = "a\nb\nc"

func TestNotesEdgeCases(t *testing.T) {
	s := mustOpenService(t)
	other := mustAttach(t, s, "other-task/root")
	stranger := mustAttachChild(t, s, other.TaskID, "other-task/stranger", "stranger")
	mustCall(t, s, stranger, "notes_write_file", args("path", "c.md", "text", "stranger's note"))
	mustCall(t, s, other, "notes_write_file", args("path", "a.md", "text", "other task's root note"))

	emoji250k := strings.Repeat("😀", 250_000)
	long30k := func() string {
		var b strings.Builder
		for i := 0; b.Len() < 30_000; i++ {
			fmt.Fprintf(&b, "%05d,", i)
		}
		return b.String()
	}()

	cases := []notesCase{
		// H1: prefix is a plain string prefix.
		{name: "H01 prefix check lists checkpoint.md without a check/ directory",
			setup: []noteStep{write("", "checkpoint.md", "cp"), write("", "notes.md", "n")},
			tool:  "notes_list_files_by_prefix", args: `{"prefix":"check"}`,
			paths: []string{"/root/notes/checkpoint.md"},
			want:  `{"n_returned":1,"omitted":0}`},
		{name: "H01 prefix che matches a file and a directory",
			setup: []noteStep{write("", "checkpoint.md", "cp"), write("", "checks/one.md", "1"), write("", "notes.md", "n")},
			tool:  "notes_list_files_by_prefix", args: `{"prefix":"che"}`,
			paths: []string{"/root/notes/checkpoint.md", "/root/notes/checks/one.md"}},
		{name: "H01 cross-agent prefix /root/agent_x/notes/chk",
			setup: []noteStep{write("child", "chk1.md", "1"), write("child", "other.md", "2"), write("", "chk2.md", "3")},
			tool:  "notes_list_files_by_prefix", args: `{"prefix":"/root/agent_x/notes/chk"}`,
			paths: []string{"/root/agent_x/notes/chk1.md"}},
		{name: "H01 prefix matching nothing lists nothing",
			setup: []noteStep{write("", "checkpoint.md", "cp")},
			tool:  "notes_list_files_by_prefix", args: `{"prefix":"zzz"}`,
			paths: []string{}, want: `{"n_returned":0,"omitted":0}`},

		// H2: a/ versus a.
		{name: "H02 prefix a/ matches a/x.md and not ab.md",
			setup: []noteStep{write("", "a/x.md", "1"), write("", "ab.md", "2"), write("", "b.md", "3")},
			tool:  "notes_list_files_by_prefix", args: `{"prefix":"a/"}`,
			paths: []string{"/root/notes/a/x.md"}},
		{name: "H02 prefix a matches a/x.md and ab.md",
			setup: []noteStep{write("", "a/x.md", "1"), write("", "ab.md", "2"), write("", "b.md", "3")},
			tool:  "notes_list_files_by_prefix", args: `{"prefix":"a"}`,
			paths: []string{"/root/notes/a/x.md", "/root/notes/ab.md"}},
		{name: "H02 absolute prefix /root/notes/a/ matches a/x.md only",
			setup: []noteStep{write("", "a/x.md", "1"), write("", "ab.md", "2")},
			tool:  "notes_list_files_by_prefix", args: `{"prefix":"/root/notes/a/"}`,
			paths: []string{"/root/notes/a/x.md"}},
		{name: "H02 search path_prefix a/ excludes ab.md",
			setup: []noteStep{write("", "a/x.md", "hit"), write("", "ab.md", "hit")},
			tool:  "notes_search_contents", args: `{"query":"hit","path_prefix":"a/"}`,
			paths: []string{"/root/notes/a/x.md"}},

		// H3: no prefix lists the caller's whole root and nothing else.
		{name: "H03 omitted prefix lists the whole own root only",
			setup: []noteStep{write("", "a.md", "1"), write("", "b/c.md", "2"), write("child", "child.md", "3")},
			tool:  "notes_list_files_by_prefix", args: `{}`,
			paths: []string{"/root/notes/a.md", "/root/notes/b/c.md"}},
		{name: "H03 null prefix lists the whole own root only",
			setup: []noteStep{write("", "a.md", "1"), write("child", "child.md", "3")},
			tool:  "notes_list_files_by_prefix", args: `{"prefix":null}`,
			paths: []string{"/root/notes/a.md"}},
		{name: "H03 empty prefix is the same as null",
			setup: []noteStep{write("", "a.md", "1"), write("child", "child.md", "3")},
			tool:  "notes_list_files_by_prefix", args: `{"prefix":""}`,
			paths: []string{"/root/notes/a.md"}},
		{name: "H03 no arguments at all lists the whole own root",
			setup: []noteStep{write("", "a.md", "1")},
			tool:  "notes_list_files_by_prefix", args: ``,
			paths: []string{"/root/notes/a.md"}},
		{name: "H03 a child's omitted prefix lists only the child's notes",
			setup: []noteStep{write("", "a.md", "1"), write("child", "child.md", "3")},
			as:    "child", tool: "notes_list_files_by_prefix", args: `{}`,
			paths: []string{"/root/agent_x/notes/child.md"}},
		{name: "H03 omitted path_prefix searches the whole own root only",
			setup: []noteStep{write("", "a.md", "needle"), write("", "d/b.md", "needle"), write("child", "c.md", "needle")},
			tool:  "notes_search_contents", args: `{"query":"needle"}`,
			paths: []string{"/root/notes/a.md", "/root/notes/d/b.md"}},
		{name: "H03 empty root lists nothing",
			tool: "notes_list_files_by_prefix", args: `{}`,
			paths: []string{}, want: `{"n_returned":0,"omitted":0}`},

		// H4: an overwrite keeps created_at and moves updated_at.
		{name: "H04 overwrite keeps created_at and changes updated_at",
			setup: []noteStep{write("", "a.md", "v1"), {"", "notes_list_files_by_prefix", `{}`}, write("", "a.md", "version 2")},
			tool:  "notes_list_files_by_prefix", args: `{}`,
			paths: []string{"/root/notes/a.md"},
			check: func(t *testing.T, e *notesEnv, d map[string]any) {
				before := detailsMap(t, e.setupRes[1])
				if got, want := fileField(t, d, 0, "created_at"), fileField(t, before, 0, "created_at"); got != want {
					t.Errorf("created_at = %v after overwrite, want %v", got, want)
				}
				if got, old := fileField(t, d, 0, "updated_at"), fileField(t, before, 0, "updated_at"); got == old {
					t.Errorf("updated_at = %v unchanged by the overwrite", got)
				}
				if got := fileField(t, d, 0, "bytes"); got != 9.0 {
					t.Errorf("bytes = %v, want 9", got)
				}
				for _, f := range []string{"created_at", "updated_at"} {
					v := fileField(t, d, 0, f).(string)
					if _, err := time.Parse("2006-01-02T15:04:05.000Z", v); err != nil {
						t.Errorf("%s %q is not RFC 3339 UTC with milliseconds", f, v)
					}
				}
			}},
		{name: "H04 overwrite result reports created=false and the next revision",
			setup: []noteStep{write("", "a.md", "v1")},
			tool:  "notes_write_file", args: args("path", "a.md", "text", "v2!"),
			want: `{"path":"/root/notes/a.md","bytes":3,"created":false,"revision":2}`},
		{name: "H04 search created_at is unchanged by an overwrite",
			setup: []noteStep{write("", "a.md", "needle"), {"", "notes_search_contents", `{"query":"needle"}`}, write("", "a.md", "needle again")},
			tool:  "notes_search_contents", args: `{"query":"needle"}`,
			check: func(t *testing.T, e *notesEnv, d map[string]any) {
				before := detailsMap(t, e.setupRes[1])
				if got, want := fileField(t, d, 0, "created_at"), fileField(t, before, 0, "created_at"); got != want {
					t.Errorf("created_at = %v after overwrite, want %v", got, want)
				}
			}},

		// H5: recent_file_first is by created_at, not updated_at.
		{name: "H05 recent_file_first orders by created_at descending",
			setup: oldMidNew(), tool: "notes_search_contents", args: `{"query":"x","recent_file_first":true}`,
			paths: []string{"/root/notes/new.md", "/root/notes/mid.md", "/root/notes/old.md"}},
		{name: "H05 recent_file_first=false orders by name",
			setup: oldMidNew(), tool: "notes_search_contents", args: `{"query":"x","recent_file_first":false}`,
			paths: []string{"/root/notes/mid.md", "/root/notes/new.md", "/root/notes/old.md"}},
		{name: "H05 list file_order_by=created_at descending ignores the overwrite",
			setup: oldMidNew(), tool: "notes_list_files_by_prefix", args: `{"file_order_by":"created_at","file_order":"descending"}`,
			paths: []string{"/root/notes/new.md", "/root/notes/mid.md", "/root/notes/old.md"}},
		{name: "H05 list file_order_by=created_at ascending",
			setup: oldMidNew(), tool: "notes_list_files_by_prefix", args: `{"file_order_by":"created_at"}`,
			paths: []string{"/root/notes/old.md", "/root/notes/mid.md", "/root/notes/new.md"}},

		// H6: updated_at order and the default name order.
		{name: "H06 updated_at descending puts the last modified file first",
			setup: oldMidNew(), tool: "notes_list_files_by_prefix", args: `{"file_order_by":"updated_at","file_order":"descending"}`,
			paths: []string{"/root/notes/old.md", "/root/notes/new.md", "/root/notes/mid.md"}},
		{name: "H06 updated_at ascending",
			setup: oldMidNew(), tool: "notes_list_files_by_prefix", args: `{"file_order_by":"updated_at","file_order":"ascending"}`,
			paths: []string{"/root/notes/mid.md", "/root/notes/new.md", "/root/notes/old.md"}},
		{name: "H06 default order is name ascending",
			setup: oldMidNew(), tool: "notes_list_files_by_prefix", args: `{}`,
			paths: []string{"/root/notes/mid.md", "/root/notes/new.md", "/root/notes/old.md"}},
		{name: "H06 explicit nulls take the defaults",
			setup: oldMidNew(), tool: "notes_list_files_by_prefix", args: `{"file_order_by":null,"file_order":null,"max_results":null}`,
			paths: []string{"/root/notes/mid.md", "/root/notes/new.md", "/root/notes/old.md"}},
		{name: "H06 name descending",
			setup: oldMidNew(), tool: "notes_list_files_by_prefix", args: `{"file_order_by":"name","file_order":"descending"}`,
			paths: []string{"/root/notes/old.md", "/root/notes/new.md", "/root/notes/mid.md"}},
		{name: "H06 max_results keeps the first files of the order and counts the rest",
			setup: oldMidNew(), tool: "notes_list_files_by_prefix", args: `{"file_order_by":"updated_at","file_order":"descending","max_results":1}`,
			paths: []string{"/root/notes/old.md"}, want: `{"n_returned":1,"omitted":2}`},

		// H7: empty writes and appends are legal.
		{name: "H07 empty write creates a 0-byte file",
			tool: "notes_write_file", args: `{"path":"empty.md","text":""}`,
			want: `{"path":"/root/notes/empty.md","bytes":0,"created":true,"revision":1}`,
			check: func(t *testing.T, e *notesEnv, d map[string]any) {
				if got := readText(t, e.s, e.cc(t, ""), "empty.md"); got != "" {
					t.Errorf("content %q, want empty", got)
				}
				l := detailsMap(t, mustCall(t, e.s, e.cc(t, ""), "notes_list_files_by_prefix", `{}`))
				if got := fileField(t, l, 0, "bytes"); got != 0.0 {
					t.Errorf("listed bytes %v, want 0", got)
				}
			}},
		{name: "H07 empty write truncates an existing file",
			setup: []noteStep{write("", "a.md", "old content")},
			tool:  "notes_write_file", args: `{"path":"a.md","text":""}`,
			want: `{"bytes":0,"created":false,"revision":2}`,
			check: func(t *testing.T, e *notesEnv, d map[string]any) {
				if got := readText(t, e.s, e.cc(t, ""), "a.md"); got != "" {
					t.Errorf("content %q, want empty", got)
				}
			}},
		{name: "H07 empty append leaves the content unchanged",
			setup: []noteStep{write("", "a.md", "keep")},
			tool:  "notes_append_to_file", args: `{"path":"a.md","text":""}`,
			want: `{"path":"/root/notes/a.md","bytes":4,"created":false}`,
			check: func(t *testing.T, e *notesEnv, d map[string]any) {
				if got := readText(t, e.s, e.cc(t, ""), "a.md"); got != "keep" {
					t.Errorf("content %q, want %q", got, "keep")
				}
			}},
		{name: "H07 empty append creates a missing file",
			tool: "notes_append_to_file", args: `{"path":"new.md","text":""}`,
			want: `{"path":"/root/notes/new.md","bytes":0,"created":true,"revision":1}`,
			check: func(t *testing.T, e *notesEnv, d map[string]any) {
				l := detailsMap(t, mustCall(t, e.s, e.cc(t, ""), "notes_list_files_by_prefix", `{}`))
				if got := filePaths(t, l); !slices.Equal(got, []string{"/root/notes/new.md"}) {
					t.Errorf("listed %v, want the new file", got)
				}
			}},

		// H8: the cap counts UTF-8 bytes, and exactly the cap is fine.
		{name: "H08 write of exactly the cap succeeds", budget: capBytes(10),
			tool: "notes_write_file", args: args("path", "a.md", "text", "0123456789"),
			want: `{"bytes":10,"created":true}`},
		{name: "H08 write of one byte over the cap fails", budget: capBytes(10),
			tool: "notes_write_file", args: args("path", "a.md", "text", "0123456789x"),
			err: ErrTooLarge, tooBig: []int64{11, 10, 10}, msg: "11 bytes"},
		{name: "H08 exact cap in emoji", budget: capBytes(8),
			tool: "notes_write_file", args: args("path", "e.md", "text", "😀😀"),
			want: `{"bytes":8,"created":true}`},
		{name: "H08 emoji over the cap counts UTF-8 bytes, not code points", budget: capBytes(7),
			tool: "notes_write_file", args: args("path", "e.md", "text", "😀😀"),
			err: ErrTooLarge, tooBig: []int64{8, 7, 7}},
		{name: "H08 one byte over the cap in emoji", budget: capBytes(8),
			tool: "notes_write_file", args: args("path", "e.md", "text", "😀😀!"),
			err: ErrTooLarge, tooBig: []int64{9, 8, 8}},
		{name: "H08 append reaching exactly the cap succeeds", budget: capBytes(10),
			setup: []noteStep{write("", "a.md", "012345")},
			tool:  "notes_append_to_file", args: args("path", "a.md", "text", "6789"),
			want: `{"bytes":10,"created":false,"revision":2}`},
		{name: "H08 append of emoji reaching exactly the cap succeeds", budget: capBytes(12),
			setup: []noteStep{write("", "a.md", "😀")},
			tool:  "notes_append_to_file", args: args("path", "a.md", "text", "😀😀"),
			want: `{"bytes":12}`},
		{name: "H08 overwrite of a full file with exactly the cap succeeds", budget: capBytes(4),
			setup: []noteStep{write("", "a.md", "full")},
			tool:  "notes_write_file", args: args("path", "a.md", "text", "😀"),
			want: `{"bytes":4,"revision":2}`},
		{name: "H08 default cap: 250,000 × 😀 = 1,000,000 bytes succeeds", fresh: true,
			tool: "notes_write_file", args: args("path", "big.md", "text", emoji250k),
			want: `{"path":"/root/notes/big.md","bytes":1000000,"created":true,"revision":1}`,
			check: func(t *testing.T, e *notesEnv, d map[string]any) {
				r := detailsMap(t, mustCall(t, e.s, e.cc(t, ""), "notes_read_file", `{"path":"big.md","offset_chars":249999}`))
				wantFields(t, r, `{"text":"😀","total_chars":250000,"end_chars":250000,"next_offset_chars":null}`)
			}},
		{name: "H08 default cap: one byte more fails", fresh: true,
			tool: "notes_write_file", args: args("path", "big.md", "text", emoji250k+"!"),
			err: ErrTooLarge, tooBig: []int64{1_000_001, 1_000_000, 1_000_000}},

		// H9: a failed append leaves the file unchanged and reports what is left.
		{name: "H09 append over the cap fails, leaves the file and reports remaining", budget: capBytes(10),
			setup: []noteStep{write("", "a.md", "123456")},
			tool:  "notes_append_to_file", args: args("path", "a.md", "text", "abcde"),
			err: ErrTooLarge, tooBig: []int64{11, 10, 4}, msg: "only 4 bytes left",
			check: func(t *testing.T, e *notesEnv, _ map[string]any) {
				if got := readText(t, e.s, e.cc(t, ""), "a.md"); got != "123456" {
					t.Errorf("content %q after the failed append, want %q", got, "123456")
				}
			}},
		{name: "H09 append to a full file reports 0 remaining", budget: capBytes(10),
			setup: []noteStep{write("", "a.md", "0123456789")},
			tool:  "notes_append_to_file", args: args("path", "a.md", "text", "x"),
			err: ErrTooLarge, tooBig: []int64{11, 10, 0}},
		{name: "H09 append in emoji over the cap counts bytes", budget: capBytes(10),
			setup: []noteStep{write("", "a.md", "😀")},
			tool:  "notes_append_to_file", args: args("path", "a.md", "text", "😀😀"),
			err: ErrTooLarge, tooBig: []int64{12, 10, 6}},
		{name: "H09 append over the cap to a missing file creates nothing", budget: capBytes(10),
			tool: "notes_append_to_file", args: args("path", "n.md", "text", "0123456789x"),
			err: ErrTooLarge, tooBig: []int64{11, 10, 10},
			check: func(t *testing.T, e *notesEnv, _ map[string]any) {
				_, err := call(t, e.s, e.cc(t, ""), "notes_read_file", `{"path":"n.md"}`)
				checkError(t, err, ErrNotFound, "no note file")
			}},

		// H10: concurrent appends all land whole, and the cap holds.
		{name: "H10 concurrent appends from two goroutines land whole", run: runConcurrentAppends},
		{name: "H10 concurrent appends through two stores on one database file", run: runTwoStoreAppends},
		{name: "H10 concurrent appends never exceed the cap", budget: capBytes(100), run: runCappedConcurrentAppends},

		// H11: read-your-writes; readers never see partial state.
		{name: "H11 read right after a write returns the new content",
			setup: []noteStep{write("", "a.md", "old")},
			tool:  "notes_write_file", args: args("path", "a.md", "text", "new content"),
			check: func(t *testing.T, e *notesEnv, _ map[string]any) {
				if got := readText(t, e.s, e.cc(t, ""), "a.md"); got != "new content" {
					t.Errorf("read %q right after the write, want %q", got, "new content")
				}
			}},
		{name: "H11 read right after an append returns the new content",
			setup: []noteStep{write("", "a.md", "one\n")},
			tool:  "notes_append_to_file", args: args("path", "a.md", "text", "two\n"),
			check: func(t *testing.T, e *notesEnv, _ map[string]any) {
				if got := readText(t, e.s, e.cc(t, ""), "a.md"); got != "one\ntwo\n" {
					t.Errorf("read %q right after the append, want %q", got, "one\ntwo\n")
				}
			}},
		{name: "H11 concurrent list and search show only committed files", run: runListDuringWrites},

		// H12: negative lines count from the end; a trailing \n ends in an empty line.
		{name: "H12 start_line=-1 returns the last line",
			setup: []noteStep{write("", "a.md", abc)},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":-1}`,
			want: `{"path":"/root/notes/a.md","text":"c","start_line":3,"stop_line":3,"total_lines":3}`},
		{name: "H12 with a trailing newline the last line is empty",
			setup: []noteStep{write("", "a.md", "a\nb\n")},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":-1}`,
			want: `{"text":"","start_line":3,"stop_line":3,"total_lines":3,"total_chars":0}`},
		{name: "H12 negative stop_line counts from the end",
			setup: []noteStep{write("", "a.md", abc)},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":-3,"stop_line":-2}`,
			want: `{"text":"a\nb","start_line":1,"stop_line":2}`},
		{name: "H12 whole read keeps the trailing newline",
			setup: []noteStep{write("", "a.md", "a\nb\n")},
			tool:  "notes_read_file", args: `{"path":"a.md"}`,
			want: `{"text":"a\nb\n","start_line":1,"stop_line":3,"total_lines":3,"total_chars":4,"next_offset_chars":null}`},

		// H13: a single line, and the empty range error.
		{name: "H13 start_line=2 stop_line=2 returns b",
			setup: []noteStep{write("", "a.md", abc)},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":2,"stop_line":2}`,
			want: `{"text":"b","start_line":2,"stop_line":2,"total_lines":3,"offset_chars":0,"end_chars":1,"total_chars":1,"next_offset_chars":null}`},
		{name: "H13 start_line=2.0 stop_line=2.0 (integral JSON numbers) returns b",
			setup: []noteStep{write("", "a.md", abc)},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":2.0,"stop_line":2e0}`,
			want: `{"text":"b","start_line":2,"stop_line":2}`},
		{name: "H13 start_line=3 stop_line=2 is an empty-range error",
			setup: []noteStep{write("", "a.md", abc)},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":3,"stop_line":2}`,
			err: ErrInvalidArgument, msg: "line range 3..2 is empty"},
		{name: "H13 start_line past the last line is an empty range",
			setup: []noteStep{write("", "a.md", abc)},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":5}`,
			err: ErrInvalidArgument, msg: "is empty"},
		{name: "H13 stop_line before the first line is an empty range",
			setup: []noteStep{write("", "a.md", abc)},
			tool:  "notes_read_file", args: `{"path":"a.md","stop_line":-100}`,
			err: ErrInvalidArgument, msg: "is empty"},

		// H14: out-of-range lines clamp.
		{name: "H14 start_line=-100 clamps to line 1",
			setup: []noteStep{write("", "a.md", abc)},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":-100}`,
			want: `{"text":"a\nb\nc","start_line":1,"stop_line":3}`},
		{name: "H14 stop_line=999 clamps to the last line",
			setup: []noteStep{write("", "a.md", abc)},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":2,"stop_line":999}`,
			want: `{"text":"b\nc","start_line":2,"stop_line":3}`},
		{name: "H14 start_line=0 clamps to line 1",
			setup: []noteStep{write("", "a.md", abc)},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":0,"stop_line":1}`,
			want: `{"text":"a","start_line":1,"stop_line":1}`},
		{name: "H14 schema minimum -1000000 is accepted and clamps",
			setup: []noteStep{write("", "a.md", abc)},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":-1000000,"stop_line":1000000000}`,
			want: `{"text":"a\nb\nc","start_line":1,"stop_line":3}`},
		{name: "H14 lines of an empty file",
			setup: []noteStep{write("", "a.md", "")},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":-100,"stop_line":999}`,
			want: `{"text":"","start_line":1,"stop_line":1,"total_lines":1,"total_chars":0}`},

		// H15: lines first, then chars.
		{name: "H15 start_line=2 stop_line=2 offset_chars=2 limit_chars=4 returns ogre",
			setup: []noteStep{write("", "a.md", "first line\nprogress: smoke test\nlast line")},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":2,"stop_line":2,"offset_chars":2,"limit_chars":4}`,
			want: `{"text":"ogre","start_line":2,"stop_line":2,"total_lines":3,"offset_chars":2,"end_chars":6,"total_chars":20,"next_offset_chars":6}`},
		{name: "H15 chars of a multi-line selection count the newlines",
			setup: []noteStep{write("", "a.md", "ab\ncd\nef")},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":2,"offset_chars":1,"limit_chars":3}`,
			want: `{"text":"d\ne","start_line":2,"stop_line":3,"offset_chars":1,"end_chars":4,"total_chars":5,"next_offset_chars":4}`},

		// H16: an offset past the end clamps to the end.
		{name: "H16 offset_chars past the end returns empty with offset = end = total",
			setup: []noteStep{write("", "a.md", "abc")},
			tool:  "notes_read_file", args: `{"path":"a.md","offset_chars":10}`,
			want: `{"text":"","offset_chars":3,"end_chars":3,"total_chars":3,"next_offset_chars":null}`},
		{name: "H16 offset_chars exactly at the end",
			setup: []noteStep{write("", "a.md", "abc")},
			tool:  "notes_read_file", args: `{"path":"a.md","offset_chars":3,"limit_chars":5}`,
			want: `{"text":"","offset_chars":3,"end_chars":3,"total_chars":3,"next_offset_chars":null}`},
		{name: "H16 a huge offset_chars clamps to the end",
			setup: []noteStep{write("", "a.md", "abc")},
			tool:  "notes_read_file", args: `{"path":"a.md","offset_chars":99999999999999999999999}`,
			want: `{"text":"","offset_chars":3,"end_chars":3,"total_chars":3}`},
		{name: "H16 offset past the end of a line selection",
			setup: []noteStep{write("", "a.md", abc)},
			tool:  "notes_read_file", args: `{"path":"a.md","start_line":2,"stop_line":2,"offset_chars":7}`,
			want: `{"text":"","offset_chars":1,"end_chars":1,"total_chars":1}`},

		// H17: paging a long line reconstructs it.
		{name: "H17 paging a 30,000-char line in 10,000-char pages", run: func(t *testing.T, e *notesEnv) {
			cc := e.cc(t, "")
			mustCall(t, e.s, cc, "notes_write_file", args("path", "long.md", "text", long30k))
			var got strings.Builder
			for off := 0; off < 30_000; off += 10_000 {
				d := detailsMap(t, mustCall(t, e.s, cc, "notes_read_file", args("path", "long.md", "offset_chars", off, "limit_chars", 10_000)))
				next := any(float64(off + 10_000))
				if off+10_000 == 30_000 {
					next = nil
				}
				wantFields(t, d, jsonArgs(t, map[string]any{"offset_chars": off, "end_chars": off + 10_000,
					"total_chars": 30_000, "total_lines": 1, "next_offset_chars": next}))
				got.WriteString(d["text"].(string))
			}
			if got.String() != long30k {
				t.Errorf("pages do not reconstruct the file")
			}
		}},
		{name: "H17 following next_offset_chars under the output budget reconstructs the file", run: func(t *testing.T, e *notesEnv) {
			cc := e.cc(t, "")
			mustCall(t, e.s, cc, "notes_write_file", args("path", "long.md", "text", long30k))
			var got strings.Builder
			off, pages := 0, 0
			for {
				res := mustCall(t, e.s, cc, "notes_read_file", args("path", "long.md", "offset_chars", off))
				if n := utf8.RuneCountInString(res.Content[0].Text); n > DefaultMaxToolOutputChars {
					t.Errorf("page at %d is %d chars, over the %d budget", off, n, DefaultMaxToolOutputChars)
				}
				d := detailsMap(t, res)
				if d["offset_chars"] != float64(off) {
					t.Fatalf("offset_chars %v, want %d", d["offset_chars"], off)
				}
				text := d["text"].(string)
				if !strings.HasSuffix(res.Content[0].Text, "\n"+text) {
					t.Errorf("content does not end with the fragment")
				}
				if end := d["end_chars"].(float64); int(end) != off+utf8.RuneCountInString(text) {
					t.Errorf("end_chars %v does not describe the %d returned chars from %d", end, utf8.RuneCountInString(text), off)
				}
				got.WriteString(text)
				pages++
				if d["next_offset_chars"] == nil {
					break
				}
				if d["next_offset_chars"] != d["end_chars"] {
					t.Fatalf("next_offset_chars %v != end_chars %v", d["next_offset_chars"], d["end_chars"])
				}
				off = int(d["next_offset_chars"].(float64))
			}
			if got.String() != long30k {
				t.Errorf("pages do not reconstruct the file")
			}
			if pages != 3 {
				t.Errorf("%d pages, want 3", pages)
			}
		}},

		// H18: code points, never split.
		{name: "H18 limit_chars=1 on emoji returns one whole emoji",
			setup: []noteStep{write("", "e.md", "😀🎉👍")},
			tool:  "notes_read_file", args: `{"path":"e.md","limit_chars":1}`,
			want: `{"text":"😀","offset_chars":0,"end_chars":1,"total_chars":3,"next_offset_chars":1}`},
		{name: "H18 offset_chars counts code points",
			setup: []noteStep{write("", "e.md", "😀🎉👍")},
			tool:  "notes_read_file", args: `{"path":"e.md","offset_chars":1,"limit_chars":1}`,
			want: `{"text":"🎉","offset_chars":1,"end_chars":2,"next_offset_chars":2}`},
		{name: "H18 one-char pages of emoji concatenate to the original", run: func(t *testing.T, e *notesEnv) {
			const text = "😀a🎉\n👍é中𝄞"
			cc := e.cc(t, "")
			mustCall(t, e.s, cc, "notes_write_file", args("path", "e.md", "text", text))
			var got strings.Builder
			for off := 0; ; {
				d := detailsMap(t, mustCall(t, e.s, cc, "notes_read_file", args("path", "e.md", "offset_chars", off, "limit_chars", 1)))
				page := d["text"].(string)
				if !utf8.ValidString(page) || utf8.RuneCountInString(page) != 1 {
					t.Fatalf("page at %d is %q, want one whole code point", off, page)
				}
				got.WriteString(page)
				if d["next_offset_chars"] == nil {
					break
				}
				off = int(d["next_offset_chars"].(float64))
			}
			if got.String() != text {
				t.Errorf("pages give %q, want %q", got.String(), text)
			}
		}},
		{name: "H18 a tiny output budget still returns one whole emoji after a whole header", budget: outputChars(10),
			setup: []noteStep{write("", "e.md", "😀🎉👍")},
			tool:  "notes_read_file", args: `{"path":"e.md"}`,
			want: `{"text":"😀","end_chars":1,"next_offset_chars":1}`,
			check: func(t *testing.T, e *notesEnv, d map[string]any) {
				res := mustCall(t, e.s, e.cc(t, ""), "notes_read_file", `{"path":"e.md"}`)
				header, body, ok := strings.Cut(res.Content[0].Text, "\n")
				if !ok || body != "😀" {
					t.Errorf("content %q, want a header line then 😀", res.Content[0].Text)
				}
				var h map[string]any
				if err := json.Unmarshal([]byte(header), &h); err != nil {
					t.Errorf("header %q is not a whole JSON line: %v", header, err)
				}
			}},

		// H19: path validation (more rows are generated below).
		{name: "H19 the /root/.../notes/ form is accepted",
			tool: "notes_write_file", args: args("path", "/root/notes/x.md", "text", "t"),
			want: `{"path":"/root/notes/x.md","created":true}`,
			check: func(t *testing.T, e *notesEnv, _ map[string]any) {
				if got := readText(t, e.s, e.cc(t, ""), "x.md"); got != "t" {
					t.Errorf("relative read %q, want t", got)
				}
			}},
		{name: "H19 a 512-char path is accepted, and so is its full path",
			tool: "notes_write_file", args: args("path", strings.Repeat("a", 509)+".md", "text", "t"),
			want: `{"created":true}`,
			check: func(t *testing.T, e *notesEnv, d map[string]any) {
				// Responses carry the full path; it can be passed back unchanged.
				full := d["path"].(string)
				if full != "/root/notes/"+strings.Repeat("a", 509)+".md" {
					t.Fatalf("path %q", full)
				}
				if got := readText(t, e.s, e.cc(t, ""), full); got != "t" {
					t.Errorf("read by its full path %q", got)
				}
				l := detailsMap(t, mustCall(t, e.s, e.cc(t, ""), "notes_list_files_by_prefix", args("prefix", full)))
				if got := filePaths(t, l); len(got) != 1 || got[0] != full {
					t.Errorf("list by the full path as a prefix: %v", got)
				}
			}},
		{name: "H19 a 512-code-point path of multi-byte chars is accepted",
			tool: "notes_write_file", args: args("path", strings.Repeat("é", 509)+".md", "text", "t"),
			want: `{"created":true}`},
		{name: "H19 a 512-char absolute path is accepted",
			tool: "notes_write_file", args: args("path", "/root/notes/"+strings.Repeat("a", 500), "text", "t"),
			want: `{"created":true}`},
		{name: "H19 an absolute path with 512 chars below its notes root is accepted",
			tool: "notes_write_file", args: args("path", "/root/notes/"+strings.Repeat("a", 512), "text", "t"),
			want: `{"created":true}`},
		{name: "H19 an absolute path with 513 chars below its notes root is rejected",
			tool: "notes_write_file", args: args("path", "/root/notes/"+strings.Repeat("a", 513), "text", "t"),
			err: ErrInvalidArgument, msg: "512"},
		{name: "H19 a relative path named notes/ stays in the own root",
			tool: "notes_write_file", args: args("path", "notes/x.md", "text", "t"),
			want: `{"path":"/root/notes/notes/x.md"}`},
		{name: "H19 the empty path is rejected by the schema",
			tool: "notes_read_file", args: `{"path":""}`, err: ErrInvalidArgument, msg: "path"},

		// H20: cross-agent paths within the task work for every notes tool.
		{name: "H20 write to a registered agent's note",
			setup: []noteStep{{"child", "notes_list_files_by_prefix", `{}`}},
			tool:  "notes_write_file", args: args("path", "/root/agent_x/notes/c.md", "text", "from root"),
			want: `{"path":"/root/agent_x/notes/c.md","bytes":9,"created":true,"revision":1}`,
			check: func(t *testing.T, e *notesEnv, _ map[string]any) {
				if got := readText(t, e.s, e.cc(t, "child"), "c.md"); got != "from root" {
					t.Errorf("child reads %q, want %q", got, "from root")
				}
				evs, err := e.s.Store().Read(context.Background(), eventlog.Filter{TaskID: e.cc(t, "").TaskID, Limit: 100})
				if err != nil {
					t.Fatal(err)
				}
				last := evs[len(evs)-1]
				p, err := events.Decode(last)
				if err != nil {
					t.Fatal(err)
				}
				w, ok := p.(*events.NoteWritten)
				if !ok || last.Stream != e.cc(t, "").TaskID+childAgent || w.Agent != childAgent || w.By != "/root" || w.Path != "c.md" {
					t.Errorf("event %s on stream %s with %+v, want note.written on the child's stream by /root", last.Type, last.Stream, p)
				}
			}},
		{name: "H20 append to a registered agent's note",
			setup: []noteStep{write("child", "c.md", "one\n")},
			tool:  "notes_append_to_file", args: args("path", "/root/agent_x/notes/c.md", "text", "two\n"),
			want: `{"path":"/root/agent_x/notes/c.md","bytes":8,"created":false,"revision":2}`,
			check: func(t *testing.T, e *notesEnv, _ map[string]any) {
				if got := readText(t, e.s, e.cc(t, "child"), "c.md"); got != "one\ntwo\n" {
					t.Errorf("child reads %q", got)
				}
			}},
		{name: "H20 read a registered agent's note",
			setup: []noteStep{write("child", "c.md", "secret plan")},
			tool:  "notes_read_file", args: `{"path":"/root/agent_x/notes/c.md"}`,
			want: `{"path":"/root/agent_x/notes/c.md","text":"secret plan"}`},
		{name: "H20 list a registered agent's notes",
			setup: []noteStep{write("child", "c.md", "1"), write("child", "d/e.md", "2"), write("", "c.md", "3")},
			tool:  "notes_list_files_by_prefix", args: `{"prefix":"/root/agent_x/notes/"}`,
			paths: []string{"/root/agent_x/notes/c.md", "/root/agent_x/notes/d/e.md"}},
		{name: "H20 list a registered agent's notes root without the trailing slash",
			setup: []noteStep{write("child", "c.md", "1")},
			tool:  "notes_list_files_by_prefix", args: `{"prefix":"/root/agent_x/notes"}`,
			paths: []string{"/root/agent_x/notes/c.md"}},
		{name: "H20 search a registered agent's notes",
			setup: []noteStep{write("child", "c.md", "alpha\nbeta"), write("", "c.md", "beta")},
			tool:  "notes_search_contents", args: `{"query":"beta","path_prefix":"/root/agent_x/notes/"}`,
			paths: []string{"/root/agent_x/notes/c.md"},
			check: func(t *testing.T, e *notesEnv, d map[string]any) {
				got := fileField(t, d, 0, "matches")
				want := []any{map[string]any{"line": 2.0, "text": "beta"}}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("matches %v, want %v", got, want)
				}
			}},
		{name: "H20 a child writes the root's note",
			as: "child", tool: "notes_write_file", args: args("path", "/root/notes/c.md", "text", "from child"),
			want: `{"path":"/root/notes/c.md","created":true}`,
			check: func(t *testing.T, e *notesEnv, _ map[string]any) {
				if got := readText(t, e.s, e.cc(t, ""), "c.md"); got != "from child" {
					t.Errorf("root reads %q", got)
				}
			}},
		{name: "H20 a child reads the root's note",
			setup: []noteStep{write("", "c.md", "root plan")},
			as:    "child", tool: "notes_read_file", args: `{"path":"/root/notes/c.md"}`,
			want: `{"path":"/root/notes/c.md","text":"root plan"}`},
		{name: "H20 a child's relative path stays in its own notes",
			setup: []noteStep{write("", "c.md", "root plan")},
			as:    "child", tool: "notes_read_file", args: `{"path":"c.md"}`,
			err: ErrNotFound, msg: "/root/agent_x/notes/c.md"},

		// H21: unregistered, other-task and malformed agents (more rows below).
		{name: "H21 a call context naming another task's agent is forbidden",
			as: "foreign", tool: "notes_read_file", args: `{"path":"c.md"}`, err: ErrForbidden},
		{name: "H21 a call context naming an unregistered agent is not_found",
			as: "ghost", tool: "notes_write_file", args: args("path", "c.md", "text", "x"), err: ErrNotFound},
		{name: "H21 a call context naming /root/Agent is invalid_argument",
			as: "uppercase", tool: "notes_append_to_file", args: args("path", "c.md", "text", "x"), err: ErrInvalidArgument, msg: "context.agent"},
		{name: "H21 a call context naming an unknown task is not_found",
			as: "badtask", tool: "notes_list_files_by_prefix", args: `{}`, err: ErrNotFound},
		{name: "H21 the other task's root cannot see this task's notes",
			setup: []noteStep{write("", "only-here.md", "x")},
			as:    "other", tool: "notes_read_file", args: `{"path":"only-here.md"}`, err: ErrNotFound},

		// H22: relative agent names resolve under the calling agent.
		{name: "H22 checker attached under /root/reviewer is /root/reviewer/checker",
			setup: []noteStep{{"checker", "notes_list_files_by_prefix", `{}`}},
			as:    "reviewer", tool: "get_context_remaining", args: `{}`,
			check: func(t *testing.T, e *notesEnv, d map[string]any) {
				got := fmt.Sprint(d["registered_agents"])
				if got != "[/root /root/reviewer /root/reviewer/checker]" {
					t.Errorf("registered_agents %s", got)
				}
			}},
		{name: "H22 reviewer writes checker's notes at /root/reviewer/checker/notes/",
			setup: []noteStep{{"checker", "notes_list_files_by_prefix", `{}`}},
			as:    "reviewer", tool: "notes_write_file", args: args("path", "/root/reviewer/checker/notes/plan.md", "text", "check it"),
			want: `{"path":"/root/reviewer/checker/notes/plan.md","created":true}`,
			check: func(t *testing.T, e *notesEnv, _ map[string]any) {
				if got := readText(t, e.s, e.cc(t, "checker"), "plan.md"); got != "check it" {
					t.Errorf("checker reads %q", got)
				}
				l := detailsMap(t, mustCall(t, e.s, e.cc(t, "reviewer"), "notes_list_files_by_prefix", `{}`))
				if got := filePaths(t, l); len(got) != 0 {
					t.Errorf("reviewer's own notes %v, want none", got)
				}
			}},
		{name: "H22 checker's own relative path lies in /root/reviewer/checker/notes/",
			as: "checker", tool: "notes_append_to_file", args: args("path", "plan.md", "text", "x"),
			want: `{"path":"/root/reviewer/checker/notes/plan.md"}`},
	}

	// H19: every malformed path is refused by every tool that takes one.
	badPaths := []struct{ label, path string }{
		{"../x", "../x"},
		{"a/./b", "a/./b"},
		{"a//b", "a//b"},
		{"/x", "/x"},
		{"trailing slash", "a/"},
		{"only a slash", "/"},
		{"./x", "./x"},
		{"x/..", "x/.."},
		{"..", ".."},
		{"NUL", "a\x00b"},
		{"513 chars", strings.Repeat("a", 510) + ".md"},
		{"notes root without a file", "/root/notes/"},
		{"/root/notes/../x", "/root/notes/../x"},
		{"/root/notes//x", "/root/notes//x"},
		{"agent address without notes", "/root/agent_x/c.md"},
	}
	for _, bp := range badPaths {
		for _, tool := range []string{"notes_write_file", "notes_append_to_file", "notes_read_file"} {
			a := args("path", bp.path, "text", "t")
			if tool == "notes_read_file" {
				a = args("path", bp.path)
			}
			cases = append(cases, notesCase{name: "H19 " + tool + " rejects " + bp.label,
				tool: tool, args: a, err: ErrInvalidArgument, msg: tool})
		}
	}

	// H21: unregistered and other-task agents, and malformed addresses.
	badAgents := []struct {
		label, path string
		err         error
	}{
		{"an unregistered agent", nobodyPath, ErrNotFound},
		{"another task's agent", strangerPath, ErrForbidden},
		{"/root/Agent (uppercase)", "/root/Agent/notes/c.md", ErrInvalidArgument},
		{"/root/root", "/root/root/notes/c.md", ErrInvalidArgument},
		{"/root/a/../b", "/root/a/../b/notes/c.md", ErrInvalidArgument},
		{"/morpheus", "/morpheus/notes/c.md", ErrInvalidArgument},
		{"bare /morpheus", "/morpheus", ErrInvalidArgument},
		{"bare /root/Agent", "/root/Agent", ErrInvalidArgument},
	}
	for _, ba := range badAgents {
		prefix := strings.TrimSuffix(ba.path, "c.md")
		steps := []struct{ tool, args string }{
			{"notes_read_file", args("path", ba.path)},
			{"notes_write_file", args("path", ba.path, "text", "x")},
			{"notes_append_to_file", args("path", ba.path, "text", "x")},
			{"notes_list_files_by_prefix", args("prefix", prefix)},
			{"notes_search_contents", args("query", "note", "path_prefix", prefix)},
		}
		for _, st := range steps {
			cases = append(cases, notesCase{name: "H21 " + st.tool + " to " + ba.label,
				tool: st.tool, args: st.args, err: ba.err})
		}
	}

	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := &notesEnv{s: s, name: t.Name(), actors: map[string]CallContext{"other": other, "stranger": stranger}}
			if tc.fresh {
				// Rows with megabyte notes keep them out of the shared
				// database.
				e.s, e.actors = mustOpenService(t), map[string]CallContext{}
			}
			s := e.s
			e.actors["root"] = attachWithBudget(t, s, t.Name()+"/root", tc.budget)
			if tc.run != nil {
				tc.run(t, e)
				return
			}
			for _, st := range tc.setup {
				e.setupRes = append(e.setupRes, mustCall(t, s, e.cc(t, st.as), st.tool, st.args))
			}
			cc := e.cc(t, tc.as)
			// A failure appends no event. (TestFailedRequestWritesNothing
			// also checks the projection digest, which is too slow to
			// compute for every row of this shared database.)
			before, err := s.Store().LastPosition(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			res, err := call(t, s, cc, tc.tool, tc.args)
			if tc.err != nil {
				checkError(t, err, tc.err, tc.msg)
				if tc.tooBig != nil {
					checkTooLarge(t, err, tc.tooBig[0], tc.tooBig[1], tc.tooBig[2])
				}
				if after, err := s.Store().LastPosition(context.Background()); err != nil || after != before {
					t.Errorf("event log moved from position %d to %d (%v) on a failed request", before, after, err)
				}
				if tc.check != nil {
					tc.check(t, e, nil)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s %.200s: %v", tc.tool, tc.args, err)
			}
			if len(res.Content) != 1 || res.Content[0].Type != "text" || res.Terminate {
				t.Errorf("result content %.200v terminate %v, want one text block", res.Content, res.Terminate)
			}
			d := detailsMap(t, res)
			if tc.want != "" {
				wantFields(t, d, tc.want)
			}
			if tc.paths != nil {
				if got := filePaths(t, d); !slices.Equal(got, tc.paths) {
					t.Errorf("paths %q, want %q", got, tc.paths)
				}
			}
			if tc.check != nil {
				tc.check(t, e, d)
			}
		})
	}
}

// oldMidNew creates old.md, mid.md and new.md in that order, then
// overwrites old.md: created order old < mid < new, updated order
// mid < new < old. Every file contains "x".
func oldMidNew() []noteStep {
	return []noteStep{write("", "old.md", "x"), write("", "mid.md", "x"), write("", "new.md", "x"), write("", "old.md", "x, rewritten")}
}

// piece is the text a concurrent writer appends: one whole, unique line.
func piece(writer, i int) string {
	return fmt.Sprintf("<w%d-%03d %s>\n", writer, i, strings.Repeat(string(rune('a'+writer%26)), 20+i%7))
}

// checkPieces checks that content is exactly the lines of want, each once,
// in some order, none broken or interleaved.
func checkPieces(tb testing.TB, content string, want []string) {
	tb.Helper()
	if !strings.HasSuffix(content, "\n") && content != "" {
		tb.Errorf("content does not end with a whole piece: ...%q", content[max(0, len(content)-40):])
	}
	seen := map[string]int{}
	for _, l := range strings.SplitAfter(content, "\n") {
		if l != "" {
			seen[l]++
		}
	}
	for _, p := range want {
		if seen[p] != 1 {
			tb.Errorf("piece %q appears %d times, want once", p, seen[p])
		}
		delete(seen, p)
	}
	for l, n := range seen {
		tb.Errorf("unexpected line %q (%d times): pieces interleaved?", l, n)
	}
}

func runConcurrentAppends(t *testing.T, e *notesEnv) {
	const writers, per = 2, 15
	cc := e.cc(t, "")
	var wg sync.WaitGroup
	var want []string
	for w := range writers {
		for i := range per {
			want = append(want, piece(w, i))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				if _, err := call(t, e.s, cc, "notes_append_to_file", args("path", "log.md", "text", piece(w, i))); err != nil {
					t.Errorf("append: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	checkPieces(t, readText(t, e.s, cc, "log.md"), want)
}

// runTwoStoreAppends appends from two independent stores over one
// database file, as two server processes would.
func runTwoStoreAppends(t *testing.T, _ *notesEnv) {
	path := filepath.Join(t.TempDir(), "memory.db")
	open := func() *Service {
		return mustOpenAt(t, path, testOptions())
	}
	a, b := open(), open()
	cc := mustAttach(t, a, "two-stores")
	const per = 10
	var wg sync.WaitGroup
	var want []string
	for w, s := range []*Service{a, b} {
		for i := range per {
			want = append(want, piece(w, i))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				if _, err := call(t, s, cc, "notes_append_to_file", args("path", "log.md", "text", piece(w, i))); err != nil {
					t.Errorf("store %d append: %v", w, err)
				}
			}
		}()
	}
	wg.Wait()
	for _, s := range []*Service{a, b} {
		checkPieces(t, readText(t, s, cc, "log.md"), want)
	}
	evs, err := a.Store().Read(context.Background(), eventlog.Filter{TaskID: cc.TaskID, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for i, ev := range evs {
		if ev.Position != int64(i+1) || ev.StreamVersion != int64(i+1) {
			t.Errorf("event %d at position %d, stream version %d: want gapless", i, ev.Position, ev.StreamVersion)
		}
	}
}

func runCappedConcurrentAppends(t *testing.T, e *notesEnv) {
	// 10-byte pieces and a 100-byte cap: exactly 10 of the 16 appends fit.
	const writers, per = 2, 8
	cc := e.cc(t, "")
	var wg sync.WaitGroup
	var mu sync.Mutex
	var landed []string
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				p := fmt.Sprintf("w%d-%06d\n", w, i)
				_, err := call(t, e.s, cc, "notes_append_to_file", args("path", "capped.md", "text", p))
				switch {
				case err == nil:
					mu.Lock()
					landed = append(landed, p)
					mu.Unlock()
				case errors.Is(err, ErrTooLarge):
					checkTooLarge(t, err, 110, 100, 0)
				default:
					t.Errorf("append: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if len(landed) != 10 {
		t.Errorf("%d appends landed, want 10", len(landed))
	}
	checkPieces(t, readText(t, e.s, cc, "capped.md"), landed)
	l := detailsMap(t, mustCall(t, e.s, cc, "notes_list_files_by_prefix", `{}`))
	if got := fileField(t, l, 0, "bytes"); got != 100.0 {
		t.Errorf("bytes %v, want 100 (the cap)", got)
	}
}

// runListDuringWrites lists, searches and reads while another goroutine
// writes files: every listed file is a committed one, shown whole.
func runListDuringWrites(t *testing.T, e *notesEnv) {
	const files = 20
	cc := e.cc(t, "")
	content := func(i int) string { return fmt.Sprintf("needle %02d\n%s\n", i, strings.Repeat("z", i)) }
	valid := map[string]string{}
	for i := range files {
		valid[fmt.Sprintf("/root/notes/f%02d.md", i)] = content(i)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(done)
		for i := range files {
			if _, err := call(t, e.s, cc, "notes_write_file", args("path", fmt.Sprintf("f%02d.md", i), "text", content(i))); err != nil {
				t.Errorf("write: %v", err)
			}
		}
	}()
	reader := func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			res, err := call(t, e.s, cc, "notes_list_files_by_prefix", `{}`)
			if err != nil {
				t.Errorf("list: %v", err)
				return
			}
			d := detailsMap(t, res)
			for i, p := range filePaths(t, d) {
				want, ok := valid[p]
				if !ok {
					t.Errorf("list shows %q, which was never written", p)
					continue
				}
				if got := fileField(t, d, i, "bytes"); got != float64(len(want)) {
					t.Errorf("list shows %s with %v bytes, want %d", p, got, len(want))
				}
			}
			res, err = call(t, e.s, cc, "notes_search_contents", `{"query":"needle","max_files":500}`)
			if err != nil {
				t.Errorf("search: %v", err)
				return
			}
			for _, p := range filePaths(t, detailsMap(t, res)) {
				if _, ok := valid[p]; !ok {
					t.Errorf("search shows %q, which was never written", p)
					continue
				}
				if got := readText(t, e.s, cc, p); got != valid[p] {
					t.Errorf("read %s = %q, want %q", p, got, valid[p])
				}
			}
		}
	}
	wg.Add(2)
	go reader()
	go reader()
	wg.Wait()
	l := detailsMap(t, mustCall(t, e.s, cc, "notes_list_files_by_prefix", `{}`))
	if n := len(filePaths(t, l)); n != files {
		t.Errorf("%d files listed after the writes, want %d", n, files)
	}
}

func TestConcurrentAppendsDistinctCallIDs(t *testing.T) {
	const writers, per = 8, 12
	s := mustOpenService(t)
	cc := mustAttach(t, s, "concurrent")
	before, err := s.Store().LastPosition(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	revisions := make([][]int64, writers)
	var want []string
	for w := range writers {
		for i := range per {
			want = append(want, piece(w, i))
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := cc
			for i := range per {
				c.CallID = fmt.Sprintf("toolu_w%d_%d", w, i)
				res, err := call(t, s, c, "notes_append_to_file", args("path", "shared.md", "text", piece(w, i)))
				if err != nil {
					t.Errorf("append %s: %v", c.CallID, err)
					return
				}
				revisions[w] = append(revisions[w], int64(detailsMap(t, res)["revision"].(float64)))
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	checkPieces(t, readText(t, s, cc, "shared.md"), want)
	var all []int64
	for w, revs := range revisions {
		if !slices.IsSorted(revs) {
			t.Errorf("writer %d saw revisions %v, not increasing", w, revs)
		}
		all = append(all, revs...)
	}
	slices.Sort(all)
	for i, r := range all {
		if r != int64(i+1) {
			t.Fatalf("revisions %v, want each of 1..%d once", all, writers*per)
		}
	}
	n, err := projections.NewReader(s.Store().Reader()).Note(context.Background(), cc.TaskID, "/root", "shared.md")
	if err != nil {
		t.Fatal(err)
	}
	if n.Revision != writers*per {
		t.Errorf("note revision %d, want %d", n.Revision, writers*per)
	}
	after, err := s.Store().LastPosition(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after-before != writers*per {
		t.Errorf("%d events appended, want %d", after-before, writers*per)
	}
}

func TestRetriedCallIDAppendsOnce(t *testing.T) {
	ctx := context.Background()
	s := mustOpenService(t)
	root := mustAttach(t, s, "retry")
	child := mustAttachChild(t, s, root.TaskID, "retry/child", "agent_x")
	c1 := root
	c1.CallID = "toolu_1"

	first := mustCall(t, s, c1, "notes_append_to_file", `{"path":"a.md","text":"one\n"}`)
	pos := stateOf(t, s)
	again := mustCall(t, s, c1, "notes_append_to_file", `{"path":"a.md","text":"one\n"}`)
	checkUnchanged(t, s, pos)
	if !reflect.DeepEqual(detailsMap(t, again), detailsMap(t, first)) || again.Content[0].Text != first.Content[0].Text {
		t.Errorf("retry gave %v, want the first result %v", again, first)
	}
	wantFields(t, detailsMap(t, first), `{"path":"/root/notes/a.md","bytes":4,"created":true,"revision":1}`)

	// Another write moves the note on; the retry still returns the first result.
	c2 := root
	c2.CallID = "toolu_2"
	second := mustCall(t, s, c2, "notes_append_to_file", `{"path":"a.md","text":"two\n"}`)
	wantFields(t, detailsMap(t, second), `{"path":"/root/notes/a.md","bytes":8,"created":false,"revision":2}`)
	if got := mustCall(t, s, c2, "notes_append_to_file", `{"path":"a.md","text":"two\n"}`); !reflect.DeepEqual(detailsMap(t, got), detailsMap(t, second)) {
		t.Errorf("retry of an append to an existing note gave %v, want %v", detailsMap(t, got), detailsMap(t, second))
	}
	pos = stateOf(t, s)
	// The same note named by its full path is the same request.
	late := mustCall(t, s, c1, "notes_append_to_file", `{"path":"/root/notes/a.md","text":"one\n"}`)
	checkUnchanged(t, s, pos)
	if !reflect.DeepEqual(detailsMap(t, late), detailsMap(t, first)) {
		t.Errorf("late retry gave %v, want the first result %v", detailsMap(t, late), detailsMap(t, first))
	}
	if got := readText(t, s, root, "a.md"); got != "one\ntwo\n" {
		t.Errorf("content %q, want each append once", got)
	}

	// notes_write_file is idempotent too.
	w := root
	w.CallID = "toolu_w"
	wr := mustCall(t, s, w, "notes_write_file", `{"path":"b.md","text":"v1"}`)
	pos = stateOf(t, s)
	if got := mustCall(t, s, w, "notes_write_file", `{"path":"b.md","text":"v1"}`); !reflect.DeepEqual(detailsMap(t, got), detailsMap(t, wr)) {
		t.Errorf("write retry gave %v, want %v", detailsMap(t, got), detailsMap(t, wr))
	}
	checkUnchanged(t, s, pos)

	// The same call_id with other arguments is a conflict and writes nothing.
	for _, tc := range []struct{ name, tool, args string }{
		{"other text", "notes_append_to_file", `{"path":"a.md","text":"ONE\n"}`},
		{"other path", "notes_append_to_file", `{"path":"c.md","text":"one\n"}`},
		{"other tool", "notes_write_file", `{"path":"a.md","text":"one\n"}`},
		{"other agent's note", "notes_append_to_file", `{"path":"/root/agent_x/notes/a.md","text":"one\n"}`},
		{"write call_id reused by append", "notes_append_to_file", `{"path":"b.md","text":"v1"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := c1
			if strings.HasPrefix(tc.name, "write") {
				cc = w
			}
			pos := stateOf(t, s)
			_, err := call(t, s, cc, tc.tool, tc.args)
			checkError(t, err, ErrConflict, cc.CallID)
			checkUnchanged(t, s, pos)
		})
	}

	// Exactly one event per distinct call, carrying the call id.
	evs, err := s.Store().Read(ctx, eventlog.Filter{TaskID: root.TaskID, Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var noteEvents []string
	for _, ev := range evs {
		if strings.HasPrefix(ev.Type, "note.") {
			noteEvents = append(noteEvents, ev.Type+" "+ev.RequestID)
		}
	}
	want := []string{"note.appended toolu_1", "note.appended toolu_2", "note.written toolu_w"}
	if !slices.Equal(noteEvents, want) {
		t.Errorf("note events %q, want %q", noteEvents, want)
	}

	// call_ids are per agent: the child may use toolu_1 for its own write.
	cc := child
	cc.CallID = "toolu_1"
	res := mustCall(t, s, cc, "notes_append_to_file", `{"path":"a.md","text":"child\n"}`)
	wantFields(t, detailsMap(t, res), `{"path":"/root/agent_x/notes/a.md","created":true}`)
}

func TestFailedRequestWritesNothing(t *testing.T) {
	s := mustOpenService(t)
	root := attachWithBudget(t, s, "failures", capBytes(10))
	other := mustAttach(t, s, "failures/other")
	mustAttachChild(t, s, other.TaskID, "failures/stranger", "stranger")
	withCall := root
	withCall.CallID = "toolu_used"
	mustCall(t, s, withCall, "notes_write_file", `{"path":"a.md","text":"12345"}`)
	mustCall(t, s, root, "notes_append_to_file", `{"path":"b.md","text":"0123456789"}`)

	failing := root
	failing.CallID = "toolu_failing"
	ghost := CallContext{TaskID: root.TaskID, Agent: "/root/nobody", CallID: "toolu_g"}
	noTask := CallContext{TaskID: "01JNOSUCHTASK0000000000000", Agent: "/root"}
	cases := []struct {
		name string
		cc   CallContext
		tool string
		args string
		kind error
	}{
		{"write over the cap", root, "notes_write_file", `{"path":"c.md","text":"0123456789x"}`, ErrTooLarge},
		{"append over the cap", root, "notes_append_to_file", `{"path":"a.md","text":"123456"}`, ErrTooLarge},
		{"append to a full file", root, "notes_append_to_file", `{"path":"b.md","text":"x"}`, ErrTooLarge},
		{"append over the cap with a call_id", failing, "notes_append_to_file", `{"path":"b.md","text":"x"}`, ErrTooLarge},
		{"reused call_id on a full file", withCall, "notes_append_to_file", `{"path":"b.md","text":"x"}`, ErrConflict},
		{"bad path ..", root, "notes_write_file", `{"path":"../x","text":"x"}`, ErrInvalidArgument},
		{"bad path //", root, "notes_append_to_file", `{"path":"a//b","text":"x"}`, ErrInvalidArgument},
		{"bad agent in path", root, "notes_write_file", `{"path":"/root/Agent/notes/x","text":"x"}`, ErrInvalidArgument},
		{"call_id conflict", withCall, "notes_write_file", `{"path":"a.md","text":"other"}`, ErrConflict},
		{"call_id conflict across tools", withCall, "notes_append_to_file", `{"path":"a.md","text":"12345"}`, ErrConflict},
		{"unknown agent in the context", ghost, "notes_write_file", `{"path":"a.md","text":"x"}`, ErrNotFound},
		{"unknown agent in the path", root, "notes_append_to_file", `{"path":"/root/nobody/notes/a.md","text":"x"}`, ErrNotFound},
		{"another task's agent in the path", root, "notes_write_file", `{"path":"/root/stranger/notes/a.md","text":"x"}`, ErrForbidden},
		{"unknown task", noTask, "notes_write_file", `{"path":"a.md","text":"x"}`, ErrNotFound},
		{"unknown field", root, "notes_write_file", `{"path":"a.md","text":"x","mode":"append"}`, ErrInvalidArgument},
		{"wrong type", root, "notes_append_to_file", `{"path":"a.md","text":5}`, ErrInvalidArgument},
		{"missing text", root, "notes_write_file", `{"path":"a.md"}`, ErrInvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := stateOf(t, s)
			_, err := call(t, s, tc.cc, tc.tool, tc.args)
			checkError(t, err, tc.kind, "")
			checkUnchanged(t, s, before)
		})
	}

	// The projections are exactly what the log implies.
	before := stateOf(t, s)
	if err := projections.Rebuild(context.Background(), s.Store()); err != nil {
		t.Fatal(err)
	}
	checkUnchanged(t, s, before)
	if got := readText(t, s, root, "a.md"); got != "12345" {
		t.Errorf("a.md = %q after the failures, want %q", got, "12345")
	}
	// A failed call records no result: its call_id is still free.
	res := mustCall(t, s, failing, "notes_append_to_file", `{"path":"c.md","text":"x"}`)
	wantFields(t, detailsMap(t, res), `{"path":"/root/notes/c.md","created":true}`)
}

func TestNotesArgumentValidation(t *testing.T) {
	s := mustOpenService(t)
	cc := mustAttach(t, s, "validation")
	mustCall(t, s, cc, "notes_write_file", `{"path":"a.md","text":"x"}`)
	cases := []struct {
		name, tool, args string
		field            string // named in the message and details.field
	}{
		{"unknown field", "notes_read_file", `{"path":"a.md","bogus":1}`, "bogus"},
		{"foreign field file_order_by", "notes_search_contents", `{"query":"x","file_order_by":"name"}`, "file_order_by"},
		{"foreign field max_chars_per_item", "notes_search_contents", `{"query":"x","max_chars_per_item":5}`, "max_chars_per_item"},
		{"foreign field path_prefix", "notes_list_files_by_prefix", `{"path_prefix":"a"}`, "path_prefix"},
		{"foreign field prefix", "notes_search_contents", `{"query":"x","prefix":"a"}`, "prefix"},
		{"foreign field start_line", "notes_write_file", `{"path":"a.md","text":"x","start_line":1}`, "start_line"},
		{"foreign field query", "notes_read_file", `{"path":"a.md","query":"x"}`, "query"},
		{"foreign field agent_name", "notes_append_to_file", `{"path":"a.md","text":"x","agent_name":"/root"}`, "agent_name"},
		{"foreign field on get_context_remaining", "get_context_remaining", `{"path":"a.md"}`, "path"},
		{"wrong type path", "notes_read_file", `{"path":1}`, "path"},
		{"wrong type start_line", "notes_read_file", `{"path":"a.md","start_line":"2"}`, "start_line"},
		{"fractional start_line", "notes_read_file", `{"path":"a.md","start_line":1.5}`, "start_line"},
		{"wrong type text", "notes_write_file", `{"path":"a.md","text":5}`, "text"},
		{"null text", "notes_append_to_file", `{"path":"a.md","text":null}`, "text"},
		{"wrong type max_results", "notes_list_files_by_prefix", `{"max_results":"10"}`, "max_results"},
		{"wrong type recent_file_first", "notes_search_contents", `{"query":"x","recent_file_first":"yes"}`, "recent_file_first"},
		{"wrong type prefix", "notes_list_files_by_prefix", `{"prefix":["a"]}`, "prefix"},
		{"bad enum file_order_by", "notes_list_files_by_prefix", `{"file_order_by":"size"}`, "file_order_by"},
		{"bad enum file_order", "notes_list_files_by_prefix", `{"file_order":"up"}`, "file_order"},
		{"missing path for read", "notes_read_file", `{}`, "path"},
		{"missing text for write", "notes_write_file", `{"path":"a.md"}`, "text"},
		{"missing path for write", "notes_write_file", `{"text":"x"}`, "path"},
		{"missing path for append", "notes_append_to_file", `{"text":"x"}`, "path"},
		{"missing query", "notes_search_contents", `{}`, "query"},
		{"empty query", "notes_search_contents", `{"query":""}`, "query"},
		{"max_results 0", "notes_list_files_by_prefix", `{"max_results":0}`, "max_results"},
		{"max_files 0", "notes_search_contents", `{"query":"x","max_files":0}`, "max_files"},
		{"max_matches_per_file 0", "notes_search_contents", `{"query":"x","max_matches_per_file":0}`, "max_matches_per_file"},
		{"limit_chars 0", "notes_read_file", `{"path":"a.md","limit_chars":0}`, "limit_chars"},
		{"negative offset_chars", "notes_read_file", `{"path":"a.md","offset_chars":-1}`, "offset_chars"},
		{"start_line below its minimum", "notes_read_file", `{"path":"a.md","start_line":-1000001}`, "start_line"},
		{"arguments not an object", "notes_read_file", `["a.md"]`, ""},
		{"arguments not JSON", "notes_read_file", `{"path":`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := stateOf(t, s)
			_, err := call(t, s, cc, tc.tool, tc.args)
			e := checkError(t, err, ErrInvalidArgument, tc.field)
			if !strings.Contains(e.Message, tc.tool) {
				t.Errorf("message %q does not name the tool %s", e.Message, tc.tool)
			}
			if tc.field != "" && (e.Details == nil || e.Details["field"] != tc.field) {
				t.Errorf("details %v, want field %q", e.Details, tc.field)
			}
			checkUnchanged(t, s, before)
		})
	}

	// Limits above their maximum are clamped, not refused.
	for _, a := range []struct{ tool, args string }{
		{"notes_list_files_by_prefix", `{"max_results":1000000}`},
		{"notes_search_contents", `{"query":"x","max_files":100000,"max_matches_per_file":100000}`},
		{"notes_read_file", `{"path":"a.md","limit_chars":100000000,"offset_chars":100000000}`},
	} {
		if _, err := call(t, s, cc, a.tool, a.args); err != nil {
			t.Errorf("%s %s: %v, want the limit clamped", a.tool, a.args, err)
		}
	}

	// An unknown tool is not_found.
	_, err := call(t, s, cc, "notes_delete_file", `{"path":"a.md"}`)
	checkError(t, err, ErrNotFound, "notes_delete_file")
}

// TestNotesOutputBudget: list and search text stays within
// min(max_tool_output_chars, 6000), stops at a whole record and says how
// many were left out; details match the text.
func TestNotesOutputBudget(t *testing.T) {
	s := mustOpenService(t)
	for _, budget := range []int64{300, 100000} {
		t.Run(fmt.Sprint(budget), func(t *testing.T) {
			cc := attachWithBudget(t, s, fmt.Sprint("budget", budget), outputChars(budget))
			const files = 60
			for i := range files {
				mustCall(t, s, cc, "notes_write_file", args("path", fmt.Sprintf("dir/file-%03d.md", i),
					"text", strings.Repeat("needle line\n", 3)+strings.Repeat("x", 400)+" needle"))
			}
			limit := int(min(budget, 6000))
			for _, call := range []struct{ tool, args string }{
				{"notes_list_files_by_prefix", `{"max_results":500}`},
				{"notes_search_contents", `{"query":"needle","max_files":500}`},
			} {
				res := mustCall(t, s, cc, call.tool, call.args)
				text := res.Content[0].Text
				if n := utf8.RuneCountInString(text); n > limit {
					t.Errorf("%s text is %d chars, over %d", call.tool, n, limit)
				}
				lines := strings.Split(text, "\n")
				for _, l := range lines {
					if !json.Valid([]byte(l)) {
						t.Errorf("%s line %.80q is not a whole JSON record", call.tool, l)
					}
				}
				d := detailsMap(t, res)
				kept, omitted := int(d["n_returned"].(float64)), int(d["omitted"].(float64))
				if kept+omitted != files || kept != len(filePaths(t, d)) || kept == 0 {
					t.Errorf("%s n_returned %d + omitted %d, want %d files in all, at least one shown", call.tool, kept, omitted, files)
				}
				var last map[string]any
				json.Unmarshal([]byte(lines[len(lines)-1]), &last)
				if omitted > 0 && (last["omitted"] != float64(omitted) || last["hint"] == nil || len(lines) != kept+1) {
					t.Errorf("%s last line %q, want the omitted count %d and a hint after %d records", call.tool, lines[len(lines)-1], omitted, kept)
				}
				if omitted == 0 && len(lines) != kept {
					t.Errorf("%s has %d lines for %d records", call.tool, len(lines), kept)
				}
			}
			// Long lines are cut; omitted_matches counts what is left out.
			res := mustCall(t, s, cc, "notes_search_contents", `{"query":"needle","path_prefix":"dir/file-000","max_matches_per_file":2}`)
			d := detailsMap(t, res)
			wantFields(t, d, `{"n_returned":1,"omitted":0}`)
			if got := fileField(t, d, 0, "omitted_matches"); got != 2.0 {
				t.Errorf("omitted_matches %v, want 2", got)
			}
			if budget < 1000 {
				return // a 300-char line does not fit a 300-char budget
			}
			res = mustCall(t, s, cc, "notes_search_contents", `{"query":"x needle","path_prefix":"dir/file-000"}`)
			m := fileField(t, detailsMap(t, res), 0, "matches").([]any)[0].(map[string]any)
			if m["line"] != 4.0 || utf8.RuneCountInString(m["text"].(string)) > 300 {
				t.Errorf("long match %v: want line 4 cut to at most 300 chars", m)
			}
		})
	}
}

// TestNotePartsModel: random appends (empty ones too) and overwrites of a
// few notes, past the number of parts that triggers a merge, read back
// exactly as a model of the files says, and notes_search_contents finds a
// needle that spans two appends.
func TestNotePartsModel(t *testing.T) {
	s := mustOpenService(t)
	cc := mustAttach(t, s, "/home/u/.pi/agent/sessions/parts.jsonl")
	r := rand.New(rand.NewPCG(5, 8))
	model := map[string]string{}
	paths := []string{"a.md", "b.md", "deep/c.md"}
	for i := range 400 {
		p := paths[r.IntN(len(paths))]
		text := []string{"", "x", "yz\n", "- line\n", "é😀\n", "nul\x00\n"}[r.IntN(6)]
		quoted, _ := json.Marshal(text)
		c := cc
		c.CallID = fmt.Sprintf("toolu_%d", i)
		if r.IntN(12) == 0 {
			mustCall(t, s, c, "notes_write_file", fmt.Sprintf(`{"path":%q,"text":%s}`, p, quoted))
			model[p] = text
		} else {
			mustCall(t, s, c, "notes_append_to_file", fmt.Sprintf(`{"path":%q,"text":%s}`, p, quoted))
			model[p] += text
		}
		if i%37 == 0 || i == 399 {
			for path, want := range model {
				if got := readText(t, s, cc, path); got != want {
					t.Fatalf("after %d writes %s reads back %q, want %q", i+1, path, got, want)
				}
			}
		}
	}
	c := cc
	c.CallID = "toolu_span_1"
	mustCall(t, s, c, "notes_append_to_file", `{"path":"a.md","text":"…NEEDLE-FIRST-HALF"}`)
	c.CallID = "toolu_span_2"
	mustCall(t, s, c, "notes_append_to_file", `{"path":"a.md","text":"-SECOND-HALF…\n"}`)
	d := detailsMap(t, mustCall(t, s, cc, "notes_search_contents", `{"query":"FIRST-HALF-SECOND"}`))
	if n := num(t, d["n_returned"]); n != 1 {
		t.Fatalf("a needle across two appends: %d files found, want 1 (%v)", n, d)
	}
}
