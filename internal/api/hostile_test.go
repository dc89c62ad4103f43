package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

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
		{"an entry's id spelt Id", "/v1/history/sync", sync(`{"type":"message","Id":"zzz"}`, `["e1"]`), 400, "invalid_argument", "entries[0] has no id"},
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
			// How fast each is refused is BenchmarkHostileRefusal's, not a
			// pass/fail bound here.
			st, h, b := ts.send(t, ts.request(t, "POST", tc.path, tc.body))
			env := checkError(t, tc.name, st, h, b, tc.status, tc.code)
			if !strings.Contains(env.Error.Message, tc.msg) {
				t.Errorf("message %q does not say %q", env.Error.Message, tc.msg)
			}
			checkNoLeak(t, tc.name, b)
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
		c.SetReadDeadline(time.Now().Add(60 * time.Second)) // a server that waits for the body fails, not hangs
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
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
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

// allocated runs fn and returns how many bytes the process allocated
// meanwhile (runtime.MemStats.TotalAlloc, the whole process: the test
// client's and the server's goroutines) and how much more heap is in use
// afterwards, after a GC (what fn left retained). Only the size of each
// is checked, against generous bounds, never the time it took.
func allocated(fn func()) (total, retained int64) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	fn()
	runtime.GC()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc), int64(after.HeapInuse) - int64(before.HeapInuse)
}

// TestHostileBoundedMemory: refusing a hostile body costs memory in
// proportion to what the server reads of it (at most --max-body, 8 MiB),
// not to what it would build from it or to what the client claims, and
// keeps none of it.
func TestHostileBoundedMemory(t *testing.T) {
	ts, cc := hostileEnv(t)
	ctxJSON, _ := json.Marshal(cc)
	before := ts.eventsDump(t)
	const MiB = 1 << 20

	var many strings.Builder
	many.WriteString(`{"context":` + string(ctxJSON) + `,"entries":[`)
	for i := range 100_000 {
		if i > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `{"type":"message","id":"m%d","parentId":null}`, i)
	}
	many.WriteString(`],"branch":["e1"]}`)
	syncBody := many.String()
	bigNote := toolBody(t, cc, `{"path":"big.md","text":"`+strings.Repeat("a", 10*MiB)+`"}`)

	// The bounds are generous (several times what is measured, with the
	// race detector too) but far below what a server that read the whole
	// claimed body, or parsed every entry before refusing, would take.
	for _, tc := range []struct {
		name  string
		send  func(t *testing.T)
		bound int64 // bytes allocated, at most
	}{
		// The body is read, checked and decoded once (decoding 100k raw
		// entries makes garbage of some 15 times its size) and refused by
		// its entry count before any entry is parsed.
		{"100k-entry sync refused", func(t *testing.T) {
			st, h, b := ts.send(t, ts.request(t, "POST", "/v1/history/sync", syncBody))
			checkError(t, "100k-entry sync", st, h, b, http.StatusBadRequest, "invalid_argument")
		}, 40 * int64(len(syncBody))},
		// A Content-Length over the limit is refused before the body is read.
		{"10 MB single-line note refused", func(t *testing.T) {
			st, h, b := ts.send(t, ts.request(t, "POST", "/v1/tools/notes_write_file", bigNote))
			checkError(t, "10 MB note", st, h, b, http.StatusRequestEntityTooLarge, "too_large")
		}, 4 * MiB},
		{"100 MB Content-Length refused unread", func(t *testing.T) {
			c := ts.rawConn(t)
			c.SetDeadline(time.Now().Add(60 * time.Second)) // a server that waits for the body fails, not hangs
			if _, err := io.WriteString(c, rawHead("/v1/sessions/attach", fmt.Sprintf("Content-Length: %d\r\n", 100*MiB))+`{"session_key":"`); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			checkError(t, "100 MB Content-Length", resp.StatusCode, resp.Header, b, http.StatusRequestEntityTooLarge, "too_large")
		}, 4 * MiB},
		// A chunked body is read up to the 8 MiB limit, not further.
		{"100 MB chunked refused at the limit", func(t *testing.T) {
			c := ts.rawConn(t)
			c.SetDeadline(time.Now().Add(60 * time.Second))
			if _, err := io.WriteString(c, rawHead("/v1/sessions/attach", "Transfer-Encoding: chunked\r\n")+"11\r\n{\"session_key\":\"x\r\n"); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() {
				defer close(done)
				chunk := []byte(fmt.Sprintf("%x\r\n%s\r\n", 64<<10, bytes.Repeat([]byte(" "), 64<<10)))
				for sent := 0; sent < 100*MiB; sent += 64 << 10 {
					if _, err := c.Write(chunk); err != nil {
						return
					}
				}
			}()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			checkError(t, "100 MB chunked", resp.StatusCode, resp.Header, b, http.StatusRequestEntityTooLarge, "too_large")
			<-done
		}, 8 * 8 * MiB},
	} {
		t.Run(tc.name, func(t *testing.T) {
			total, retained := allocated(func() { tc.send(t) })
			t.Logf("allocated %.1f MiB (bound %.0f MiB), retained %.1f MiB", float64(total)/MiB, float64(tc.bound)/MiB, float64(retained)/MiB)
			if total > tc.bound {
				t.Errorf("refusing it allocated %.1f MiB, more than %.0f MiB", float64(total)/MiB, float64(tc.bound)/MiB)
			}
			if retained > 4*MiB {
				t.Errorf("refusing it left %.1f MiB more heap in use", float64(retained)/MiB)
			}
		})
	}
	if after := ts.eventsDump(t); after != before {
		t.Errorf("refused bodies changed GET /v1/events")
	}
}

