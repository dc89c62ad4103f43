package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/memory"
)

// leaks are fragments of internal error text no response may carry.
var leaks = []string{"sql", "SQLITE", "panic", "goroutine", ".go:", "runtime error", "json: ", "strconv."}

// checkNoLeak fails when an error body carries internal error text.
func checkNoLeak(tb testing.TB, what string, body []byte) {
	tb.Helper()
	for _, l := range leaks {
		if strings.Contains(string(body), l) {
			tb.Errorf("%s: the response leaks %q: %.300s", what, l, body)
		}
	}
}

// eventsDump is the whole log as GET /v1/events shows it.
func (ts *testServer) eventsDump(tb testing.TB) string {
	tb.Helper()
	st, b := ts.do(tb, "GET", "/v1/events?after=0&limit=5000", "")
	if st != http.StatusOK {
		tb.Fatalf("GET /v1/events: %d %s", st, b)
	}
	return string(b)
}

// hostileEnv is a server with a task that has a note and a synced entry.
func hostileEnv(tb testing.TB) (*testServer, memory.CallContext) {
	tb.Helper()
	ts := newTestServer(tb, nil)
	cc := ts.attach(tb, "/sessions/hostile.jsonl")
	if st, b := ts.tool(tb, "notes_write_file", cc, `{"path":"a.md","text":"kept\n"}`); st != http.StatusOK {
		tb.Fatalf("write: %d %s", st, b)
	}
	ctx, _ := json.Marshal(cc)
	body := `{"context":` + string(ctx) + `,"entries":[{"type":"message","id":"e1","parentId":null,"timestamp":"2026-12-02T10:00:00.000Z","message":{"role":"user","content":"hello","timestamp":1}}],"branch":["e1"]}`
	if st, b := ts.do(tb, "POST", "/v1/history/sync", body); st != http.StatusOK {
		tb.Fatalf("sync: %d %s", st, b)
	}
	return ts, cc
}

