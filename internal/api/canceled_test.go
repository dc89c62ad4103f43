package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// cancelAtEOF is a request body that cancels the request's context once
// the handler has read it all: the client gives up while the handler
// works.
type cancelAtEOF struct {
	r      io.Reader
	cancel context.CancelFunc
}

func (c *cancelAtEOF) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if err == io.EOF {
		c.cancel()
	}
	return n, err
}

// TestCanceledRequestIsNotInternal: a request whose client gives up while
// its handler runs (its context is canceled after the body was read) is
// logged at info with code "canceled" and status 499, and counted so in
// /metrics; nothing is logged or counted as internal, and the response,
// which nobody reads, stays within the contract (503 unavailable).
func TestCanceledRequestIsNotInternal(t *testing.T) {
	ts := newTestServer(t, nil)
	cc := ts.attach(t, "cancel")
	if st, b := ts.tool(t, "notes_write_file", cc, `{"path":"a.md","text":"x"}`); st != http.StatusOK {
		t.Fatalf("write: %d %s", st, b)
	}
	calls := []struct{ tool, args string }{
		{"notes_write_file", `{"path":"b.md","text":"y"}`}, // the writer finds the request canceled
		{"notes_list_files_by_prefix", `{}`},               // a read queries SQLite with the canceled context
	}
	for _, c := range calls {
		ctx, cancel := context.WithCancel(context.Background())
		body := &cancelAtEOF{r: strings.NewReader(toolBody(t, cc, c.args)), cancel: cancel}
		req := httptest.NewRequestWithContext(ctx, "POST", "/v1/tools/"+c.tool, body)
		req.Host = "127.0.0.1"
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		ts.handler.ServeHTTP(rec, req)
		cancel()
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("%s: status %d, want 503; body %s", c.tool, rec.Code, rec.Body.Bytes())
			continue
		}
		checkError(t, c.tool, rec.Code, rec.Header(), rec.Body.Bytes(), http.StatusServiceUnavailable, "unavailable")
	}
	if st, _ := ts.do(t, "POST", "/v1/tools/notes_read_file", toolBody(t, cc, `{"path":"b.md"}`)); st != http.StatusNotFound {
		t.Errorf("the canceled write was stored: read b.md: %d", st)
	}

	if failed := ts.logLines(t, "request failed"); len(failed) != 0 {
		t.Errorf("a canceled request is logged as failed: %v", failed)
	}
	var canceled int
	for _, l := range ts.logLines(t, "request") {
		if l["code"] != "canceled" && l["status"] != float64(499) && l["code"] != "internal" {
			continue
		}
		if l["code"] != "canceled" || l["status"] != float64(499) || l["level"] != "INFO" {
			t.Errorf("request line %v, want code canceled, status 499, level INFO", l)
		}
		canceled++
	}
	if canceled != len(calls) {
		t.Errorf("%d request lines with code canceled, want %d:\n%s", canceled, len(calls), ts.logs.String())
	}
	st, _, b := ts.send(t, ts.request(t, "GET", "/metrics", ""))
	if st != http.StatusOK {
		t.Fatalf("metrics: %d %s", st, b)
	}
	text := string(b)
	for _, c := range calls {
		if want := fmt.Sprintf(`memoryd_tool_calls_total{code="canceled",tool=%q} 1`, c.tool); !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, want := range []string{`memoryd_http_requests_total{method="POST",route="/v1/tools/{name}",status="499"} 2`} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, line := range strings.Split(text, "\n") {
		for _, bad := range []string{`code="internal"`, `status="500"`, `status="503"`} {
			if strings.HasPrefix(line, "memoryd_") && strings.Contains(line, bad) {
				t.Errorf("metrics count a canceled request as %s: %s", bad, line)
			}
		}
	}
}