// pageAll reads tool (notes_read_file or history_read_item) with args from
// offset_chars 0 to the end over HTTP and returns the concatenated text
// (field text or content) and the number of pages.
func (ts *testServer) pageAll(tb testing.TB, tool string, cc memory.CallContext, args map[string]any, field string, budget int) (string, int) {
	tb.Helper()
	var got strings.Builder
	off := 0
	for page := 1; ; page++ {
		args["offset_chars"] = off
		a, _ := json.Marshal(args)
		var res struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			Details map[string]any `json:"details"`
		}
		ts.mustJSON(tb, "POST", "/v1/tools/"+tool, toolBody(tb, cc, string(a)), &res)
		frag, _ := res.Details[field].(string)
		if int(res.Details["offset_chars"].(float64)) != off || int(res.Details["end_chars"].(float64)) != off+utf8.RuneCountInString(frag) {
			tb.Fatalf("%s page %d at %d: offset %v end %v for %d chars", tool, page, off, res.Details["offset_chars"], res.Details["end_chars"], utf8.RuneCountInString(frag))
		}
		if len(res.Content) == 0 || !strings.HasSuffix(res.Content[0].Text, "\n"+frag) || utf8.RuneCountInString(res.Content[0].Text) > budget {
			tb.Fatalf("%s page %d: %d code points of text (budget %d), not ending with the fragment", tool, page, utf8.RuneCountInString(res.Content[0].Text), budget)
		}
		if frag == "" {
			tb.Fatalf("%s page %d at %d: no text", tool, page, off)
		}
		got.WriteString(frag)
		off += utf8.RuneCountInString(frag)
		if res.Details["next_offset_chars"] == nil {
			return got.String(), page
		}
		if int(res.Details["next_offset_chars"].(float64)) != off {
			tb.Fatalf("%s page %d: next_offset_chars %v, want %d", tool, page, res.Details["next_offset_chars"], off)
		}
	}
}

