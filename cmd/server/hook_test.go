package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/claudecode"
	"github.com/memoryd/memoryd/internal/memory"
)

// TestHook: memoryd hook claude-code passes a PreToolUse hook's input to
// the memoryd on --addr that proves it holds the token and prints its
// answer; another token's memoryd, nothing listening, a refused input and
// an unknown host are errors.
func TestHook(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	getenv := env(map[string]string{"HOME": dir})
	s := startServe(t, db, getenv)
	addr := strings.TrimPrefix(s.url, "http://")
	hook := func(getenv func(string) string, host, input string) (string, error) {
		var out bytes.Buffer
		err := run(context.Background(), []string{"hook", host, "--addr", addr, "--db", db}, getenv, strings.NewReader(input), &out, io.Discard)
		return out.String(), err
	}
	preWith := func(transcript string) string {
		b, _ := json.Marshal(map[string]any{"hook_event_name": "PreToolUse", "session_id": "s1", "tool_use_id": "toolu_1",
			"transcript_path": transcript, "tool_name": "mcp__memoryd__notes_read_file"})
		return string(b)
	}
	// A session that has written no transcript yet.
	pre := preWith(filepath.Join(dir, ".claude", "projects", "-home-dev", "s1.jsonl"))
	if out, err := hook(getenv, "claude-code", pre); err != nil || out != "" {
		t.Errorf("PreToolUse: %q, %v", out, err)
	}
	// A transcript_path outside Claude Code's projects folder is not read.
	outside := filepath.Join(dir, "m.db")
	if _, err := hook(getenv, "claude-code", preWith(outside)); err == nil || !strings.Contains(err.Error(), "is not a transcript under") {
		t.Errorf("a transcript_path outside ~/.claude/projects: %v", err)
	}
	if _, err := hook(getenv, "claude-code", `{"hook_event_name":"PreToolUse","session_id":"s1"}`); err == nil || !strings.Contains(err.Error(), "refused the hook: 400") {
		t.Errorf("an input memoryd refuses: %v", err)
	}
	other := env(map[string]string{"HOME": dir, "MEMORYD_TOKEN": "not-its-token"})
	if _, err := hook(other, "claude-code", pre); err == nil || !strings.Contains(err.Error(), "does not hold this token") {
		t.Errorf("another token: %v", err)
	}
	var ue *usageError
	if _, err := hook(getenv, "cursor", pre); !errors.As(err, &ue) {
		t.Errorf("an unknown host: %v", err)
	}
	s.cancel()
	if err := <-s.done; err != nil {
		t.Errorf("serve: %v", err)
	}
	s.done <- nil // for the cleanup
	// The test binary cannot serve, so the hook may not start one here;
	// the real CLI's tests see it start memoryd (autostart.test.mjs).
	noStart := env(map[string]string{"HOME": dir, "MEMORYD_AUTOSTART": "0"})
	if _, err := hook(noStart, "claude-code", pre); err == nil || !strings.Contains(err.Error(), "no memoryd answers") {
		t.Errorf("nothing listening: %v", err)
	}
}

