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
	"testing"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// sessionsDir holds the hand-built Pi session fixtures.
const sessionsDir = "../../testdata/sessions"

// histEnv is the world of one TestHistoryEdgeCases row: a service shared
// by the rows and a root agent of the row's own task.
type histEnv struct {
	s    *Service
	key  string
	root CallContext
}

// histAttach attaches a new root session, with an optional budget.
func histAttach(tb testing.TB, s *Service, sessionKey string, b *BudgetInput) CallContext {
	tb.Helper()
	res, err := s.Attach(context.Background(), AttachRequest{SessionKey: sessionKey, Budget: b}, "")
	if err != nil {
		tb.Fatalf("attach %s: %v", sessionKey, err)
	}
	return CallContext{TaskID: res.TaskID, Agent: res.Agent}
}

// histFile reads a fixture of testdata/sessions.
func histFile(tb testing.TB, name string) sessiongen.Session {
	tb.Helper()
	sess, err := sessiongen.ReadFile(filepath.Join(sessionsDir, name))
	if err != nil {
		tb.Fatal(err)
	}
	return sess
}

// histSyncErr syncs entries and a branch (nil: no branch change).
func histSyncErr(s *Service, cc CallContext, entries []json.RawMessage, branch []string, rev *int64) (SyncResult, error) {
	req := SyncRequest{Context: cc, Entries: entries, ExpectedRevision: rev}
	if branch != nil {
		req.Branch = &branch
	}
	return s.Sync(context.Background(), req, "")
}

// histSync syncs a whole session (its entries and its branch).
func histSync(tb testing.TB, s *Service, cc CallContext, sess sessiongen.Session) SyncResult {
	tb.Helper()
	res, err := histSyncErr(s, cc, sess.Entries, sess.Branch, nil)
	if err != nil {
		tb.Fatalf("sync: %v", err)
	}
	return res
}

func (e *histEnv) sync(tb testing.TB, sess sessiongen.Session) SyncResult {
	tb.Helper()
	return histSync(tb, e.s, e.root, sess)
}

func (e *histEnv) file(tb testing.TB, name string) sessiongen.Session {
	tb.Helper()
	sess := histFile(tb, name)
	e.sync(tb, sess)
	return sess
}

func (e *histEnv) call(tb testing.TB, tool string, kv ...any) ToolResult {
	tb.Helper()
	return mustCall(tb, e.s, e.root, tool, hargs(tb, kv...))
}

func (e *histEnv) callErr(tb testing.TB, tool string, kv ...any) error {
	tb.Helper()
	_, err := call(tb, e.s, e.root, tool, hargs(tb, kv...))
	return err
}

// hargs builds tool arguments from key, value pairs.
func hargs(tb testing.TB, kv ...any) string {
	tb.Helper()
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	b, err := json.Marshal(m)
	if err != nil {
		tb.Fatal(err)
	}
	return string(b)
}

// histWantErr checks that err is of kind.
func histWantErr(tb testing.TB, err, kind error) {
	tb.Helper()
	if !errors.Is(err, kind) {
		tb.Fatalf("error = %v, want %v", err, kind)
	}
	var e *Error
	if !errors.As(err, &e) || e.Message == "" {
		tb.Fatalf("error %v is not a *memory.Error with a message", err)
	}
}

// results returns the records of a list or search result.
func results(tb testing.TB, res ToolResult) []map[string]any {
	tb.Helper()
	d := detailsMap(tb, res)
	key := "results"
	if _, ok := d["windows"]; ok {
		key = "windows"
	}
	raw, _ := d[key].([]any)
	out := make([]map[string]any, len(raw))
	for i, r := range raw {
		out[i] = r.(map[string]any)
	}
	return out
}

// ids returns the item ids (or window ids) of a list or search result.
func ids(tb testing.TB, res ToolResult) []string {
	tb.Helper()
	out := []string{}
	for _, r := range results(tb, res) {
		if id, ok := r["item_id"].(string); ok {
			out = append(out, id)
		} else {
			out = append(out, r["window_id"].(string))
		}
	}
	return out
}

func wantIDs(tb testing.TB, what string, got []string, want ...string) {
	tb.Helper()
	if want == nil {
		want = []string{}
	}
	if !slices.Equal(got, want) {
		tb.Fatalf("%s = %q, want %q", what, got, want)
	}
}

func num(tb testing.TB, v any) int {
	tb.Helper()
	f, ok := v.(float64)
	if !ok {
		tb.Fatalf("%v (%T) is not a number", v, v)
	}
	return int(f)
}

// checkListText checks a list or search result's text: at most budget
// code points, whole JSON lines, one per returned record, and, when
// records were left out, a last line saying how many (matching details).
// It returns the omitted count.
func checkListText(tb testing.TB, res ToolResult, budget int) int {
	tb.Helper()
	if len(res.Content) != 1 || res.Content[0].Type != "text" {
		tb.Fatalf("list content = %+v, want one text block", res.Content)
	}
	text := res.Content[0].Text
	if n := utf8.RuneCountInString(text); n > budget {
		tb.Fatalf("text has %d code points, budget %d", n, budget)
	}
	if strings.HasSuffix(text, "\n") {
		tb.Fatalf("text ends with an empty line")
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			tb.Fatalf("line %d is not a whole JSON object: %q", i, l)
		}
	}
	d := detailsMap(tb, res)
	omitted, returned := num(tb, d["omitted"]), num(tb, d["n_returned"])
	records := len(lines)
	var last map[string]any
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &last)
	if omitted > 0 {
		if num(tb, last["omitted"]) != omitted || last["hint"] == "" {
			tb.Fatalf("last line %q does not say %d omitted with a hint", lines[len(lines)-1], omitted)
		}
		records--
	} else if _, ok := last["omitted"]; ok {
		tb.Fatalf("omission line %q but details.omitted is 0", lines[len(lines)-1])
	}
	if returned == 0 && records == 1 && last["n_returned"] != nil {
		records = 0 // the "nothing matches" note
	}
	if records != returned || len(results(tb, res)) != returned {
		tb.Fatalf("%d record lines, %d results, n_returned %d", records, len(results(tb, res)), returned)
	}
	return omitted
}

// readAll pages through an item with limit_chars page() and returns the
// concatenated content, checking each page's coordinates. Under a budget
// too small for a whole page (small), a page may be shorter, but never
// empty.
func readAll(tb testing.TB, s *Service, cc CallContext, window, id string, page func() int, small bool) string {
	tb.Helper()
	var got strings.Builder
	off := 0
	for range 100000 {
		limit := page()
		res := mustCall(tb, s, cc, "history_read_item", hargs(tb, "window_id", window, "item_id", id,
			"offset_chars", off, "limit_chars", limit))
		d := detailsMap(tb, res)
		content := d["content"].(string)
		n, total := utf8.RuneCountInString(content), num(tb, d["n_chars"])
		want := min(limit, total-off)
		if num(tb, d["offset_chars"]) != off || num(tb, d["end_chars"]) != off+n || n != want && !(small && n >= 1 && n < want) {
			tb.Fatalf("read %s at %d limit %d: offset %v end %v, %d chars of %d", id, off, limit, d["offset_chars"], d["end_chars"], n, total)
		}
		if !strings.HasSuffix(res.Content[0].Text, "\n"+content) {
			tb.Fatalf("text %q does not end with the content %q", res.Content[0].Text, content)
		}
		got.WriteString(content)
		if d["next_offset_chars"] == nil {
			if off+n != total {
				tb.Fatalf("next_offset_chars null at %d of %d", off+n, total)
			}
			return got.String()
		}
		if next := num(tb, d["next_offset_chars"]); next != off+n {
			tb.Fatalf("next_offset_chars %d, want %d", next, off+n)
		}
		off += n
	}
	tb.Fatal("paging did not end")
	return ""
}

func readContent(tb testing.TB, res ToolResult) string {
	tb.Helper()
	return detailsMap(tb, res)["content"].(string)
}