// TestNoteAtByteCapSingleLine: a note of exactly notes_max_file_bytes
// (1,000,000 UTF-8 bytes) on one line is written, read back whole page by
// page, and found by notes_search_contents; one byte more is too_large.
func TestNoteAtByteCapSingleLine(t *testing.T) {
	ts, cc := hostileEnv(t)
	// 999,998 bytes of numbered blocks ("0000000,0000008,…"), two needles
	// and a final é (2 bytes): 1,000,000 bytes, 999,999 code points.
	buf := make([]byte, 0, 999_998)
	for len(buf) < 999_998 {
		buf = fmt.Appendf(buf, "%07d,", len(buf))
	}
	buf = buf[:999_998]
	copy(buf[500_000:], "NEEDLE-MIDDLE")
	copy(buf[999_998-len("NEEDLE-END"):], "NEEDLE-END")
	text := string(buf) + "é"
	if len(text) != 1_000_000 || strings.Contains(text, "\n") {
		t.Fatalf("the note has %d bytes", len(text))
	}
	args, _ := json.Marshal(map[string]string{"path": "cap.md", "text": text})
	var w struct {
		Details map[string]any `json:"details"`
	}
	ts.mustJSON(t, "POST", "/v1/tools/notes_write_file", toolBody(t, cc, string(args)), &w)
	if w.Details["bytes"] != float64(1_000_000) || w.Details["path"] != "/root/notes/cap.md" {
		t.Fatalf("write: %v", w.Details)
	}
	if st, b := ts.tool(t, "notes_append_to_file", cc, `{"path":"cap.md","text":"x"}`); st != http.StatusRequestEntityTooLarge {
		t.Fatalf("one byte over the cap: %d %s", st, b)
	}

	got, pages := ts.pageAll(t, "notes_read_file", cc, map[string]any{"path": "cap.md"}, "text", memory.DefaultMaxToolOutputChars)
	if got != text {
		t.Fatalf("pages give %d bytes that differ from the note (first difference at %d)", len(got), firstDiff(got, text))
	}
	if pages < 999_999/memory.DefaultMaxToolOutputChars {
		t.Errorf("%d pages for 999,999 code points", pages)
	}
	// The same through an explicit line range, from the middle.
	var r struct {
		Details map[string]any `json:"details"`
	}
	ts.mustJSON(t, "POST", "/v1/tools/notes_read_file", toolBody(t, cc, `{"path":"cap.md","start_line":1,"stop_line":-1,"offset_chars":500000,"limit_chars":13}`), &r)
	if r.Details["text"] != "NEEDLE-MIDDLE" || r.Details["total_lines"] != float64(1) || r.Details["total_chars"] != float64(999_999) {
		t.Fatalf("read at 500000: %v", r.Details)
	}

	for _, q := range []string{"NEEDLE-MIDDLE", "NEEDLE-END", "END" + "é", "0999976,"} {
		var s struct {
			Details struct {
				Files []struct {
					Path    string `json:"path"`
					Matches []struct {
						Line int    `json:"line"`
						Text string `json:"text"`
					} `json:"matches"`
				} `json:"files"`
			} `json:"details"`
		}
		a, _ := json.Marshal(map[string]string{"query": q})
		ts.mustJSON(t, "POST", "/v1/tools/notes_search_contents", toolBody(t, cc, string(a)), &s)
		f := s.Details.Files
		if len(f) != 1 || f[0].Path != "/root/notes/cap.md" || len(f[0].Matches) != 1 || f[0].Matches[0].Line != 1 ||
			f[0].Matches[0].Text != text[:299]+"…" {
			t.Errorf("search %q: %+v", q, f)
		}
	}
	if st, b := ts.tool(t, "notes_search_contents", cc, `{"query":"NEEDLE-MIDDLE,"}`); st != http.StatusOK || !strings.Contains(string(b), `"n_returned":0`) {
		t.Errorf("search for text the note does not have: %d %.300s", st, b)
	}
}

