package api

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
	"github.com/memoryd/memoryd/internal/tools"
	"github.com/memoryd/memoryd/internal/version"
)

const testToken = "test-token-0123456789"

// testServer is memoryd's HTTP interface over a real SQLite file behind an
// httptest server.
type testServer struct {
	*httptest.Server
	handler http.Handler
	svc     *memory.Service
	store   *eventlog.Store // svc's, for checks of what is stored
	dbPath  string
	logs    *memorytest.Buffer
}

// serverOptions are what the tests' servers differ in.
type serverOptions struct {
	dbPath string             // the database file ("": a new one in the test's folder)
	open   memory.OpenOptions // how memory.Open opens it
	token  string             // the bearer token ("": testToken)
	edit   func(*Config)      // changes the config before the server is built
}

// startServer opens a Service through memory.Open, as the server does, and
// serves it with NewServer behind an httptest server, CheckHost on, its
// logs in ts.logs. stop closes the server, then the Service (also done at
// cleanup); the database can then be opened again.
func startServer(tb testing.TB, o serverOptions) (ts *testServer, stop func()) {
	tb.Helper()
	if o.dbPath == "" {
		o.dbPath = memorytest.NewDatabase(tb) // SQLite, or PostgreSQL under MEMORYD_TEST_ENGINE=postgres
	}
	if o.token == "" {
		o.token = testToken
	}
	svc := memorytest.OpenAt(tb, o.dbPath, o.open)
	logs := &memorytest.Buffer{}
	cfg := Config{
		Service:   svc,
		Logger:    slog.New(slog.NewJSONHandler(logs, nil)),
		Token:     o.token,
		CheckHost: true,
	}
	if o.edit != nil {
		o.edit(&cfg)
	}
	h := NewServer(cfg)
	srv := httptest.NewServer(h)
	var once sync.Once
	stop = func() { once.Do(func() { srv.Close(); svc.Close() }) }
	tb.Cleanup(stop)
	return &testServer{Server: srv, handler: h, svc: svc, store: svc.Store(), dbPath: o.dbPath, logs: logs}, stop
}

// sqlitePath is a new SQLite database in the test's folder, for the tests
// of what only SQLite has, whatever MEMORYD_TEST_ENGINE says.
func sqlitePath(tb testing.TB) string { return filepath.Join(tb.TempDir(), "memory.db") }

// newTestServer is startServer on a new database with the test token;
// edit changes the config before the server is built.
func newTestServer(tb testing.TB, edit func(*Config)) *testServer {
	tb.Helper()
	ts, _ := startServer(tb, serverOptions{edit: edit})
	return ts
}

// request builds a request with the token and, when body is not empty, a
// JSON content type.
func (ts *testServer) request(tb testing.TB, method, path, body string) *http.Request {
	tb.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.URL+path, r)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testToken)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// send sends req and returns the status, headers and body.
func (ts *testServer) send(tb testing.TB, req *http.Request) (int, http.Header, []byte) {
	tb.Helper()
	resp, err := ts.Client().Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("%s %s: read body: %v", req.Method, req.URL.Path, err)
	}
	return resp.StatusCode, resp.Header, b
}

// do sends an authenticated request.
func (ts *testServer) do(tb testing.TB, method, path, body string) (int, []byte) {
	tb.Helper()
	st, _, b := ts.send(tb, ts.request(tb, method, path, body))
	return st, b
}

// mustJSON sends an authenticated request that must succeed with 200 and
// decodes its body into v.
func (ts *testServer) mustJSON(tb testing.TB, method, path, body string, v any) {
	tb.Helper()
	st, b := ts.do(tb, method, path, body)
	if st != http.StatusOK {
		tb.Fatalf("%s %s: status %d, body %s", method, path, st, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		tb.Fatalf("%s %s: decode %s: %v", method, path, b, err)
	}
}

type attachResponse struct {
	TaskID           string   `json:"task_id"`
	Agent            string   `json:"agent"`
	Resumed          bool     `json:"resumed"`
	WindowID         string   `json:"window_id"`
	RegisteredAgents []string `json:"registered_agents"`
}

// attach attaches a new root session and returns its context.
func (ts *testServer) attach(tb testing.TB, sessionKey string) memory.CallContext {
	tb.Helper()
	var res attachResponse
	ts.mustJSON(tb, "POST", "/v1/sessions/attach", fmt.Sprintf(`{"session_key":%q}`, sessionKey), &res)
	return memory.CallContext{TaskID: res.TaskID, Agent: res.Agent}
}

// toolBody is the body of a tool call.
func toolBody(tb testing.TB, cc memory.CallContext, args string) string {
	tb.Helper()
	ctx, err := json.Marshal(cc)
	if err != nil {
		tb.Fatal(err)
	}
	return fmt.Sprintf(`{"context":%s,"arguments":%s}`, ctx, args)
}

// tool calls a tool and returns the status and body.
func (ts *testServer) tool(tb testing.TB, name string, cc memory.CallContext, args string) (int, []byte) {
	tb.Helper()
	return ts.do(tb, "POST", "/v1/tools/"+name, toolBody(tb, cc, args))
}

// position returns the log position /healthz reports.
func (ts *testServer) position(tb testing.TB) int64 {
	tb.Helper()
	st, _, b := ts.send(tb, ts.request(tb, "GET", "/healthz", ""))
	if st != http.StatusOK {
		tb.Fatalf("healthz: status %d, body %s", st, b)
	}
	var h struct {
		Status   string `json:"status"`
		Position int64  `json:"position"`
	}
	if err := json.Unmarshal(b, &h); err != nil {
		tb.Fatalf("healthz: %s: %v", b, err)
	}
	return h.Position
}

// envelope is the error body of the contract, decoded strictly.
type envelope struct {
	Error struct {
		Code    string         `json:"code"`
		Message string         `json:"message"`
		Details map[string]any `json:"details"`
	} `json:"error"`
}

// checkError asserts an error response: status, code and the exact
// envelope shape {"error":{"code","message","details"}}.
func checkError(tb testing.TB, what string, status int, header http.Header, body []byte, wantStatus int, wantCode string) envelope {
	tb.Helper()
	if status != wantStatus {
		tb.Fatalf("%s: status %d, want %d; body %s", what, status, wantStatus, body)
	}
	if ct := header.Get("Content-Type"); ct != "application/json" {
		tb.Errorf("%s: Content-Type %q, want application/json", what, ct)
	}
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		tb.Fatalf("%s: body %s is not an error envelope: %v", what, body, err)
	}
	if len(raw) != 1 || raw["error"] == nil {
		tb.Fatalf("%s: body %s: want exactly the key \"error\"", what, body)
	}
	var keys []string
	for k := range raw["error"] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"code", "details", "message"}) {
		tb.Fatalf("%s: body %s: error has keys %v, want code, details, message", what, body, keys)
	}
	var env envelope
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		tb.Fatalf("%s: body %s: %v", what, body, err)
	}
	if env.Error.Code != wantCode {
		tb.Fatalf("%s: code %q, want %q; body %s", what, env.Error.Code, wantCode, body)
	}
	if strings.TrimSpace(env.Error.Message) == "" {
		tb.Errorf("%s: empty message", what)
	}
	if env.Error.Details == nil {
		tb.Errorf("%s: details is %s, want an object", what, raw["error"]["details"])
	}
	return env
}