// TestHostileInput: each hostile body gets a clear 4xx with the error
// envelope, a message naming the problem, no internal text, and stores
// nothing: GET /v1/events is byte for byte unchanged.
func TestHostileInput(t *testing.T) {
	ts, cc := hostileEnv(t)
	ctxJSON, _ := json.Marshal(cc)
	ctx := string(ctxJSON)
	tool := func(args string) string { return `{"context":` + ctx + `,"arguments":` + args + `}` }
	entry := func(id, extra string) string {
		return `{"type":"message","id":"` + id + `","parentId":null,"timestamp":"2026-12-02T10:00:00.000Z","message":{"role":"user","content":"x","timestamp":1}` + extra + `}`
	}
	sync := func(entries, branch string) string {
		return `{"context":` + ctx + `,"entries":[` + entries + `],"branch":` + branch + `}`
	}
	var many strings.Builder
	for i := range 100_000 {
		if i > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `{"type":"message","id":"m%d"}`, i)
	}
	const (
		write = "/v1/tools/notes_write_file"
		list  = "/v1/tools/notes_list_files_by_prefix"
	)
	before := ts.eventsDump(t)
	for _, tc := range []struct {
		name, path, body string
		status           int
		code, msg        string
	}{
		// Invalid UTF-8: refused, not turned into U+FFFD.
		{"invalid UTF-8 in a note", write, tool("{\"path\":\"a.md\",\"text\":\"ok \xff\xfe\"}"), 400, "invalid_argument", "UTF-8"},
		{"overlong UTF-8 in a path", write, tool("{\"path\":\"\xc0\xafetc.md\",\"text\":\"x\"}"), 400, "invalid_argument", "UTF-8"},
		{"invalid UTF-8 in a key", write, tool("{\"path\":\"a.md\",\"te\xffxt\":\"x\"}"), 400, "invalid_argument", "UTF-8"},
		{"surrogate half in UTF-8", write, tool("{\"path\":\"a.md\",\"text\":\"\xed\xa0\x80\"}"), 400, "invalid_argument", "UTF-8"},
		{"invalid UTF-8 in a sync entry", "/v1/history/sync", sync(entry("e2", ",\"note\":\"\xff\""), `["e1","e2"]`), 400, "invalid_argument", "UTF-8"},
		// Deep nesting.
		{"deep nesting", write, tool(strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000)), 400, "invalid_argument", "deeper"},
		{"deep nesting in an entry", "/v1/history/sync", sync(entry("e2", `,"deep":`+strings.Repeat(`{"a":`, 120)+"1"+strings.Repeat("}", 120)), `["e1","e2"]`),
			400, "invalid_argument", "deeper"},
		{"deep nesting unclosed", write, strings.Repeat("[", 1_000_000), 400, "invalid_argument", ""},
		// Huge numbers: past float64 refused, past a limit clamped (below).
		{"1e999999 as a limit", list, tool(`{"max_results":1e999999}`), 400, "invalid_argument", "out of range"},
		{"-1e999999 as a limit", list, tool(`{"max_results":-1e999999}`), 400, "invalid_argument", "out of range"},
		{"1e999999 in an entry", "/v1/history/sync", sync(entry("e2", `,"n":1e999999`), `["e1","e2"]`), 400, "invalid_argument", "out of range"},
		{"1e400 as tokens_used", "/v1/lifecycle/usage", `{"context":` + ctx + `,"tokens_used":1e400}`, 400, "invalid_argument", "out of range"},
		{"int64 overflow as tokens_used", "/v1/lifecycle/usage", `{"context":` + ctx + `,"tokens_used":99999999999999999999}`, 400, "invalid_argument", "tokens_used"},
		{"fraction as a limit", list, tool(`{"max_results":2.5}`), 400, "invalid_argument", "max_results"},
		{"negative limit", list, tool(`{"max_results":-3}`), 400, "invalid_argument", "max_results"},
		{"huge budget", "/v1/sessions/attach", `{"session_key":"/s/n.jsonl","budget":{"context_window":1e999999}}`, 400, "invalid_argument", "out of range"},
		// Duplicate keys: the last would silently win.
		{"duplicate context", write, `{"context":` + ctx + `,"context":{"task_id":"x","agent":"/root"},"arguments":{"path":"a.md","text":"x"}}`, 400, "invalid_argument", "twice"},
		{"duplicate path", write, tool(`{"path":"a.md","path":"/root/other/notes/b.md","text":"x"}`), 400, "invalid_argument", "twice"},
		{"duplicate agent", write, `{"context":{"task_id":"` + cc.TaskID + `","agent":"/root","agent":"/root/x"},"arguments":{"path":"a.md","text":"x"}}`, 400, "invalid_argument", "twice"},
		{"duplicate id in an entry", "/v1/history/sync", sync(`{"type":"message","id":"e2","id":"e1"}`, `["e1"]`), 400, "invalid_argument", "twice"},
		// encoding/json matches keys case-insensitively: a case variant of a
		// field would be a duplicate the check above does not see.
		{"case variant of agent", write, `{"context":{"task_id":"` + cc.TaskID + `","agent":"/root","Agent":"/root/x"},"arguments":{"path":"a.md","text":"x"}}`, 400, "invalid_argument", `"Agent"`},
		{"case variant of context", write, `{"Context":` + ctx + `,"arguments":{"path":"a.md","text":"x"}}`, 400, "invalid_argument", "case-sensitive"},
		{"Kelvin sign in task_id", write, `{"context":{"tas\u212a_id":"` + cc.TaskID + `","agent":"/root"},"arguments":{"path":"a.md","text":"x"}}`, 400, "invalid_argument", "unknown field"},
		{"long s in session_key", "/v1/sessions/attach", `{"session_key":"/s/a.jsonl","\u017fession_key":"/s/b.jsonl"}`, 400, "invalid_argument", "unknown field"},
		{"case variant in a budget", "/v1/sessions/attach", `{"session_key":"/s/c.jsonl","budget":{"context_window":1000,"Context_Window":5}}`, 400, "invalid_argument", "Context_Window"},
		// NUL in note paths.
		{"escaped NUL in a path", write, tool(`{"path":"a\u0000b.md","text":"x"}`), 400, "invalid_argument", "NUL"},
		{"escaped NUL in a full path", write, tool(`{"path":"/root/notes/a\u0000.md","text":"x"}`), 400, "invalid_argument", "NUL"},
		{"escaped NUL in a prefix", list, tool(`{"prefix":"a\u0000"}`), 400, "invalid_argument", "NUL"},
		{"escaped NUL in an agent name", "/v1/tools/history_list_windows", tool(`{"agent_name":"/root\u0000"}`), 400, "invalid_argument", ""},
		{"raw NUL in a path", write, tool("{\"path\":\"a\x00b.md\",\"text\":\"x\"}"), 400, "invalid_argument", "JSON"},
		// Size.
		{"10 MB single line", write, tool(`{"path":"big.md","text":"` + strings.Repeat("a", 10<<20) + `"}`), 413, "too_large", "limit"},
		{"100k-entry sync", "/v1/history/sync", sync(many.String(), `["e1"]`), 400, "invalid_argument", "10000"},
		{"note over its byte cap", write, tool(`{"path":"cap.md","text":"` + strings.Repeat("é", 500_001) + `"}`), 413, "too_large", "1000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			st, h, b := ts.send(t, ts.request(t, "POST", tc.path, tc.body))
			env := checkError(t, tc.name, st, h, b, tc.status, tc.code)
			if !strings.Contains(env.Error.Message, tc.msg) {
				t.Errorf("message %q does not say %q", env.Error.Message, tc.msg)
			}
			checkNoLeak(t, tc.name, b)
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("refused after %v", d)
			}
		})
	}
	if after := ts.eventsDump(t); after != before {
		t.Errorf("hostile requests changed GET /v1/events:\nbefore %.500s\nafter  %.500s", before, after)
	}

	// Limits above their maximum are clamped, not refused.
	for _, args := range []string{`{"max_results":1000000}`, `{"max_results":99999999999999999999}`, `{"max_results":1e300}`, `{"max_results":5e2}`} {
		if st, b := ts.tool(t, "notes_list_files_by_prefix", cc, args); st != http.StatusOK {
			t.Errorf("list %s: %d %s, want the limit clamped", args, st, b)
		}
	}
	for _, args := range []string{`{"limit":1000000}`, `{"limit":1e300,"recent_first":true}`} {
		if st, b := ts.tool(t, "history_list_items", cc, args); st != http.StatusOK {
			t.Errorf("history_list_items %s: %d %s, want the limit clamped", args, st, b)
		}
	}
}

