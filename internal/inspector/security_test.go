package inspector_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/memoryd/memoryd/internal/api"

	"github.com/memoryd/memoryd/internal/inspector"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
)

// uiRoutes lists the GET routes of the inspector's route tree with their
// parameters filled in.
func uiRoutes(t *testing.T, s *uiServer, task string) []string {
	t.Helper()
	var out []string
	err := chi.Walk(s.ui.Routes(), func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if method != "GET" {
			return nil
		}
		p := strings.ReplaceAll(strings.ReplaceAll(pattern, "{task}", task), "*", "root")
		if strings.ContainsAny(p, "{}") {
			t.Fatalf("route %s has a parameter the test does not fill in", pattern)
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// open are the /ui routes that need no session.
var open = []string{"/ui/style.css", "/ui/login", "/ui/login/once", "/ui/logout"}

func checkHeaders(t *testing.T, what string, h http.Header, referrer string) {
	t.Helper()
	for k, want := range map[string]string{
		"Content-Security-Policy": "default-src 'none'; style-src 'self'; img-src 'self' data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         referrer,
		"Cache-Control":           "no-store",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("%s: %s is %q, want %q", what, k, got, want)
		}
	}
}

// TestUIRequiresASession: without a session every page of the route tree
// sends the browser to the login page (303) and shows nothing; the login
// page is a form for the token.
func TestUIRequiresASession(t *testing.T) {
	s := newUIServer(t)
	cc := attach(t, s.svc, "/sessions/a.jsonl")
	routes := uiRoutes(t, s, cc.TaskID)
	for _, want := range []string{"/ui", "/ui/events", "/ui/tasks/" + cc.TaskID + "/agents/root", "/ui/tasks/" + cc.TaskID + "/notes", "/ui/tasks/" + cc.TaskID + "/history"} {
		if !slices.Contains(routes, want) {
			t.Errorf("route %s missing from %v", want, routes)
		}
	}
	c := s.client(t)
	for _, p := range routes {
		if slices.Contains(open, p) {
			continue
		}
		resp, _ := s.get(t, c, p)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
			t.Errorf("GET %s without a session: %d to %q, want 303 to /ui/login", p, resp.StatusCode, resp.Header.Get("Location"))
		}
		if body, _ := readAll(resp); strings.Contains(body, cc.TaskID) && !strings.Contains(p, cc.TaskID) {
			t.Errorf("GET %s without a session shows the task", p)
		}
		checkHeaders(t, "GET "+p, resp.Header, "no-referrer")
	}
	resp, doc := s.get(t, c, "/ui/login")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("login page: %d", resp.StatusCode)
	}
	form := byID(doc, "login-form")
	if attr(form, "method") != "post" || attr(form, "action") != "/ui/login" || attr(byID(doc, "token"), "type") != "password" {
		t.Errorf("login page has no token form: %v", text(doc))
	}
	checkHeaders(t, "login page", resp.Header, "same-origin")
}

