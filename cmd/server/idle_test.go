package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/api"
	"github.com/memoryd/memoryd/internal/inspector"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
)

// TestServeIdleExit: with --idle-exit, serve stops by itself (exit 0, the
// database closed as on SIGTERM) once no request came for that long, and
// answers requests until then.
func TestServeIdleExit(t *testing.T) {
	db := filepath.Join(t.TempDir(), "memory.db")
	s := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--idle-exit", "300ms"}, env(map[string]string{"MEMORYD_TOKEN": "x"}))
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("serve after --idle-exit: %v; stderr:\n%s", err, s.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("serve did not stop within 60 s of being idle (--idle-exit 300ms); stderr:\n%s", s.stderr.String())
	}
	s.done <- nil // for the cleanup of startRun
	if logLine(t, s.stderr.String(), "idle: no request for the --idle-exit period, shutting down") == nil {
		t.Errorf("no idle log line; stderr:\n%s", s.stderr.String())
	}
	if _, err := http.Get(s.url + "/healthz"); err == nil {
		t.Errorf("%s still answers after the idle exit", s.url)
	}
}

// TestIdleWatch: idle time counts from the end of the last request, never
// while one is in flight (a pending rollover report keeps the service up).
func TestIdleWatch(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	w := newIdleWatch(clock)
	advance(time.Minute)
	if got := w.idleFor(); got != time.Minute {
		t.Fatalf("idle %s after a minute without requests, want 1m", got)
	}
	w.begin()
	advance(time.Hour)
	if got := w.idleFor(); got != 0 {
		t.Fatalf("idle %s while a request runs, want 0", got)
	}
	w.end()
	advance(time.Second)
	if got := w.idleFor(); got != time.Second {
		t.Fatalf("idle %s a second after the request ended, want 1s", got)
	}
	for _, c := range []struct{ limit, want time.Duration }{{time.Millisecond, 10 * time.Millisecond}, {time.Second, 100 * time.Millisecond}, {time.Hour, 10 * time.Second}} {
		if got := idleTick(c.limit); got != c.want {
			t.Errorf("idleTick(%s) = %s, want %s", c.limit, got, c.want)
		}
	}
}

// TestIdleExitCountsOnlyAuthenticated: only a request that passed
// authentication (the bearer token, or an inspector session) postpones
// --idle-exit. A stranger's 401 or 403, a web page's no-cors fetch of
// /healthz, /v1/proof, an unknown route and the inspector's login pages
// do not: anyone who can reach the port could otherwise keep the shared
// memoryd running forever. The clock is the test's: idle time is read,
// never waited for.
func TestIdleExitCountsOnlyAuthenticated(t *testing.T) {
	const token = "the-token"
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	idle := newIdleWatch(clock)
	svc := memorytest.OpenAt(t, memorytest.NewDatabase(t), memory.OpenOptions{})
	handler, ui := serveHandler(api.Config{Service: svc, Logger: slog.New(slog.DiscardHandler), Token: token, CheckHost: true}, idle)
	t.Cleanup(func() { ui.Close() })
	// served says that a request's handler returned: the client may read
	// the answer before then, and the end of an authenticated request
	// touches the idle clock.
	served := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handler.ServeHTTP(w, r)
		served <- struct{}{}
	}))
	t.Cleanup(srv.Close)
	client := srv.Client()
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	send := func(method, path, body string, header map[string]string) (int, *http.Response) {
		t.Helper()
		req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range header {
			req.Header.Set(k, v)
		}
		if h, ok := header["Host"]; ok {
			req.Host = h
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		<-served
		return resp.StatusCode, resp
	}
	bearer := map[string]string{"Authorization": "Bearer " + token}
	form := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}

	strangers := []struct {
		what         string
		method, path string
		body         string
		header       map[string]string
		status       int
	}{
		{"GET /healthz (a web page's no-cors fetch)", "GET", "/healthz", "", nil, http.StatusOK},
		{"no token", "GET", "/v1/tools", "", nil, http.StatusUnauthorized},
		{"a wrong token", "GET", "/v1/tools", "", map[string]string{"Authorization": "Bearer wrong"}, http.StatusUnauthorized},
		{"the token from a browser (Origin)", "GET", "/v1/tools", "", map[string]string{"Authorization": "Bearer " + token, "Origin": "https://example.com"}, http.StatusForbidden},
		{"a foreign Host", "GET", "/v1/tools", "", map[string]string{"Authorization": "Bearer " + token, "Host": "evil.example"}, http.StatusForbidden},
		{"GET /v1/proof", "GET", "/v1/proof?nonce=" + strings.Repeat("ab", 16), "", nil, http.StatusOK},
		{"an unknown route", "GET", "/v1/nothing", "", nil, http.StatusNotFound},
		{"the inspector without a session", "GET", "/ui", "", nil, http.StatusSeeOther},
		{"the inspector's login page", "GET", "/ui/login", "", nil, http.StatusOK},
		{"the inspector's login with a wrong token", "POST", "/ui/login", "token=wrong", form, http.StatusUnauthorized},
		{"a spent one-time login code", "GET", "/ui/login/once?code=nope", "", nil, http.StatusUnauthorized},
	}
	var idleSince time.Duration
	for _, c := range strangers {
		advance(time.Minute)
		idleSince += time.Minute
		if st, _ := send(c.method, c.path, c.body, c.header); st != c.status {
			t.Errorf("%s: status %d, want %d", c.what, st, c.status)
		}
		if got := idle.idleFor(); got != idleSince {
			t.Errorf("%s: idle %s after it, want %s (it postponed the idle exit)", c.what, got, idleSince)
		}
	}

	advance(time.Minute)
	if st, _ := send("GET", "/v1/tools", "", bearer); st != http.StatusOK {
		t.Fatalf("GET /v1/tools with the token: status %d", st)
	}
	if got := idle.idleFor(); got != 0 {
		t.Errorf("idle %s right after an authenticated request, want 0", got)
	}

	// A page of the inspector, in a session, is use too.
	advance(time.Minute)
	st, resp := send("GET", ui.LoginLink(), "", nil)
	if st != http.StatusSeeOther || len(resp.Cookies()) == 0 {
		t.Fatalf("one-time login: status %d, cookies %v", st, resp.Cookies())
	}
	advance(time.Minute)
	if got := idle.idleFor(); got != 2*time.Minute {
		t.Fatalf("idle %s two minutes after the last request with the token, want 2m (the login link is no page)", got)
	}
	cookie := map[string]string{"Cookie": inspector.CookieName + "=" + url.QueryEscape(resp.Cookies()[0].Value)}
	if st, _ := send("GET", "/ui", "", cookie); st != http.StatusOK {
		t.Fatalf("GET /ui in a session: status %d", st)
	}
	if got := idle.idleFor(); got != 0 {
		t.Errorf("idle %s right after an inspector page in a session, want 0", got)
	}
}

func TestServeIdleExitNegative(t *testing.T) {
	_, stderr, err := fxRun(t, nil, "serve", "--idle-exit", "-1s")
	if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error()+stderr, "--idle-exit must not be negative") {
		t.Fatalf("serve --idle-exit -1s: %v (exit %d) %s", err, exitCode(err), stderr)
	}
}