// route is one route of the server with a body.
type route struct {
	method, path, body string
}

// walkRoutes lists every route of the server's route tree, with {name}
// filled in and a JSON body for POSTs.
func (ts *testServer) walkRoutes(tb testing.TB) []route {
	tb.Helper()
	h := ts.handler
	routes, ok := h.(chi.Routes)
	if !ok {
		tb.Fatalf("NewServer returns %T, not a chi route tree", h)
	}
	var out []route
	err := chi.Walk(routes, func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		switch method {
		case "CONNECT", "OPTIONS", "TRACE":
			return nil // r.Handle registers every method; these are not worth a request
		}
		path := strings.NewReplacer("{name}", "notes_read_file", "{host}", "codex", "{task_id}", "no-such-task").Replace(pattern)
		if strings.Contains(path, "{") {
			tb.Fatalf("route %s has a parameter the test does not fill in", pattern)
		}
		body := ""
		if method == "POST" || method == "PUT" || method == "PATCH" {
			body = `{}`
		}
		out = append(out, route{method, path, body})
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

func TestAuthRequired(t *testing.T) {
	ts := newTestServer(t, nil)
	routes := ts.walkRoutes(t)
	var walked []string
	for _, rt := range routes {
		walked = append(walked, rt.method+" "+rt.path)
	}
	// The contract's routes are all in the tree.
	for _, want := range []string{"GET /healthz", "GET /metrics", "POST /v1/sessions/attach", "GET /v1/tools",
		"POST /v1/tools/notes_read_file", "GET /v1/events"} {
		if !slices.Contains(walked, want) {
			t.Errorf("route %s missing from the route tree %v", want, walked)
		}
	}
	routes = append(routes, route{"POST", "/v1/tools/no_such_tool", `{}`}, route{"GET", "/v1/events?after=0&limit=10", ""})
	for _, rt := range routes {
		if rt.path == "/healthz" || rt.path == "/v1/proof" || rt.path == "/" {
			continue // without a token by design (TestProof; / redirects to the inspector's login)
		}
		for _, auth := range []struct {
			name, header string
		}{
			{"missing", ""},
			{"wrong", "Bearer not-the-token"},
			{"prefix", "Bearer " + testToken + "x"},
			{"truncated", "Bearer " + testToken[:len(testToken)-1]},
			{"scheme", "Basic " + testToken},
			{"bare", testToken},
			{"case", "bearer " + testToken},
		} {
			t.Run(rt.method+" "+rt.path+"/"+auth.name, func(t *testing.T) {
				req := ts.request(t, rt.method, rt.path, rt.body)
				req.Header.Del("Authorization")
				if auth.header != "" {
					req.Header.Set("Authorization", auth.header)
				}
				st, h, b := ts.send(t, req)
				if rt.method == "HEAD" {
					if st != http.StatusUnauthorized {
						t.Errorf("status %d, want 401", st)
					}
				} else {
					checkError(t, rt.path, st, h, b, http.StatusUnauthorized, "unauthenticated")
				}
				if got := h.Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Errorf("WWW-Authenticate %q, want a Bearer challenge", got)
				}
			})
		}
	}
	if p := ts.position(t); p != 0 {
		t.Errorf("unauthenticated requests wrote %d events", p)
	}
	// The same routes with the token are not refused.
	for _, rt := range routes {
		st, _, b := ts.send(t, ts.request(t, rt.method, rt.path, rt.body))
		if st == http.StatusUnauthorized {
			t.Errorf("%s %s with the token: 401 %s", rt.method, rt.path, b)
		}
	}
}

func TestEmptyTokenRefusesEverything(t *testing.T) {
	ts := newTestServer(t, func(c *Config) { c.Token = "" })
	req := ts.request(t, "GET", "/v1/tools", "")
	req.Header.Set("Authorization", "Bearer ")
	st, h, b := ts.send(t, req)
	checkError(t, "empty token", st, h, b, http.StatusUnauthorized, "unauthenticated")
}

func TestHealthzNeedsNoToken(t *testing.T) {
	ts := newTestServer(t, nil)
	req := ts.request(t, "GET", "/healthz", "")
	req.Header.Del("Authorization")
	st, h, b := ts.send(t, req)
	if st != http.StatusOK {
		t.Fatalf("healthz: %d %s", st, b)
	}
	if ct := h.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var got map[string]any
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	v := version.Get()
	if len(got) != 6 || got["status"] != "ok" || got["service"] != "memoryd" || got["position"] != float64(0) ||
		got["version"] != v.Version || got["commit"] != v.Commit || got["pid"] != float64(os.Getpid()) {
		t.Errorf("healthz = %s, want {\"status\":\"ok\",\"service\":\"memoryd\",\"position\":0,\"version\":%q,\"commit\":%q,\"pid\":%d}",
			b, v.Version, v.Commit, os.Getpid())
	}
	ts.attach(t, "s1")
	if p := ts.position(t); p != 2 {
		t.Errorf("position after one attach = %d, want 2", p)
	}
}

func TestForeignRequestsRefused(t *testing.T) {
	ts := newTestServer(t, nil)
	port := ts.Listener.Addr().(interface{ String() string }).String()
	port = port[strings.LastIndexByte(port, ':')+1:]
	paths := []route{{"GET", "/healthz", ""}, {"GET", "/v1/tools", ""}, {"POST", "/v1/sessions/attach", `{"session_key":"k"}`}}

	t.Run("origin", func(t *testing.T) {
		for _, rt := range paths {
			for _, origin := range []string{"http://evil.example", "null", "http://127.0.0.1:" + port} {
				req := ts.request(t, rt.method, rt.path, rt.body)
				req.Header.Set("Origin", origin)
				st, h, b := ts.send(t, req)
				checkError(t, rt.path+" Origin "+origin, st, h, b, http.StatusForbidden, "forbidden")
			}
		}
	})
	t.Run("host", func(t *testing.T) {
		for _, host := range []string{"evil.example", "evil.example:" + port, "127.0.0.1.evil.example",
			"localhost.evil.example:" + port, "10.0.0.1:" + port, "[2001:db8::1]:" + port, "0x7f000001"} {
			for _, rt := range paths {
				req := ts.request(t, rt.method, rt.path, rt.body)
				req.Host = host
				st, h, b := ts.send(t, req)
				checkError(t, rt.path+" Host "+host, st, h, b, http.StatusForbidden, "forbidden")
			}
		}
	})
	t.Run("loopback hosts", func(t *testing.T) {
		for _, host := range []string{"127.0.0.1:" + port, "127.0.0.1", "localhost", "localhost:" + port,
			"LocalHost:" + port, "[::1]:" + port, "[::1]", "127.1.2.3:" + port} {
			req := ts.request(t, "GET", "/v1/tools", "")
			req.Host = host
			if st, _, b := ts.send(t, req); st != http.StatusOK {
				t.Errorf("Host %s: status %d, body %s", host, st, b)
			}
		}
	})
	if p := ts.position(t); p != 0 {
		t.Errorf("refused requests wrote %d events", p)
	}
	t.Run("host check off", func(t *testing.T) {
		ts := newTestServer(t, func(c *Config) { c.CheckHost = false })
		req := ts.request(t, "GET", "/v1/tools", "")
		req.Host = "memoryd.internal.example:7411"
		if st, _, b := ts.send(t, req); st != http.StatusOK {
			t.Errorf("non-loopback Host with the check off: %d %s", st, b)
		}
		req = ts.request(t, "GET", "/v1/tools", "")
		req.Header.Set("Origin", "http://evil.example")
		st, h, b := ts.send(t, req)
		checkError(t, "Origin with the host check off", st, h, b, http.StatusForbidden, "forbidden")
	})
}

// chunked hides a reader's length so the client sends it chunked.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

func TestBodyLimit(t *testing.T) {
	const limit = 1024
	ts := newTestServer(t, func(c *Config) { c.MaxBody = limit })
	// pad builds an attach body of exactly n bytes.
	pad := func(key string, n int) string {
		b := fmt.Sprintf(`{"session_key":%q}`, key)
		return b[:len(b)-1] + strings.Repeat(" ", n-len(b)) + "}"
	}
	for _, tc := range []struct {
		name    string
		body    string
		chunked bool
		status  int
	}{
		{"at limit", pad("at-limit", limit), false, http.StatusOK},
		{"at limit chunked", pad("at-limit-chunked", limit), true, http.StatusOK},
		{"over limit", pad("over", limit+1), false, http.StatusRequestEntityTooLarge},
		{"over limit chunked", pad("over-chunked", limit+1), true, http.StatusRequestEntityTooLarge},
		{"far over limit", pad("far", 4*limit), false, http.StatusRequestEntityTooLarge},
		{"far over limit chunked", pad("far-chunked", 4*limit), true, http.StatusRequestEntityTooLarge},
		{"trailing space over limit chunked", `{"session_key":"trail"}` + strings.Repeat(" ", limit), true, http.StatusRequestEntityTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.body) < limit-1 || (tc.status == http.StatusOK) != (len(tc.body) <= limit) {
				t.Fatalf("bad test body of %d bytes", len(tc.body))
			}
			before := ts.position(t)
			req := ts.request(t, "POST", "/v1/sessions/attach", tc.body)
			if tc.chunked {
				req.Body = io.NopCloser(chunked{strings.NewReader(tc.body)})
				req.ContentLength = -1
			}
			st, h, b := ts.send(t, req)
			if tc.status == http.StatusOK {
				if st != http.StatusOK {
					t.Fatalf("status %d, body %s", st, b)
				}
				return
			}
			env := checkError(t, tc.name, st, h, b, tc.status, "too_large")
			if !strings.Contains(env.Error.Message, "1024") {
				t.Errorf("message %q does not name the limit", env.Error.Message)
			}
			if p := ts.position(t); p != before {
				t.Errorf("a refused body wrote %d events", p-before)
			}
		})
	}
}

