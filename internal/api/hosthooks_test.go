package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/tools"
)

// bearer adds the token to every request of an HTTP client.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpClient connects the MCP SDK's client to /v1/mcp over streamable HTTP.
func mcpClient(t *testing.T, ts *testServer, token string) (*mcp.ClientSession, error) {
	t.Helper()
	hc := &http.Client{Transport: bearer{token: token, next: ts.Client().Transport}}
	tr := &mcp.StreamableClientTransport{Endpoint: ts.URL + "/v1/mcp", HTTPClient: hc, DisableStandaloneSSE: true, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// preToolUse posts Claude Code's PreToolUse hook for one call.
func preToolUse(t *testing.T, ts *testServer, session, toolUseID, agentID string) {
	t.Helper()
	in := map[string]any{"hook_event_name": "PreToolUse", "session_id": session, "tool_use_id": toolUseID,
		"transcript_path": "/home/dev/.claude/projects/-home-dev-proj/" + session + ".jsonl", "cwd": "/home/dev/proj",
		"tool_name": "mcp__memoryd__notes_write_file", "tool_input": map[string]any{}, "permission_mode": "default"}
	if agentID != "" {
		in["agent_id"] = agentID
	}
	b, _ := json.Marshal(in)
	if st, body := ts.do(t, "POST", "/v1/hooks/claude-code", string(b)); st != http.StatusOK {
		t.Fatalf("PreToolUse hook: %d %s", st, body)
	}
}

// TestMCPCallsRunAsTheSessionTheirHookNamed: an MCP call over /v1/mcp runs
// as the agent of the Claude Code session whose PreToolUse hook announced
// its tool_use id; two sessions stay apart, a sub-agent's call runs as a
// child agent, and a call no hook announced is refused.
func TestMCPCallsRunAsTheSessionTheirHookNamed(t *testing.T) {
	ts := newTestServer(t, nil)
	cs, err := mcpClient(t, ts, testToken)
	if err != nil {
		t.Fatal(err)
	}
	write := func(toolUseID, text string) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tools.NotesWriteFile,
			Arguments: map[string]any{"path": "checkpoint.md", "text": text},
			Meta:      mcp.Meta{"claudecode/toolUseId": toolUseID}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	preToolUse(t, ts, "session-a", "toolu_a1", "")
	preToolUse(t, ts, "session-b", "toolu_b1", "")
	preToolUse(t, ts, "session-a", "toolu_a2", "a02dee9184452a481")
	for _, c := range []struct{ id, text string }{{"toolu_a1", "a's plan"}, {"toolu_b1", "b's plan"}, {"toolu_a2", "a's helper"}} {
		if res := write(c.id, c.text); res.IsError {
			t.Fatalf("%s: %s", c.id, res.Content[0].(*mcp.TextContent).Text)
		}
	}
	// Each write is an event of the session's task and agent, with the
	// host's tool_use id as its call id.
	evs, err := ts.store.Read(context.Background(), eventlog.Filter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	tasks := map[string]string{} // call id → task/agent
	for _, ev := range evs {
		if ev.Type != events.TypeNoteWritten {
			continue
		}
		var p struct {
			CallID string `json:"call_id"`
		}
		if err := json.Unmarshal(ev.Data, &p); err != nil {
			t.Fatal(err)
		}
		tasks[p.CallID] = ev.Stream // <task_id><agent>
	}
	a1, b1, a2 := tasks["toolu_a1"], tasks["toolu_b1"], tasks["toolu_a2"]
	if a1 == "" || b1 == "" || a2 == "" || a1 == b1 || !strings.HasSuffix(a1, "/root") || !strings.HasSuffix(b1, "/root") ||
		!strings.HasPrefix(a2, strings.TrimSuffix(a1, "/root")+"/root/") {
		t.Errorf("the writes' task and agent by call id: %v", tasks)
	}
	// A call no hook announced, and one without the host's id, are refused.
	for _, id := range []string{"toolu_unknown", ""} {
		res := write(id, "x")
		if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"code":"forbidden"`) {
			t.Errorf("call %q: %+v", id, res)
		}
	}
}

// TestMCPNeedsTheToken: /v1/mcp is behind the bearer token like every /v1
// route.
func TestMCPNeedsTheToken(t *testing.T) {
	ts := newTestServer(t, nil)
	if _, err := mcpClient(t, ts, "wrong-token"); err == nil {
		t.Fatal("an MCP client with a wrong token connected")
	}
	st, _, _ := ts.send(t, func() *http.Request {
		r := ts.request(t, "POST", "/v1/mcp", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		r.Header.Del("Authorization")
		return r
	}())
	if st != http.StatusUnauthorized {
		t.Errorf("no token: status %d", st)
	}
}

// TestClaudeCodeHookRefusesBadInput: a hook body is checked as strictly as
// any request; unknown fields are let through, wrong types are not.
func TestClaudeCodeHookRefusesBadInput(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, c := range []struct {
		body string
		want int
	}{
		{`{"hook_event_name":"PreToolUse","session_id":"s","tool_use_id":"t","transcript_path":"/t.jsonl","new_field":1}`, 200},
		{`{"hook_event_name":"Stop","session_id":"s"}`, 200},
		{`{"hook_event_name":"PreToolUse","session_id":"s"}`, 400},
		{`{"hook_event_name":"PreToolUse","session_id":"s","tool_use_id":"t","transcript_path":"relative.jsonl"}`, 400},
		{`{"hook_event_name":"PreToolUse","session_id":1,"tool_use_id":"t"}`, 400},
		{`{"hook_event_name":"PreToolUse","session_id":"s","session_id":"s2","tool_use_id":"t"}`, 400},
	} {
		if st, b := ts.do(t, "POST", "/v1/hooks/claude-code", c.body); st != c.want {
			t.Errorf("%s: %d %s, want %d", c.body, st, b, c.want)
		}
	}
}

// TestToolCallByHostCallID: POST /v1/tools/{name} runs a call a hook
// announced by its host call id alone, as /v1/mcp does; an unannounced id
// is forbidden, and an id beside a context is refused.
func TestToolCallByHostCallID(t *testing.T) {
	ts := newTestServer(t, nil)
	preToolUse(t, ts, "session-h", "toolu_h1", "")
	st, b := ts.do(t, "POST", "/v1/tools/notes_write_file", `{"host_call_id":"toolu_h1","arguments":{"path":"a.md","text":"x"}}`)
	if st != http.StatusOK || !strings.Contains(string(b), `"path":"/root/notes/a.md"`) {
		t.Fatalf("by host call id: %d %s", st, b)
	}
	if st, b := ts.do(t, "POST", "/v1/tools/notes_read_file", `{"host_call_id":"toolu_nobody","arguments":{"path":"a.md"}}`); st != http.StatusForbidden {
		t.Errorf("an unannounced id: %d %s", st, b)
	}
	if st, b := ts.do(t, "POST", "/v1/tools/notes_read_file", `{"host_call_id":"toolu_h1","context":{"task_id":"T","agent":"/root"},"arguments":{"path":"a.md"}}`); st != http.StatusBadRequest {
		t.Errorf("an id and a context: %d %s", st, b)
	}
}

// codexHook posts a Codex hook's input, as memoryd hook codex passes it.
func codexHook(t *testing.T, ts *testServer, in map[string]any) string {
	t.Helper()
	b, _ := json.Marshal(in)
	st, body := ts.do(t, "POST", "/v1/hooks/codex", string(b))
	if st != http.StatusOK {
		t.Fatalf("%s hook: %d %s", in["hook_event_name"], st, body)
	}
	return string(body)
}

// TestCodexCallsRunAsTheirThread: Codex's PreToolUse binds its call_id,
// which its MCP calls carry as _meta.callId, to the session's agent, and a
// sub-agent's (whose hooks name its own rollout) to a child agent of the
// session's task, without re-attaching the session to the sub-agent's file.
func TestCodexCallsRunAsTheirThread(t *testing.T) {
	ts := newTestServer(t, nil)
	cs, err := mcpClient(t, ts, testToken)
	if err != nil {
		t.Fatal(err)
	}
	const session, sub = "01a24ed0-1a83-7450-adb3-cb0ea260fb91", "01a24ed1-0000-7000-8000-000000000002"
	rollout := "/home/dev/.codex/sessions/2026/12/07/rollout-2026-12-07T08-00-00-" + session + ".jsonl"
	subRollout := "/home/dev/.codex/sessions/2026/12/07/rollout-2026-12-07T08-01-00-" + sub + ".jsonl"
	codexHook(t, ts, map[string]any{"hook_event_name": "SessionStart", "session_id": session, "transcript_path": rollout, "source": "startup"})
	codexHook(t, ts, map[string]any{"hook_event_name": "PreToolUse", "session_id": session, "transcript_path": rollout,
		"tool_name": "mcp__memoryd__notes_write_file", "tool_use_id": "call_1"})
	codexHook(t, ts, map[string]any{"hook_event_name": "PreToolUse", "session_id": session, "transcript_path": subRollout,
		"agent_id": sub, "agent_type": "default", "tool_name": "mcp__memoryd__notes_write_file", "tool_use_id": "call_2"})
	for _, c := range []struct{ id, text string }{{"call_1", "the session's"}, {"call_2", "the sub-agent's"}} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tools.NotesWriteFile,
			Arguments: map[string]any{"path": "checkpoint.md", "text": c.text},
			Meta:      mcp.Meta{"callId": c.id, "threadId": session}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", c.id, err, res)
		}
	}
	// Codex replays a SessionStart's context on resume: no second bootstrap.
	if got := codexHook(t, ts, map[string]any{"hook_event_name": "SessionStart", "session_id": session, "transcript_path": rollout,
		"source": "resume"}); strings.TrimSpace(got) != "{}" {
		t.Errorf("SessionStart(resume) of a Codex session: %s", got)
	}
	evs, err := ts.store.Read(context.Background(), eventlog.Filter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	streams := map[string]string{}
	var registered []string
	for _, ev := range evs {
		switch ev.Type {
		case events.TypeNoteWritten:
			var p struct {
				CallID string `json:"call_id"`
			}
			if err := json.Unmarshal(ev.Data, &p); err != nil {
				t.Fatal(err)
			}
			streams[p.CallID] = ev.Stream
		case events.TypeAgentReattached:
			t.Errorf("a Codex hook re-attached an agent: %s", ev.Data)
		case events.TypeAgentRegistered, events.TypeTaskCreated:
			registered = append(registered, string(ev.Data))
		}
	}
	root, child := streams["call_1"], streams["call_2"]
	if !strings.HasSuffix(root, "/root") || !strings.HasPrefix(child, strings.TrimSuffix(root, "/root")+"/root/") {
		t.Errorf("the writes' streams: %v", streams)
	}
	all := strings.Join(registered, "\n")
	for _, want := range []string{`"session_key":"codex/` + session + `"`, `"session_key":"codex/` + session + "/" + sub + `"`, subRollout} {
		if !strings.Contains(all, want) {
			t.Errorf("no registration with %s in:\n%s", want, all)
		}
	}
}

// TestHandoffJoinsTheTask: a Codex session whose hooks carry memoryd_task
// joins that task as a new agent; its first SessionStart answers where the
// agent it continues stopped, and it reads that agent's note by its full
// path.
func TestHandoffJoinsTheTask(t *testing.T) {
	ts := newTestServer(t, nil)
	st, b := ts.do(t, "POST", "/v1/sessions/attach", `{"session_key":"pi/first","session_id":"first","session_file":"/home/dev/.pi/s.jsonl"}`)
	if st != http.StatusOK {
		t.Fatalf("attach: %d %s", st, b)
	}
	var att struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal(b, &att); err != nil {
		t.Fatal(err)
	}
	write := `{"context":{"task_id":"` + att.TaskID + `","agent":"/root","call_id":"c1"},"arguments":{"path":"checkpoint.md","text":"the plan: ZEBRA-42"}}`
	if st, b := ts.do(t, "POST", "/v1/tools/notes_write_file", write); st != http.StatusOK {
		t.Fatalf("write: %d %s", st, b)
	}
	task := map[string]any{"task_id": att.TaskID, "parent_agent": "/root", "agent_name": "codex"}
	const session = "01a24ed0-0000-7000-8000-00000000000a"
	rollout := "/home/dev/.codex/sessions/2026/12/07/rollout-2026-12-07T09-00-00-" + session + ".jsonl"
	answer := codexHook(t, ts, map[string]any{"hook_event_name": "SessionStart", "session_id": session, "transcript_path": rollout,
		"source": "startup", "memoryd_task": task})
	for _, want := range []string{"You are agent: /root/codex", "Continuing agent: /root (pi)", "/root/notes/checkpoint.md", `"hookEventName":"SessionStart"`} {
		if !strings.Contains(answer, want) {
			t.Errorf("the hand-off's bootstrap lacks %q:\n%s", want, answer)
		}
	}
	codexHook(t, ts, map[string]any{"hook_event_name": "PreToolUse", "session_id": session, "transcript_path": rollout,
		"tool_use_id": "call_h1", "memoryd_task": task})
	st, b = ts.do(t, "POST", "/v1/tools/notes_read_file", `{"host_call_id":"call_h1","arguments":{"path":"/root/notes/checkpoint.md"}}`)
	if st != http.StatusOK || !strings.Contains(string(b), "ZEBRA-42") {
		t.Errorf("the new agent reads the first one's note: %d %s", st, b)
	}
}

// TestHostHookRefusals: an unknown host is no route, and memoryd_task must
// name a task.
func TestHostHookRefusals(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, c := range []struct {
		route, body string
		want        int
	}{
		{"/v1/hooks/cursor", `{"hook_event_name":"Stop","session_id":"s"}`, 404},
		{"/v1/hooks/codex", `{"hook_event_name":"SessionStart","session_id":"s","memoryd_task":{"agent_name":"x"}}`, 400},
		{"/v1/hooks/codex", `{"hook_event_name":"SessionStart","session_id":"s","memoryd_task":{"task_id":"T","extra":1}}`, 400},
		{"/v1/hooks/codex", `{"hook_event_name":"SessionStart","session_id":"s","memoryd_task":"T"}`, 400},
		{"/v1/hooks/codex", `{"hook_event_name":"SessionStart","session_id":"s","memoryd_task":{"task_id":"no-such-task"}}`, 404},
	} {
		if st, b := ts.do(t, "POST", c.route, c.body); st != c.want {
			t.Errorf("%s %s: %d %s, want %d", c.route, c.body, st, b, c.want)
		}
	}
}