func firstDiff(a, b string) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestHistoryHugeSingleLineEntry: a history entry that is one line of
// about 6 MB (under the 8 MiB body limit) is synced, read back whole page
// by page with history_read_item, and found by history_search_contents
// at the code-point offset where its needles are.
func TestHistoryHugeSingleLineEntry(t *testing.T) {
	ts := newTestServer(t, nil)
	var att attachResponse
	ts.mustJSON(t, "POST", "/v1/sessions/attach", `{"session_key":"/sessions/huge.jsonl","budget":{"max_tool_output_chars":1000000}}`, &att)
	root := memory.CallContext{TaskID: att.TaskID, Agent: att.Agent}
	ts.mustJSON(t, "POST", "/v1/sessions/attach", `{"session_key":"/sessions/huge-child.jsonl","task":{"task_id":"`+att.TaskID+`","parent_agent":"/root","agent_name":"reader"}}`, &att)
	child := memory.CallContext{TaskID: att.TaskID, Agent: att.Agent} // default budget, 12000

	// 6,000,000 code points: numbered blocks with a multi-byte character
	// in each, three needles.
	var b strings.Builder
	for n := 0; n < 6_000_000; n += 10 {
		fmt.Fprintf(&b, "%08dé,", n)
	}
	runes := []rune(b.String())
	needles := map[string]int{"NEEDLE-START": 0, "NEEDLE-MIDDLE": 3_000_001, "NEEDLE-END": len(runes) - len("NEEDLE-END")}
	for nd, at := range needles {
		copy(runes[at:], []rune(nd))
	}
	content := string(runes)
	entry, _ := json.Marshal(map[string]any{"type": "message", "id": "huge", "parentId": nil, "timestamp": "2026-12-02T10:00:00.000Z",
		"message": map[string]any{"role": "user", "content": content, "timestamp": 1}})
	ctx, _ := json.Marshal(root)
	body := `{"context":` + string(ctx) + `,"entries":[` + string(entry) + `],"branch":["huge"]}`
	if len(body) < 6<<20 || len(body) >= 8<<20 || strings.Contains(content, "\n") {
		t.Fatalf("the sync body has %d bytes", len(body))
	}
	var sync memory.SyncResult
	ts.mustJSON(t, "POST", "/v1/history/sync", body, &sync)
	if sync.Stored != 1 || sync.WindowID != "w1" {
		t.Fatalf("sync: %+v", sync)
	}

	got, pages := ts.pageAll(t, "history_read_item", root, map[string]any{"window_id": "w1", "item_id": "huge"}, "content", 1_000_000)
	if got != content {
		t.Fatalf("pages give %d bytes that differ from the entry (first difference at byte %d)", len(got), firstDiff(got, content))
	}
	if pages < 6 {
		t.Errorf("%d pages for 6,000,000 code points with a budget of 1,000,000", pages)
	}

	for nd, at := range needles {
		for _, cc := range []memory.CallContext{root, child} {
			a, _ := json.Marshal(map[string]string{"query": nd, "agent_name": "/root"})
			var s struct {
				Details struct {
					Results []struct {
						ItemID  string `json:"item_id"`
						NChars  int    `json:"n_chars"`
						Regions []struct {
							Matches []struct{ Start, End int } `json:"matches"`
						} `json:"regions"`
					} `json:"results"`
				} `json:"details"`
			}
			ts.mustJSON(t, "POST", "/v1/tools/history_search_contents", toolBody(t, cc, string(a)), &s)
			r := s.Details.Results
			if len(r) != 1 || r[0].ItemID != "huge" || r[0].NChars != len(runes) || len(r[0].Regions) != 1 ||
				len(r[0].Regions[0].Matches) != 1 || r[0].Regions[0].Matches[0].Start != at || r[0].Regions[0].Matches[0].End != at+len(nd) {
				t.Fatalf("%s searches %q: %+v, want item huge with one match at %d", cc.Agent, nd, r, at)
			}
			// The match's coordinates read the needle back, on the
			// default budget too.
			a, _ = json.Marshal(map[string]any{"agent_name": "/root", "window_id": "w1", "item_id": "huge", "offset_chars": at, "limit_chars": len(nd)})
			var rd struct {
				Details map[string]any `json:"details"`
			}
			ts.mustJSON(t, "POST", "/v1/tools/history_read_item", toolBody(t, cc, string(a)), &rd)
			if rd.Details["content"] != nd {
				t.Fatalf("%s reads %q at %d: %v", cc.Agent, nd, at, rd.Details["content"])
			}
		}
	}
	// A child on the default budget pages the middle of it too.
	a, _ := json.Marshal(map[string]any{"agent_name": "/root", "window_id": "w1", "item_id": "huge", "offset_chars": 2_990_000})
	var rd struct {
		Content []struct{ Text string } `json:"content"`
		Details map[string]any          `json:"details"`
	}
	ts.mustJSON(t, "POST", "/v1/tools/history_read_item", toolBody(t, child, string(a)), &rd)
	end := int(rd.Details["end_chars"].(float64))
	if rd.Details["content"] != string(runes[2_990_000:end]) || end <= 2_990_000 || utf8.RuneCountInString(rd.Content[0].Text) > memory.DefaultMaxToolOutputChars {
		t.Fatalf("child's page at 2990000: end %d, %d code points of text", end, utf8.RuneCountInString(rd.Content[0].Text))
	}
}

