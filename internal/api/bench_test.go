package api

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/memoryd/memoryd/internal/memory"
)

// benchServer is a test server over a real database file with memoryd
// serve's defaults (synchronous=FULL, the read audit on), and a client
// that keeps its connections.
func benchServer(b *testing.B) (*testServer, *http.Client, memory.CallContext) {
	b.Helper()
	ts, _ := startServer(b, serverOptions{open: memory.OpenOptions{AuditCalls: true},
		edit: func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil)) }})
	tr := ts.Client().Transport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	client := &http.Client{Transport: tr}
	b.Cleanup(tr.CloseIdleConnections)
	return ts, client, ts.attach(b, "bench")
}

// post sends one tool call; anything but 200 is an error.
func post(client *http.Client, url, body string) error {
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	msg, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: status %d: %s", url, resp.StatusCode, msg)
	}
	return nil
}

// appendBody is the n-th idempotent append: a new call_id each time, and a
// new file every 1000 appends so no note nears its size limit.
func appendBody(cc memory.CallContext, n int64) string {
	return fmt.Sprintf(`{"context":{"task_id":%q,"agent":%q,"call_id":"toolu_%d"},"arguments":{"path":"bench/%d.md","text":"- appended line %d of the benchmark\n"}}`,
		cc.TaskID, cc.Agent, n, n/1000, n)
}

// BenchmarkNoteAppendHTTP: one client appending sequentially, each append
// one durable (FULL) transaction.
func BenchmarkNoteAppendHTTP(b *testing.B) {
	ts, client, cc := benchServer(b)
	url := ts.URL + "/v1/tools/notes_append_to_file"
	var n int64
	for b.Loop() {
		if err := post(client, url, appendBody(cc, n)); err != nil {
			b.Fatal(err)
		}
		n++
	}
}

// BenchmarkNoteAppendHTTPParallel: GOMAXPROCS clients appending at once.
func BenchmarkNoteAppendHTTPParallel(b *testing.B) {
	ts, client, cc := benchServer(b)
	url := ts.URL + "/v1/tools/notes_append_to_file"
	var n atomic.Int64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := post(client, url, appendBody(cc, n.Add(1))); err != nil {
				b.Error(err) // Fatal may not be called from RunParallel's goroutines
				return
			}
		}
	})
}

// BenchmarkNoteReadHTTP: one client's notes_read_file of a ~4 KB note
// (the read1-http bench row's request).
func BenchmarkNoteReadHTTP(b *testing.B) {
	client, url, body, n := readBench(b)
	b.SetBytes(n)
	for b.Loop() {
		if err := post(client, url, body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNoteReadHTTPParallel: the same with 8 clients at once per
// GOMAXPROCS of 2 (the read8 bench row's shape).
func BenchmarkNoteReadHTTPParallel(b *testing.B) {
	client, url, body, n := readBench(b)
	b.SetBytes(n)
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := post(client, url, body); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// readBench writes the ~4 KB note the read benchmarks read and returns
// the client, the URL and body of the read and the note's size.
func readBench(b *testing.B) (*http.Client, string, string, int64) {
	ts, client, cc := benchServer(b)
	var text strings.Builder
	for i := 0; text.Len() < 4000; i++ {
		fmt.Fprintf(&text, "line %03d: the quick brown fox jumps over the lazy dog\n", i)
	}
	if err := post(client, ts.URL+"/v1/tools/notes_write_file", toolBody(b, cc, fmt.Sprintf(`{"path":"big.md","text":%q}`, text.String()))); err != nil {
		b.Fatal(err)
	}
	return client, ts.URL + "/v1/tools/notes_read_file", toolBody(b, cc, `{"path":"big.md"}`), int64(text.Len())
}

// BenchmarkHostileRefusal: the slowest refusals of TestHostileInput, each
// one request refused with a 400 (the test holds what they answer).
func BenchmarkHostileRefusal(b *testing.B) {
	ts, cc := hostileEnv(b)
	var entries strings.Builder
	for i := range 100_000 {
		if i > 0 {
			entries.WriteByte(',')
		}
		fmt.Fprintf(&entries, `{"type":"message","id":"m%d"}`, i)
	}
	ctx := fmt.Sprintf(`{"task_id":%q,"agent":%q}`, cc.TaskID, cc.Agent)
	for _, bc := range []struct{ name, path, body string }{
		{"100k-entry sync", "/v1/history/sync", `{"context":` + ctx + `,"entries":[` + entries.String() + `],"branch":["e1"]}`},
		{"deep nesting unclosed", "/v1/tools/notes_write_file", strings.Repeat("[", 1_000_000)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.body)))
			for b.Loop() {
				if st, _ := ts.do(b, "POST", bc.path, bc.body); st != http.StatusBadRequest {
					b.Fatalf("status %d, want 400", st)
				}
			}
		})
	}
}

// mcpReadBench is a Claude Code session's ~4 KB note behind a host call
// id its hook bound, and the two ways to read it: an MCP tools/call at
// /v1/mcp and the route with host_call_id.
func mcpReadBench(b *testing.B) (client *http.Client, mcpURL, mcpBody, routeURL, routeBody string) {
	b.Helper()
	ts, client, _ := benchServer(b)
	if st, body := ts.do(b, "POST", "/v1/hooks/claude-code", `{"hook_event_name":"PreToolUse","session_id":"bench","tool_use_id":"toolu_bench"}`); st != http.StatusOK {
		b.Fatalf("hook: %d %s", st, body)
	}
	text := strings.Repeat("line: the quick brown fox jumps over the lazy dog\n", 80)
	write := fmt.Sprintf(`{"host_call_id":"toolu_bench","arguments":{"path":"read.md","text":%q}}`, text)
	if err := post(client, ts.URL+"/v1/tools/notes_write_file", write); err != nil {
		b.Fatal(err)
	}
	return client, ts.URL + "/v1/mcp",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notes_read_file","arguments":{"path":"read.md"},"_meta":{"claudecode/toolUseId":"toolu_bench"}}}`,
		ts.URL + "/v1/tools/notes_read_file", `{"host_call_id":"toolu_bench","arguments":{"path":"read.md"}}`
}

// BenchmarkNoteReadMCP: one client's notes_read_file over MCP's streamable
// HTTP transport (the mcp-read1 bench row's figure).
func BenchmarkNoteReadMCP(b *testing.B) {
	client, url, body, _, _ := mcpReadBench(b)
	for b.Loop() {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || strings.Contains(string(msg), `"isError":true`) {
			b.Fatalf("%d %s", resp.StatusCode, msg)
		}
	}
}

// BenchmarkNoteReadHostCall: the same read over the route with
// host_call_id (the mcp-read1 bench row's ceiling).
func BenchmarkNoteReadHostCall(b *testing.B) {
	client, _, _, url, body := mcpReadBench(b)
	for b.Loop() {
		if err := post(client, url, body); err != nil {
			b.Fatal(err)
		}
	}
}