func TestContentType(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, ct := range []string{"", "text/plain", "application/x-www-form-urlencoded", "application/jsonx",
		"multipart/form-data; boundary=x", "application/json; charset", "text/json"} {
		req := ts.request(t, "POST", "/v1/sessions/attach", `{"session_key":"ct"}`)
		if ct == "" {
			req.Header.Del("Content-Type")
		} else {
			req.Header.Set("Content-Type", ct)
		}
		st, h, b := ts.send(t, req)
		checkError(t, "Content-Type "+ct, st, h, b, http.StatusUnsupportedMediaType, "invalid_argument")
	}
	for i, ct := range []string{"application/json; charset=utf-8", "Application/JSON"} {
		req := ts.request(t, "POST", "/v1/sessions/attach", fmt.Sprintf(`{"session_key":"ct%d"}`, i))
		req.Header.Set("Content-Type", ct)
		if st, _, b := ts.send(t, req); st != http.StatusOK {
			t.Errorf("Content-Type %s: %d %s", ct, st, b)
		}
	}
	cc := ts.attach(t, "tool-ct")
	req := ts.request(t, "POST", "/v1/tools/notes_read_file", toolBody(t, cc, `{"path":"a.md"}`))
	req.Header.Set("Content-Type", "text/plain")
	st, h, b := ts.send(t, req)
	checkError(t, "tool call as text/plain", st, h, b, http.StatusUnsupportedMediaType, "invalid_argument")
}

