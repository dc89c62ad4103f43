package inspector_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/memoryd/memoryd/internal/api"
	"github.com/memoryd/memoryd/internal/inspector"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
)

const testToken = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// uiServer is memoryd's handler (the API and the inspector at /ui, the
// Host check on) over a Service opened as the server opens it, with the
// audit on, behind an httptest server.
type uiServer struct {
	*httptest.Server
	svc *memory.Service
	ui  *inspector.Inspector
}

func newUIServer(t *testing.T) *uiServer {
	t.Helper()
	clock := memorytest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	svc := memorytest.Open(t, memory.OpenOptions{Now: clock.Now, AuditCalls: true})
	return serveUI(t, svc, false)
}

// serveUI serves svc as memoryd serve does (only: as the inspect verb).
func serveUI(t *testing.T, svc *memory.Service, only bool) *uiServer {
	t.Helper()
	cfg := api.Config{Service: svc, Logger: slog.New(slog.DiscardHandler), Token: testToken, CheckHost: true, InspectorOnly: only}
	ui := api.NewInspector(cfg)
	cfg.Inspector = ui
	srv := httptest.NewServer(api.NewServer(cfg))
	t.Cleanup(func() { srv.Close(); ui.Close() })
	return &uiServer{Server: srv, svc: svc, ui: ui}
}

// client returns a client that keeps cookies and does not follow
// redirects, so tests see each 303.
func (s *uiServer) client(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// loggedIn returns a client with a session.
func (s *uiServer) loggedIn(t *testing.T) *http.Client {
	t.Helper()
	c := s.client(t)
	resp := s.postLogin(t, c, testToken, s.URL)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %d", resp.StatusCode)
	}
	return c
}

// postLogin posts the login form with token and, if origin is not "",
// that Origin header.
func (s *uiServer) postLogin(t *testing.T, c *http.Client, token, origin string) *http.Response {
	t.Helper()
	req, err := http.NewRequest("POST", s.URL+"/ui/login", strings.NewReader(url.Values{"token": {token}}.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	return do(t, c, req)
}

func do(t *testing.T, c *http.Client, req *http.Request) *http.Response {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	return resp
}

// get GETs path and returns the response and its parsed page.
func (s *uiServer) get(t *testing.T, c *http.Client, path string) (*http.Response, *html.Node) {
	t.Helper()
	req, err := http.NewRequest("GET", s.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp := do(t, c, req)
	return resp, parse(t, resp)
}

// page GETs path with c, which must answer 200, and returns the page.
func (s *uiServer) page(t *testing.T, c *http.Client, path string) *html.Node {
	t.Helper()
	resp, doc := s.get(t, c, path)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d: %s", path, resp.StatusCode, text(byID(doc, "error-message")))
	}
	return doc
}

func parse(t *testing.T, resp *http.Response) *html.Node {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(strings.NewReader(string(b)))
	doc, err := html.Parse(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return doc
}

func attr(n *html.Node, key string) string {
	if n == nil {
		return ""
	}
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// find returns the elements under n for which match holds, in document
// order.
func find(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && match(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	if n != nil {
		walk(n)
	}
	return out
}

func byID(n *html.Node, id string) *html.Node {
	if els := find(n, func(e *html.Node) bool { return attr(e, "id") == id }); len(els) > 0 {
		return els[0]
	}
	return nil
}

func byClass(n *html.Node, class string) []*html.Node {
	return find(n, func(e *html.Node) bool {
		for _, c := range strings.Fields(attr(e, "class")) {
			if c == class {
				return true
			}
		}
		return false
	})
}

func byTag(n *html.Node, tag string) []*html.Node {
	return find(n, func(e *html.Node) bool { return e.Data == tag })
}

// text is the text under n, spaces collapsed.
func text(n *html.Node) string {
	if n == nil {
		return ""
	}
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.Join(strings.Fields(b.String()), " ")
}

func readAll(resp *http.Response) (string, error) {
	b, err := io.ReadAll(resp.Body)
	resp.Body = io.NopCloser(strings.NewReader(string(b)))
	return string(b), err
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// attach attaches a root session.
func attach(t *testing.T, svc *memory.Service, key string) memory.CallContext {
	t.Helper()
	res, err := svc.Attach(context.Background(), memory.AttachRequest{SessionKey: key}, "")
	if err != nil {
		t.Fatal(err)
	}
	return memory.CallContext{TaskID: res.TaskID, Agent: res.Agent}
}

// callPosition is the position of the event of type typ that the tool
// call callID appended, read from the log: a test takes a position from
// the events, never from the log's end, where an audit record may land
// a moment after the call returns.
func callPosition(t *testing.T, svc *memory.Service, typ, callID string) int64 {
	t.Helper()
	page, err := svc.Events(context.Background(), 0, "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range page {
		var data struct {
			CallID string `json:"call_id"`
		}
		if ev.Type == typ && json.Unmarshal(ev.Data, &data) == nil && data.CallID == callID {
			return ev.Position
		}
	}
	t.Fatalf("no %s event of call %s in the log", typ, callID)
	return 0
}
