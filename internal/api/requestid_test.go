package api

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
)

// ownRequestID is the form of the request ids memoryd makes.
var ownRequestID = regexp.MustCompile(`^[0-9a-f]{12}-[0-9]{6,}$`)

// logLines decodes the server's JSON log lines: those with msg, or all
// of them when msg is "".
func (ts *testServer) logLines(tb testing.TB, msg string) []map[string]any {
	tb.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(ts.logs.String()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			tb.Fatalf("log line %q is not JSON: %v", sc.Text(), err)
		}
		if msg == "" || line["msg"] == msg {
			out = append(out, line)
		}
	}
	return out
}

// awaitLogLines waits (at most 10 s) until the log holds n lines with
// msg, and returns them all: a request's line is written once its handler
// has returned, which may be after the client has read the response.
func (ts *testServer) awaitLogLines(tb testing.TB, msg string, n int) []map[string]any {
	tb.Helper()
	lines := ts.logLines(tb, msg)
	for deadline := time.Now().Add(60 * time.Second); len(lines) < n && time.Now().Before(deadline); lines = ts.logLines(tb, msg) {
		time.Sleep(time.Millisecond)
	}
	return lines
}

// logsMention reports whether a string value of any log line contains s.
func (ts *testServer) logsMention(tb testing.TB, s string) bool {
	tb.Helper()
	for _, line := range ts.logLines(tb, "") {
		for _, v := range line {
			if v, ok := v.(string); ok && strings.Contains(v, s) {
				return true
			}
		}
	}
	return false
}

// lastEvent returns the newest event of the log.
func (ts *testServer) lastEvent(tb testing.TB) events.Event {
	tb.Helper()
	last, err := ts.store.LastPosition(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	evs, err := ts.store.Read(context.Background(), eventlog.Filter{After: last - 1, Limit: 1})
	if err != nil || len(evs) != 1 {
		tb.Fatalf("read the last event: %v %v", evs, err)
	}
	return evs[0]
}

// TestRequestIDIsMemorydsOwn sends X-Request-Id headers a client controls
// (30,000 bytes; control characters and a newline, which only a request
// built in-process can carry past net/http's header parser; a short
// well-formed one) on writes without a call_id: the request_id of the
// events they append, of their log lines and of the response's
// X-Request-Id header is memoryd's own; the client's value is logged as
// client_request_id only when short and plain, and appears nowhere else.
func TestRequestIDIsMemorydsOwn(t *testing.T) {
	ts := newTestServer(t, nil)
	cc := ts.attach(t, "reqid")
	huge := strings.Repeat("A", 30000)
	for i, tc := range []struct {
		name, header, wantClientID string
		inProcess                  bool
	}{
		{name: "30,000 bytes", header: huge},
		{name: "control characters", header: "evil\n{\"level\":\"ERROR\",\"msg\":\"forged\"}\x00\x1b[2J", inProcess: true},
		{name: "65 bytes", header: strings.Repeat("b", 65)},
		{name: "a space", header: "has space"},
		{name: "well-formed", header: "trace-7.a:B", wantClientID: "trace-7.a:B"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := len(ts.logLines(t, "request"))
			path := fmt.Sprintf("n%d.md", i)
			body := toolBody(t, cc, `{"path":"`+path+`","text":"x"}`) // no call_id: the event takes the request's id
			var st int
			var h http.Header
			var b []byte
			if tc.inProcess {
				req := httptest.NewRequest("POST", "/v1/tools/notes_write_file", strings.NewReader(body))
				req.Host = "127.0.0.1"
				req.Header.Set("Authorization", "Bearer "+testToken)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Request-Id", tc.header)
				rec := httptest.NewRecorder()
				ts.handler.ServeHTTP(rec, req)
				st, h, b = rec.Code, rec.Header(), rec.Body.Bytes()
			} else {
				req := ts.request(t, "POST", "/v1/tools/notes_write_file", body)
				req.Header.Set("X-Request-Id", tc.header)
				st, h, b = ts.send(t, req)
			}
			if st != http.StatusOK {
				t.Fatalf("write: %d %s", st, b)
			}
			ev := ts.lastEvent(t)
			id := ev.RequestID
			if ev.Type != events.TypeNoteWritten || !ownRequestID.MatchString(id) {
				t.Errorf("event %s has request_id %.80q (%d bytes), not one of memoryd's", ev.Type, id, len(id))
			}
			if got := h.Get("X-Request-Id"); got != id {
				t.Errorf("response X-Request-Id %.80q, want the event's %.80q", got, id)
			}
			lines := ts.awaitLogLines(t, "request", before+1)[before:]
			if len(lines) != 1 {
				t.Fatalf("%d request log lines, want 1", len(lines))
			}
			if lines[0]["request_id"] != id {
				t.Errorf("log line request_id %.80q, want %q", lines[0]["request_id"], id)
			}
			if got, ok := lines[0]["client_request_id"]; tc.wantClientID == "" && ok || tc.wantClientID != "" && got != tc.wantClientID {
				t.Errorf("log line client_request_id %.80q (present %v), want %q", got, ok, tc.wantClientID)
			}
			if tc.wantClientID == "" && ts.logsMention(t, tc.header[:min(len(tc.header), 40)]) {
				t.Errorf("the client's X-Request-Id %.40q is in the logs", tc.header)
			}
		})
	}
	// A call_id, the host's tool-call id of the contract, stays the
	// request_id of the events the call appends.
	withCall := cc
	withCall.CallID = "toolu_9"
	req := ts.request(t, "POST", "/v1/tools/notes_write_file", toolBody(t, withCall, `{"path":"c.md","text":"x"}`))
	req.Header.Set("X-Request-Id", "client-id")
	if st, _, b := ts.send(t, req); st != http.StatusOK {
		t.Fatalf("write with a call_id: %d %s", st, b)
	}
	if ev := ts.lastEvent(t); ev.RequestID != "toolu_9" {
		t.Errorf("event of a call with call_id toolu_9 has request_id %q", ev.RequestID)
	}
}