func TestBadJSON(t *testing.T) {
	ts := newTestServer(t, nil)
	cc := ts.attach(t, "bad-json")
	ctx, _ := json.Marshal(cc)
	before := ts.position(t)
	for _, tc := range []struct {
		name, path, body, field string
	}{
		{"empty body", "/v1/sessions/attach", " ", ""},
		{"malformed", "/v1/sessions/attach", `{"session_key":`, ""},
		{"not json", "/v1/sessions/attach", `session_key=x`, ""},
		{"trailing object", "/v1/sessions/attach", `{"session_key":"a"}{"session_key":"b"}`, ""},
		{"trailing garbage", "/v1/sessions/attach", `{"session_key":"a"} x`, ""},
		{"array", "/v1/sessions/attach", `[{"session_key":"a"}]`, ""},
		{"wrong type", "/v1/sessions/attach", `{"session_key":7}`, "session_key"},
		{"unknown field", "/v1/sessions/attach", `{"session_key":"a","sessionKey":"b"}`, "sessionKey"},
		{"unknown budget field", "/v1/sessions/attach", `{"session_key":"a","budget":{"context_windows":1}}`, "context_windows"},
		{"unknown task field", "/v1/sessions/attach", `{"session_key":"a","task":{"task_id":"x","agent":"y"}}`, "agent"},
		{"tool malformed", "/v1/tools/notes_read_file", `{"context":` + string(ctx) + `,"arguments":{"path":}}`, ""},
		{"tool trailing", "/v1/tools/notes_read_file", `{"context":` + string(ctx) + `,"arguments":{"path":"a.md"}} []`, ""},
		{"tool unknown top-level field", "/v1/tools/notes_read_file", `{"context":` + string(ctx) + `,"arguments":{"path":"a.md"},"argumentz":{}}`, "argumentz"},
		{"tool unknown context field", "/v1/tools/notes_read_file", `{"context":{"task_id":"` + cc.TaskID + `","agent":"/root","tenant":"x"},"arguments":{"path":"a.md"}}`, "tenant"},
		{"tool unknown argument", "/v1/tools/notes_write_file", `{"context":` + string(ctx) + `,"arguments":{"path":"a.md","text":"x","mode":"w"}}`, "mode"},
		{"tool foreign argument", "/v1/tools/notes_read_file", `{"context":` + string(ctx) + `,"arguments":{"path":"a.md","query":"x"}}`, "query"},
		{"tool argument wrong type", "/v1/tools/notes_read_file", `{"context":` + string(ctx) + `,"arguments":{"path":7}}`, "path"},
		{"tool missing argument", "/v1/tools/notes_write_file", `{"context":` + string(ctx) + `,"arguments":{"path":"a.md"}}`, "text"},
		{"tool arguments not an object", "/v1/tools/notes_read_file", `{"context":` + string(ctx) + `,"arguments":[]}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, h, b := ts.send(t, ts.request(t, "POST", tc.path, tc.body))
			env := checkError(t, tc.name, st, h, b, http.StatusBadRequest, "invalid_argument")
			if tc.field != "" && !strings.Contains(env.Error.Message, tc.field) {
				t.Errorf("message %q does not name the field %s", env.Error.Message, tc.field)
			}
		})
	}
	if p := ts.position(t); p != before {
		t.Errorf("bad requests wrote %d events", p-before)
	}
}

func TestUnknownTool(t *testing.T) {
	ts := newTestServer(t, nil)
	cc := ts.attach(t, "unknown-tool")
	for _, name := range []string{"notes_delete_file", "NOTES_READ_FILE", "history", "x"} {
		st, h, b := ts.send(t, ts.request(t, "POST", "/v1/tools/"+name, toolBody(t, cc, `{}`)))
		env := checkError(t, name, st, h, b, http.StatusNotFound, "not_found")
		if !strings.Contains(env.Error.Message, name) {
			t.Errorf("message %q does not name the tool", env.Error.Message)
		}
	}
	st, h, b := ts.send(t, ts.request(t, "GET", "/v1/nope", ""))
	checkError(t, "unknown route", st, h, b, http.StatusNotFound, "not_found")
	st, h, b = ts.send(t, ts.request(t, "DELETE", "/v1/tools", ""))
	checkError(t, "wrong method", st, h, b, http.StatusMethodNotAllowed, "invalid_argument")
}

func TestToolErrors(t *testing.T) {
	ts := newTestServer(t, nil)
	root := ts.attach(t, "tool-errors")
	other := ts.attach(t, "tool-errors-other")
	var res attachResponse
	ts.mustJSON(t, "POST", "/v1/sessions/attach",
		`{"session_key":"tool-errors-child","task":{"task_id":"`+root.TaskID+`","agent_name":"reviewer"}}`, &res)
	if res.Agent != "/root/reviewer" {
		t.Fatalf("child attach: %+v", res)
	}
	for _, args := range []string{`{"path":"a.md","text":"hello"}`, `{"path":"/root/reviewer/notes/r.md","text":"hi"}`} {
		if st, b := ts.tool(t, "notes_write_file", root, args); st != http.StatusOK {
			t.Fatalf("write: %d %s", st, b)
		}
	}
	withCall := root
	withCall.CallID = "c1"
	if st, b := ts.tool(t, "notes_write_file", withCall, `{"path":"a.md","text":"first"}`); st != http.StatusOK {
		t.Fatalf("write: %d %s", st, b)
	}
	for _, tc := range []struct {
		name   string
		cc     memory.CallContext
		tool   string
		args   string
		status int
		code   string
	}{
		{"unknown task", memory.CallContext{TaskID: "01JEXAMPLE0000000000000000", Agent: "/root"}, "notes_read_file", `{"path":"a.md"}`, 404, "not_found"},
		{"missing task", memory.CallContext{Agent: "/root"}, "notes_read_file", `{"path":"a.md"}`, 400, "invalid_argument"},
		{"missing agent", memory.CallContext{TaskID: root.TaskID}, "notes_read_file", `{"path":"a.md"}`, 400, "invalid_argument"},
		{"bad agent", memory.CallContext{TaskID: root.TaskID, Agent: "root"}, "notes_read_file", `{"path":"a.md"}`, 400, "invalid_argument"},
		{"unregistered agent", memory.CallContext{TaskID: root.TaskID, Agent: "/root/ghost"}, "notes_read_file", `{"path":"a.md"}`, 404, "not_found"},
		{"caller in another task", memory.CallContext{TaskID: other.TaskID, Agent: "/root/reviewer"}, "notes_read_file", `{"path":"a.md"}`, 403, "forbidden"},
		{"missing note", root, "notes_read_file", `{"path":"b.md"}`, 404, "not_found"},
		{"bad path", root, "notes_read_file", `{"path":"../a.md"}`, 400, "invalid_argument"},
		{"read another task's agent", other, "notes_read_file", `{"path":"/root/reviewer/notes/r.md"}`, 403, "forbidden"},
		{"write another task's agent", other, "notes_write_file", `{"path":"/root/reviewer/notes/r.md","text":"x"}`, 403, "forbidden"},
		{"read an agent of no task", root, "notes_read_file", `{"path":"/root/ghost/notes/r.md"}`, 404, "not_found"},
		{"idempotency conflict", withCall, "notes_write_file", `{"path":"a.md","text":"other"}`, 409, "conflict"},
		{"idempotency conflict other tool", withCall, "notes_append_to_file", `{"path":"a.md","text":"first"}`, 409, "conflict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := ts.position(t)
			st, h, b := ts.send(t, ts.request(t, "POST", "/v1/tools/"+tc.tool, toolBody(t, tc.cc, tc.args)))
			checkError(t, tc.name, st, h, b, tc.status, tc.code)
			if p := ts.position(t); p != before {
				t.Errorf("a failed call wrote %d events", p-before)
			}
		})
	}

	t.Run("too large", func(t *testing.T) {
		var res attachResponse
		ts.mustJSON(t, "POST", "/v1/sessions/attach", `{"session_key":"small","budget":{"notes_max_file_bytes":10}}`, &res)
		cc := memory.CallContext{TaskID: res.TaskID, Agent: res.Agent}
		st, h, b := ts.send(t, ts.request(t, "POST", "/v1/tools/notes_append_to_file", toolBody(t, cc, `{"path":"a.md","text":"0123456789abc"}`)))
		env := checkError(t, "too large", st, h, b, http.StatusRequestEntityTooLarge, "too_large")
		for _, k := range []string{"bytes", "limit", "remaining"} {
			if _, ok := env.Error.Details[k]; !ok {
				t.Errorf("details %v lack %s", env.Error.Details, k)
			}
		}
	})
}

// TestInternalErrorsDoNotLeak breaks the database under the server and
// checks that 500s carry the fixed message, nothing of the cause, and that
// the cause is logged with the request id.
func TestInternalErrorsDoNotLeak(t *testing.T) {
	ts, _ := startServer(t, serverOptions{dbPath: sqlitePath(t)}) // it breaks the SQLite file
	cc := ts.attach(t, "leak")
	if st, b := ts.tool(t, "notes_write_file", cc, `{"path":"a.md","text":"hello"}`); st != 200 {
		t.Fatalf("write: %d %s", st, b)
	}
	raw, err := sql.Open("sqlite", eventlog.FileURI(ts.dbPath, url.Values{"_pragma": {"busy_timeout(5000)"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`ALTER TABLE notes RENAME TO notes_broken_for_test`); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ tool, args string }{
		{"notes_read_file", `{"path":"a.md"}`},
		{"notes_list_files_by_prefix", `{}`},
		{"notes_write_file", `{"path":"a.md","text":"again"}`},
	} {
		req := ts.request(t, "POST", "/v1/tools/"+tc.tool, toolBody(t, cc, tc.args))
		st, h, b := ts.send(t, req)
		env := checkError(t, tc.tool, st, h, b, http.StatusInternalServerError, "internal")
		if env.Error.Message != "internal error" || len(env.Error.Details) != 0 {
			t.Errorf("%s: 500 body %s, want the fixed message and no details", tc.tool, b)
		}
		for _, leak := range []string{"notes", "SQL", "sqlite", "table", "no such"} {
			if strings.Contains(strings.ToLower(string(b)), strings.ToLower(leak)) {
				t.Errorf("%s: 500 body %s leaks %q", tc.tool, b, leak)
			}
		}
		id := h.Get("X-Request-Id")
		if logs := ts.logs.String(); id == "" || !strings.Contains(logs, `"request_id":"`+id+`","code":"internal","error":"`) || !strings.Contains(logs, "no such table") {
			t.Errorf("%s: cause not logged with the request id; logs:\n%s", tc.tool, logs)
		}
	}
}

