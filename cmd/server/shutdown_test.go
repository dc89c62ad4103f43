package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
)

// logLine returns the first of a server's JSON log lines with msg.
func logLine(t *testing.T, stderr string, msg string) map[string]any {
	t.Helper()
	for _, l := range strings.Split(stderr, "\n") {
		var line map[string]any
		if json.Unmarshal([]byte(l), &line) == nil && line["msg"] == msg {
			return line
		}
	}
	return nil
}

// waitForLog waits until the server has logged a line containing s.
func waitForLog(t *testing.T, s *server, substr string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(s.stderr.String(), substr) {
		if time.Now().After(deadline) {
			t.Fatalf("the server never logged %s; stderr:\n%s", substr, s.stderr.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestServeCutsOffUnfinishedRequests holds two requests unfinished at a
// shutdown: one without the token that sent its headers (Content-Length:
// 100) and one body byte (answered 401 at once, which net/http holds back
// until it has read the rest of the body), and one with the token whose
// handler is reading its body. After --shutdown-grace the server closes
// both connections, logs that it cut off 2, closes the database (the WAL
// is checkpointed and removed) and run returns nil (exit 0).
func TestServeCutsOffUnfinishedRequests(t *testing.T) {
	db := filepath.Join(t.TempDir(), "memory.db")
	const token = "grace-token"
	const grace = 300 * time.Millisecond
	s := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--shutdown-grace", grace.String()},
		env(map[string]string{"MEMORYD_TOKEN": token}))
	var att memory.AttachResult
	if st := s.call(t, token, "POST", "/v1/sessions/attach", `{"session_key":"/s/grace.jsonl"}`, &att); st != 200 {
		t.Fatalf("attach: %d", st)
	}
	addr := strings.TrimPrefix(s.url, "http://")
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	anonymous := dial()
	fmt.Fprintf(anonymous, "POST /v1/sessions/attach HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{", addr)
	waitForLog(t, s, `"status":401`)

	// 100 Continue is net/http's sign that the handler reads the body.
	authed := dial()
	fmt.Fprintf(authed, "POST /v1/sessions/attach HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n", addr, token)
	authed.SetReadDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReader(authed)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100 ") {
		t.Fatalf("authenticated request: %q, %v; want 100 Continue", line, err)
	}
	if _, err := br.ReadString('\n'); err != nil {
		t.Fatal(err)
	}
	if _, err := authed.Write([]byte("{")); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	err := s.stop(t)
	took := time.Since(start)
	stderr := s.stderr.String()
	if err != nil {
		t.Fatalf("run returned %v after %s (want nil, exit 0); stderr:\n%s", err, took, stderr)
	}
	cut := logLine(t, stderr, "shutdown: grace period over, connections closed")
	if cut == nil || cut["level"] != "WARN" || cut["connections"] != float64(2) || cut["requests_cut_off"] != float64(2) {
		t.Errorf("cut-off log line %v, want WARN with connections 2 and requests_cut_off 2; stderr:\n%s", cut, stderr)
	}
	if strings.Contains(stderr, `"level":"ERROR"`) {
		t.Errorf("errors logged:\n%s", stderr)
	}
	for name, c := range map[string]net.Conn{"anonymous": anonymous, "authenticated": authed} {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		var ne net.Error
		if _, err := io.ReadAll(c); errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("the %s connection is still open after the shutdown", name)
		}
	}
	if fi, err := os.Stat(db + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("the WAL (%d bytes) is still there after the shutdown: the database was not closed", fi.Size())
	}
	if out, stderr, err := fxRun(t, nil, "verify", "--db", db); err != nil {
		t.Errorf("verify after the shutdown: %v\n%s%s", err, out, stderr)
	}
	if !strings.Contains(string(export(t, "--db", db)), att.TaskID) {
		t.Error("the attach is not in the database after the shutdown")
	}
}

// TestServeStopFlushesReadAudit: a clean stop records the read audit of
// every call answered before it, those still waiting for their batch
// included: the export after the stop holds one audit.tool_called per
// call.
func TestServeStopFlushesReadAudit(t *testing.T) {
	db := filepath.Join(t.TempDir(), "memory.db")
	const token = "audit-token"
	s := startServe(t, db, env(map[string]string{"MEMORYD_TOKEN": token}))
	var att memory.AttachResult
	if st := s.call(t, token, "POST", "/v1/sessions/attach", `{"session_key":"/s/audit.jsonl"}`, &att); st != 200 {
		t.Fatalf("attach: %d", st)
	}
	cc := fmt.Sprintf(`{"task_id":%q,"agent":"/root"}`, att.TaskID)
	if st := s.call(t, token, "POST", "/v1/tools/notes_write_file", `{"context":`+cc+`,"arguments":{"path":"a.md","text":"x"}}`, nil); st != 200 {
		t.Fatalf("write: %d", st)
	}
	const clients, reads = 4, 50
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range reads {
				if st := s.call(t, token, "POST", "/v1/tools/notes_read_file", `{"context":`+cc+`,"arguments":{"path":"a.md"}}`, nil); st != 200 {
					t.Errorf("read: %d", st)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := s.stop(t); err != nil {
		t.Fatalf("stop: %v", err)
	}
	audited := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(string(export(t, "--db", db))), "\n") {
		var ev events.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == events.TypeToolCalled {
			p, err := events.Decode(ev)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range p.(*events.ToolCalled).Calls {
				audited[c.Tool]++
			}
		}
	}
	if audited["notes_read_file"] != clients*reads || audited["notes_write_file"] != 1 {
		t.Errorf("audited calls after the stop: %v, want %d notes_read_file and 1 notes_write_file", audited, clients*reads)
	}
}

// TestDrainWaitsForHandlers: once the grace period is over, stop returns
// only after the handlers have returned (here, one that takes 200 ms to
// notice that its request was canceled), so the database never closes
// under one; a handler that outlives the bounded wait makes stop fail,
// which leaves the database open.
func TestDrainWaitsForHandlers(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ignoreCtx   bool
		wantStopErr string
	}{
		{name: "slow to return"},
		{name: "never returns in time", ignoreCtx: true, wantStopErr: "shutdown: 1 request handlers still running"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			started, release := make(chan struct{}), make(chan struct{})
			var returned atomic.Bool
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				close(started)
				if tc.ignoreCtx {
					<-release
				} else {
					<-r.Context().Done()
					time.Sleep(200 * time.Millisecond)
				}
				returned.Store(true)
			})}
			d := newDrain()
			d.handlerWait = time.Second
			d.install(srv)
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go srv.Serve(ln)
			go http.Get("http://" + ln.Addr().String() + "/")
			<-started

			var logs memorytest.Buffer
			err = d.stop(srv, 50*time.Millisecond, slog.New(slog.NewJSONHandler(&logs, nil)))
			handlerReturned := returned.Load()
			close(release)
			if tc.wantStopErr == "" {
				if err != nil || !handlerReturned {
					t.Errorf("stop returned %v with the handler returned %v, want nil once it has", err, handlerReturned)
				}
			} else if err == nil || !strings.HasPrefix(err.Error(), tc.wantStopErr) || handlerReturned {
				t.Errorf("stop returned %v (handler returned %v), want %q", err, handlerReturned, tc.wantStopErr)
			}
			if l := logLine(t, logs.String(), "shutdown: grace period over, connections closed"); l == nil || l["requests_cut_off"] != float64(1) {
				t.Errorf("cut-off line %v, want requests_cut_off 1; logs:\n%s", l, logs.String())
			}
		})
	}
}
