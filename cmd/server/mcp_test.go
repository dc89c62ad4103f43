package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memoryd/memoryd/internal/tools"
)

// TestMCPOverStdio: memoryd mcp serves the tools of the memoryd on --addr
// over stdio, and a call carrying the host's id runs as the agent the
// host's hook bound it to, with no token in the host's configuration.
func TestMCPOverStdio(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	getenv := env(map[string]string{"HOME": dir})
	s := startServe(t, db, getenv)
	addr := strings.TrimPrefix(s.url, "http://")
	token, err := existingToken(getenv, db)
	if err != nil {
		t.Fatal(err)
	}

	hostIn, verbIn := io.Pipe()   // the host writes requests to the verb's stdin
	verbOut, hostOut := io.Pipe() // and reads the verb's stdout
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"mcp", "--addr", addr, "--db", db}, getenv, hostIn, hostOut, io.Discard)
		hostOut.Close()
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "1"}, nil).Connect(context.Background(),
		&mcp.IOTransport{Reader: verbOut, Writer: verbIn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(list.Tools) != len(tools.Specs()) {
		t.Fatalf("tools/list: %d tools, %v", len(list.Tools), err)
	}

	hook := `{"hook_event_name":"PreToolUse","session_id":"s1","tool_use_id":"toolu_9","transcript_path":"/home/dev/s1.jsonl"}`
	req, _ := http.NewRequest("POST", s.url+"/v1/hooks/claude-code", strings.NewReader(hook))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("hook: %v %v", resp, err)
	}
	resp.Body.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tools.NotesWriteFile,
		Arguments: map[string]any{"path": "a.md", "text": "over stdio"}, Meta: mcp.Meta{"claudecode/toolUseId": "toolu_9"}})
	if err != nil || res.IsError {
		t.Fatalf("call: %+v, %v", res, err)
	}
	if d, _ := res.StructuredContent.(map[string]any); d["path"] != "/root/notes/a.md" {
		t.Errorf("details %v", res.StructuredContent)
	}
	cs.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("mcp after the host closed stdin: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("mcp did not return after the host closed stdin")
	}
}
