package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/version"
)

// TestShutdownRoute: POST /v1/shutdown needs the token, answers 202 with
// the pid, then calls Config.Shutdown; a server given no Shutdown says
// how to stop it instead.
func TestShutdownRoute(t *testing.T) {
	stopped := make(chan struct{}, 1)
	ts := newTestServer(t, func(c *Config) { c.Shutdown = func() { stopped <- struct{}{} } })
	req := ts.request(t, "POST", "/v1/shutdown", "")
	req.Header.Del("Authorization")
	if st, _, _ := ts.send(t, req); st != http.StatusUnauthorized {
		t.Fatalf("without the token: %d, want 401", st)
	}
	select {
	case <-stopped:
		t.Fatal("stopped without the token")
	default:
	}
	st, _, b := ts.send(t, ts.request(t, "POST", "/v1/shutdown", ""))
	if st != http.StatusAccepted || !strings.Contains(string(b), `"stopping":true`) {
		t.Fatalf("with the token: %d %s", st, b)
	}
	<-stopped

	plain := newTestServer(t, nil)
	st, h, b := plain.send(t, plain.request(t, "POST", "/v1/shutdown", ""))
	checkError(t, "no Shutdown", st, h, b, http.StatusNotFound, "not_found")
	if !strings.Contains(string(b), "SIGTERM") {
		t.Errorf("no Shutdown: %s, want how to stop it", b)
	}
}

// TestRootRedirectsToTheInspector: a browser pointed at memoryd's address
// is sent to the inspector, without the token.
func TestRootRedirectsToTheInspector(t *testing.T) {
	ts := newTestServer(t, nil)
	req := ts.request(t, "GET", "/", "")
	req.Header.Del("Authorization")
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui" {
		t.Errorf("GET /: %d to %q, want 303 to /ui", resp.StatusCode, resp.Header.Get("Location"))
	}
}

// TestBuildInfoMetric: /metrics names the version and commit.
func TestBuildInfoMetric(t *testing.T) {
	ts := newTestServer(t, nil)
	st, _, b := ts.send(t, ts.request(t, "GET", "/metrics", ""))
	v := version.Get()
	if want := `memoryd_build_info{commit="` + v.Commit + `",goversion="` + v.GoVersion + `",version="` + v.Version + `"} 1`; st != 200 || !strings.Contains(string(b), want) {
		t.Errorf("/metrics: %d, want the line %s", st, want)
	}
}