// TestUILogin: the right token in the form sets a session cookie
// (HttpOnly, SameSite=Strict, Path=/ui, not Secure over plain HTTP, a
// random id that is not the token) and sends the browser to /ui; a wrong
// one answers 401 and sets none; logout ends the session.
func TestUILogin(t *testing.T) {
	s := newUIServer(t)
	attach(t, s.svc, "/sessions/a.jsonl")
	for _, wrong := range []string{"", "wrong", testToken[:63], testToken + "0", strings.ToUpper(testToken), " " + testToken} {
		c := s.client(t)
		resp := s.postLogin(t, c, wrong, "")
		doc := parse(t, resp)
		if resp.StatusCode != http.StatusUnauthorized || byID(doc, "login-failed") == nil {
			t.Errorf("login with %q: %d, want 401 and the form saying so", wrong, resp.StatusCode)
		}
		if len(resp.Cookies()) != 0 {
			t.Errorf("login with %q set cookies %v", wrong, resp.Cookies())
		}
		checkHeaders(t, "refused login", resp.Header, "same-origin")
	}

	c := s.client(t)
	resp := s.postLogin(t, c, testToken, s.URL)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui" {
		t.Fatalf("login: %d to %q, want 303 to /ui", resp.StatusCode, resp.Header.Get("Location"))
	}
	checkHeaders(t, "login", resp.Header, "no-referrer")
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("login set %d cookies", len(cookies))
	}
	ck := cookies[0]
	raw := resp.Header.Get("Set-Cookie")
	if ck.Name != inspector.CookieName || !ck.HttpOnly || ck.SameSite != http.SameSiteStrictMode || ck.Path != "/ui" || ck.Secure {
		t.Errorf("cookie %q: want HttpOnly, SameSite=Strict, Path=/ui, not Secure", raw)
	}
	if strings.Contains(ck.Value, testToken) || strings.Contains(raw, testToken[:16]) || !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(ck.Value) {
		t.Errorf("cookie value %q: want a random id, not the token", ck.Value)
	}
	doc := s.page(t, c, "/ui")
	if byID(doc, "tasks") == nil || len(byClass(doc, "task")) != 1 {
		t.Errorf("after login /ui shows no task: %s", text(doc))
	}

	// Logout clears the cookie and the session is gone, even if the
	// browser kept the cookie.
	stale := s.client(t)
	stale.Jar.SetCookies(mustURL(t, s.URL+"/ui"), cookies)
	resp, _ = s.get(t, c, "/ui/logout")
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 || resp.Cookies()[0].MaxAge >= 0 {
		t.Errorf("logout: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	for _, cl := range []*http.Client{c, stale} {
		if resp, _ := s.get(t, cl, "/ui"); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("after logout /ui: %d, want 303 to the login", resp.StatusCode)
		}
	}
}

// TestUILoginLinkIsSingleUse: the inspect verb's one-time link logs in
// once, holds no token, and is then refused.
func TestUILoginLinkIsSingleUse(t *testing.T) {
	s := newUIServer(t)
	link := s.ui.LoginLink()
	if strings.Contains(link, testToken) || !strings.HasPrefix(link, "/ui/login/once?code=") {
		t.Fatalf("link %q", link)
	}
	c := s.client(t)
	resp, _ := s.get(t, c, link)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui" || len(resp.Cookies()) != 1 {
		t.Fatalf("first use: %d to %q, cookies %v", resp.StatusCode, resp.Header.Get("Location"), resp.Cookies())
	}
	s.page(t, c, "/ui")
	again := s.client(t)
	resp, doc := s.get(t, again, link)
	if resp.StatusCode != http.StatusUnauthorized || len(resp.Cookies()) != 0 || byID(doc, "login-failed") == nil {
		t.Errorf("second use: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	if resp, _ := s.get(t, again, "/ui/login/once?code="); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("empty code: %d", resp.StatusCode)
	}
}

// TestUIOriginAndHost: any Origin is refused (403) except the request's
// own on the login POST; a Host that is not loopback is refused on every
// route, before the session is looked at; no cookie is set by a refused
// login.
func TestUIOriginAndHost(t *testing.T) {
	s := newUIServer(t)
	cc := attach(t, s.svc, "/sessions/a.jsonl")
	c := s.loggedIn(t)
	same := s.URL // http://127.0.0.1:PORT
	for _, origin := range []string{"http://evil.example", "null", "https://" + strings.TrimPrefix(same, "http://"), same + "/", "http://localhost" + same[strings.LastIndex(same, ":"):]} {
		resp := s.postLogin(t, s.client(t), testToken, origin)
		if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
			t.Errorf("login with Origin %q: %d, cookies %v; want 403, none", origin, resp.StatusCode, resp.Cookies())
		}
		checkHeaders(t, "refused origin", resp.Header, "no-referrer")
	}
	for _, p := range uiRoutes(t, s, cc.TaskID) {
		for _, origin := range []string{"http://evil.example", "null", same} {
			req, _ := http.NewRequest("GET", s.URL+p, nil)
			req.Header.Set("Origin", origin)
			if resp := do(t, c, req); resp.StatusCode != http.StatusForbidden {
				t.Errorf("GET %s with Origin %q: %d, want 403", p, origin, resp.StatusCode)
			}
		}
		for _, host := range []string{"evil.example", "127.0.0.1.evil.example", "0x7f000001"} {
			req, _ := http.NewRequest("GET", s.URL+p, nil)
			req.Host = host
			resp := do(t, c, req)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("GET %s with Host %q: %d, want 403", p, host, resp.StatusCode)
			}
			checkHeaders(t, "rebound host", resp.Header, "no-referrer")
		}
	}
	req, _ := http.NewRequest("POST", s.URL+"/ui/login", strings.NewReader("token="+testToken))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Host = "evil.example"
	if resp := do(t, s.client(t), req); resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("login with a rebound Host: %d", resp.StatusCode)
	}
	if resp := s.postLogin(t, s.client(t), testToken, same); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("login with its own Origin: %d, want 303", resp.StatusCode)
	}
}

