package codex

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/history"
)

// update rewrites the golden files in testdata:
//
//	go test ./internal/codex -run TestGolden -update
var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// The sample rollouts of docs/codex.md, captured on the real CLI 0.169.0.
const (
	mcpCall     = "rollout-run03-mcp-call.jsonl"
	autoCompact = "rollout-run07-autocompact.jsonl"
	manual      = "rollout-tui-manual-compact.jsonl"
	resumed     = "rollout-exec-then-exec-resume-then-tui-resume.jsonl"
	parent      = "rollout-run19-parent.jsonl"
	subagent    = "rollout-run19-subagent.jsonl"
)

var rollouts = []string{mcpCall, autoCompact, manual, resumed, parent, subagent}

func rollout(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "codex", "rollouts", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func readAll(t *testing.T, data []byte) Batch {
	t.Helper()
	b, err := Read(bytes.NewReader(data), int64(len(data)), Cursor{})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// decoded is an entry's JSON, for checks by field.
func decoded(t *testing.T, e Entry) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(e.Raw, &v); err != nil {
		t.Fatalf("%s: %v", e.ID, err)
	}
	return v
}

func byID(t *testing.T, entries []Entry) map[string]map[string]any {
	t.Helper()
	m := map[string]map[string]any{}
	for _, e := range entries {
		m[e.ID] = decoded(t, e)
	}
	return m
}

func rendered(entries []Entry) map[string]history.Rendered {
	r := map[string]history.Rendered{}
	for _, e := range entries {
		r[e.ID] = history.Render(e.Raw)
	}
	return r
}

// TestEveryRolloutConverts reads each sample whole: no line is skipped,
// each line is one entry named by its ordinal, each entry's parent is the
// one before, the ids are unique, the branch is the whole file, and the
// history items are the conversation's: the user's prompts, the model's
// answers and tool calls, the tools' results, Codex's harness text as
// custom messages, and the compactions.
func TestEveryRolloutConverts(t *testing.T) {
	type roles struct{ user, assistant, tool, custom, compaction int }
	want := map[string]roles{
		mcpCall:     {user: 1, assistant: 2, tool: 1, custom: 4},
		autoCompact: {user: 1, assistant: 3, tool: 1, custom: 5, compaction: 1},
		manual:      {user: 2, assistant: 4, tool: 1, custom: 6, compaction: 1},
		resumed:     {user: 3, assistant: 3, tool: 0, custom: 9},
		parent:      {user: 1, assistant: 3, tool: 2, custom: 5},
		subagent:    {user: 1, assistant: 2, tool: 1, custom: 3},
	}
	for _, name := range rollouts {
		t.Run(name, func(t *testing.T) {
			data := rollout(t, name)
			b := readAll(t, data)
			lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
			if b.Skipped != 0 || len(b.Entries) != len(lines) {
				t.Fatalf("%d entries of %d lines, %d skipped", len(b.Entries), len(lines), b.Skipped)
			}
			seen := map[string]bool{}
			for i, e := range b.Entries {
				var l struct{ Ordinal int64 }
				if err := json.Unmarshal(lines[i], &l); err != nil {
					t.Fatal(err)
				}
				if e.ID != fmt.Sprintf("o%d", l.Ordinal) || seen[e.ID] {
					t.Fatalf("line %d: id %q (ordinal %d, seen %v)", i+1, e.ID, l.Ordinal, seen[e.ID])
				}
				seen[e.ID] = true
				wantParent := ""
				if i > 0 {
					wantParent = b.Entries[i-1].ID
				}
				v := decoded(t, e)
				if e.ParentID != wantParent || v["id"] != e.ID || (i > 0 && v["parentId"] != wantParent) || (i == 0 && v["parentId"] != nil) {
					t.Fatalf("%s: parent %q, raw id %v parentId %v, want parent %q", e.ID, e.ParentID, v["id"], v["parentId"], wantParent)
				}
				if v["timestamp"] == nil {
					t.Fatalf("%s has no timestamp", e.ID)
				}
			}
			if !slices.Equal(b.Branch, slices.Collect(func(yield func(string) bool) {
				for _, e := range b.Entries {
					if !yield(e.ID) {
						return
					}
				}
			})) || b.Keep != 0 {
				t.Fatalf("branch %v keep %d", b.Branch, b.Keep)
			}
			var got roles
			for _, e := range b.Entries {
				r := history.Render(e.Raw)
				if !r.Item {
					continue
				}
				switch {
				case r.Compaction:
					got.compaction++
				case r.RawRole == "custom_message":
					got.custom++
				case r.RawRole == "user":
					got.user++
				case r.Role == "assistant":
					got.assistant++
				case r.Role == "tool":
					got.tool++
				default:
					t.Errorf("%s: an item of role %q (%q)", e.ID, r.Role, r.RawRole)
				}
			}
			if got != want[name] {
				t.Errorf("items %+v, want %+v", got, want[name])
			}
		})
	}
}

// TestMCPCallAndItsOutput: an MCP call is a toolCall named
// mcp__<server>__<tool>, with its arguments parsed; its output is a
// toolResult that answers it by call id and names its tool. Codex's other
// two records of the call (item_completed McpToolCall, the token usage)
// are no items.
func TestMCPCallAndItsOutput(t *testing.T) {
	b := readAll(t, rollout(t, mcpCall))
	ents, r := byID(t, b.Entries), rendered(b.Entries)
	call := ents["o13"]["message"].(map[string]any)["content"].([]any)[0].(map[string]any)
	if call["type"] != "toolCall" || call["id"] != "call_scripted_4" || call["name"] != "mcp__probe__note" ||
		call["arguments"].(map[string]any)["text"] != "remember X" {
		t.Fatalf("call: %v", call)
	}
	if got := r["o13"]; !got.Item || !got.CallsOnly || len(got.Calls) != 1 || got.Calls[0] != (history.Call{ID: "call_scripted_4", Name: "mcp__probe__note"}) {
		t.Fatalf("the call renders as %+v", got)
	}
	res := ents["o16"]["message"].(map[string]any)
	if res["role"] != "toolResult" || res["toolCallId"] != "call_scripted_4" || res["toolName"] != "mcp__probe__note" || res["isError"] != false {
		t.Fatalf("result: %v", res)
	}
	if got := r["o16"]; got.Role != "tool" || got.ToolCallID != "call_scripted_4" || !strings.HasPrefix(got.Text, "Wall time: 0.0093 seconds\nOutput:\n{\"tool\":\"note\"") {
		t.Fatalf("the result renders as %+v", got)
	}
	for _, id := range []string{"o14", "o15", "o17"} {
		if ents[id]["type"] != EntryType || r[id].Item {
			t.Errorf("%s: %v is an item", id, ents[id])
		}
	}
	if ents["o15"]["kind"] != "event_msg/item_completed/McpToolCall" || ents["o14"]["kind"] != "token_usage_record" {
		t.Errorf("kinds %v, %v", ents["o15"]["kind"], ents["o14"]["kind"])
	}
}

// TestReasoningIsThinking: a reasoning item is an assistant message of
// thinking, its summary's text; the encrypted content is left out, and
// thinking alone is no history item.
func TestReasoningIsThinking(t *testing.T) {
	b := readAll(t, rollout(t, mcpCall))
	ents, r := byID(t, b.Entries), rendered(b.Entries)
	for id, text := range map[string]string{"o12": "SCRIPTED REASONING 4", "o19": "SCRIPTED REASONING 5"} {
		msg := ents[id]["message"].(map[string]any)
		content := msg["content"].([]any)
		if msg["role"] != "assistant" || len(content) != 1 || content[0].(map[string]any)["type"] != "thinking" || content[0].(map[string]any)["thinking"] != text {
			t.Errorf("%s: %v", id, msg)
		}
		if r[id].Item {
			t.Errorf("%s: thinking alone is an item: %+v", id, r[id])
		}
	}
	for _, e := range b.Entries {
		if bytes.Contains(e.Raw, []byte("ENCRYPTED_")) {
			t.Errorf("%s keeps the encrypted reasoning: %s", e.ID, e.Raw)
		}
	}
}

// TestCompactionOpensAWindow: a compacted record is a compaction entry
// under the line before it, with Codex's summary message and the tokens
// of the compaction's request, so it opens a window. The compaction's own
// answer, the assistant message before it, stays an assistant item of the
// window it closes; what follows continues from the compaction.
func TestCompactionOpensAWindow(t *testing.T) {
	for _, tc := range []struct {
		name             string
		answer, boundary string
		tokensBefore     float64
		after, afterType string
	}{
		{name: autoCompact, answer: "o17", boundary: "o20", tokensBefore: 200020, after: "o26", afterType: CustomHookContext},
		{name: manual, answer: "o27", boundary: "o30", tokensBefore: 1026, after: "o40", afterType: CustomHookContext},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := readAll(t, rollout(t, tc.name))
			ents, r := byID(t, b.Entries), rendered(b.Entries)
			c := ents[tc.boundary]
			if c["type"] != "compaction" || c["parentId"] != fmt.Sprintf("o%d", atoi(t, tc.boundary)-1) ||
				c["tokensBefore"] != tc.tokensBefore || c["firstKeptEntryId"] != nil {
				t.Fatalf("compaction: %v", c)
			}
			summary := c["summary"].(string)
			if !strings.HasPrefix(summary, "Another language model started to solve this problem") || !strings.HasSuffix(summary, "SCRIPTED SUMMARY of the conversation so far (compaction).") {
				t.Fatalf("summary %q", summary)
			}
			if got := r[tc.boundary]; !got.Item || !got.Compaction || got.Control || got.Text != summary {
				t.Fatalf("the compaction renders as %+v", got)
			}
			if got := r[tc.answer]; got.Role != "assistant" || got.Text != "SCRIPTED SUMMARY of the conversation so far (compaction)." {
				t.Fatalf("the compaction's answer renders as %+v", got)
			}
			compactions := 0
			for _, e := range b.Entries {
				if r[e.ID].Compaction {
					compactions++
				}
			}
			if compactions != 1 {
				t.Fatalf("%d compactions", compactions)
			}
			if ents[tc.after]["customType"] != tc.afterType || !strings.Contains(r[tc.after].Text, "MEMORYD_BOOTSTRAP_MARKER source=compact") {
				t.Fatalf("after the compaction: %v", ents[tc.after])
			}
		})
	}
}

