package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The fence, its claim and the pending rollover flags are projections of
// the log: stopping the server and starting it again on the same database
// gives exactly the same GET /v1/state.

const rsToken = "restart-test-token"

var rsListening = regexp.MustCompile(`^listening on (http://127\.0\.0\.1:[0-9]+)$`)

// rsServer is one run() of "memoryd serve" on a free loopback port.
type rsServer struct {
	url    string
	cancel context.CancelFunc
	done   chan error
}

func rsStart(t *testing.T, db string) *rsServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &rsServer{cancel: cancel, done: make(chan error, 1)}
	getenv := func(k string) string {
		if k == "MEMORYD_TOKEN" {
			return rsToken
		}
		return ""
	}
	go func() {
		err := run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--log-level", "error"}, getenv,
			strings.NewReader(""), pw, io.Discard)
		pw.Close()
		s.done <- err
	}()
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for i := 0; sc.Scan(); i++ {
			if i == 0 {
				first <- sc.Text()
			}
		}
		close(first)
	}()
	t.Cleanup(func() { s.stop(t) })
	select {
	case line := <-first:
		m := rsListening.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("first stdout line %q, want \"listening on http://127.0.0.1:PORT\"", line)
		}
		s.url = m[1]
	case <-time.After(60 * time.Second):
		t.Fatal("no listening line")
	}
	return s
}

// stop cancels run's context and waits for it to return (once).
func (s *rsServer) stop(t *testing.T) {
	t.Helper()
	if s.done == nil {
		return
	}
	s.cancel()
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("serve returned %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Error("serve did not stop within 60 s")
	}
	s.done = nil
}

// send sends a JSON request and returns the status and body.
func (s *rsServer) send(t *testing.T, method, path string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+rsToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func (s *rsServer) ok(t *testing.T, method, path string, body any) map[string]any {
	t.Helper()
	st, b := s.send(t, method, path, body)
	if st != http.StatusOK {
		t.Fatalf("%s %s: status %d, body %s", method, path, st, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s %s: %s: %v", method, path, b, err)
	}
	return m
}

// rsAgent is an attached agent's context.
type rsAgent struct{ TaskID, Agent string }

func (a rsAgent) ctx(callID string) map[string]any {
	c := map[string]any{"task_id": a.TaskID, "agent": a.Agent}
	if callID != "" {
		c["call_id"] = callID
	}
	return c
}

func (s *rsServer) state(t *testing.T, a rsAgent) string {
	t.Helper()
	st, b := s.send(t, "GET", "/v1/state?task_id="+a.TaskID+"&agent="+a.Agent, nil)
	if st != http.StatusOK {
		t.Fatalf("state: %d %s", st, b)
	}
	return string(b)
}

func TestRestartKeepsFenceClaimAndPendingFlags(t *testing.T) {
	db := filepath.Join(t.TempDir(), "memory.db")
	s := rsStart(t, db)

	budget := map[string]any{"context_window": 100000, "hard_rollover_used_tokens": 95000}
	res := s.ok(t, "POST", "/v1/sessions/attach", map[string]any{"session_key": "/s/restart-root.jsonl", "budget": budget})
	root := rsAgent{res["task_id"].(string), res["agent"].(string)}
	res = s.ok(t, "POST", "/v1/sessions/attach", map[string]any{"session_key": "/s/restart-child.jsonl", "budget": budget,
		"task": map[string]any{"task_id": root.TaskID, "parent_agent": "/root", "agent_name": "worker"}})
	child := rsAgent{res["task_id"].(string), res["agent"].(string)}

	write := json.RawMessage(`{"path":"checkpoint.md","text":"goal: survive a restart"}`)
	// Root: new_context while it is legal, then the fallback arms the fence
	// and the checkpoint write takes the claim.
	nc := s.ok(t, "POST", "/v1/tools/new_context", map[string]any{"context": root.ctx("nc1"), "arguments": map[string]any{}})
	if nc["terminate"] != true {
		t.Fatalf("new_context: %v", nc)
	}
	s.ok(t, "POST", "/v1/lifecycle/usage", map[string]any{"context": root.ctx(""), "tokens_used": 88000})
	s.ok(t, "POST", "/v1/lifecycle/delivered", map[string]any{"context": root.ctx(""), "kind": "fallback", "window_id": "w1", "request_id": "fb1"})
	s.ok(t, "POST", "/v1/lifecycle/arm", map[string]any{"context": root.ctx(""), "kind": "fallback", "window_id": "w1", "request_id": "fb1"})
	adm := s.ok(t, "POST", "/v1/lifecycle/admit", map[string]any{"context": root.ctx(""), "call_id": "c1",
		"tool_name": "notes_write_file", "arguments": write})
	if adm["allow"] != true {
		t.Fatalf("admit: %v", adm)
	}
	// Child: a hard rollover requested (latched), and a manual checkpoint
	// awaited.
	if u := s.ok(t, "POST", "/v1/lifecycle/usage", map[string]any{"context": child.ctx(""), "tokens_used": 96000}); u["due"] != "hard_rollover" {
		t.Fatalf("child usage: %v", u)
	}
	s.ok(t, "POST", "/v1/lifecycle/manual", map[string]any{"context": child.ctx(""), "action": "request", "request_id": "m1"})

	rootBefore, childBefore := s.state(t, root), s.state(t, child)
	var st map[string]any
	if err := json.Unmarshal([]byte(rootBefore), &st); err != nil {
		t.Fatal(err)
	}
	if st["phase"] != "FENCED_CLAIMED" || st["claim"] != "c1" || st["fence_active"] != true || st["pending_new_context"] != true {
		t.Fatalf("root before the restart: %s", rootBefore)
	}
	if !strings.Contains(childBefore, `"phase":"MANUAL_AWAITING"`) || !strings.Contains(childBefore, `"rollover_requested":true`) ||
		!strings.Contains(childBefore, `"hard_rollover_latched":true`) {
		t.Fatalf("child before the restart: %s", childBefore)
	}

	s.stop(t)
	s = rsStart(t, db)

	if got := s.state(t, root); got != rootBefore {
		t.Errorf("root state after the restart:\n%s\nwant\n%s", got, rootBefore)
	}
	if got := s.state(t, child); got != childBefore {
		t.Errorf("child state after the restart:\n%s\nwant\n%s", got, childBefore)
	}
	// The restored fence still gates: a second write is blocked, the
	// claimed one saves the checkpoint.
	blocked := s.ok(t, "POST", "/v1/lifecycle/admit", map[string]any{"context": root.ctx(""), "call_id": "c2",
		"tool_name": "notes_write_file", "arguments": write})
	if blocked["allow"] != false || blocked["terminate"] != true {
		t.Errorf("second write after the restart: %v", blocked)
	}
	saved := s.ok(t, "POST", "/v1/tools/notes_write_file", map[string]any{"context": root.ctx("c1"), "arguments": write})
	if saved["terminate"] != true {
		t.Errorf("checkpoint write after the restart: %v", saved)
	}
	if got := s.state(t, root); !strings.Contains(got, `"phase":"CHECKPOINT_SAVED"`) {
		t.Errorf("root after the checkpoint: %s", got)
	}
}
