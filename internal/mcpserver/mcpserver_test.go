package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memoryd/memoryd/internal/api"
	"github.com/memoryd/memoryd/internal/mcpserver"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
	"github.com/memoryd/memoryd/internal/tools"
)

// session is an MCP client connected to the tools of one attached agent.
type session struct {
	svc *memory.Service
	cc  memory.CallContext
	cs  *mcp.ClientSession
}

// connect attaches an agent and connects the SDK's client to an MCP server
// whose calls run as that agent, with call ids of their own.
func connect(t *testing.T) *session { return connectWith(t, mcpserver.Options{}) }

// connectWith is connect with the server's options (its ErrorBody and
// Version set here).
func connectWith(t *testing.T, opts mcpserver.Options) *session {
	t.Helper()
	ctx := context.Background()
	svc := memorytest.Open(t, memory.OpenOptions{})
	att, err := svc.Attach(ctx, memory.AttachRequest{SessionKey: "mcp-test", SessionID: "s1", SessionFile: "s1.jsonl"}, "")
	if err != nil {
		t.Fatal(err)
	}
	cc := memory.CallContext{TaskID: att.TaskID, Agent: att.Agent}
	var calls atomic.Int64
	call := func(ctx context.Context, call mcpserver.Call) (memory.ToolResult, error) {
		c := cc
		c.CallID = fmt.Sprintf("mcp-%d", calls.Add(1))
		return svc.CallTool(ctx, call.Tool, c, call.Args, "")
	}
	opts.Version = "test"
	opts.ErrorBody = func(err error) any {
		_, body := api.ErrorEnvelope(err)
		return body
	}
	server := mcpserver.New(call, opts)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return &session{svc: svc, cc: cc, cs: cs}
}

// TestToolsListed: the MCP server lists every tool of GET /v1/tools with
// its description, argument schema and result schema unchanged.
func TestToolsListed(t *testing.T) {
	s := connect(t)
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		byName[tl.Name] = tl
	}
	if len(res.Tools) != len(tools.Specs()) {
		t.Errorf("%d tools, want %d", len(res.Tools), len(tools.Specs()))
	}
	for _, spec := range tools.Specs() {
		tl, ok := byName[spec.Name]
		if !ok {
			t.Errorf("%s is not listed", spec.Name)
			continue
		}
		if tl.Description != spec.Description {
			t.Errorf("%s: description %q", spec.Name, tl.Description)
		}
		sameJSON(t, spec.Name+" input schema", tl.InputSchema, spec.Parameters)
		sameJSON(t, spec.Name+" output schema", tl.OutputSchema, spec.Result)
		if tl.Annotations == nil || tl.Annotations.ReadOnlyHint == tools.Writes(spec.Name) {
			t.Errorf("%s: annotations %+v", spec.Name, tl.Annotations)
		}
	}
}

// TestCallsAnswerAsTheAPI: a write and a read over MCP answer what the
// same calls answer through memory, as the HTTP route serves them: the
// details as structured content, the text as content.
func TestCallsAnswerAsTheAPI(t *testing.T) {
	ctx := context.Background()
	s := connect(t)
	wrote := s.call(t, tools.NotesWriteFile, map[string]any{"path": "checkpoint.md", "text": "line one\nline two"})
	if wrote.IsError {
		t.Fatalf("write: %s", text(wrote))
	}
	var w tools.NoteWriteDetails
	decode(t, wrote.StructuredContent, &w)
	if w.Path != "/root/notes/checkpoint.md" || !w.Created || w.Revision != 1 {
		t.Errorf("write details %+v", w)
	}
	read := s.call(t, tools.NotesReadFile, map[string]any{"path": "checkpoint.md", "start_line": 2})
	cc := s.cc
	cc.CallID = "direct"
	direct, err := s.svc.CallTool(ctx, tools.NotesReadFile, cc, json.RawMessage(`{"path":"checkpoint.md","start_line":2}`), "")
	if err != nil {
		t.Fatal(err)
	}
	if read.IsError || text(read) != direct.Content[0].Text {
		t.Errorf("read over MCP %q, directly %q", text(read), direct.Content[0].Text)
	}
	sameJSON(t, "read details", read.StructuredContent, direct.Details)
	if d := details[tools.NotesReadFileDetails](t, read); d.Text != "line two" {
		t.Errorf("read details %+v", d)
	}
}

// TestErrorsAnswerAsTheAPI: a refused call is a tool error whose text is
// the HTTP API's error envelope, so the model reads the same message.
func TestErrorsAnswerAsTheAPI(t *testing.T) {
	s := connect(t)
	for _, c := range []struct {
		tool string
		args map[string]any
		code string
	}{
		{tools.NotesReadFile, map[string]any{"path": "missing.md"}, memory.CodeNotFound},
		{tools.NotesReadFile, map[string]any{"path": "a.md", "bogus": 1}, memory.CodeInvalidArgument},
		{tools.HistoryListWindows, map[string]any{"agent_name": "/root/nobody"}, memory.CodeNotFound},
	} {
		res := s.call(t, c.tool, c.args)
		var env struct {
			Error struct {
				Code, Message string
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(text(res)), &env); err != nil || !res.IsError || env.Error.Code != c.code || env.Error.Message == "" {
			t.Errorf("%s %v: error %v, %q, want a tool error with code %s", c.tool, c.args, res.IsError, text(res), c.code)
		}
	}
}

func (s *session) call(t *testing.T, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := s.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func details[D any](t *testing.T, res *mcp.CallToolResult) D {
	t.Helper()
	var d D
	decode(t, res.StructuredContent, &d)
	return d
}

func decode(t *testing.T, v, into any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatal(err)
	}
}

// sameJSON fails unless a and b encode to the same JSON value.
func sameJSON(t *testing.T, what string, a, b any) {
	t.Helper()
	var x, y any
	decode(t, a, &x)
	decode(t, b, &y)
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	if !slices.Equal(xa, ya) {
		t.Errorf("%s:\n got %s\nwant %s", what, xa, ya)
	}
}

// TestCodexNames: with CodexNames the tools are served under the names the
// design gives them in Codex (history.list_windows, notes.write_file, and
// get_context_remaining and new_context as they are), and a call by such a
// name runs the tool.
func TestCodexNames(t *testing.T) {
	s := connectWith(t, mcpserver.Options{CodexNames: true})
	res, err := s.cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	want := []string{"get_context_remaining", "history.list_items", "history.list_windows", "history.read_item", "history.search_contents",
		"new_context", "notes.append_to_file", "notes.list_files_by_prefix", "notes.read_file", "notes.search_contents", "notes.write_file"}
	if !slices.Equal(names, want) {
		t.Errorf("tools: %v, want %v", names, want)
	}
	if r := s.call(t, "notes.write_file", map[string]any{"path": "a.md", "text": "x"}); r.IsError {
		t.Errorf("notes.write_file: %s", text(r))
	}
	if r := s.call(t, "notes.read_file", map[string]any{"path": "a.md"}); r.IsError || !strings.Contains(text(r), "x") {
		t.Errorf("notes.read_file: %s", text(r))
	}
}