// atoi is the number of an id o<n>.
func atoi(t *testing.T, id string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscanf(id, "o%d", &n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestHarnessTextIsNotTheUsers: Codex's developer messages (system
// prompt, skills, hook context) and the user-role text it adds itself
// (environment context, a sub-agent's notification) are custom messages,
// the hook context marked apart; only what the user typed is a user
// message, so only it counts as a request.
func TestHarnessTextIsNotTheUsers(t *testing.T) {
	check := func(name string, want map[string]string) {
		t.Helper()
		b := readAll(t, rollout(t, name))
		ents, r := byID(t, b.Entries), rendered(b.Entries)
		for id, customType := range want {
			got := ents[id]
			if customType == "user" {
				if got["type"] != "message" || r[id].RawRole != "user" {
					t.Errorf("%s %s: %v", name, id, got)
				}
				continue
			}
			if got["type"] != "custom_message" || got["customType"] != customType || got["display"] != false || r[id].RawRole != "custom_message" || !r[id].Item {
				t.Errorf("%s %s: %v, want a %s custom message", name, id, got, customType)
			}
		}
	}
	check(mcpCall, map[string]string{"o2": CustomDeveloper, "o3": CustomEnvironmentContext, "o7": CustomHookContext, "o8": "user", "o10": CustomHookContext})
	check(parent, map[string]string{"o22": CustomHarness, "o8": "user"})
	check(resumed, map[string]string{"o32": CustomDeveloper, "o35": CustomHookContext, "o36": "user"})
	b := readAll(t, rollout(t, mcpCall))
	d := byID(t, b.Entries)["o2"]["details"].(map[string]any)["kinds"].([]any)
	if len(d) != 2 || d[0] != "host_skills.instructions" {
		t.Errorf("the developer message's kinds: %v", d)
	}
}

// TestMemorydToolsAreNamedAsInPi: memoryd's tools, in Codex's namespace
// mcp__memoryd, are named as Pi names them, in the call and in its
// result, so they stay hidden as memoryd's own; other namespaced tools
// keep their namespace.
func TestMemorydToolsAreNamedAsInPi(t *testing.T) {
	lines := []string{
		`{"timestamp":"2026-12-07T04:43:13.093Z","ordinal":0,"type":"response_item","payload":{"type":"function_call","id":"fc_1","name":"notes_write_file","namespace":"mcp__memoryd","arguments":"{\"path\":\"a.md\",\"text\":\"x\"}","call_id":"call_1"}}`,
		`{"timestamp":"2026-12-07T04:43:13.094Z","ordinal":1,"type":"response_item","payload":{"type":"function_call","id":"fc_2","name":"exec_command","arguments":"{\"cmd\":\"ls\"}","call_id":"call_2"}}`,
		`{"timestamp":"2026-12-07T04:43:13.095Z","ordinal":2,"type":"response_item","payload":{"type":"function_call_output","call_id":"call_1","output":[{"type":"input_text","text":"ok"}]}}`,
		`{"timestamp":"2026-12-07T04:43:13.096Z","ordinal":3,"type":"response_item","payload":{"type":"function_call_output","call_id":"call_2","output":"a.md"}}`,
	}
	var c Converter
	var r []history.Rendered
	for _, l := range lines {
		es, _, err := c.Line([]byte(l))
		if err != nil || len(es) != 1 {
			t.Fatal(es, err)
		}
		r = append(r, history.Render(es[0].Raw))
	}
	if len(r[0].Calls) != 1 || r[0].Calls[0].Name != "notes_write_file" || !history.Internal(r[0].Calls[0].Name) {
		t.Errorf("memoryd's call: %+v", r[0])
	}
	if len(r[1].Calls) != 1 || r[1].Calls[0].Name != "exec_command" || history.Internal("exec_command") {
		t.Errorf("a built-in call: %+v", r[1])
	}
	if r[2].ToolName != "notes_write_file" || r[2].ToolCallID != "call_1" || r[2].Text != "ok" {
		t.Errorf("memoryd's result: %+v", r[2])
	}
	if r[3].ToolName != "exec_command" || r[3].Text != "a.md" {
		t.Errorf("a string output: %+v", r[3])
	}
	if len(c.State.Calls) != 0 {
		t.Errorf("answered calls are still kept: %v", c.State.Calls)
	}
}

// TestOtherItemShapes converts the shapes the samples do not hold: an
// image, a refusal, a freeform tool's call and output, arguments that are
// not JSON, an output object that reports a failure, an item type of no
// conversation and a token count without usage.
func TestOtherItemShapes(t *testing.T) {
	const png = "iVBORw0KGgo="
	for _, tc := range []struct {
		name, line string
		check      func(t *testing.T, v map[string]any, r history.Rendered)
	}{
		{"image", `{"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,` + png + `"}]}}`,
			func(t *testing.T, v map[string]any, r history.Rendered) {
				if r.RawRole != "user" || r.Text != "look\n[image]" || r.Images != 1 || len(history.Images(mustJSON(t, v))) != 1 {
					t.Errorf("%+v", r)
				}
			}},
		{"refusal", `{"type":"response_item","payload":{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"no"}]}}`,
			func(t *testing.T, v map[string]any, r history.Rendered) {
				if r.Role != "assistant" || r.Text != "no" {
					t.Errorf("%+v", r)
				}
			}},
		{"freeform call", `{"type":"response_item","payload":{"type":"custom_tool_call","call_id":"c1","name":"apply_patch","input":"*** Begin Patch"}}`,
			func(t *testing.T, v map[string]any, r history.Rendered) {
				if len(r.Calls) != 1 || r.Calls[0].Name != "apply_patch" || r.Text != `[tool_call apply_patch] {"input":"*** Begin Patch"}` {
					t.Errorf("%+v", r)
				}
			}},
		{"arguments not JSON", `{"type":"response_item","payload":{"type":"function_call","call_id":"c2","name":"f","arguments":"{broken"}}`,
			func(t *testing.T, v map[string]any, r history.Rendered) {
				if r.Text != `[tool_call f] "{broken"` {
					t.Errorf("%+v", r)
				}
			}},
		{"failed output", `{"type":"response_item","payload":{"type":"function_call_output","call_id":"c2","output":{"content":"boom","success":false}}}`,
			func(t *testing.T, v map[string]any, r history.Rendered) {
				if r.Text != "boom" || v["message"].(map[string]any)["isError"] != true || r.ToolName != "f" {
					t.Errorf("%+v %v", r, v)
				}
			}},
		{"web search", `{"type":"response_item","payload":{"type":"web_search_call","status":"completed"}}`,
			func(t *testing.T, v map[string]any, r history.Rendered) {
				if r.Item || v["type"] != EntryType || v["kind"] != "response_item/web_search_call" {
					t.Errorf("%+v %v", r, v)
				}
			}},
		{"token count without usage", `{"type":"event_msg","payload":{"type":"token_count","info":null,"rate_limits":{}}}`,
			func(t *testing.T, v map[string]any, r history.Rendered) {
				if r.Item || v["kind"] != "event_msg/token_count" {
					t.Errorf("%+v %v", r, v)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Converter{State: State{Calls: map[string]string{"c2": "f"}}}
			es, usage, err := c.Line([]byte(tc.line))
			if err != nil || len(es) != 1 || usage != nil {
				t.Fatal(es, usage, err)
			}
			tc.check(t, decoded(t, es[0]), history.Render(es[0].Raw))
		})
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestIdsWithoutOrdinals: a line without an ordinal, or whose ordinal is
// not above the last one used, is named by its line number, so ids stay
// unique.
func TestIdsWithoutOrdinals(t *testing.T) {
	lines := []string{
		`{"ordinal":0,"type":"session_meta","payload":{"id":"t"}}`,
		`{"type":"world_state","payload":{}}`,
		`{"ordinal":0,"type":"turn_context","payload":{}}`,
		``,
		`{"ordinal":"7","type":"turn_context","payload":{}}`,
		`{"ordinal":5,"type":"turn_context","payload":{}}`,
		`{"ordinal":5,"type":"turn_context","payload":{}}`,
	}
	var c Converter
	var ids, parents []string
	for _, l := range lines {
		es, _, err := c.Line([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range es {
			ids, parents = append(ids, e.ID), append(parents, e.ParentID)
		}
	}
	if want := []string{"o0", "line2", "line3", "line5", "o5", "line7"}; !slices.Equal(ids, want) {
		t.Fatalf("ids %v, want %v", ids, want)
	}
	if want := []string{"", "o0", "line2", "line3", "line5", "o5"}; !slices.Equal(parents, want) {
		t.Fatalf("parents %v, want %v", parents, want)
	}
}

// TestUsage: the usage reported is the last token count's, with the
// model's context window; after a compaction, Codex's estimate of the new
// window.
func TestUsage(t *testing.T) {
	b := readAll(t, rollout(t, mcpCall))
	if u := b.Cursor.Usage; u == nil || *u != (Usage{InputTokens: 1005, OutputTokens: 20, ReasoningOutputTokens: 5, TotalTokens: 1025, ContextWindow: 258400}) || u.ContextTokens() != 1025 {
		t.Fatalf("usage %+v", b.Cursor.Usage)
	}
	data := rollout(t, autoCompact)
	lines := bytes.SplitAfter(data, []byte("\n"))
	upTo := bytes.Join(lines[:25], nil) // through o24, the token count after the compaction
	b = readAll(t, upTo)
	if u := b.Cursor.Usage; u == nil || u.InputTokens != 0 || u.ContextTokens() != 6069 || u.ContextWindow != 258400 {
		t.Fatalf("usage after the compaction %+v", b.Cursor.Usage)
	}
}

// TestMeta: a sub-agent's session_meta names its thread, its parent's
// session and its parent thread; a session's own names no parent.
func TestMeta(t *testing.T) {
	sub := readAll(t, rollout(t, subagent))
	want := SessionMeta{ID: "01a24edd-6186-7fb1-bec6-46ae9610f858", SessionID: "01a24edd-4fc3-7022-9ba0-afb29b641f47",
		ParentThreadID: "01a24edd-4fc3-7022-9ba0-afb29b641f47", AgentNickname: "Avicenna", Cwd: "/home/dev/proj", CLIVersion: "0.169.0"}
	if sub.Meta == nil || *sub.Meta != want {
		t.Fatalf("sub-agent: %+v", sub.Meta)
	}
	first, _, _ := bytes.Cut(rollout(t, parent), []byte("\n"))
	m, ok := Meta(first)
	if !ok || m.ID != "01a24edd-4fc3-7022-9ba0-afb29b641f47" || m.SessionID != m.ID || m.ParentThreadID != "" || m.AgentNickname != "" {
		t.Fatalf("parent: %+v %v", m, ok)
	}
	// Without parent_thread_id, the parent is read from the source.
	m, ok = Meta([]byte(`{"type":"session_meta","payload":{"id":"s","source":{"subagent":{"thread_spawn":{"parent_thread_id":"p"}}}}}`))
	if !ok || m.ParentThreadID != "p" || m.SessionID != "s" {
		t.Fatalf("from the source: %+v", m)
	}
	if _, ok := Meta([]byte(`{"type":"turn_context","payload":{"id":"x"}}`)); ok {
		t.Fatal("a turn context is a session_meta")
	}
}

// TestGolden pins the entries of the MCP-call rollout, one per line.
func TestGolden(t *testing.T) {
	b := readAll(t, rollout(t, mcpCall))
	var got bytes.Buffer
	for _, e := range b.Entries {
		got.Write(e.Raw)
		got.WriteByte('\n')
	}
	path := filepath.Join("testdata", strings.TrimSuffix(mcpCall, ".jsonl")+".golden.jsonl")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/codex -run TestGolden -update writes it)", err)
	}
	gotLines, wantLines := strings.Split(got.String(), "\n"), strings.Split(string(want), "\n")
	for i := range max(len(gotLines), len(wantLines)) {
		var g, w string
		if i < len(gotLines) {
			g = gotLines[i]
		}
		if i < len(wantLines) {
			w = wantLines[i]
		}
		if g != w {
			t.Fatalf("line %d:\n got %s\nwant %s", i+1, g, w)
		}
	}
}