// TestHookSyncsTheTranscript: each hook syncs what the session's
// transcript gained as the task's history, so the history tools find a
// literal said before a compaction; a later hook sends only new lines; a
// sub-agent's transcript becomes its child agent's history; and
// SessionStart after the compaction answers the bootstrap naming the
// windows and the recovery tools.
func TestHookSyncsTheTranscript(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	getenv := env(map[string]string{"HOME": dir})
	_, client := servedAPI(t, db, getenv)
	addr := client.addr
	hook := func(input map[string]any) string {
		t.Helper()
		b, _ := json.Marshal(input)
		var out bytes.Buffer
		if err := run(context.Background(), []string{"hook", "claude-code", "--addr", addr, "--db", db}, getenv, bytes.NewReader(b), &out, io.Discard); err != nil {
			t.Fatalf("hook %v: %v", input["hook_event_name"], err)
		}
		return out.String()
	}
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "claude-code", "transcripts", "compacted.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	const sid = "f48df3d1-3211-4b79-8999-9dd300c9cd8c"
	path := filepath.Join(dir, ".claude", "projects", "-home-dev-proj", sid+".jsonl")
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	// The first 20 lines: the fact, a tool call, no compaction yet.
	if err := os.WriteFile(path, bytes.Join(lines[:20], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	base := map[string]any{"session_id": sid, "transcript_path": path, "cwd": "/home/dev/proj"}
	with := func(kv ...any) map[string]any {
		m := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return m
	}
	hook(with("hook_event_name", "Stop"))
	var att memory.AttachResult
	if err := client.post(context.Background(), "/v1/sessions/attach", map[string]any{"session_key": "claude-code/" + sid}, &att); err != nil {
		t.Fatal(err)
	}
	cc := memory.CallContext{TaskID: att.TaskID, Agent: att.Agent}
	search := func(literal string) []any {
		t.Helper()
		var res struct {
			Details struct {
				Matches []any `json:"results"`
			} `json:"details"`
		}
		if err := client.post(context.Background(), "/v1/tools/history_search_contents", map[string]any{"context": cc,
			"arguments": map[string]any{"query": literal}}, &res); err != nil {
			t.Fatal(err)
		}
		return res.Details.Matches
	}
	if m := search("swordfish"); len(m) != 1 {
		t.Fatalf("the fact before any compaction: %v", m)
	}
	// get_context_remaining answers from the last assistant line's usage.
	var remaining struct {
		Details struct {
			Remaining *int64 `json:"remaining_tokens"`
		} `json:"details"`
	}
	if err := client.post(context.Background(), "/v1/tools/get_context_remaining", map[string]any{"context": cc, "arguments": map[string]any{}}, &remaining); err != nil {
		t.Fatal(err)
	}
	var last claudecode.Usage // the usage of the last assistant line of the 20
	for _, l := range lines[:20] {
		var v struct {
			Message struct {
				Usage *claudecode.Usage `json:"usage"`
			} `json:"message"`
		}
		if json.Unmarshal(l, &v) == nil && v.Message.Usage != nil {
			last = *v.Message.Usage
		}
	}
	// Claude Code compacts a 200,000-token window at 167,000 (docs/claude-code.md §5).
	if r := remaining.Details.Remaining; r == nil || *r != 167_000-last.ContextTokens() {
		t.Errorf("remaining tokens %v, want the 167,000 tokens Claude Code compacts at less the last usage, %d", r, last.ContextTokens())
	}
	if out := hook(with("hook_event_name", "SessionStart", "source", "resume")); out != "" {
		t.Errorf("resuming a session never compacted answered %q, want nothing: its conversation is whole", out)
	}
	before := historyEvents(t, client)
	hook(with("hook_event_name", "Stop"))
	if after := historyEvents(t, client); after != before {
		t.Errorf("a hook with nothing new appended %d events", after-before)
	}
	// A /compact: Claude Code runs SessionStart before it writes the
	// boundary, and the bootstrap names the window the boundary opens;
	// asked again once the boundary and its summary are written, it names
	// the same one.
	boundary := slices.IndexFunc(lines, func(l []byte) bool { return bytes.Contains(l, []byte(`"subtype":"compact_boundary"`)) })
	for _, upTo := range []int{boundary, boundary + 2} {
		if err := os.WriteFile(path, bytes.Join(lines[:upTo], nil), 0o600); err != nil {
			t.Fatal(err)
		}
		out := hook(with("hook_event_name", "SessionStart", "source", "compact"))
		var answer struct {
			Output struct {
				Event   string `json:"hookEventName"`
				Context string `json:"additionalContext"`
			} `json:"hookSpecificOutput"`
		}
		if err := json.Unmarshal([]byte(out), &answer); err != nil || answer.Output.Event != "SessionStart" {
			t.Fatalf("SessionStart answered %q (%v)", out, err)
		}
		for _, want := range []string{"Current context window id: w2", "Previous context window id: w1", "history_search_contents", "FACT: the password is swordfish"} {
			if !strings.Contains(answer.Output.Context, want) {
				t.Errorf("lines up to %d: the bootstrap lacks %q:\n%s", upTo, want, answer.Output.Context)
			}
		}
	}
	// The rest, more turns after the compaction.
	if err := os.WriteFile(path, src, 0o600); err != nil {
		t.Fatal(err)
	}
	hook(with("hook_event_name", "Stop"))
	var windows struct {
		Details struct {
			Windows []struct {
				WindowID string `json:"window_id"`
			} `json:"windows"`
		} `json:"details"`
	}
	if err := client.post(context.Background(), "/v1/tools/history_list_windows", map[string]any{"context": cc, "arguments": map[string]any{}}, &windows); err != nil {
		t.Fatal(err)
	}
	if n := len(windows.Details.Windows); n != 2 {
		t.Errorf("%d windows after one compaction, want 2: %+v", n, windows.Details.Windows)
	}
	if m := search("swordfish"); len(m) != 1 {
		t.Errorf("the fact after the compaction: %v", m)
	}
	if out := hook(with("hook_event_name", "SessionStart", "source", "startup")); out != "" {
		t.Errorf("SessionStart startup answered %q", out)
	}

	// A sub-agent's hook syncs its own transcript into a child agent.
	sub, err := os.ReadFile(filepath.Join("..", "..", "testdata", "claude-code", "transcripts", "with-subagent", "subagents", "agent-a02dee9184452a481.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	subPath := filepath.Join(strings.TrimSuffix(path, ".jsonl"), "subagents", "agent-a02dee9184452a481.jsonl")
	if err := os.MkdirAll(filepath.Dir(subPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(subPath, sub, 0o600); err != nil {
		t.Fatal(err)
	}
	hook(with("hook_event_name", "SubagentStop", "agent_id", "a02dee9184452a481", "agent_transcript_path", subPath))
	// A sub-agent's PreToolUse and SubagentStop attach it alike: hooks
	// with nothing new append nothing.
	before = historyEvents(t, client)
	hook(with("hook_event_name", "PreToolUse", "agent_id", "a02dee9184452a481", "tool_use_id", "toolu_sub_2"))
	hook(with("hook_event_name", "SubagentStop", "agent_id", "a02dee9184452a481", "agent_transcript_path", subPath))
	if after := historyEvents(t, client); after != before {
		t.Errorf("a sub-agent's hooks with nothing new appended %d events", after-before)
	}
	var child memory.AttachResult
	if err := client.post(context.Background(), "/v1/sessions/attach", map[string]any{"session_key": "claude-code/" + sid + "/a02dee9184452a481",
		"task": map[string]any{"task_id": att.TaskID}}, &child); err != nil {
		t.Fatal(err)
	}
	var read struct {
		Details struct {
			Matches []any `json:"results"`
		} `json:"details"`
	}
	if err := client.post(context.Background(), "/v1/tools/history_search_contents", map[string]any{"context": cc,
		"arguments": map[string]any{"query": "from subagent", "agent_name": child.Agent}}, &read); err != nil {
		t.Fatal(err)
	}
	if len(read.Details.Matches) == 0 {
		t.Errorf("the parent finds nothing in its sub-agent %s's history", child.Agent)
	}
}

// historyEvents counts the log's events other than audit records: what
// syncs and attaches append.
func historyEvents(t *testing.T, c apiClient) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+c.addr+"/v1/events?limit=1000", nil)
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Events []struct {
			Type string `json:"type"`
		} `json:"events"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range page.Events {
		if !strings.HasPrefix(e.Type, "audit.") {
			n++
		}
	}
	return n
}

// TestHookSyncsAsImportDoes: a transcript synced by hooks as it grows, a
// few lines at a time, and the same transcript imported whole give the
// same history: the same windows, the same items in each, the same text
// of each item. Every cut of the compacted transcript's lines into runs
// of 1 to 9 lines is taken once.
func TestHookSyncsAsImportDoes(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "claude-code", "transcripts", "compact-unpersisted-parent.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(src, []byte("\n"))
	const sid = "8f0c0f47-0000-4000-8000-000000000001"
	for step := 1; step <= 9; step += 4 {
		t.Run(fmt.Sprintf("every %d lines", step), func(t *testing.T) {
			dir := t.TempDir()
			dbA, dbB := filepath.Join(dir, "hooks.db"), filepath.Join(dir, "import.db")
			getenv := env(map[string]string{"HOME": dir})
			s := startServe(t, dbA, getenv)
			addr := strings.TrimPrefix(s.url, "http://")
			path := filepath.Join(dir, ".claude", "projects", "-p", sid+".jsonl")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			for end := 0; ; end = min(end+step, len(lines)) {
				if err := os.WriteFile(path, bytes.Join(lines[:end], nil), 0o600); err != nil {
					t.Fatal(err)
				}
				in, _ := json.Marshal(map[string]any{"hook_event_name": "Stop", "session_id": sid, "transcript_path": path})
				if err := run(context.Background(), []string{"hook", "claude-code", "--addr", addr, "--db", dbA}, getenv, bytes.NewReader(in), io.Discard, io.Discard); err != nil {
					t.Fatalf("hook at line %d: %v", end, err)
				}
				if end == len(lines) {
					break
				}
			}
			if err := s.stop(t); err != nil {
				t.Fatal(err)
			}
			var imported struct {
				TaskID string `json:"task_id"`
			}
			if err := json.Unmarshal([]byte(fxMust(t, "import-session", "--db", dbB, "--format", "claude-code", path)), &imported); err != nil {
				t.Fatal(err)
			}
			var tasks struct {
				Tasks []struct {
					TaskID string `json:"task_id"`
				} `json:"tasks"`
			}
			if err := json.Unmarshal([]byte(fxMust(t, "tasks", "--db", dbA)), &tasks); err != nil || len(tasks.Tasks) != 1 {
				t.Fatalf("tasks of the hooks' database: %v %+v", err, tasks)
			}
			history := func(db, task string) string {
				call := func(tool, args string) string {
					return fxMust(t, "call", "--db", db, "--task", task, tool, args)
				}
				var b strings.Builder
				windows := call("history_list_windows", `{"limit":200}`)
				b.WriteString(windows)
				var w struct {
					Details struct {
						Windows []struct {
							WindowID string `json:"window_id"`
						} `json:"windows"`
					} `json:"details"`
				}
				if err := json.Unmarshal([]byte(windows), &w); err != nil || len(w.Details.Windows) < 2 {
					t.Fatalf("windows %v: %s", err, windows)
				}
				for _, win := range w.Details.Windows {
					items := call("history_list_items", fmt.Sprintf(`{"window_id":%q,"limit":200}`, win.WindowID))
					b.WriteString(items)
					var it struct {
						Details struct {
							Items []struct {
								ItemID string `json:"item_id"`
							} `json:"items"`
						} `json:"details"`
					}
					if err := json.Unmarshal([]byte(items), &it); err != nil {
						t.Fatal(err)
					}
					for _, item := range it.Details.Items {
						b.WriteString(call("history_read_item", fmt.Sprintf(`{"window_id":%q,"item_id":%q}`, win.WindowID, item.ItemID)))
					}
				}
				return b.String()
			}
			a, b := history(dbA, tasks.Tasks[0].TaskID), history(dbB, imported.TaskID)
			if a != b {
				t.Fatalf("the hooks' history differs from the import's:\nhooks:  %s\nimport: %s", a, b)
			}
		})
	}
}

// TestHookCodex: memoryd hook codex syncs the rollouts a Codex hook names:
// a sub-agent's hook (the session's id, the sub-agent's rollout) syncs the
// session's rollout, found by its id, as the session's agent and the
// sub-agent's as a child agent of its task; no agent is re-attached to
// another file; a rollout outside Codex's sessions folder is not read.
func TestHookCodex(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	getenv := env(map[string]string{"HOME": dir})
	s := startServe(t, db, getenv)
	addr := strings.TrimPrefix(s.url, "http://")
	token, err := existingToken(getenv, db)
	if err != nil {
		t.Fatal(err)
	}
	hook := func(input map[string]any) error {
		b, _ := json.Marshal(input)
		return run(context.Background(), []string{"hook", "codex", "--addr", addr, "--db", db}, getenv, bytes.NewReader(b), io.Discard, io.Discard)
	}
	const session, sub = "01a24edd-4fc3-7022-9ba0-afb29b641f47", "01a24edd-6186-7fb1-bec6-46ae9610f858"
	day := filepath.Join(dir, ".codex", "sessions", "2026", "12", "07")
	if err := os.MkdirAll(day, 0o700); err != nil {
		t.Fatal(err)
	}
	place := func(name, id string) string {
		src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "codex", "rollouts", name))
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(day, "rollout-2026-12-07T04-57-40-"+id+".jsonl")
		if err := os.WriteFile(path, src, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	root, child := place("rollout-run19-parent.jsonl", session), place("rollout-run19-subagent.jsonl", sub)
	if err := hook(map[string]any{"hook_event_name": "PreToolUse", "session_id": session, "transcript_path": child,
		"agent_id": sub, "agent_type": "default", "tool_name": "mcp__memoryd__notes_write_file", "tool_use_id": "call_9"}); err != nil {
		t.Fatal(err)
	}
	if err := hook(map[string]any{"hook_event_name": "SubagentStop", "session_id": session, "transcript_path": root,
		"agent_transcript_path": child, "agent_id": sub}); err != nil {
		t.Fatal(err)
	}
	if err := hook(map[string]any{"hook_event_name": "Stop", "session_id": session, "transcript_path": root}); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "rollout.jsonl")
	if err := os.WriteFile(outside, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := hook(map[string]any{"hook_event_name": "Stop", "session_id": "other", "transcript_path": outside}); err == nil ||
		!strings.Contains(err.Error(), "is not a transcript under") {
		t.Errorf("a rollout outside Codex's sessions folder: %v", err)
	}

	req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/events?limit=5000", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var page struct {
		Events []struct {
			Type string          `json:"type"`
			Data json.RawMessage `json:"data"`
		} `json:"events"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&page); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{} // session key → file
	synced := 0
	for _, e := range page.Events {
		var d struct {
			SessionKey  string `json:"session_key"`
			SessionFile string `json:"session_file"`
			Agent       string `json:"agent"`
		}
		_ = json.Unmarshal(e.Data, &d)
		switch e.Type {
		case "agent.registered":
			files[d.SessionKey] = d.SessionFile
		case "agent.reattached":
			t.Errorf("an agent was re-attached: %s", e.Data)
		case "history.entry_recorded":
			synced++
		}
	}
	want := map[string]string{"codex/" + session: root, "codex/" + session + "/" + sub: child}
	if !maps.Equal(files, want) {
		t.Errorf("agents registered (session key → file): %v, want %v", files, want)
	}
	if synced == 0 {
		t.Error("no history was synced")
	}
}

// TestHookHandoff: with MEMORYD_TASK set, a Codex session's hook joins that
// task as the agent it names, and a second session with the same
// MEMORYD_TASK (another window, or after /clear) as the next free name;
// SessionStart answers the hand-off's bootstrap.
func TestHookHandoff(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	getenv := env(map[string]string{"HOME": dir})
	_, client := servedAPI(t, db, getenv)
	addr := client.addr
	var first memory.AttachResult
	if err := client.post(context.Background(), "/v1/sessions/attach", map[string]any{"session_key": "/home/dev/.pi/s.jsonl", "session_id": "p1"}, &first); err != nil {
		t.Fatal(err)
	}
	task := fmt.Sprintf(`{"task_id":%q,"parent_agent":"/root","agent_name":"codex"}`, first.TaskID)
	withTask := env(map[string]string{"HOME": dir, "MEMORYD_TASK": task})
	start := func(session string) string {
		t.Helper()
		in, _ := json.Marshal(map[string]any{"hook_event_name": "SessionStart", "session_id": session, "source": "startup",
			"transcript_path": filepath.Join(dir, ".codex", "sessions", "2026", "12", "07", "rollout-2026-12-07T09-00-00-"+session+".jsonl")})
		var out bytes.Buffer
		if err := run(context.Background(), []string{"hook", "codex", "--addr", addr, "--db", db}, withTask, bytes.NewReader(in), &out, io.Discard); err != nil {
			t.Fatalf("SessionStart of %s: %v", session, err)
		}
		return out.String()
	}
	for _, c := range []struct{ session, agent string }{{"c1", "/root/codex"}, {"c2", "/root/codex_2"}} {
		if out := start(c.session); !strings.Contains(out, "You are agent: "+c.agent+"\\n") || !strings.Contains(out, "Continuing agent: /root (pi)") {
			t.Errorf("session %s: %s", c.session, out)
		}
	}
	if out := start("c1"); !strings.Contains(out, "You are agent: /root/codex\\n") {
		t.Errorf("session c1 again: %s", out)
	}
	bad := env(map[string]string{"HOME": dir, "MEMORYD_TASK": "not json"})
	if err := run(context.Background(), []string{"hook", "codex", "--addr", addr, "--db", db}, bad, strings.NewReader(`{}`), io.Discard, io.Discard); err == nil ||
		!strings.Contains(err.Error(), "MEMORYD_TASK must be JSON") {
		t.Errorf("a MEMORYD_TASK that is not JSON: %v", err)
	}
}

// TestClaudeContextWindow: the context a Claude Code session fills before
// it compacts, from the variables Claude Code reads (docs/claude-code.md §5).
func TestClaudeContextWindow(t *testing.T) {
	for _, c := range []struct {
		env  map[string]string
		want int64
	}{
		{nil, 167_000},
		{map[string]string{"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "100000"}, 67_000},
		{map[string]string{"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "20000"}, 67_000}, // raised to 100,000
		{map[string]string{"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "5000000"}, 967_000},
		{map[string]string{"CLAUDE_CODE_AUTO_COMPACT_WINDOW": "x"}, 167_000},
		{map[string]string{"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "8000"}, 179_000},
		{map[string]string{"CLAUDE_CODE_MAX_OUTPUT_TOKENS": "64000"}, 167_000},
	} {
		if got := claudeContextWindow(func(k string) string { return c.env[k] }); got != c.want {
			t.Errorf("%v: %d, want %d", c.env, got, c.want)
		}
	}
}
