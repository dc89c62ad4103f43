package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
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
	pre := `{"hook_event_name":"PreToolUse","session_id":"s1","tool_use_id":"toolu_1","transcript_path":"/home/dev/s1.jsonl","tool_name":"mcp__memoryd__notes_read_file"}`
	if out, err := hook(getenv, "claude-code", pre); err != nil || out != "{}\n" {
		t.Errorf("PreToolUse: %q, %v", out, err)
	}
	if _, err := hook(getenv, "claude-code", `{"hook_event_name":"PreToolUse","session_id":"s1"}`); err == nil || !strings.Contains(err.Error(), "refused the hook: 400") {
		t.Errorf("an input memoryd refuses: %v", err)
	}
	other := env(map[string]string{"HOME": dir, "MEMORYD_TOKEN": "not-its-token"})
	if _, err := hook(other, "claude-code", pre); err == nil || !strings.Contains(err.Error(), "does not hold this token") {
		t.Errorf("another token: %v", err)
	}
	var ue *usageError
	if _, err := hook(getenv, "codex", pre); !errors.As(err, &ue) {
		t.Errorf("an unknown host: %v", err)
	}
	s.cancel()
	if err := <-s.done; err != nil {
		t.Errorf("serve: %v", err)
	}
	s.done <- nil // for the cleanup
	if _, err := hook(getenv, "claude-code", pre); err == nil || !strings.Contains(err.Error(), "no memoryd answers") {
		t.Errorf("nothing listening: %v", err)
	}
}
