package api

import (
	"net/http"
	"testing"
)

// TestRequestLogDurationInMilliseconds: a request's log line gives its
// duration as duration_ms, milliseconds as a number (to the microsecond),
// not as bare nanoseconds under "duration".
func TestRequestLogDurationInMilliseconds(t *testing.T) {
	ts := newTestServer(t, nil)
	if st, _, b := ts.send(t, ts.request(t, "GET", "/v1/tools", "")); st != http.StatusOK {
		t.Fatalf("GET /v1/tools: %d %s", st, b)
	}
	lines := ts.awaitLogLines(t, "request", 1)
	if len(lines) == 0 {
		t.Fatal("no request log line within 10s")
	}
	for _, l := range lines {
		ms, ok := l["duration_ms"].(float64)
		if !ok || ms < 0 {
			t.Errorf("request log line %v: duration_ms %v, want milliseconds", l, l["duration_ms"])
		}
		if _, ok := l["duration"]; ok {
			t.Errorf("request log line %v still has a duration without a unit", l)
		}
	}
}