// TestUIOnlyReads: with a session, no method but GET (and the login POST)
// is served; walking every page writes nothing to the log; the /v1 API
// beside the inspector still refuses an Origin header.
func TestUIOnlyReads(t *testing.T) {
	s := newUIServer(t)
	cc := attach(t, s.svc, "/sessions/a.jsonl")
	c := s.loggedIn(t)
	before := lastPosition(t, s.svc) // no tool call so far: nothing waits in the audit
	for _, p := range uiRoutes(t, s, cc.TaskID) {
		for _, m := range []string{"POST", "PUT", "DELETE", "PATCH"} {
			req, _ := http.NewRequest(m, s.URL+p, strings.NewReader("x=1"))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			if resp := do(t, c, req); resp.StatusCode != http.StatusMethodNotAllowed && !(m == "POST" && p == "/ui/login") {
				t.Errorf("%s %s: %d, want 405", m, p, resp.StatusCode)
			}
		}
		if strings.HasPrefix(p, "/ui/log") {
			continue // the login pages answer without a session, and logout would end this one
		}
		resp, _ := s.get(t, c, p)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %d, want 200 (the session must last the walk)", p, resp.StatusCode)
		}
		checkHeaders(t, "GET "+p, resp.Header, "no-referrer")
	}
	s.svc.StopAudit()
	if after := lastPosition(t, s.svc); after != before {
		t.Errorf("the inspector's pages grew the log from %d to %d", before, after)
	}
	req, _ := http.NewRequest("GET", s.URL+"/v1/tasks", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Origin", s.URL)
	if resp := do(t, c, req); resp.StatusCode != http.StatusForbidden {
		t.Errorf("/v1 with its own Origin beside the inspector: %d, want 403", resp.StatusCode)
	}
}

func lastPosition(t *testing.T, svc *memory.Service) int64 {
	t.Helper()
	p, err := svc.LastPosition(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestUILinkOnlyLoginSaysHowToGetALink: an inspector without a token (the
// inspect verb's) shows no token form, which could never work: its login
// page, and a spent link, say that the one-time link works once and how
// to get another.
func TestUILinkOnlyLoginSaysHowToGetALink(t *testing.T) {
	svc := memorytest.Open(t, memory.OpenOptions{})
	ui := api.NewInspector(api.Config{Service: svc, Logger: slog.New(slog.DiscardHandler), CheckHost: true, InspectorOnly: true})
	srv := httptest.NewServer(api.NewServer(api.Config{Service: svc, Logger: slog.New(slog.DiscardHandler), CheckHost: true, InspectorOnly: true, Inspector: ui}))
	t.Cleanup(func() { srv.Close(); ui.Close() })
	s := &uiServer{Server: srv, svc: svc, ui: ui}
	resp, doc := s.get(t, s.client(t), "/ui/login")
	if resp.StatusCode != http.StatusOK || byID(doc, "login-form") != nil || !strings.Contains(text(byID(doc, "link-only")), "works once") {
		t.Errorf("login page without a token: %d, form %v, %q", resp.StatusCode, byID(doc, "login-form") != nil, text(byID(doc, "main")))
	}
	link := ui.LoginLink()
	s.get(t, s.client(t), link)
	resp, doc = s.get(t, s.client(t), link)
	if got := text(byID(doc, "main")); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(got, "used already") || !strings.Contains(got, "run it again") {
		t.Errorf("a spent link: %d %q", resp.StatusCode, got)
	}
}