// TestClosedStoreIsUnavailable: once the store is closed (shutting down),
// reads and writes are 503 unavailable, not 500.
func TestClosedStoreIsUnavailable(t *testing.T) {
	ts := newTestServer(t, nil)
	cc := ts.attach(t, "closed")
	ts.store.Close()
	for _, rt := range []route{
		{"POST", "/v1/sessions/attach", `{"session_key":"closed-2"}`},
		{"POST", "/v1/tools/notes_read_file", toolBody(t, cc, `{"path":"a.md"}`)},
		{"POST", "/v1/tools/notes_write_file", toolBody(t, cc, `{"path":"a.md","text":"x"}`)},
		{"GET", "/v1/events", ""},
		{"GET", "/healthz", ""},
	} {
		st, h, b := ts.send(t, ts.request(t, rt.method, rt.path, rt.body))
		t.Run(rt.path, func(t *testing.T) {
			checkError(t, rt.method+" "+rt.path, st, h, b, http.StatusServiceUnavailable, "unavailable")
		})
	}
}

func TestToolsList(t *testing.T) {
	ts := newTestServer(t, nil)
	st, b := ts.do(t, "GET", "/v1/tools", "")
	if st != 200 {
		t.Fatalf("status %d %s", st, b)
	}
	var res struct {
		Tools []struct {
			Name          string          `json:"name"`
			Description   string          `json:"description"`
			Parameters    json.RawMessage `json:"parameters"`
			ExecutionMode string          `json:"execution_mode"`
			Result        json.RawMessage `json:"result"`
		} `json:"tools"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&res); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	want := []string{"history_list_windows", "history_list_items", "history_read_item", "history_search_contents",
		"notes_list_files_by_prefix", "notes_read_file", "notes_search_contents", "notes_append_to_file",
		"notes_write_file", "get_context_remaining", "new_context"}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
		if strings.TrimSpace(tl.Description) == "" {
			t.Errorf("%s: empty description", tl.Name)
		}
		if tl.ExecutionMode != "parallel" && tl.ExecutionMode != "sequential" {
			t.Errorf("%s: execution_mode %q", tl.Name, tl.ExecutionMode)
		}
		var params map[string]any
		if err := json.Unmarshal(tl.Parameters, &params); err != nil || params["type"] != "object" {
			t.Errorf("%s: parameters %s are not an object schema", tl.Name, tl.Parameters)
		}
		if params["additionalProperties"] != false {
			t.Errorf("%s: parameters allow additional properties", tl.Name)
		}
		var result map[string]any
		if err := json.Unmarshal(tl.Result, &result); err != nil || result["type"] != "object" || result["additionalProperties"] != false {
			t.Errorf("%s: result %s is not a closed object schema", tl.Name, tl.Result)
		}
	}
	if len(res.Tools) != len(tools.Specs()) {
		t.Errorf("%d tools, want %d", len(res.Tools), len(tools.Specs()))
	}
	sorted := slices.Sorted(slices.Values(names))
	if !slices.Equal(sorted, slices.Sorted(slices.Values(want))) {
		t.Errorf("tools %v, want %v", names, want)
	}
	for _, tl := range res.Tools {
		switch tl.Name {
		case "notes_append_to_file", "notes_write_file", "new_context":
			if tl.ExecutionMode != "sequential" {
				t.Errorf("%s: execution_mode %s, want sequential", tl.Name, tl.ExecutionMode)
			}
		}
	}
}

func TestEventsPaging(t *testing.T) {
	ts := newTestServer(t, nil)
	a := ts.attach(t, "events-a")
	b := ts.attach(t, "events-b")
	for i := range 3 {
		cc := a
		cc.CallID = fmt.Sprintf("toolu_%d", i)
		if st, body := ts.tool(t, "notes_append_to_file", cc, `{"path":"log.md","text":"line\n"}`); st != 200 {
			t.Fatalf("append: %d %s", st, body)
		}
	}
	if st, body := ts.tool(t, "notes_write_file", b, `{"path":"b.md","text":"b"}`); st != 200 {
		t.Fatalf("write: %d %s", st, body)
	}
	const total = 2 + 2 + 3 + 1

	type page struct {
		Events    []events.Event `json:"events"`
		NextAfter int64          `json:"next_after"`
	}
	get := func(t *testing.T, query string) page {
		t.Helper()
		st, body := ts.do(t, "GET", "/v1/events"+query, "")
		if st != 200 {
			t.Fatalf("events%s: %d %s", query, st, body)
		}
		var p page
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		if p.Events == nil {
			t.Fatalf("events%s: events is null, want a list: %s", query, body)
		}
		return p
	}

	all := get(t, "")
	if len(all.Events) != total || all.NextAfter != total {
		t.Fatalf("all events: %d, next_after %d; want %d", len(all.Events), all.NextAfter, total)
	}
	versions := map[string]int64{}
	for i, ev := range all.Events {
		if ev.Position != int64(i+1) {
			t.Errorf("event %d at position %d", i, ev.Position)
		}
		versions[ev.Stream]++
		if ev.StreamVersion != versions[ev.Stream] {
			t.Errorf("event %d: stream %s version %d, want %d", ev.Position, ev.Stream, ev.StreamVersion, versions[ev.Stream])
		}
		if len(ev.ID) != 26 || ev.Schema != 1 || ev.Type == "" || len(ev.RecordedAt) != len("2006-01-02T15:04:05.000Z") || !strings.HasSuffix(ev.RecordedAt, "Z") {
			t.Errorf("event %d envelope %+v", ev.Position, ev)
		}
		if len(ev.Data) == 0 || ev.Data[0] != '{' {
			t.Errorf("event %d data %s is not an object", ev.Position, ev.Data)
		}
	}
	if got := all.Events[4]; got.Type != events.TypeNoteAppended || got.RequestID != "toolu_0" || got.Stream != a.TaskID+"/root" {
		t.Errorf("event 5 = %+v, want note.appended on %s/root with request_id toolu_0", got, a.TaskID)
	}

	// Follow next_after with a small limit.
	var seen []int64
	after := int64(0)
	for range total + 2 {
		p := get(t, fmt.Sprintf("?after=%d&limit=3", after))
		if len(p.Events) > 3 {
			t.Fatalf("page of %d events over limit 3", len(p.Events))
		}
		for _, ev := range p.Events {
			seen = append(seen, ev.Position)
		}
		if len(p.Events) == 0 {
			if p.NextAfter != after {
				t.Errorf("empty page next_after %d, want %d", p.NextAfter, after)
			}
			break
		}
		if p.NextAfter != p.Events[len(p.Events)-1].Position {
			t.Errorf("next_after %d, last position %d", p.NextAfter, p.Events[len(p.Events)-1].Position)
		}
		after = p.NextAfter
	}
	if len(seen) != total || seen[0] != 1 || seen[total-1] != total {
		t.Errorf("paging saw %v", seen)
	}

	// task_id filter.
	pb := get(t, "?task_id="+b.TaskID)
	if len(pb.Events) != 3 {
		t.Errorf("task b: %d events, want 3", len(pb.Events))
	}
	for _, ev := range pb.Events {
		if ev.TaskID() != b.TaskID {
			t.Errorf("task filter returned %s", ev.Stream)
		}
	}
	pa := get(t, "?task_id="+a.TaskID+"&after=2&limit=2")
	if len(pa.Events) != 2 || pa.Events[0].Position != 5 || pa.NextAfter != 6 {
		t.Errorf("task a after 2 limit 2: %+v next %d", pa.Events, pa.NextAfter)
	}
	if p := get(t, "?task_id=01JEXAMPLE0000000000000000"); len(p.Events) != 0 || p.NextAfter != 0 {
		t.Errorf("unknown task: %+v", p)
	}
	if p := get(t, "?limit=100000"); len(p.Events) != total {
		t.Errorf("limit over the max: %d events", len(p.Events))
	}
	if p := get(t, fmt.Sprintf("?after=%d", total+10)); len(p.Events) != 0 || p.NextAfter != total+10 {
		t.Errorf("after the end: %+v", p)
	}
	for _, q := range []string{"?after=-1", "?after=x", "?limit=0", "?limit=-5", "?limit=ten", "?after=1.5"} {
		st, h, body := ts.send(t, ts.request(t, "GET", "/v1/events"+q, ""))
		checkError(t, "events"+q, st, h, body, http.StatusBadRequest, "invalid_argument")
	}
}

func TestMetrics(t *testing.T) {
	ts, _ := startServer(t, serverOptions{dbPath: sqlitePath(t)}) // the note cache's counters are SQLite's
	cc := ts.attach(t, "metrics")
	ts.tool(t, "notes_write_file", cc, `{"path":"a.md","text":"x"}`)
	ts.tool(t, "notes_read_file", cc, `{"path":"missing.md"}`)
	st, h, b := ts.send(t, ts.request(t, "GET", "/metrics", ""))
	if st != 200 {
		t.Fatalf("metrics: %d %s", st, b)
	}
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want Prometheus text", ct)
	}
	text := string(b)
	for _, want := range []string{
		"# TYPE memoryd_http_requests_total counter",
		`memoryd_http_requests_total{method="POST",route="/v1/sessions/attach",status="200"} 1`,
		`memoryd_http_requests_total{method="POST",route="/v1/tools/{name}",status="404"} 1`,
		"# TYPE memoryd_http_request_duration_seconds histogram",
		`memoryd_tool_calls_total{code="ok",tool="notes_write_file"} 1`,
		`memoryd_tool_calls_total{code="not_found",tool="notes_read_file"} 1`,
		"memoryd_log_position 3",
		"memoryd_note_cache_hits_total 0",
		"memoryd_note_cache_misses_total 1", // the one note read, with nothing cached yet
		"go_goroutines",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}

// attachStep is one attach of the flow of API §3.
type attachStep struct {
	name      string
	body      func(st *flowState) string
	status    int
	code      string
	newEvents int64
	check     func(t *testing.T, st *flowState, res attachResponse)
}

type flowState struct {
	taskID string
}

func autoName(sessionKey string) string {
	sum := sha256.Sum256([]byte(sessionKey))
	return "agent_" + hex.EncodeToString(sum[:])[:12]
}

func TestAttachFlow(t *testing.T) {
	ts := newTestServer(t, nil)
	child := func(key, parent, name string) func(*flowState) string {
		return func(st *flowState) string {
			task := map[string]any{"task_id": st.taskID, "parent_agent": parent}
			if name != "" {
				task["agent_name"] = name
			}
			b, _ := json.Marshal(map[string]any{"session_key": key, "session_id": "sid-" + key, "task": task})
			return string(b)
		}
	}
	fixed := func(body string) func(*flowState) string { return func(*flowState) string { return body } }
	expect := func(agent string, resumed bool, registered ...string) func(*testing.T, *flowState, attachResponse) {
		return func(t *testing.T, st *flowState, res attachResponse) {
			t.Helper()
			if res.TaskID != st.taskID || res.Agent != agent || res.Resumed != resumed || res.WindowID != "w1" {
				t.Errorf("got %+v, want task %s agent %s resumed %v window w1", res, st.taskID, agent, resumed)
			}
			if !slices.Equal(res.RegisteredAgents, registered) {
				t.Errorf("registered_agents %v, want %v", res.RegisteredAgents, registered)
			}
		}
	}
	auto := "/root/" + autoName("/sessions/auto.jsonl")
	steps := []attachStep{
		{
			name:      "new task",
			body:      fixed(`{"session_key":"/sessions/root.jsonl","session_id":"r1","session_file":"/sessions/root.jsonl","task":null,"budget":{"context_window":200000}}`),
			status:    200,
			newEvents: 2,
			check: func(t *testing.T, st *flowState, res attachResponse) {
				if len(res.TaskID) != 26 {
					t.Fatalf("task_id %q is not a ULID", res.TaskID)
				}
				st.taskID = res.TaskID
				expect("/root", false, "/root")(t, st, res)
			},
		},
		{
			name:   "resume by session_key",
			body:   fixed(`{"session_key":"/sessions/root.jsonl","session_id":"r1","session_file":"/sessions/root.jsonl","budget":{"context_window":200000}}`),
			status: 200,
			check:  expect("/root", true, "/root"),
		},
		{
			name:      "resume with a new session id records a reattach",
			body:      fixed(`{"session_key":"/sessions/root.jsonl","session_id":"r2","session_file":"/sessions/root.jsonl","budget":{"context_window":200000}}`),
			status:    200,
			newEvents: 1,
			check:     expect("/root", true, "/root"),
		},
		{
			name:   "a fork is a new task",
			body:   fixed(`{"session_key":"/sessions/fork.jsonl"}`),
			status: 200, newEvents: 2,
			check: func(t *testing.T, st *flowState, res attachResponse) {
				if res.TaskID == st.taskID || res.Agent != "/root" || res.Resumed {
					t.Errorf("fork: %+v", res)
				}
			},
		},
		{
			name:      "child with agent_name",
			body:      child("/sessions/reviewer.jsonl", "/root", "reviewer"),
			status:    200,
			newEvents: 1,
			check:     expect("/root/reviewer", false, "/root", "/root/reviewer"),
		},
		{
			name:      "child without agent_name",
			body:      child("/sessions/auto.jsonl", "/root", ""),
			status:    200,
			newEvents: 1,
			check:     expect(auto, false, "/root", "/root/reviewer", auto),
		},
		{
			name:      "grandchild",
			body:      child("/sessions/checker.jsonl", "/root/reviewer", "checker"),
			status:    200,
			newEvents: 1,
			check:     expect("/root/reviewer/checker", false, "/root", "/root/reviewer", auto, "/root/reviewer/checker"),
		},
		{
			name:   "re-attach a child",
			body:   child("/sessions/reviewer.jsonl", "/root", "reviewer"),
			status: 200,
			check:  expect("/root/reviewer", true, "/root", "/root/reviewer", auto, "/root/reviewer/checker"),
		},
		{
			name:   "re-attach an auto-named child",
			body:   child("/sessions/auto.jsonl", "/root", ""),
			status: 200,
			check:  expect(auto, true, "/root", "/root/reviewer", auto, "/root/reviewer/checker"),
		},
		{
			name:   "re-attach a child without task",
			body:   fixed(`{"session_key":"/sessions/reviewer.jsonl","session_id":"sid-/sessions/reviewer.jsonl"}`),
			status: 200,
			check:  expect("/root/reviewer", true, "/root", "/root/reviewer", auto, "/root/reviewer/checker"),
		},
		{
			name:   "agent name taken by another session",
			body:   child("/sessions/reviewer-2.jsonl", "/root", "reviewer"),
			status: 409, code: "conflict",
		},
		{
			name:   "unknown task",
			body:   fixed(`{"session_key":"/sessions/lost.jsonl","task":{"task_id":"01JEXAMPLE0000000000000000","parent_agent":"/root","agent_name":"x"}}`),
			status: 404, code: "not_found",
		},
		{name: "unknown parent", body: child("/sessions/orphan.jsonl", "/root/nobody", "x"), status: 404, code: "not_found"},
		{name: "bad agent_name", body: child("/sessions/bad.jsonl", "/root", "Bad-Name"), status: 400, code: "invalid_argument"},
		{name: "child named root", body: child("/sessions/bad.jsonl", "/root", "root"), status: 400, code: "invalid_argument"},
		{name: "bad parent", body: child("/sessions/bad.jsonl", "root", "x"), status: 400, code: "invalid_argument"},
		{name: "missing session_key", body: fixed(`{"session_id":"x"}`), status: 400, code: "invalid_argument"},
		{name: "blank session_key", body: fixed(`{"session_key":"  "}`), status: 400, code: "invalid_argument"},
	}
	for _, b := range []string{
		`{"context_window":0}`,
		`{"context_window":-1}`,
		`{"context_window":"big"}`,
		`{"context_window":1.5}`,
		`{"reminder_remaining_percent":0}`,
		`{"reminder_remaining_percent":1}`,
		`{"reminder_remaining_percent":1.5}`,
		`{"reminder_remaining_floor_tokens":0}`,
		`{"reminder_remaining_ceiling_tokens":-3}`,
		`{"hard_rollover_used_tokens":-1}`,
		`{"max_tool_output_chars":0}`,
		`{"notes_max_file_bytes":0}`,
		`{"history_item_preview_chars":0}`,
		`{"unknown_budget":1}`,
		`[]`,
	} {
		steps = append(steps, attachStep{
			name: "budget " + b, status: 400, code: "invalid_argument",
			body: fixed(`{"session_key":"/sessions/budget.jsonl","budget":` + b + `}`),
		})
	}
	steps = append(steps, attachStep{
		name:      "budget at its bounds",
		body:      fixed(`{"session_key":"/sessions/budget.jsonl","budget":{"context_window":1,"reminder_remaining_percent":0.5,"hard_rollover_used_tokens":0,"max_tool_output_chars":1,"notes_max_file_bytes":1,"history_item_preview_chars":1}}`),
		status:    200,
		newEvents: 2,
	})

	st := &flowState{}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			before := ts.position(t)
			status, h, b := ts.send(t, ts.request(t, "POST", "/v1/sessions/attach", step.body(st)))
			if step.status != 200 {
				checkError(t, step.name, status, h, b, step.status, step.code)
			} else {
				if status != 200 {
					t.Fatalf("status %d, body %s", status, b)
				}
				var res attachResponse
				dec := json.NewDecoder(bytes.NewReader(b))
				dec.DisallowUnknownFields()
				if err := dec.Decode(&res); err != nil {
					t.Fatalf("decode %s: %v", b, err)
				}
				if step.check != nil {
					step.check(t, st, res)
				}
			}
			if got := ts.position(t) - before; got != step.newEvents {
				t.Errorf("%d new events, want %d", got, step.newEvents)
			}
		})
	}
}

// TestNotesOverHTTP writes and reads a note over HTTP and checks the
// success envelope.
func TestNotesOverHTTP(t *testing.T) {
	ts := newTestServer(t, nil)
	cc := ts.attach(t, "notes-http")
	cc.CallID = "toolu_7"
	var w struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Details   map[string]any `json:"details"`
		Terminate bool           `json:"terminate"`
	}
	ts.mustJSON(t, "POST", "/v1/tools/notes_write_file", toolBody(t, cc, `{"path":"checkpoint.md","text":"goal: <ship> & \"test\"\nnext"}`), &w)
	if w.Terminate || len(w.Content) != 1 || w.Content[0].Type != "text" {
		t.Errorf("write result %+v", w)
	}
	if w.Details["path"] != "/root/notes/checkpoint.md" || w.Details["created"] != true || w.Details["revision"] != float64(1) {
		t.Errorf("write details %v", w.Details)
	}
	// The retry returns the first result and writes nothing.
	before := ts.position(t)
	var again struct {
		Details map[string]any `json:"details"`
	}
	ts.mustJSON(t, "POST", "/v1/tools/notes_write_file", toolBody(t, cc, `{"path":"checkpoint.md","text":"goal: <ship> & \"test\"\nnext"}`), &again)
	if ts.position(t) != before || fmt.Sprint(again.Details) != fmt.Sprint(w.Details) {
		t.Errorf("retry: details %v, events %d", again.Details, ts.position(t)-before)
	}
	cc.CallID = ""
	var r struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
		Details struct {
			Path       string `json:"path"`
			Text       string `json:"text"`
			TotalLines int    `json:"total_lines"`
		} `json:"details"`
	}
	st, b := ts.tool(t, "notes_read_file", cc, `{"path":"/root/notes/checkpoint.md"}`)
	if st != 200 {
		t.Fatalf("read: %d %s", st, b)
	}
	if !bytes.Contains(b, []byte(`<ship> &`)) {
		t.Errorf("read body escapes HTML: %s", b)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	if r.Details.Text != "goal: <ship> & \"test\"\nnext" || r.Details.TotalLines != 2 || r.Details.Path != "/root/notes/checkpoint.md" {
		t.Errorf("read details %+v", r.Details)
	}
}