// TestSyncEntryIDIsTheExactKey: an entry's "ID" is not its "id", after it
// (encoding/json would store the entry as "other") or before it: the
// entries are stored as "dk" and "dk2", readable so, and their raw bytes
// keep "ID" as written.
func TestSyncEntryIDIsTheExactKey(t *testing.T) {
	ts, cc := hostileEnv(t)
	ctx, _ := json.Marshal(cc)
	for _, entry := range []string{
		`{"type":"message","id":"dk","ID":"other","parentId":"e1","timestamp":"2026-12-02T10:00:01.000Z","message":{"role":"user","content":"hello dk","timestamp":2}}`,
		`{"ID":"other2","type":"message","id":"dk2","parentId":"dk","timestamp":"2026-12-02T10:00:02.000Z","message":{"role":"user","content":"hello dk2","timestamp":3}}`,
	} {
		var res memory.SyncResult
		ts.mustJSON(t, "POST", "/v1/history/sync", `{"context":`+string(ctx)+`,"entries":[`+entry+`]}`, &res)
		if res.Stored != 1 {
			t.Fatalf("sync %s: %+v", entry, res)
		}
	}
	var res memory.SyncResult
	ts.mustJSON(t, "POST", "/v1/history/sync", `{"context":`+string(ctx)+`,"entries":[],"branch":["e1","dk","dk2"]}`, &res)
	for id, want := range map[string]string{"dk": "hello dk", "dk2": "hello dk2"} {
		var rd struct {
			Details map[string]any `json:"details"`
		}
		ts.mustJSON(t, "POST", "/v1/tools/history_read_item", toolBody(t, cc, `{"window_id":"w1","item_id":"`+id+`"}`), &rd)
		if rd.Details["content"] != want {
			t.Errorf("item %s reads %v, want %q", id, rd.Details["content"], want)
		}
	}
	for _, id := range []string{"other", "other2"} {
		if st, b := ts.tool(t, "history_read_item", cc, `{"window_id":"w1","item_id":"`+id+`"}`); st != http.StatusNotFound {
			t.Errorf("item %s: %d %s, want 404", id, st, b)
		}
	}
	dump := ts.eventsDump(t)
	if !strings.Contains(dump, `"entry_id":"dk"`) || strings.Contains(dump, `"entry_id":"other"`) || !strings.Contains(dump, `"ID":"other"`) {
		t.Errorf("the log does not record entry dk with its ID key kept:\n%.2000s", dump)
	}
}