func lastPosition(tb testing.TB, s *Service) int64 {
	tb.Helper()
	p, err := s.Store().LastPosition(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func budgetChars(n int64) *BudgetInput { return &BudgetInput{MaxToolOutputChars: &n} }

type histCase struct {
	name   string
	budget *BudgetInput
	run    func(t *testing.T, e *histEnv)
}

// Tool-call ids and entry ids of the fixtures.
const (
	toolsUser, toolsBashCall, toolsBashResult   = "10000001", "10000002", "10000003"
	toolsReadCall, toolsReadResult              = "10000004", "10000005"
	toolsPairCall, toolsPairBash, toolsPairNote = "10000006", "10000007", "10000008"
	toolsHistCall, toolsHistResult              = "10000009", "1000000a"
	toolsGCRCall, toolsGCRResult                = "1000000b", "1000000c"
	toolsEditCall, toolsEditResult              = "1000000d", "1000000e"
	toolsVetCall, toolsEmptyResult              = "1000000f", "10000010"
	toolsStray, toolsAnswer                     = "10000011", "10000012"
)

// toolsVisible are the items of tools.jsonl an ordinary list shows.
var toolsVisible = []string{toolsUser, toolsBashCall, toolsBashResult, toolsReadCall, toolsReadResult, toolsPairCall,
	toolsPairBash, toolsEditCall, toolsEditResult, toolsVetCall, toolsEmptyResult, toolsStray, toolsAnswer}

func TestHistoryEdgeCases(t *testing.T) {
	s := mustOpenService(t)
	for i, c := range histCases() {
		t.Run(c.name, func(t *testing.T) {
			key := fmt.Sprintf("/home/u/.pi/agent/sessions/h/%03d.jsonl", i)
			c.run(t, &histEnv{s: s, key: key, root: histAttach(t, s, key, c.budget)})
		})
	}
}

func histCases() []histCase {
	return []histCase{
		// H23
		{name: "H23 unknown window_id lists and finds nothing, without error", run: func(t *testing.T, e *histEnv) {
			e.file(t, "tools.jsonl")
			res := e.call(t, "history_list_items", "window_id", "w99")
			wantIDs(t, "list w99", ids(t, res))
			checkListText(t, res, 6000)
			wantIDs(t, "search w99", ids(t, e.call(t, "history_search_contents", "query", "TestParse", "window_id", "w99")))
			wantIDs(t, "list w1", ids(t, e.call(t, "history_list_items", "window_id", "w1")), toolsVisible...)
		}},
		{name: "H23 unknown agent_name is not_found for every history tool", run: func(t *testing.T, e *histEnv) {
			e.file(t, "tools.jsonl")
			for tool, args := range map[string][]any{
				"history_list_windows":    {"agent_name", "/root/nope"},
				"history_list_items":      {"agent_name", "/root/nope"},
				"history_read_item":       {"agent_name", "/root/nope", "window_id", "w1", "item_id", toolsUser},
				"history_search_contents": {"agent_name", "nope", "query", "TestParse"},
			} {
				histWantErr(t, e.callErr(t, tool, args...), ErrNotFound)
			}
			histWantErr(t, e.callErr(t, "history_list_items", "agent_name", "/root/Nope"), ErrInvalidArgument)
		}},
		// H24
		{name: "H24 read_item with the wrong window_id is an error, without window_id invalid", run: func(t *testing.T, e *histEnv) {
			e.file(t, "compaction.jsonl")
			histWantErr(t, e.callErr(t, "history_read_item", "window_id", "w1", "item_id", "30000004"), ErrNotFound)
			histWantErr(t, e.callErr(t, "history_read_item", "window_id", "w99", "item_id", "30000004"), ErrNotFound)
			histWantErr(t, e.callErr(t, "history_read_item", "item_id", "30000004"), ErrInvalidArgument)
			histWantErr(t, e.callErr(t, "history_read_item", "window_id", "w2", "item_id", "nope"), ErrNotFound)
			if got := readContent(t, e.call(t, "history_read_item", "window_id", "w2", "item_id", "30000004")); got != "Now add environment overrides." {
				t.Fatalf("w2/30000004 = %q", got)
			}
		}},
		// H25
		{name: "H25 foreign fields are rejected", run: func(t *testing.T, e *histEnv) {
			e.file(t, "tools.jsonl")
			histWantErr(t, e.callErr(t, "history_search_contents", "query", "x", "max_chars_per_item", 10), ErrInvalidArgument)
			histWantErr(t, e.callErr(t, "notes_search_contents", "query", "x", "file_order_by", "name"), ErrInvalidArgument)
			histWantErr(t, e.callErr(t, "history_list_windows", "window_id", "w1"), ErrInvalidArgument)
			histWantErr(t, e.callErr(t, "history_read_item", "window_id", "w1", "item_id", toolsUser, "limit", 3), ErrInvalidArgument)
		}},
		// H26
		{name: "H26 role=tool lists the tool results", run: func(t *testing.T, e *histEnv) {
			e.file(t, "tools.jsonl")
			wantIDs(t, "role=tool", ids(t, e.call(t, "history_list_items", "role", "tool")),
				toolsBashResult, toolsReadResult, toolsPairBash, toolsEditResult, toolsEmptyResult, toolsStray)
			wantIDs(t, "role=tool notes", ids(t, e.call(t, "history_list_items", "role", "tool", "tool_namespace", "notes")), toolsPairNote)
			wantIDs(t, "role=assistant search", ids(t, e.call(t, "history_search_contents", "query", "Parse", "role", "assistant")),
				toolsPairCall, toolsEditCall, toolsAnswer) // the pair's notes_write_file arguments mention Parse
		}},
		{name: "H26 role=user includes custom messages, bash executions, compactions and branch summaries", run: func(t *testing.T, e *histEnv) {
			e.file(t, "control.jsonl")
			wantIDs(t, "control role=user", ids(t, e.call(t, "history_list_items", "role", "user")), "50000003", "50000007", "50000008")
			c := &histEnv{s: e.s, root: histAttach(t, e.s, e.key+".compaction", nil)}
			c.file(t, "compaction.jsonl")
			wantIDs(t, "compaction role=user", ids(t, c.call(t, "history_list_items", "role", "user")),
				"30000001", "30000003", "30000004", "3000000b", "3000000d", "3000000e")
			b := &histEnv{s: e.s, root: histAttach(t, e.s, e.key+".branches", nil)}
			b.file(t, "branches.jsonl")
			wantIDs(t, "branches role=user", ids(t, b.call(t, "history_list_items", "role", "user")), "40000001", "40000007", "40000008")
		}},
		{name: "H26 the raw role keeps normalised user items out of the user-request index", run: func(t *testing.T, e *histEnv) {
			e.file(t, "control.jsonl")
			e.file(t, "branches.jsonl")
			e.file(t, "compaction.jsonl") // the last sync is the current branch
			var items []projections.Item
			err := projections.NewReader(e.s.Store().Reader()).EachItem(context.Background(), e.root.TaskID, e.root.Agent, projections.WholeBranch, false,
				func(it projections.Item) (bool, error) { items = append(items, it); return true, nil })
			if err != nil {
				t.Fatal(err)
			}
			var requests, users []string
			for _, it := range items {
				if it.Role == "user" {
					users = append(users, it.EntryID+":"+it.RawRole)
				}
				if it.RawRole == "user" {
					requests = append(requests, it.EntryID)
				}
			}
			wantIDs(t, "user items", users, "30000001:user", "30000003:compaction", "30000004:user", "30000006:custom_message",
				"30000009:compaction", "3000000a:custom_message", "3000000b:user", "3000000d:compaction", "3000000e:user")
			wantIDs(t, "raw user requests", requests, "30000001", "30000004", "3000000b", "3000000e")
		}},
		// H27
		{name: "H27 functions/bash matches the bash calls and their results via toolCallId", run: func(t *testing.T, e *histEnv) {
			e.file(t, "tools.jsonl")
			want := []string{toolsBashCall, toolsBashResult, toolsPairCall, toolsPairBash, toolsVetCall, toolsEmptyResult}
			res := e.call(t, "history_list_items", "tool_namespace", "functions", "tool_name", "bash")
			wantIDs(t, "functions/bash", ids(t, res), want...)
			if r := results(t, res)[1]; r["tool_namespace"] != "functions" || r["tool_name"] != "bash" {
				t.Fatalf("result without toolName attributed as %v/%v", r["tool_namespace"], r["tool_name"])
			}
			wantIDs(t, "tool_name=bash", ids(t, e.call(t, "history_list_items", "tool_name", "bash")), want...)
			wantIDs(t, "search functions/bash", ids(t, e.call(t, "history_search_contents", "query", "TestParse",
				"tool_namespace", "functions", "tool_name", "bash")), toolsBashResult)
			wantIDs(t, "functions/read", ids(t, e.call(t, "history_list_items", "tool_namespace", "functions", "tool_name", "read")),
				toolsReadCall, toolsReadResult, toolsStray)
		}},
		{name: "H27 [bash, notes_write_file] does not match notes/bash", run: func(t *testing.T, e *histEnv) {
			e.file(t, "tools.jsonl")
			wantIDs(t, "notes/bash", ids(t, e.call(t, "history_list_items", "tool_namespace", "notes", "tool_name", "bash")))
			wantIDs(t, "functions/notes_write_file", ids(t, e.call(t, "history_list_items", "tool_namespace", "functions", "tool_name", "notes_write_file")))
			wantIDs(t, "search notes/bash", ids(t, e.call(t, "history_search_contents", "query", "git diff",
				"tool_namespace", "notes", "tool_name", "bash")))
			for _, name := range []string{"write_file", "notes_write_file"} {
				wantIDs(t, "notes/"+name, ids(t, e.call(t, "history_list_items", "tool_namespace", "notes", "tool_name", name)),
					toolsPairCall, toolsPairNote)
			}
			wantIDs(t, "search notes/write_file", ids(t, e.call(t, "history_search_contents", "query", "git diff",
				"tool_namespace", "notes", "tool_name", "write_file")), toolsPairCall)
		}},
		// H28
		{name: "H28 control records and internal tools are hidden before limit", run: func(t *testing.T, e *histEnv) {
			b := sessiongen.NewBuilder(28)
			var hidden []string
			for i := range 4 {
				c, r := b.Call("notes_read_file", map[string]any{"path": fmt.Sprintf("n%d.md", i)}, "needle in a note")
				hidden = append(hidden, c, r)
			}
			hidden = append(hidden, b.ControlMessage("reminder", "w1", "needle: keep taking notes"))
			c, r := b.Call("get_context_remaining", map[string]any{}, `{"needle":1}`)
			hidden = append(hidden, c, r)
			c, r = b.Call("new_context", map[string]any{}, "needle pending")
			hidden = append(hidden, c, r)
			c, r = b.Call("history_list_items", map[string]any{"role": "user"}, "needle list")
			hidden = append(hidden, c, r)
			u1 := b.UserText("first needle request")
			u2 := b.UserText("second needle request")
			bc, br := b.Call("bash", map[string]any{"command": "grep needle"}, "needle found")
			e.sync(t, b.Session())
			wantIDs(t, "limit 2", ids(t, e.call(t, "history_list_items", "limit", 2)), u1, u2)
			wantIDs(t, "search limit 2", ids(t, e.call(t, "history_search_contents", "query", "needle", "limit", 2)), u1, u2)
			wantIDs(t, "recent limit 3", ids(t, e.call(t, "history_list_items", "limit", 3, "recent_first", true)), br, bc, u2)
			wantIDs(t, "notes shown", ids(t, e.call(t, "history_list_items", "tool_namespace", "notes")), hidden[:8]...)
			wantIDs(t, "history shown", ids(t, e.call(t, "history_search_contents", "query", "needle", "tool_namespace", "history")), hidden[14])
			wantIDs(t, "functions/new_context", ids(t, e.call(t, "history_list_items", "tool_namespace", "functions", "tool_name", "new_context")), hidden[11], hidden[12])
			wantIDs(t, "get_context_remaining", ids(t, e.call(t, "history_list_items", "tool_name", "get_context_remaining")), hidden[9], hidden[10])
			wantIDs(t, "functions/bash", ids(t, e.call(t, "history_list_items", "tool_namespace", "functions")), hidden[9], hidden[10], hidden[11], hidden[12], bc, br)
			for _, id := range hidden {
				if got := readContent(t, e.call(t, "history_read_item", "window_id", "w1", "item_id", id)); !strings.Contains(got, "needle") &&
					!strings.Contains(got, "[tool_call") {
					t.Fatalf("hidden %s reads %q", id, got)
				}
			}
		}},
		{name: "H28 fixtures: control messages and bootstraps are hidden, read directly", run: func(t *testing.T, e *histEnv) {
			e.file(t, "control.jsonl")
			wantIDs(t, "control list", ids(t, e.call(t, "history_list_items")), "50000003", "50000005", "50000007", "50000008", "50000010")
			wantIDs(t, "control search", ids(t, e.call(t, "history_search_contents", "query", "context window")))
			if got := readContent(t, e.call(t, "history_read_item", "window_id", "w1", "item_id", "50000009")); !strings.HasPrefix(got, "The context window is nearly full") {
				t.Fatalf("fallback reads %q", got)
			}
			c := &histEnv{s: e.s, root: histAttach(t, e.s, e.key+".compaction", nil)}
			c.file(t, "compaction.jsonl")
			wantIDs(t, "compaction w4", ids(t, c.call(t, "history_list_items", "window_id", "w4")), "3000000b", "3000000c")
			wantIDs(t, "bootstrap search", ids(t, c.call(t, "history_search_contents", "query", "context window id")))
			if got := readContent(t, c.call(t, "history_read_item", "window_id", "w4", "item_id", "30000009")); !strings.HasPrefix(got, "<context_window_reset/>\n") {
				t.Fatalf("bootstrap reads %q", got)
			}
			wantIDs(t, "tools default", ids(t, (&histEnv{s: e.s, root: histAttach(t, e.s, e.key+".tools", nil)}).fileCall(t, "tools.jsonl",
				"history_list_items")), toolsVisible...)
		}},
		// H29
		{name: "H29 a search does not match its own in-flight call", run: func(t *testing.T, e *histEnv) {
			b := sessiongen.NewBuilder(29)
			b.UserText("find where the unicorn config lives")
			self := b.CallID()
			callEntry := b.Assistant(sessiongen.ToolCall(self, "history_search_contents", map[string]any{"query": "zebra-unique-7731"}))
			e.sync(t, b.Session())
			for _, extra := range [][]any{nil, {"tool_namespace", "history"}, {"tool_name", "search_contents"}} {
				cc := e.root
				wantIDs(t, fmt.Sprintf("other call %v", extra), ids(t, mustCall(t, e.s, cc, "history_search_contents",
					hargs(t, append([]any{"query", "zebra-unique-7731"}, extra...)...))), func() []string {
					if extra == nil {
						return nil
					}
					return []string{callEntry}
				}()...)
				cc.CallID = self
				wantIDs(t, fmt.Sprintf("self %v", extra), ids(t, mustCall(t, e.s, cc, "history_search_contents",
					hargs(t, append([]any{"query", "zebra-unique-7731"}, extra...)...))))
				wantIDs(t, fmt.Sprintf("self list %v", extra), ids(t, mustCall(t, e.s, cc, "history_list_items",
					hargs(t, append([]any{"tool_namespace", "history"}, extra...)...))))
			}
			// Another agent's call id does not hide this agent's records.
			child := mustAttachChild(t, e.s, e.root.TaskID, e.key+".child", "reader")
			child.CallID = self
			wantIDs(t, "child reading root", ids(t, mustCall(t, e.s, child, "history_search_contents",
				hargs(t, "agent_name", "/root", "query", "zebra-unique-7731", "tool_namespace", "history"))), callEntry)
		}},
		// H30
		{name: "H30 at most three regions, each reading back its matches", run: func(t *testing.T, e *histEnv) {
			b := sessiongen.NewBuilder(30)
			var body strings.Builder
			for i := range 10 {
				fmt.Fprintf(&body, "%s line %d: ERR_TIMEOUT at worker 😀 %d\n", strings.Repeat("lorem ipsum ", 40), i, i)
			}
			spread := b.UserText(body.String())
			close := b.UserText("ERR_TIMEOUT ERR_TIMEOUT, ERR_TIMEOUT and ERR_TIMEOUT: four close together")
			tail := b.UserText(strings.Repeat("é", 500) + "ERR_TIMEOUT")
			e.sync(t, b.Session())
			res := e.call(t, "history_search_contents", "query", "ERR_TIMEOUT")
			wantIDs(t, "hits", ids(t, res), spread, close, tail)
			for _, r := range results(t, res) {
				regions := r["regions"].([]any)
				if len(regions) == 0 || len(regions) > 3 {
					t.Fatalf("%s has %d regions", r["item_id"], len(regions))
				}
				if r["item_id"] == spread && len(regions) != 3 {
					t.Fatalf("spread item has %d regions, want 3", len(regions))
				}
				for _, rg := range regions {
					checkRegion(t, e.s, e.root, r["window_id"].(string), r["item_id"].(string), rg.(map[string]any), "ERR_TIMEOUT")
				}
			}
			first := results(t, res)[1]["regions"].([]any)[0].(map[string]any)
			if len(first["matches"].([]any)) != 4 {
				t.Fatalf("close matches = %v, want 4 in one region", first["matches"])
			}
		}},
		// H31
		{name: "H31 no match spans a removed thinking block, a part boundary or a tool call", run: func(t *testing.T, e *histEnv) {
			b := sessiongen.NewBuilder(31)
			parts := b.Assistant(sessiongen.Text("alpha"), sessiongen.Thinking("secret thought"), sessiongen.Text("beta"))
			blocks := b.User(sessiongen.Text("ab"), sessiongen.Text("cd"))
			joined := b.UserText("ab\ncd alpha\nbeta")
			callID := b.CallID()
			b.Assistant(sessiongen.Text("run"), sessiongen.ToolCall(callID, "bash", map[string]any{"command": "ls"}))
			e.sync(t, b.Session())
			for q, want := range map[string][]string{
				"alpha\nbeta": {joined}, "alphabeta": nil, "secret": nil, "b\nc": {joined}, "ab": {blocks, joined},
				"run\n[tool_call": nil, "[tool_call bash]": {b.Leaf()}, "alpha": {parts, joined}, "beta": {parts, joined},
			} {
				wantIDs(t, fmt.Sprintf("search %q", q), ids(t, e.call(t, "history_search_contents", "query", q)), want...)
			}
			if got := readContent(t, e.call(t, "history_read_item", "window_id", "w1", "item_id", parts)); got != "alpha\nbeta" {
				t.Fatalf("parts render %q", got)
			}
		}},
		// H32
		{name: "H32 list and search stop at whole lines within a small budget and say omitted", budget: budgetChars(1000), run: func(t *testing.T, e *histEnv) {
			e.sync(t, sessiongen.Large(512<<10))
			list := e.call(t, "history_list_items", "limit", 200)
			if checkListText(t, list, 1000) == 0 || len(results(t, list)) == 0 {
				t.Fatalf("list omitted nothing or returned nothing: %s", list.Content[0].Text)
			}
			search := e.call(t, "history_search_contents", "query", sessiongen.LargeCommonNeedle)
			if checkListText(t, search, 1000) == 0 || len(results(t, search)) == 0 {
				t.Fatalf("search omitted nothing or returned nothing: %s", search.Content[0].Text)
			}
			all := detailsMap(t, list)
			few := e.call(t, "history_list_items", "limit", 3, "max_chars_per_item", 1)
			checkListText(t, few, 1000)
			d := detailsMap(t, few)
			if num(t, d["n_returned"]) != 3 || num(t, d["n_returned"])+num(t, d["omitted"]) != num(t, all["n_returned"])+num(t, all["omitted"]) {
				t.Fatalf("limit 3: %v; limit 200: %v", d, all)
			}
		}},
		{name: "H32 windows within a small budget", budget: budgetChars(300), run: func(t *testing.T, e *histEnv) {
			b := sessiongen.NewBuilder(32)
			for i := range 40 {
				b.UserText(fmt.Sprintf("step %d", i))
				b.Compaction(fmt.Sprintf("summary %d", i), b.Leaf(), 1000)
			}
			e.sync(t, b.Session())
			res := e.call(t, "history_list_windows")
			if checkListText(t, res, 300) == 0 {
				t.Fatal("nothing omitted")
			}
			if got := ids(t, res); got[0] != "w1" {
				t.Fatalf("windows %v", got)
			}
			res = e.call(t, "history_list_windows", "recent_first", true, "limit", 3)
			wantIDs(t, "recent 3", ids(t, res), "w41", "w40", "w39")
			if checkListText(t, res, 300) != 38 {
				t.Fatalf("omitted %v, want 38", detailsMap(t, res)["omitted"])
			}
		}},
		{name: "H32 the default list budget is 6000 code points", run: func(t *testing.T, e *histEnv) {
			e.sync(t, sessiongen.Large(512<<10))
			checkListText(t, e.call(t, "history_list_items", "limit", 200), 6000)
			checkListText(t, e.call(t, "history_search_contents", "query", "e", "limit", 200), 6000)
			// A huge preview length still returns whole records: the
			// preview is cut to fit rather than every item dropped.
			res := e.call(t, "history_list_items", "role", "tool", "limit", 5, "max_chars_per_item", 100000)
			checkListText(t, res, 6000)
			if len(results(t, res)) == 0 {
				t.Fatalf("no item fits: %s", res.Content[0].Text)
			}
			// A long query that matches nothing is not echoed past the budget.
			q := strings.Repeat("no such text ", 600)
			res = e.call(t, "history_search_contents", "query", q)
			checkListText(t, res, 6000)
		}},
		// H33
		{name: "H33 read_item under a 50-char budget keeps a whole header and at least one char", budget: budgetChars(50), run: func(t *testing.T, e *histEnv) {
			e.file(t, "tools.jsonl")
			res := e.call(t, "history_read_item", "window_id", "w1", "item_id", toolsBashResult)
			text := res.Content[0].Text
			header, content, ok := strings.Cut(text, "\n")
			var h map[string]any
			if !ok || json.Unmarshal([]byte(header), &h) != nil || h["item_id"] != toolsBashResult || h["n_chars"] == nil {
				t.Fatalf("first line %q is not a whole header", header)
			}
			if utf8.RuneCountInString(content) < 1 || content != readContent(t, res) {
				t.Fatalf("content %q (details %q)", content, readContent(t, res))
			}
			got := readAll(t, e.s, e.root, "w1", toolsBashResult, func() int { return 40 }, true)
			want := "--- FAIL: TestParse (0.00s)\n    parse_test.go:41: Parse(\"ab\") = \"ab\", want \"ba\"\nFAIL\nFAIL\texample.com/parser\t0.004s"
			if got != want {
				t.Fatalf("paged read = %q", got)
			}
		}},
		// H34
		{name: "H34 list and search count images, read_item attaches them", run: func(t *testing.T, e *histEnv) {
			e.file(t, "image.jsonl")
			list := e.call(t, "history_list_items")
			search := e.call(t, "history_search_contents", "query", "image")
			for _, res := range []ToolResult{list, search} {
				if len(res.Content) != 1 || strings.Contains(res.Content[0].Text, "iVBORw0KGgo") || strings.Contains(res.Content[0].Text, "/9j/") {
					t.Fatalf("list/search shows image data: %+v", res.Content)
				}
			}
			images := map[string]any{}
			for _, r := range results(t, list) {
				images[r["item_id"].(string)] = r["images"]
			}
			if images["20000001"] != 2.0 || images["20000004"] != 1.0 || images["20000002"] != 0.0 {
				t.Fatalf("image counts %v", images)
			}
			read := e.call(t, "history_read_item", "window_id", "w1", "item_id", "20000001")
			if len(read.Content) != 3 || read.Content[1].Type != "image" || read.Content[1].MimeType != "image/png" ||
				read.Content[1].Data != sessiongen.PNG || read.Content[2].MimeType != "image/jpeg" || !strings.HasPrefix(read.Content[2].Data, "/9j/") {
				t.Fatalf("read content %+v", read.Content)
			}
			if d := detailsMap(t, read); d["images"] != 2.0 || d["content"] != "The login button is misaligned, see both screenshots:\n[image]\n[image]" {
				t.Fatalf("details %v", d)
			}
			if r := e.call(t, "history_read_item", "window_id", "w1", "item_id", "20000004"); len(r.Content) != 2 || r.Content[1].Type != "image" {
				t.Fatalf("tool result with image: %+v", r.Content)
			}
			if r := e.call(t, "history_read_item", "window_id", "w1", "item_id", "20000002"); len(r.Content) != 1 {
				t.Fatalf("image-less read: %+v", r.Content)
			}
		}},
		{name: "H34 image bytes do not reduce the 12000 text budget", run: func(t *testing.T, e *histEnv) {
			b := sessiongen.NewBuilder(34)
			big := strings.Repeat("0123456789", 3000)
			data := strings.Repeat("QUJD", 20000) // 80 KB of base64
			id := b.User(sessiongen.Text(big), sessiongen.Image(data, "image/png"))
			e.sync(t, b.Session())
			res := e.call(t, "history_read_item", "window_id", "w1", "item_id", id)
			if n := utf8.RuneCountInString(res.Content[0].Text); n != 12000 {
				t.Fatalf("text is %d code points, want the whole budget of 12000", n)
			}
			if len(res.Content) != 2 || res.Content[1].Data != data {
				t.Fatal("image not attached whole")
			}
			if d := detailsMap(t, res); num(t, d["n_chars"]) != 30008 || num(t, d["end_chars"]) < 11000 {
				t.Fatalf("details %v", d)
			}
		}},
		// H35
		{name: "H35 recent_first reverses windows, items and search; limit 3 gives the newest three", run: func(t *testing.T, e *histEnv) {
			e.file(t, "compaction.jsonl")
			wantIDs(t, "windows", ids(t, e.call(t, "history_list_windows")), "w1", "w2", "w4", "w5")
			wantIDs(t, "windows recent", ids(t, e.call(t, "history_list_windows", "recent_first", true)), "w5", "w4", "w2", "w1")
			wantIDs(t, "windows recent 2", ids(t, e.call(t, "history_list_windows", "recent_first", true, "limit", 2)), "w5", "w4")
			fwd := ids(t, e.call(t, "history_list_items"))
			rev := ids(t, e.call(t, "history_list_items", "recent_first", true))
			slices.Reverse(rev)
			wantIDs(t, "items reversed", rev, fwd...)
			wantIDs(t, "search", ids(t, e.call(t, "history_search_contents", "query", "o")),
				"30000001", "30000002", "30000003", "30000004", "30000005", "3000000b", "3000000c", "3000000d")
			wantIDs(t, "search recent 3", ids(t, e.call(t, "history_search_contents", "query", "o", "limit", 3, "recent_first", true)),
				"3000000d", "3000000c", "3000000b")
			wantIDs(t, "search 3", ids(t, e.call(t, "history_search_contents", "query", "o", "limit", 3)), "30000001", "30000002", "30000003")
			wantIDs(t, "items recent 2", ids(t, e.call(t, "history_list_items", "limit", 2, "recent_first", true)), "3000000e", "3000000d")
		}},
		// H36
		{name: "H36 thinking-only and whitespace-only messages are no items; an empty tool result is", run: func(t *testing.T, e *histEnv) {
			sess := sessiongen.EmptyMessages()
			e.sync(t, sess)
			m := sess.Marks
			wantIDs(t, "items", ids(t, e.call(t, "history_list_items")), m["request"], b2(sess, m["empty_result"]), m["empty_result"],
				m["empty_compaction"], m["answer"])
			for _, name := range []string{"thinking_only", "blank_user", "empty_user", "odd_user"} {
				histWantErr(t, e.callErr(t, "history_read_item", "window_id", "w1", "item_id", m[name]), ErrNotFound)
			}
			if got := readContent(t, e.call(t, "history_read_item", "window_id", "w1", "item_id", m["empty_result"])); got != "[empty tool result]" {
				t.Fatalf("empty result reads %q", got)
			}
			if got := readContent(t, e.call(t, "history_read_item", "window_id", "w2", "item_id", m["empty_compaction"])); got != "[empty summary]" {
				t.Fatalf("empty compaction reads %q", got)
			}
			w := results(t, e.call(t, "history_list_windows"))
			if len(w) != 2 || num(t, w[0]["item_count"]) != 3 || num(t, w[1]["item_count"]) != 2 {
				t.Fatalf("windows %v", w)
			}
		}},
		{name: "H36 fixtures: item_count leaves out non-items", run: func(t *testing.T, e *histEnv) {
			e.file(t, "control.jsonl")
			w := results(t, e.call(t, "history_list_windows"))
			// 16 entries: model/thinking changes, state, label, thinking-only
			// and whitespace-only are no items; hidden control records count.
			if len(w) != 1 || num(t, w[0]["item_count"]) != 10 || w[0]["current"] != true {
				t.Fatalf("windows %v", w)
			}
			for _, id := range []string{"50000001", "50000002", "50000004", "5000000b", "5000000e", "5000000f"} {
				histWantErr(t, e.callErr(t, "history_read_item", "window_id", "w1", "item_id", id), ErrNotFound)
			}
		}},
		// H37
		{name: "H37 compactions open windows: marked ids are used, native ones ordinal", run: func(t *testing.T, e *histEnv) {
			res := e.sync(t, histFile(t, "compaction.jsonl"))
			if res.WindowID != "w5" || res.Revision != 1 || res.Stored != 14 {
				t.Fatalf("sync = %+v", res)
			}
			w := results(t, e.call(t, "history_list_windows"))
			var got []string
			for _, r := range w {
				got = append(got, fmt.Sprintf("%s:%d:%v", r["window_id"], num(t, r["item_count"]), r["current"]))
			}
			wantIDs(t, "windows", got, "w1:2:false", "w2:6:false", "w4:4:false", "w5:2:true")
			for id, window := range map[string]string{"30000002": "w1", "30000003": "w2", "30000008": "w2", "30000009": "w4", "3000000d": "w5"} {
				e.call(t, "history_read_item", "window_id", window, "item_id", id)
			}
			wantIDs(t, "w2 items", ids(t, e.call(t, "history_list_items", "window_id", "w2")), "30000003", "30000004", "30000005")
			gen := &histEnv{s: e.s, root: histAttach(t, e.s, e.key+".gen", nil)}
			sess := sessiongen.Compactions()
			if r := gen.sync(t, sess); r.WindowID != "w5" {
				t.Fatalf("generated compactions end in %s", r.WindowID)
			}
			wantIDs(t, "generated windows", ids(t, gen.call(t, "history_list_windows")), "w1", "w2", "w4", "w5")
			for mark, window := range map[string]string{"first": "w1", "native": "w2", "marked": "w4", "native2": "w5", "in_w5": "w5"} {
				gen.call(t, "history_read_item", "window_id", window, "item_id", sess.Marks[mark])
			}
		}},
		{name: "H37 a leading compaction hides the empty first window; a taken marked id falls back to the ordinal", run: func(t *testing.T, e *histEnv) {
			b := sessiongen.NewBuilder(37)
			b.Compaction("summary of an earlier session", "", 5000)
			b.UserText("go on")
			b.MarkedCompaction("w2", "w2") // w2 is taken: ordinal w3
			b.UserText("and on")
			b.MarkedCompaction("w-3f9a", "w3")
			b.UserText("more")
			b.Compaction("native", b.Leaf(), 100)
			res := e.sync(t, b.Session())
			wantIDs(t, "windows", ids(t, e.call(t, "history_list_windows")), "w2", "w3", "w-3f9a", "w5")
			if res.WindowID != "w5" {
				t.Fatalf("current window %s", res.WindowID)
			}
		}},
		// H38
		{name: "H38 re-syncing the same branch stores nothing and appends no event", run: func(t *testing.T, e *histEnv) {
			sess := histFile(t, "tools.jsonl")
			first := e.sync(t, sess)
			if first.Stored != 18 || first.Unchanged != 0 || first.Revision != 1 {
				t.Fatalf("first sync %+v", first)
			}
			pos := lastPosition(t, e.s)
			again := e.sync(t, sess)
			if again.Stored != 0 || again.Unchanged != 18 || again.Revision != 1 || again.WindowID != "w1" {
				t.Fatalf("re-sync %+v", again)
			}
			// Equal after canonicalisation: other key order and spacing.
			var reordered []json.RawMessage
			for _, raw := range sess.Entries {
				var m map[string]any
				if err := json.Unmarshal(raw, &m); err != nil {
					t.Fatal(err)
				}
				out, _ := json.MarshalIndent(m, " ", "   ")
				reordered = append(reordered, out)
			}
			if r, err := histSyncErr(e.s, e.root, reordered, sess.Branch, nil); err != nil || r.Stored != 0 || r.Unchanged != 18 {
				t.Fatalf("canonical re-sync %+v %v", r, err)
			}
			if r, err := histSyncErr(e.s, e.root, nil, sess.Branch, nil); err != nil || r.Stored != 0 || r.Revision != 1 {
				t.Fatalf("branch-only re-sync %+v %v", r, err)
			}
			if p := lastPosition(t, e.s); p != pos {
				t.Fatalf("re-sync appended events: position %d → %d", pos, p)
			}
		}},
		{name: "H38 the same id with other content is a conflict and stores nothing", run: func(t *testing.T, e *histEnv) {
			sess := histFile(t, "tools.jsonl")
			e.sync(t, sess)
			pos := lastPosition(t, e.s)
			changed := json.RawMessage(strings.Replace(string(sess.Entries[0]), "Fix it.", "Fix it!", 1))
			b := sessiongen.NewBuilder(38)
			b.Checkout("")
			fresh := b.UserText("a new entry in the same request")
			for _, entries := range [][]json.RawMessage{
				{changed},
				{b.Session().Entries[0], changed},
				{b.Session().Entries[0], b.Session().Entries[0], json.RawMessage(strings.Replace(string(b.Session().Entries[0]), "new", "old", 1))},
			} {
				_, err := histSyncErr(e.s, e.root, entries, append(slices.Clone(sess.Branch), fresh), nil)
				histWantErr(t, err, ErrConflict)
			}
			if p := lastPosition(t, e.s); p != pos {
				t.Fatalf("conflict appended events: %d → %d", pos, p)
			}
			histWantErr(t, e.callErr(t, "history_read_item", "window_id", "w1", "item_id", fresh), ErrNotFound)
			if got := readContent(t, e.call(t, "history_read_item", "window_id", "w1", "item_id", toolsUser)); got != "Why does TestParse fail? Fix it." {
				t.Fatalf("entry changed to %q", got)
			}
		}},
		{name: "H38 a branch naming an unknown id is invalid and stores nothing", run: func(t *testing.T, e *histEnv) {
			sess := histFile(t, "tools.jsonl")
			pos := lastPosition(t, e.s)
			_, err := histSyncErr(e.s, e.root, sess.Entries, append(slices.Clone(sess.Branch), "ffffffff"), nil)
			histWantErr(t, err, ErrInvalidArgument)
			_, err = histSyncErr(e.s, e.root, sess.Entries, append(slices.Clone(sess.Branch), sess.Branch[0]), nil)
			histWantErr(t, err, ErrInvalidArgument) // an id twice
			if p := lastPosition(t, e.s); p != pos {
				t.Fatalf("invalid sync appended events: %d → %d", pos, p)
			}
			wantIDs(t, "windows", ids(t, e.call(t, "history_list_windows")))
			if rev, _, err := projections.NewReader(e.s.Store().Reader()).Branch(context.Background(), e.root.TaskID, e.root.Agent); err != nil || rev != 0 {
				t.Fatalf("revision %d %v", rev, err)
			}
		}},
		{name: "H38 expected_revision must match the branch revision", run: func(t *testing.T, e *histEnv) {
			sess := histFile(t, "branches.jsonl")
			zero, one, five := int64(0), int64(1), int64(5)
			a, err := sessiongen.Path(sess.Entries, "40000006")
			if err != nil {
				t.Fatal(err)
			}
			if r, err := histSyncErr(e.s, e.root, sess.Entries, a, &zero); err != nil || r.Revision != 1 {
				t.Fatalf("first sync at revision 0: %+v %v", r, err)
			}
			pos := lastPosition(t, e.s)
			_, err = histSyncErr(e.s, e.root, nil, sess.Branch, &zero)
			histWantErr(t, err, ErrConflict)
			_, err = histSyncErr(e.s, e.root, nil, sess.Branch, &five)
			histWantErr(t, err, ErrConflict)
			if p := lastPosition(t, e.s); p != pos {
				t.Fatalf("stale sync appended events")
			}
			if r, err := histSyncErr(e.s, e.root, nil, sess.Branch, &one); err != nil || r.Revision != 2 || r.WindowID != "w3" {
				t.Fatalf("sync at revision 1: %+v %v", r, err)
			}
		}},
		{name: "H38 branch switch: only B is listed, windows follow B, A's entries stay and come back", run: func(t *testing.T, e *histEnv) {
			tree := histFile(t, "branches.jsonl")
			aBranch, err := sessiongen.Path(tree.Entries, "40000006")
			if err != nil {
				t.Fatal(err)
			}
			// Branch A as it was, before the user navigated: its 6 entries.
			r := e.sync(t, sessiongen.Session{Entries: tree.Entries[:6], Branch: aBranch})
			if r.WindowID != "w2" || r.Stored != 6 {
				t.Fatalf("sync A %+v", r)
			}
			aItems := []string{"40000001", "40000002", "40000003", "40000004", "40000005", "40000006"}
			wantIDs(t, "A items", ids(t, e.call(t, "history_list_items")), aItems...)
			wantIDs(t, "A windows", ids(t, e.call(t, "history_list_windows")), "w1", "w2")
			pos := lastPosition(t, e.s)
			r = e.sync(t, tree) // the whole file: branch B is current
			if r.Stored != 5 || r.Unchanged != 6 || r.Revision != 2 || r.WindowID != "w3" {
				t.Fatalf("sync B %+v", r)
			}
			var types []string
			if err := e.s.Store().Each(context.Background(), eventlog.Filter{After: pos}, func(ev events.Event) error {
				types = append(types, ev.Type)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(types) != 6 || types[5] != events.TypeHistoryBranchChanged {
				t.Fatalf("B appended %v", types)
			}
			bItems := []string{"40000001", "40000002", "40000007", "40000008", "40000009", "4000000b"}
			wantIDs(t, "B items", ids(t, e.call(t, "history_list_items")), bItems...)
			wantIDs(t, "B windows", ids(t, e.call(t, "history_list_windows")), "w1", "w3")
			wantIDs(t, "B search", ids(t, e.call(t, "history_search_contents", "query", "8% faster")), "40000007")
			wantIDs(t, "B search A text", ids(t, e.call(t, "history_search_contents", "query", "sync.Pool of bytes.Buffer")))
			histWantErr(t, e.callErr(t, "history_read_item", "window_id", "w1", "item_id", "40000004"), ErrNotFound)
			e.call(t, "history_read_item", "window_id", "w3", "item_id", "4000000a")
			// A's entries are still stored: the branch alone brings them back.
			r, err = histSyncErr(e.s, e.root, nil, aBranch, nil)
			if err != nil || r.Stored != 0 || r.Revision != 3 || r.WindowID != "w2" {
				t.Fatalf("back to A %+v %v", r, err)
			}
			wantIDs(t, "A again", ids(t, e.call(t, "history_list_items")), aItems...)
			wantIDs(t, "A windows again", ids(t, e.call(t, "history_list_windows")), "w1", "w2")
			wantIDs(t, "A search", ids(t, e.call(t, "history_search_contents", "query", "8% faster")), "40000004")
			e.call(t, "history_read_item", "window_id", "w1", "item_id", "40000004")
		}},
		{name: "H38 generated branch switch", run: func(t *testing.T, e *histEnv) {
			a, b := sessiongen.BranchSwitch()
			e.sync(t, a)
			wantIDs(t, "A windows", ids(t, e.call(t, "history_list_windows")), "w1")
			e.sync(t, b)
			wantIDs(t, "B windows", ids(t, e.call(t, "history_list_windows")), "w1", "w2")
			m := b.Marks
			wantIDs(t, "B items", ids(t, e.call(t, "history_list_items")), m["shared_user"], m["shared_reply"], m["summary"],
				m["b_user"], m["b_compaction"], m["b_leaf"])
			e.sync(t, a)
			wantIDs(t, "A items", ids(t, e.call(t, "history_list_items")), m["shared_user"], m["shared_reply"], m["a_user"], m["a_only"])
		}},
		// H39
		{name: "H39 a child reads the root's history, which converges after the root's next sync", run: func(t *testing.T, e *histEnv) {
			sess := histFile(t, "tools.jsonl")
			e.sync(t, sessiongen.Session{Entries: sess.Entries[:10], Branch: sess.Branch[:10]})
			child := mustAttachChild(t, e.s, e.root.TaskID, e.key+".reviewer", "reviewer")
			list := func() []string {
				return ids(t, mustCall(t, e.s, child, "history_list_items", hargs(t, "agent_name", "/root", "recent_first", true, "limit", 1)))
			}
			wantIDs(t, "lagging", list(), toolsPairBash)
			e.sync(t, sess)
			wantIDs(t, "converged", list(), toolsAnswer)
			wantIDs(t, "child search", ids(t, mustCall(t, e.s, child, "history_search_contents", hargs(t, "agent_name", "/root", "query", "TestParse"))),
				toolsUser, toolsBashResult, toolsAnswer)
			wantIDs(t, "child windows", ids(t, mustCall(t, e.s, child, "history_list_windows", hargs(t, "agent_name", "/root"))), "w1")
			read := mustCall(t, e.s, child, "history_read_item", hargs(t, "agent_name", "/root", "window_id", "w1", "item_id", toolsUser))
			if d := detailsMap(t, read); d["agent"] != "/root" || d["content"] != "Why does TestParse fail? Fix it." {
				t.Fatalf("child read %v", d)
			}
			wantIDs(t, "child's own windows", ids(t, mustCall(t, e.s, child, "history_list_windows", "{}")))
			// The root reads the child's history by relative name.
			histSync(t, e.s, child, histFile(t, "image.jsonl"))
			wantIDs(t, "root reads child", ids(t, e.call(t, "history_list_items", "agent_name", "reviewer", "limit", 1)), "20000001")
		}},
		{name: "H39 another task's agent is forbidden, an unknown one not_found", run: func(t *testing.T, e *histEnv) {
			e.file(t, "tools.jsonl")
			other := histAttach(t, e.s, e.key+".other", nil)
			stranger := mustAttachChild(t, e.s, other.TaskID, e.key+".stranger", "stranger")
			histSync(t, e.s, stranger, histFile(t, "image.jsonl"))
			for _, tool := range []string{"history_list_windows", "history_list_items", "history_search_contents", "history_read_item"} {
				for agent, kind := range map[string]error{"/root/stranger": ErrForbidden, "/root/ghost": ErrNotFound} {
					args := []any{"agent_name", agent}
					switch tool {
					case "history_search_contents":
						args = append(args, "query", "login")
					case "history_read_item":
						args = append(args, "window_id", "w1", "item_id", "20000001")
					}
					histWantErr(t, e.callErr(t, tool, args...), kind)
				}
			}
			// The stranger cannot read this task's root either: its /root is
			// its own task's root.
			wantIDs(t, "stranger reads its root", ids(t, mustCall(t, e.s, stranger, "history_list_windows", hargs(t, "agent_name", "/root"))))
		}},
		// H22
		{name: "H22 from /root/reviewer, agent_name checker is /root/reviewer/checker for the history tools", run: func(t *testing.T, e *histEnv) {
			task := e.root.TaskID
			reviewer := mustAttachChild(t, e.s, task, e.key+".reviewer", "reviewer")
			res, err := e.s.Attach(context.Background(), AttachRequest{SessionKey: e.key + ".checker",
				Task: &TaskRef{TaskID: task, ParentAgent: "/root/reviewer", AgentName: "checker"}}, "")
			if err != nil || res.Agent != "/root/reviewer/checker" {
				t.Fatalf("attach checker under /root/reviewer: %+v, %v", res, err)
			}
			checker := CallContext{TaskID: task, Agent: res.Agent}
			histSync(t, e.s, checker, histFile(t, "tools.jsonl"))
			// A decoy /root/checker with other history: "checker" must not
			// resolve under /root when /root/reviewer asks.
			decoy := mustAttachChild(t, e.s, task, e.key+".decoy", "checker")
			histSync(t, e.s, decoy, histFile(t, "image.jsonl"))

			as := func(cc CallContext, tool string, kv ...any) ToolResult {
				t.Helper()
				return mustCall(t, e.s, cc, tool, hargs(t, kv...))
			}
			wantIDs(t, "reviewer lists checker", ids(t, as(reviewer, "history_list_items", "agent_name", "checker")), toolsVisible...)
			wantIDs(t, "reviewer lists /root/reviewer/checker", ids(t, as(reviewer, "history_list_items", "agent_name", "/root/reviewer/checker")), toolsVisible...)
			wantIDs(t, "reviewer searches checker", ids(t, as(reviewer, "history_search_contents", "agent_name", "checker", "query", "TestParse")),
				toolsUser, toolsBashResult, toolsAnswer)
			wantIDs(t, "reviewer lists checker's windows", ids(t, as(reviewer, "history_list_windows", "agent_name", "checker")), "w1")
			if d := detailsMap(t, as(reviewer, "history_read_item", "agent_name", "checker", "window_id", "w1", "item_id", toolsUser)); d["agent"] != "/root/reviewer/checker" ||
				d["content"] != "Why does TestParse fail? Fix it." {
				t.Fatalf("reviewer reads checker's item: %v", d)
			}
			// From /root the same relative name is /root/checker, the decoy.
			wantIDs(t, "root lists checker", ids(t, as(e.root, "history_list_items", "agent_name", "checker", "limit", 1)), "20000001")
			wantIDs(t, "root searches checker", ids(t, as(e.root, "history_search_contents", "agent_name", "checker", "query", "TestParse")))
			// The reviewer's own history is empty: agent_name absent is itself.
			wantIDs(t, "reviewer's own items", ids(t, as(reviewer, "history_list_items")))

			// An absolute name of another task's agent is forbidden, for
			// both tools, relative or not; a name that is nowhere not_found.
			other := histAttach(t, e.s, e.key+".other", nil)
			stranger := mustAttachChild(t, e.s, other.TaskID, e.key+".stranger", "stranger")
			histSync(t, e.s, stranger, histFile(t, "tools.jsonl"))
			for _, tc := range []struct {
				name string
				kind error
			}{{"/root/stranger", ErrForbidden}, {"stranger", ErrNotFound}, {"/root/reviewer/nobody", ErrNotFound}} {
				for _, tool := range []string{"history_list_items", "history_search_contents"} {
					kv := []any{"agent_name", tc.name}
					if tool == "history_search_contents" {
						kv = append(kv, "query", "TestParse")
					}
					_, err := call(t, e.s, reviewer, tool, hargs(t, kv...))
					histWantErr(t, err, tc.kind)
				}
			}
		}},
		// Unicode coordinates.
		{name: "H30 code-point offsets with emoji, combining characters and CJK", run: func(t *testing.T, e *histEnv) {
			sess := sessiongen.Unicode()
			e.sync(t, sess)
			m := sess.Marks
			if got := readAll(t, e.s, e.root, "w1", m["user"], func() int { return 1 }, false); got != sessiongen.UnicodeText {
				t.Fatalf("one-code-point pages = %q", got)
			}
			for _, q := range []string{"👩‍💻", "e\u0301te\u0301", "日本語", "😀.", "🇯🇵"} {
				res := e.call(t, "history_search_contents", "query", q)
				r := results(t, res)
				if len(r) == 0 || r[0]["item_id"] != m["user"] {
					t.Fatalf("search %q: %v", q, ids(t, res))
				}
				for _, rg := range r[0]["regions"].([]any) {
					checkRegion(t, e.s, e.root, "w1", m["user"], rg.(map[string]any), q)
				}
				start := num(t, r[0]["regions"].([]any)[0].(map[string]any)["matches"].([]any)[0].(map[string]any)["start"])
				if want := utf8.RuneCountInString(sessiongen.UnicodeText[:strings.Index(sessiongen.UnicodeText, q)]); start != want {
					t.Fatalf("%q starts at %d, want code point %d", q, start, want)
				}
			}
			if got := readContent(t, e.call(t, "history_read_item", "window_id", "w1", "item_id", m["reply"])); got != "見つけた 🎉\nZoë's 🧑🏽‍🔬 patch" {
				t.Fatalf("reply %q", got)
			}
			wantIDs(t, "thinking is not searchable", ids(t, e.call(t, "history_search_contents", "query", "隠された")))
		}},
	}
}

// b2 returns the parent of id in sess (the call of a tool result).
func b2(sess sessiongen.Session, id string) string {
	i := slices.Index(sess.Branch, id)
	return sess.Branch[i-1]
}

// fileCall syncs a fixture and runs one tool.
func (e *histEnv) fileCall(tb testing.TB, name, tool string, kv ...any) ToolResult {
	tb.Helper()
	e.file(tb, name)
	return e.call(tb, tool, kv...)
}

// checkRegion reads a search region back with history_read_item and checks
// that its preview is that text and every match in it is the query.
func checkRegion(tb testing.TB, s *Service, cc CallContext, window, id string, rg map[string]any, query string, extra ...any) {
	tb.Helper()
	off, limit := num(tb, rg["offset_chars"]), num(tb, rg["limit_chars"])
	res := mustCall(tb, s, cc, "history_read_item", hargs(tb, append([]any{"window_id", window, "item_id", id,
		"offset_chars", off, "limit_chars", limit}, extra...)...))
	content := []rune(readContent(tb, res))
	if string(content) != rg["preview"] {
		tb.Fatalf("region %d+%d reads %q, preview %q", off, limit, string(content), rg["preview"])
	}
	matches := rg["matches"].([]any)
	if len(matches) == 0 {
		tb.Fatalf("region without matches")
	}
	for _, mm := range matches {
		m := mm.(map[string]any)
		start, end := num(tb, m["start"])-off, num(tb, m["end"])-off
		if start < 0 || end > len(content) || string(content[start:end]) != query {
			tb.Fatalf("match %v in region %d+%d of %q is not %q", m, off, limit, string(content), query)
		}
	}
}

// randomText returns n code points mixing ASCII (with JSON-special
// characters), emoji (with ZWJ sequences, flags and skin tones), combining
// marks and CJK, and at least one non-space character.
func randomText(r *rand.Rand, n int) string {
	pieces := []string{"a", "b", "Z", "0", " ", " ", "\n", "\t", "\"", "\\", "<", ">", "&", "/", "{", "}", "\x00", "\u2028",
		"😀", "👩‍💻", "🇯🇵", "🧑🏽", "🎉", "\u0301", "\u0308", "\u0332", "e\u0301", "日", "本", "語", "中", "文", "한", "글", "é", "ß", "Ω"}
	var b strings.Builder
	for range n {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	b.WriteString("x")
	return b.String()
}

// TestHistoryReadSearchProperty: for random texts, paging read_item by
// random limit_chars reconstructs the rendered text, and every search
// region of a random needle from the text reads back the needle at its
// match coordinates.
func TestHistoryReadSearchProperty(t *testing.T) {
	s := mustOpenService(t)
	cc := mustAttach(t, s, "/home/u/.pi/agent/sessions/property.jsonl")
	r := rand.New(rand.NewPCG(20261202, 7))
	b := sessiongen.NewBuilder(7)
	for i := range 40 {
		text := randomText(r, 1+r.IntN(160))
		var id string
		if i%3 == 2 { // tool results render their text blocks alike
			call := b.CallID()
			b.Assistant(sessiongen.ToolCall(call, "bash", map[string]any{"command": "cat"}))
			id = b.ToolResult(call, "bash", false, sessiongen.Text(text))
		} else {
			id = b.UserText(text)
		}
		sess := b.Session()
		if _, err := histSyncErr(s, cc, sess.Entries[max(0, len(sess.Entries)-2):], sess.Branch, nil); err != nil {
			t.Fatal(err)
		}
		if got := readAll(t, s, cc, "w1", id, func() int { return 1 + r.IntN(50) }, false); got != text {
			t.Fatalf("iteration %d: paged read = %q, want %q", i, got, text)
		}
		runes := []rune(text)
		a := r.IntN(len(runes))
		needle := string(runes[a : a+1+r.IntN(min(len(runes)-a, 12))])
		res := mustCall(t, s, cc, "history_search_contents", hargs(t, "query", needle, "recent_first", true, "limit", 1))
		hits := results(t, res)
		if len(hits) != 1 || hits[0]["item_id"] != id {
			t.Fatalf("iteration %d: search %q from %q found %v", i, needle, text, ids(t, res))
		}
		for _, rg := range hits[0]["regions"].([]any) {
			checkRegion(t, s, cc, "w1", id, rg.(map[string]any), needle)
			for _, mm := range rg.(map[string]any)["matches"].([]any) {
				m := mm.(map[string]any)
				if got := string(runes[num(t, m["start"]):num(t, m["end"])]); got != needle {
					t.Fatalf("iteration %d: match %v of %q in %q is %q", i, m, needle, text, got)
				}
			}
		}
	}
}

// TestHistoryRebuildAndImport: after a history workload the projections
// equal a rebuild from the log and a fresh store the log was imported into.
func TestHistoryRebuildAndImport(t *testing.T) {
	ctx := context.Background()
	s := mustOpenService(t)
	root := mustAttach(t, s, "/home/u/.pi/agent/sessions/rebuild.jsonl")
	tree := histFile(t, "branches.jsonl")
	aBranch, err := sessiongen.Path(tree.Entries, "40000006")
	if err != nil {
		t.Fatal(err)
	}
	histSync(t, s, root, sessiongen.Session{Entries: tree.Entries[:6], Branch: aBranch})
	histSync(t, s, root, tree)
	if _, err := histSyncErr(s, root, nil, aBranch, nil); err != nil {
		t.Fatal(err)
	}
	histSync(t, s, root, tree)
	child := mustAttachChild(t, s, root.TaskID, "/home/u/.pi/agent/sessions/rebuild-child.jsonl", "reviewer")
	histSync(t, s, child, histFile(t, "tools.jsonl"))
	histSync(t, s, child, histFile(t, "compaction.jsonl")) // a second, unrelated tree: the branch replaces the first
	other := mustAttach(t, s, "/home/u/.pi/agent/sessions/rebuild-other.jsonl")
	histSync(t, s, other, histFile(t, "image.jsonl"))
	histSync(t, s, other, sessiongen.Large(256<<10))
	histSync(t, s, other, histFile(t, "control.jsonl"))
	_, _ = histSyncErr(s, other, histFile(t, "image.jsonl").Entries[:1], []string{"nope"}, nil) // fails, writes nothing

	before := historyDigest(t, s.Store())
	if err := projections.Rebuild(ctx, s.Store()); err != nil {
		t.Fatal(err)
	}
	if after := historyDigest(t, s.Store()); !reflect.DeepEqual(before, after) {
		t.Fatalf("rebuild changed the projections:\nbefore %v\nafter  %v", before, after)
	}

	var log []events.Event
	if err := s.Store().Each(ctx, eventlog.Filter{}, func(ev events.Event) error {
		log = append(log, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	fresh := mustOpenAt(t, filepath.Join(t.TempDir(), "imported.db"), OpenOptions{})
	i := 0
	n, err := fresh.store.Import(ctx, func() (events.Event, bool, error) {
		if i == len(log) {
			return events.Event{}, false, nil
		}
		i++
		return log[i-1], true, nil
	})
	if err != nil || n != int64(len(log)) {
		t.Fatalf("import: %d of %d events, %v", n, len(log), err)
	}
	if imported := historyDigest(t, fresh.store); !reflect.DeepEqual(before, imported) {
		t.Fatalf("imported projections differ:\nlive     %v\nimported %v", before, imported)
	}
	for _, args := range []string{`{"agent_name":"/root/reviewer"}`, `{}`} {
		a := mustCall(t, s, root, "history_list_items", args)
		b := mustCall(t, fresh, root, "history_list_items", args)
		if a.Content[0].Text != b.Content[0].Text {
			t.Fatalf("list %s differs after import", args)
		}
	}
}

// historyDigest fingerprints every projection and checks that the history
// tables are not empty.
func historyDigest(tb testing.TB, store *eventlog.Store) []projections.TableDigest {
	tb.Helper()
	d, err := projections.Digest(context.Background(), store)
	if err != nil {
		tb.Fatal(err)
	}
	for _, td := range d {
		if strings.HasPrefix(td.Table, "history_") && td.Rows == 0 {
			tb.Fatalf("table %s is empty", td.Table)
		}
	}
	return d
}

// TestHistorySearchChunksProperty: texts sealed into chunks and texts still
// open are searched exactly as a scan of each item's rendered text would:
// a needle is found in an item iff the item's text contains it at a place
// that spans no break, never across two items, whatever chunk the items
// are in; and every item's text reads back whole.
func TestHistorySearchChunksProperty(t *testing.T) {
	ctx := context.Background()
	s := mustOpenService(t)
	cc := mustAttach(t, s, "/home/u/.pi/agent/sessions/chunks.jsonl")
	r := rand.New(rand.NewPCG(20261203, 11))
	alphabet := []string{"a", "b", "c", " ", "é", "😀", "\n", "ab", "ca"}
	text := func(n int) string {
		var sb strings.Builder
		for range n {
			sb.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		return sb.String() + "x"
	}
	b := sessiongen.NewBuilder(11)
	synced := 0
	for i := range 400 {
		n := 1 + r.IntN(200)
		if r.IntN(10) == 0 {
			n = 5000 + r.IntN(30000) // large items seal chunks quickly
		}
		switch i % 4 {
		case 0:
			b.UserText(text(n))
		case 1: // two text blocks: one break between them
			b.Assistant(sessiongen.Text(text(n)), sessiongen.Text(text(1+r.IntN(50))))
		case 2:
			call := b.CallID()
			b.Assistant(sessiongen.ToolCall(call, "bash", map[string]any{"command": text(5)}))
			b.ToolResult(call, "bash", false, sessiongen.Text(text(n)))
		default:
			b.UserText(text(n))
		}
		if r.IntN(20) == 0 || i == 399 { // sync in batches of varying size
			sess := b.Session()
			if _, err := histSyncErr(s, cc, sess.Entries[synced:], sess.Branch, nil); err != nil {
				t.Fatal(err)
			}
			synced = len(sess.Entries)
		}
	}
	sess := b.Session()
	type item struct {
		id     string
		text   string
		breaks []int
	}
	var items []item
	rd := projections.NewReader(s.Store().Reader())
	for _, raw := range sess.Entries {
		rr := history.Render(raw)
		if !rr.Item {
			continue
		}
		var head struct{ ID string }
		if err := json.Unmarshal(raw, &head); err != nil {
			t.Fatal(err)
		}
		got, breaks, err := rd.ItemText(ctx, cc.TaskID, cc.Agent, head.ID)
		if err != nil || got != rr.Text || !slices.Equal(breaks, rr.Breaks) && len(breaks)+len(rr.Breaks) > 0 {
			t.Fatalf("item %s reads back %d chars, breaks %v (%v); rendered %d chars, breaks %v", head.ID, len(got), breaks, err, len(rr.Text), rr.Breaks)
		}
		items = append(items, item{head.ID, rr.Text, rr.Breaks})
	}
	var chunks int
	if err := s.Store().Reader().QueryRowContext(ctx, "SELECT count(*) FROM history_chunks").Scan(&chunks); err != nil || chunks < 3 {
		t.Fatalf("%d sealed chunks (%v): the test needs several", chunks, err)
	}
	// want is the naive search: every match position, checked for breaks.
	want := func(needle string) []string {
		var out []string
		for _, it := range items {
			if len(findRegions(it.text, it.breaks, needle, 0)) > 0 {
				out = append(out, it.id)
			}
		}
		return out
	}
	runes := func(s string) []rune { return []rune(s) }
	for k := range 300 {
		var needle string
		a := items[r.IntN(len(items))]
		switch k % 4 {
		case 0: // inside an item
			rs := runes(a.text)
			i := r.IntN(len(rs))
			needle = string(rs[i : i+1+r.IntN(min(len(rs)-i, 8))])
		case 1: // across two consecutive items
			i := r.IntN(len(items) - 1)
			x, y := runes(items[i].text), runes(items[i+1].text)
			needle = string(x[max(0, len(x)-1-r.IntN(4)):]) + string(y[:min(len(y), 1+r.IntN(4))])
		case 2: // across a break
			if len(a.breaks) > 0 {
				rs := runes(a.text)
				br := a.breaks[0]
				needle = string(rs[max(0, br-1-r.IntN(3)):min(len(rs), br+2+r.IntN(3))])
			} else {
				needle = "c\na"
			}
		default:
			needle = text(r.IntN(3))
		}
		var got []string
		if err := rd.SearchTexts(ctx, cc.TaskID, cc.Agent, needle, func(id string) error {
			got = append(got, id)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if w := want(needle); !slices.Equal(got, w) {
			t.Fatalf("needle %q: found %d items %v, want %d %v", needle, len(got), got, len(w), w)
		}
	}
}

// TestHistoryLongBranchPaging: a branch of more items than one page of
// the item walk lists, counts and searches like a short one, in both
// orders and with a filter.
func TestHistoryLongBranchPaging(t *testing.T) {
	s := mustOpenService(t)
	cc := mustAttach(t, s, "/home/u/.pi/agent/sessions/long.jsonl")
	b := sessiongen.NewBuilder(5)
	var users, all []string
	for i := range 1300 {
		if i%3 == 0 {
			all = append(all, b.Assistant(sessiongen.Text(fmt.Sprintf("answer %d", i))))
		} else {
			id := b.UserText(fmt.Sprintf("question %d", i))
			users, all = append(users, id), append(all, id)
		}
	}
	histSync(t, s, cc, b.Session())
	for _, c := range []struct {
		args string
		want []string
	}{
		{`{"limit":200}`, all},
		{`{"limit":200,"recent_first":true}`, all},
		{`{"limit":200,"role":"user"}`, users},
		{`{"limit":200,"role":"user","recent_first":true}`, users},
	} {
		want := slices.Clone(c.want)
		if strings.Contains(c.args, "recent_first") {
			slices.Reverse(want)
		}
		d := detailsMap(t, mustCall(t, s, cc, "history_list_items", c.args))
		var got []string
		for _, r := range d["results"].([]any) {
			got = append(got, r.(map[string]any)["item_id"].(string))
		}
		if n := num(t, d["n_returned"]) + num(t, d["omitted"]); n != len(want) || !slices.Equal(got, want[:len(got)]) || len(got) == 0 {
			t.Fatalf("list %s: %d returned + omitted, first %v; want %d, first %v", c.args, n, got[:min(3, len(got))], len(want), want[:3])
		}
	}
	// "question 1" is in question 1, 10..19, 100..199, 1000..1299 less the answers.
	d := detailsMap(t, mustCall(t, s, cc, "history_search_contents", `{"query":"question 1","limit":200}`))
	want := 0
	for i := range 1300 {
		if i%3 != 0 && strings.HasPrefix(fmt.Sprint(i), "1") {
			want++
		}
	}
	// The search stops after limit matches: more says the rest exist.
	if n := num(t, d["n_returned"]) + num(t, d["omitted"]); n != min(want, 200) || d["more"] != (want > 200) {
		t.Fatalf("search found %d items, more %v; want %d of %d", n, d["more"], min(want, 200), want)
	}
	d = detailsMap(t, mustCall(t, s, cc, "history_search_contents", `{"query":"question 1","limit":200,"recent_first":true,"role":"user"}`))
	if n := num(t, d["n_returned"]) + num(t, d["omitted"]); n != min(want, 200) || d["more"] != (want > 200) {
		t.Fatalf("search newest first found %d items, more %v; want %d of %d", n, d["more"], min(want, 200), want)
	}
}

// TestHistoryBranchSwitchAnywhere: a long branch switched at random
// points (the shared prefix found by comparing prefix hashes), extended,
// cut back and restored is stored exactly as sent each time, with its
// items and their windows.
func TestHistoryBranchSwitchAnywhere(t *testing.T) {
	ctx := context.Background()
	s := mustOpenService(t)
	cc := mustAttach(t, s, "/home/u/.pi/agent/sessions/switch.jsonl")
	r := rand.New(rand.NewPCG(7, 7))
	b := sessiongen.NewBuilder(9)
	var trunk []string
	for i := range 600 {
		if i == 300 {
			trunk = append(trunk, b.Compaction("half way", b.Leaf(), 1000))
			continue
		}
		trunk = append(trunk, b.UserText(fmt.Sprintf("trunk %d", i)))
	}
	histSync(t, s, cc, b.Session())
	synced := len(b.Session().Entries)
	for round := range 12 {
		at := r.IntN(len(trunk))
		if round%4 == 3 {
			at = len(trunk) - 1 // a plain extension
		}
		b.Checkout(trunk[at])
		var tail []string
		for j := range 1 + r.IntN(5) {
			tail = append(tail, b.UserText(fmt.Sprintf("round %d side %d", round, j)))
		}
		want := append(slices.Clone(trunk[:at+1]), tail...)
		if round%3 == 2 {
			want = slices.Clone(trunk[:1+r.IntN(len(trunk))]) // back to a cut of the trunk
		}
		sess := b.Session()
		if _, err := histSyncErr(s, cc, sess.Entries[synced:], want, nil); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		synced = len(sess.Entries)
		got, err := projections.NewReader(s.Store().Reader()).BranchIDs(ctx, cc.TaskID, cc.Agent)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("round %d (switch at %d): branch of %d ids (%v), want %d", round, at, len(got), err, len(want))
		}
		d := detailsMap(t, mustCall(t, s, cc, "history_list_windows", `{}`))
		wantWindows := 1
		if len(want) > 300 && want[300] == trunk[300] {
			wantWindows = 2
		}
		if n := num(t, d["n_returned"]); n != wantWindows {
			t.Fatalf("round %d: %d windows, want %d", round, n, wantWindows)
		}
	}
	// The trunk again, whole.
	if _, err := histSyncErr(s, cc, nil, trunk, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := projections.NewReader(s.Store().Reader()).BranchIDs(ctx, cc.TaskID, cc.Agent)
	if !slices.Equal(got, trunk) {
		t.Fatalf("the trunk restored: %d ids, want %d", len(got), len(trunk))
	}
}