// rawConn sends raw HTTP to the test server.
func (ts *testServer) rawConn(tb testing.TB) net.Conn {
	tb.Helper()
	c, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	return c
}

func rawHead(path string, header string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + testToken +
		"\r\nContent-Type: application/json\r\n" + header + "\r\n"
}

// TestHugeBodiesAreNotRead: a 100 MB body is refused without being read.
// With a Content-Length over the limit the 413 comes at once, before any
// of the body is sent; a chunked one is read only up to the limit, then
// refused and the connection closed.
func TestHugeBodiesAreNotRead(t *testing.T) {
	ts, _ := hostileEnv(t)
	before := ts.eventsDump(t)
	const huge = 100 << 20

	t.Run("content-length", func(t *testing.T) {
		c := ts.rawConn(t)
		if _, err := io.WriteString(c, rawHead("/v1/sessions/attach", fmt.Sprintf("Content-Length: %d\r\n", huge))+`{"session_key":"`); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no response before the body was sent: %v", err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		checkError(t, "100 MB Content-Length", resp.StatusCode, resp.Header, b, http.StatusRequestEntityTooLarge, "too_large")
	})

	t.Run("chunked", func(t *testing.T) {
		c := ts.rawConn(t)
		if _, err := io.WriteString(c, rawHead("/v1/sessions/attach", "Transfer-Encoding: chunked\r\n")); err != nil {
			t.Fatal(err)
		}
		var sent atomic.Int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			chunk := bytes.Repeat([]byte(" "), 64<<10)
			io.WriteString(c, "11\r\n{\"session_key\":\"x\r\n")
			head := []byte(fmt.Sprintf("%x\r\n", len(chunk)))
			for sent.Load() < huge {
				if _, err := c.Write(head); err != nil {
					return
				}
				if _, err := c.Write(chunk); err != nil {
					return
				}
				if _, err := c.Write([]byte("\r\n")); err != nil {
					return
				}
				sent.Add(int64(len(chunk)))
			}
		}()
		c.SetReadDeadline(time.Now().Add(20 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("no response: %v", err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		checkError(t, "100 MB chunked", resp.StatusCode, resp.Header, b, http.StatusRequestEntityTooLarge, "too_large")
		<-done // the server closed the connection: the writer stops
		if n := sent.Load(); n >= huge || n > 48<<20 {
			t.Errorf("the client could send %d MB of a chunked body; the server should stop reading at 8 MiB", n>>20)
		}
		t.Logf("chunked: %d MiB sent before the server closed the connection", sent.Load()>>20)
	})
	if after := ts.eventsDump(t); after != before {
		t.Errorf("refused bodies changed GET /v1/events")
	}
}
