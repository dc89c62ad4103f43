package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// server is a running "memoryd serve".
type server struct {
	url    string
	client *http.Client // trusts the server's certificate when it serves HTTPS
	stderr *memorytest.Buffer
	cancel context.CancelFunc
	done   chan error
}

var listeningLine = regexp.MustCompile(`^listening on (http://127\.0\.0\.1:[0-9]+)$`)

// startServe runs serve on a free loopback port and waits for its
// "listening on" line and a healthy /healthz.
func startServe(t *testing.T, db string, getenv func(string) string) *server {
	t.Helper()
	return startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--db", db}, getenv)
}

// servedAPI starts serve on db and returns it with a client of its API
// that holds its token.
func servedAPI(t *testing.T, db string, getenv func(string) string) (*server, apiClient) {
	t.Helper()
	s := startServe(t, db, getenv)
	token, err := existingToken(getenv, db)
	if err != nil {
		t.Fatal(err)
	}
	return s, apiClient{addr: strings.TrimPrefix(s.url, "http://"), token: token, http: http.DefaultClient}
}

// startRun runs the program with args, which must serve on a loopback
// address, and waits for its "listening on" line and a healthy /healthz.
func startRun(t *testing.T, args []string, getenv func(string) string) *server {
	t.Helper()
	return startRunWith(t, args, getenv, listeningLine, http.DefaultClient)
}

// startRunWith is startRun for a "listening on" line matching line, whose
// first group is the server's URL (an unspecified host, 0.0.0.0 or [::],
// is reached on 127.0.0.1), and a client to reach it with.
func startRunWith(t *testing.T, args []string, getenv func(string) string, line *regexp.Regexp, client *http.Client) *server {
	t.Helper()
	return startRunFrom(t, context.Background(), args, getenv, line, client)
}

// startRunIn is startRun in a context of the test's, such as one with
// testHooks.
func startRunIn(t *testing.T, base context.Context, args []string, getenv func(string) string) *server {
	t.Helper()
	return startRunFrom(t, base, args, getenv, listeningLine, http.DefaultClient)
}

// startRunFrom is startRunWith in the context base.
func startRunFrom(t *testing.T, base context.Context, args []string, getenv func(string) string, line *regexp.Regexp, client *http.Client) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(base)
	pr, pw := io.Pipe()
	s := &server{client: client, stderr: &memorytest.Buffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := run(ctx, args, getenv, strings.NewReader(""), pw, s.stderr)
		pw.Close()
		s.done <- err
	}()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		first := true
		for sc.Scan() {
			if first {
				lines <- sc.Text()
				first = false
			}
		}
		close(lines)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-s.done:
		case <-time.After(60 * time.Second):
			t.Error("serve did not stop")
		}
	})
	select {
	case first, ok := <-lines:
		m := line.FindStringSubmatch(first)
		if !ok || m == nil {
			t.Fatalf("first stdout line %q, want it to match %s; stderr:\n%s", first, line, s.stderr.String())
		}
		s.url = strings.Replace(strings.Replace(m[1], "://0.0.0.0:", "://127.0.0.1:", 1), "://[::]:", "://127.0.0.1:", 1)
	case <-time.After(60 * time.Second):
		t.Fatalf("no listening line; stderr:\n%s", s.stderr.String())
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := s.client.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("healthz not ready: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return s
}

// stop cancels serve's context and returns run's result.
func (s *server) stop(t *testing.T) error {
	t.Helper()
	s.cancel()
	select {
	case err := <-s.done:
		s.done <- err // for the cleanup
		return err
	case <-time.After(60 * time.Second):
		t.Fatal("serve did not stop within 60 s")
		return nil
	}
}

// call sends a JSON request with the token and decodes a 200 response.
func (s *server) call(t *testing.T, token, method, path, body string, out any) int {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusOK && out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, b, err)
		}
	}
	return resp.StatusCode
}

func TestServeEndToEnd(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "memory.db")
	const token = "e2e-token"
	s := startServe(t, db, env(map[string]string{"MEMORYD_TOKEN": token}))

	if st := s.call(t, "", "GET", "/v1/tools", "", nil); st != http.StatusUnauthorized {
		t.Errorf("no token: %d", st)
	}
	if st := s.call(t, "wrong", "GET", "/v1/tools", "", nil); st != http.StatusUnauthorized {
		t.Errorf("wrong token: %d", st)
	}
	var att memory.AttachResult
	if st := s.call(t, token, "POST", "/v1/sessions/attach", `{"session_key":"/sessions/e2e.jsonl","session_id":"e2e"}`, &att); st != 200 {
		t.Fatalf("attach: %d", st)
	}
	if att.Agent != "/root" || att.Resumed || att.TaskID == "" {
		t.Fatalf("attach: %+v", att)
	}
	ctxJSON := fmt.Sprintf(`{"task_id":%q,"agent":"/root","call_id":"toolu_1"}`, att.TaskID)
	var w struct {
		Details projections.NoteWriteResult `json:"details"`
	}
	if st := s.call(t, token, "POST", "/v1/tools/notes_write_file",
		`{"context":`+ctxJSON+`,"arguments":{"path":"checkpoint.md","text":"goal: ship\nnext: test"}}`, &w); st != 200 {
		t.Fatalf("write: %d", st)
	}
	if w.Details.Path != "/root/notes/checkpoint.md" || !w.Details.Created || w.Details.Revision != 1 {
		t.Errorf("write: %+v", w.Details)
	}
	var r struct {
		Details struct {
			Text string `json:"text"`
		} `json:"details"`
	}
	if st := s.call(t, token, "POST", "/v1/tools/notes_read_file",
		fmt.Sprintf(`{"context":{"task_id":%q,"agent":"/root"},"arguments":{"path":"checkpoint.md"}}`, att.TaskID), &r); st != 200 {
		t.Fatalf("read: %d", st)
	}
	if r.Details.Text != "goal: ship\nnext: test" {
		t.Errorf("read back %q", r.Details.Text)
	}
	var h struct {
		Status   string `json:"status"`
		Position int64  `json:"position"`
	}
	if st := s.call(t, "", "GET", "/healthz", "", &h); st != 200 || h.Status != "ok" || h.Position < 3 {
		t.Errorf("healthz: %d %+v", st, h)
	}

	if err := s.stop(t); err != nil {
		t.Fatalf("run returned %v after ctx was cancelled; stderr:\n%s", err, s.stderr.String())
	}
	if _, err := http.Get(s.url + "/healthz"); err == nil {
		t.Error("server still answers after shutdown")
	}
	if _, err := os.Stat(filepath.Join(dir, "token")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a token file was made although MEMORYD_TOKEN is set: %v", err)
	}
	if !strings.Contains(s.stderr.String(), `"msg":"shutting down"`) {
		t.Errorf("no shutdown log line; stderr:\n%s", s.stderr.String())
	}
	// The writes are durable: export sees them.
	var out bytes.Buffer
	if err := run(context.Background(), []string{"export", "--db", db}, env(nil), nil, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev events.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("export line %q: %v", line, err)
		}
		if !strings.HasPrefix(ev.Type, "audit.") { // audit records of the calls may follow
			types = append(types, ev.Type)
		}
	}
	if want := []string{events.TypeTaskCreated, events.TypeAgentRegistered, events.TypeNoteWritten}; !slices.Equal(types, want) {
		t.Errorf("export after shutdown has events %v, want %v:\n%s", types, want, out.String())
	}
}

func TestServeCreatesTokenAndFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "memoryd")
	db := filepath.Join(dir, "memory.db")
	s := startServe(t, db, env(nil))

	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("database folder mode %o, want 700", perm)
	}
	tokenPath := filepath.Join(dir, "token")
	fi, err = os.Stat(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("token file mode %o, want 600", perm)
	}
	raw, err := os.ReadFile(tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(token) {
		t.Errorf("token %q is not 32 random bytes in hex", token)
	}
	if st := s.call(t, token, "GET", "/v1/tools", "", nil); st != 200 {
		t.Errorf("the file's token is refused: %d", st)
	}
	if st := s.call(t, "", "GET", "/v1/tools", "", nil); st != 401 {
		t.Errorf("no token: %d", st)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}

	// A restart keeps the token.
	s = startServe(t, db, env(nil))
	if st := s.call(t, token, "GET", "/v1/tools", "", nil); st != 200 {
		t.Errorf("the token changed on restart: %d", st)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(tokenPath); string(again) != string(raw) {
		t.Errorf("token file rewritten: %q, was %q", again, raw)
	}
}

// TestServeDefaults runs the program with no verb and no flags: the
// database and its token are made under $XDG_DATA_HOME/memoryd (0700,
// token 0600), nothing under $HOME, and it serves on MEMORYD_ADDR until
// stopped. (The default address itself, 127.0.0.1:7411, may be taken on
// the machine: TestServeDefaultAddress checks it without listening.)
func TestServeDefaults(t *testing.T) {
	xdg, home := t.TempDir(), t.TempDir()
	getenv := env(map[string]string{"XDG_DATA_HOME": xdg, "HOME": home, "MEMORYD_ADDR": "127.0.0.1:0"})
	s := startRun(t, nil, getenv)

	dir := filepath.Join(xdg, "memoryd")
	for _, f := range []struct {
		path string
		mode os.FileMode
		dir  bool
	}{{dir, 0o700, true}, {filepath.Join(dir, "token"), 0o600, false}, {filepath.Join(dir, "memory.db"), 0, false}} {
		fi, err := os.Stat(f.path)
		if err != nil {
			t.Fatalf("%s: %v", f.path, err)
		}
		if fi.IsDir() != f.dir || f.mode != 0 && fi.Mode().Perm() != f.mode {
			t.Errorf("%s: mode %v, want %v (dir %v)", f.path, fi.Mode(), f.mode, f.dir)
		}
	}
	raw, err := os.ReadFile(filepath.Join(dir, "token"))
	if err != nil {
		t.Fatal(err)
	}
	token := strings.TrimSpace(string(raw))
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(token) {
		t.Errorf("token %q is not 32 random bytes in hex", token)
	}
	var h struct {
		Status string `json:"status"`
	}
	if st := s.call(t, "", "GET", "/healthz", "", &h); st != 200 || h.Status != "ok" {
		t.Errorf("healthz: %d %+v", st, h)
	}
	var att memory.AttachResult
	if st := s.call(t, token, "POST", "/v1/sessions/attach", `{"session_key":"/s/defaults.jsonl"}`, &att); st != 200 || att.Agent != "/root" {
		t.Errorf("attach with the file's token: %d %+v", st, att)
	}
	if err := s.stop(t); err != nil {
		t.Fatalf("run returned %v when stopped; stderr:\n%s", err, s.stderr.String())
	}
	if _, err := http.Get(s.url + "/healthz"); err == nil {
		t.Error("server still answers after it stopped")
	}
	if entries, err := os.ReadDir(home); err != nil || len(entries) != 0 {
		t.Errorf("$HOME has %v (%v), want nothing: $XDG_DATA_HOME takes precedence", entries, err)
	}
	// The database was closed cleanly and holds the attach.
	out := export(t, "--db", filepath.Join(dir, "memory.db"))
	if !strings.Contains(string(out), `"type":"task.created"`) {
		t.Errorf("export after stop:\n%s", out)
	}
}

// TestServeDefaultAddress: without --addr and MEMORYD_ADDR, serve listens
// on 127.0.0.1:7411 (read from the flag's default, as -h prints it).
func TestServeDefaultAddress(t *testing.T) {
	var stdout bytes.Buffer
	if err := run(context.Background(), []string{"serve", "-h"}, env(nil), nil, &stdout, io.Discard); err != nil {
		t.Fatalf("serve -h: %v", err)
	}
	_, addr, _ := strings.Cut(stdout.String(), "\n  -addr HOST:PORT")
	addr, _, _ = strings.Cut(addr, "\n  -")
	if !strings.Contains(addr, `(default "127.0.0.1:7411")`) {
		t.Errorf("serve -h describes --addr as %q, want the default \"127.0.0.1:7411\"; output:\n%s", addr, stdout.String())
	}
	// MEMORYD_ADDR replaces the default.
	stdout.Reset()
	_ = run(context.Background(), []string{"serve", "-h"}, env(map[string]string{"MEMORYD_ADDR": "127.0.0.1:9"}), nil, &stdout, io.Discard)
	if !strings.Contains(stdout.String(), `(default "127.0.0.1:9")`) {
		t.Errorf("with MEMORYD_ADDR the default is not shown:\n%s", stdout.String())
	}
}

// TestServeSIGTERM sends SIGTERM to a serving process (the test binary
// re-executed as the server, see TestMain): it exits 0 having closed the
// database, so the WAL the writes left was checkpointed into the database
// file and removed (SQLite does so when the last connection closes; a
// process that exits without closing leaves it behind), and the database
// opens and verifies with every acknowledged write in it.
func TestServeSIGTERM(t *testing.T) {
	db := filepath.Join(t.TempDir(), "memory.db")
	c := startCrashChild(t, db, "full")
	cl := newCrashClient(c.url)
	defer cl.close()
	ctx := context.Background()
	st, b, err := cl.do(ctx, "POST", "/v1/sessions/attach", map[string]any{"session_key": "/s/sigterm.jsonl"})
	if err != nil || st != http.StatusOK {
		t.Fatalf("attach: %d %s %v", st, b, err)
	}
	var att memory.AttachResult
	if err := json.Unmarshal(b, &att); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		st, b, err := cl.do(ctx, "POST", "/v1/tools/notes_append_to_file", map[string]any{
			"context":   map[string]string{"task_id": att.TaskID, "agent": "/root", "call_id": fmt.Sprintf("toolu_%d", i)},
			"arguments": map[string]string{"path": "log.md", "text": fmt.Sprintf("line %d\n", i)}})
		if err != nil || st != http.StatusOK {
			t.Fatalf("append %d: %d %s %v", i, st, b, err)
		}
	}
	if fi, err := os.Stat(db + "-wal"); err != nil || fi.Size() == 0 {
		t.Fatalf("while serving, the WAL is %v, %v; the check below would prove nothing", fi, err)
	}

	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.cmd.Wait() }()
	select {
	case err := <-exited:
		if err != nil || c.cmd.ProcessState.ExitCode() != 0 {
			t.Fatalf("after SIGTERM the server exited with %v (code %d), want 0; stderr:\n%s", err, c.cmd.ProcessState.ExitCode(), c.stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the server did not exit within 60 s of SIGTERM; stderr:\n%s", c.stderr.String())
	}
	if s := c.stderr.String(); strings.Contains(s, "DATA RACE") || strings.Contains(s, "panic") || strings.Contains(s, `"level":"ERROR"`) {
		t.Fatalf("the server's stderr:\n%s", s)
	}
	if fi, err := os.Stat(db + "-wal"); err == nil && fi.Size() > 0 {
		t.Errorf("the WAL (%d bytes) is still there after a clean exit: the database was not closed", fi.Size())
	}

	svc, err := openExistingService(ctx, os.Getenv, db, io.Discard)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	n, err := projections.NewReader(svc.Store().Reader()).Note(ctx, att.TaskID, "/root", "log.md")
	svc.Close()
	if err != nil || strings.Count(n.Content, "\n") != 20 || !strings.HasSuffix(n.Content, "line 19\n") {
		t.Errorf("after the restart the note is %q, %v", n.Content, err)
	}
	if out, stderr, err := fxRun(t, nil, "verify", "--db", db); err != nil {
		t.Errorf("verify after SIGTERM: %v\n%s%s", err, out, stderr)
	}
}

func TestServeBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = run(context.Background(), []string{"serve", "--addr", ln.Addr().String(), "--db", filepath.Join(t.TempDir(), "m.db")},
		env(map[string]string{"MEMORYD_TOKEN": "x"}), nil, io.Discard, io.Discard)
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("serve on a busy port: %v (exit %d), want a failure", err, exitCode(err))
	}
}

// workload builds a database with notes in two tasks through the service
// and returns the call contexts of its agents.
func workload(t *testing.T, db string) []memory.CallContext {
	t.Helper()
	ctx := context.Background()
	svc, err := openService(ctx, os.Getenv, db, "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	attach := func(req memory.AttachRequest) memory.CallContext {
		res, err := svc.Attach(ctx, req, "req-attach")
		if err != nil {
			t.Fatalf("attach %s: %v", req.SessionKey, err)
		}
		return memory.CallContext{TaskID: res.TaskID, Agent: res.Agent}
	}
	root := attach(memory.AttachRequest{SessionKey: "/s/root.jsonl", SessionID: "r1"})
	reviewer := attach(memory.AttachRequest{SessionKey: "/s/reviewer.jsonl", Task: &memory.TaskRef{TaskID: root.TaskID, AgentName: "reviewer"}})
	auto := attach(memory.AttachRequest{SessionKey: "/s/auto.jsonl", Task: &memory.TaskRef{TaskID: root.TaskID}})
	attach(memory.AttachRequest{SessionKey: "/s/root.jsonl", SessionID: "r2"}) // reattach
	other := attach(memory.AttachRequest{SessionKey: "/s/other.jsonl"})
	do := func(cc memory.CallContext, callID, tool, args string) {
		t.Helper()
		cc.CallID = callID
		if _, err := svc.CallTool(ctx, tool, cc, json.RawMessage(args), "req-"+callID); err != nil {
			t.Fatalf("%s %s: %v", tool, args, err)
		}
	}
	do(root, "c1", "notes_write_file", `{"path":"checkpoint.md","text":"goal: ship memoryd\nstatus: <wip> & \"quoted\""}`)
	do(root, "c2", "notes_append_to_file", `{"path":"log/2026-12-02.md","text":"- started\n"}`)
	do(root, "c3", "notes_append_to_file", `{"path":"log/2026-12-02.md","text":"- wrote tests ✅\n"}`)
	do(root, "c3", "notes_append_to_file", `{"path":"log/2026-12-02.md","text":"- wrote tests ✅\n"}`) // retry
	do(root, "c4", "notes_write_file", `{"path":"checkpoint.md","text":"goal: ship memoryd\nstatus: testing"}`)
	do(root, "c5", "notes_write_file", `{"path":"/root/reviewer/notes/review.md","text":"please review the importer"}`)
	do(reviewer, "r1", "notes_append_to_file", `{"path":"review.md","text":"\nreviewed: ok"}`)
	do(reviewer, "r2", "notes_write_file", `{"path":"/root/notes/from-reviewer.md","text":"status: reviewed"}`)
	do(auto, "", "notes_write_file", `{"path":"scratch.md","text":"status: scratch"}`)
	do(other, "o1", "notes_write_file", `{"path":"checkpoint.md","text":"status: another task"}`)
	return []memory.CallContext{root, reviewer, auto, other}
}

// snapshot runs a fixed set of read tools for every agent and returns
// their results as JSON.
func snapshot(t *testing.T, db string, agents []memory.CallContext) []string {
	t.Helper()
	ctx := context.Background()
	svc, err := openExistingService(ctx, os.Getenv, db, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	var out []string
	for _, cc := range agents {
		for _, c := range []struct{ tool, args string }{
			{"notes_list_files_by_prefix", `{}`},
			{"notes_list_files_by_prefix", `{"prefix":"/root/reviewer/notes/"}`},
			{"notes_list_files_by_prefix", `{"file_order_by":"updated_at","file_order":"descending"}`},
			{"notes_read_file", `{"path":"checkpoint.md"}`},
			{"notes_read_file", `{"path":"log/2026-12-02.md"}`},
			{"notes_read_file", `{"path":"/root/reviewer/notes/review.md"}`},
			{"notes_search_contents", `{"query":"status"}`},
			{"notes_search_contents", `{"query":"review","path_prefix":"/root/reviewer/notes/"}`},
			{"get_context_remaining", `{}`},
		} {
			res, err := svc.CallTool(ctx, c.tool, cc, json.RawMessage(c.args), "")
			b, _ := json.Marshal(res)
			out = append(out, fmt.Sprintf("%s %s %s: %v %s", cc.Agent, c.tool, c.args, err, b))
		}
	}
	digest, err := projections.Digest(ctx, svc.Store())
	if err != nil {
		t.Fatal(err)
	}
	return append(out, "digest "+projections.Combined(digest))
}

func export(t *testing.T, args ...string) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), append([]string{"export"}, args...), env(nil), nil, &out, io.Discard); err != nil {
		t.Fatalf("export %v: %v", args, err)
	}
	return out.Bytes()
}

func TestExportImport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	dbA := filepath.Join(dir, "a", "memory.db")
	agents := workload(t, dbA)
	exported := export(t, "--db", dbA)
	lines := strings.Split(strings.TrimSuffix(string(exported), "\n"), "\n")
	if len(lines) < 15 {
		t.Fatalf("export has %d lines", len(lines))
	}
	for i, line := range lines {
		var ev events.Event
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil || ev.Position != int64(i+1) {
			t.Fatalf("export line %d: %v %s", i+1, err, line)
		}
	}
	file := filepath.Join(dir, "export.jsonl")
	if err := os.WriteFile(file, exported, 0o600); err != nil {
		t.Fatal(err)
	}

	dbB := filepath.Join(dir, "b", "memory.db")
	var out bytes.Buffer
	if err := run(ctx, []string{"import", "--db", dbB, file}, env(nil), nil, &out, io.Discard); err != nil {
		t.Fatalf("import: %v", err)
	}
	if want := fmt.Sprintf("imported %d events\n", len(lines)); out.String() != want {
		t.Errorf("import printed %q, want %q", out.String(), want)
	}
	a, b := snapshot(t, dbA, agents), snapshot(t, dbB, agents)
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("imported database differs:\n  original %s\n  imported %s", a[i], b[i])
		}
	}
	for _, want := range []string{"/root/notes/from-reviewer.md", "wrote tests ✅", "reviewed: ok", "another task"} {
		if !strings.Contains(strings.Join(a, "\n"), want) {
			t.Errorf("snapshot lacks %q; the workload did not run as intended", want)
		}
	}
	if again := export(t, "--db", dbB); !bytes.Equal(again, exported) {
		t.Errorf("export of the imported database differs from the original export")
	}

	// Import from stdin.
	dbS := filepath.Join(dir, "stdin", "memory.db")
	if err := run(ctx, []string{"import", "--db", dbS, "-"}, env(nil), bytes.NewReader(exported), io.Discard, io.Discard); err != nil {
		t.Fatalf("import from stdin: %v", err)
	}
	if again := export(t, "--db", dbS); !bytes.Equal(again, exported) {
		t.Errorf("export of the stdin import differs")
	}

	// Export filters.
	taskB := agents[3].TaskID
	for _, line := range strings.Split(strings.TrimSpace(string(export(t, "--db", dbA, "--task", taskB))), "\n") {
		if !strings.Contains(line, `"stream":"`+taskB+`/root"`) {
			t.Errorf("export --task %s has %s", taskB, line)
		}
	}
	if got := export(t, "--db", dbA, "--until", "4"); string(got) != strings.Join(lines[:4], "\n")+"\n" {
		t.Errorf("export --until 4:\n%s", got)
	}

	// A non-empty database refuses an import and is left as it was.
	err := run(ctx, []string{"import", "--db", dbB, file}, env(nil), nil, io.Discard, io.Discard)
	if !errors.Is(err, eventlog.ErrNotEmpty) || exitCode(err) != 1 || strings.Contains(err.Error(), "line ") {
		t.Errorf("import into a non-empty database: %v (exit %d), want ErrNotEmpty naming no line", err, exitCode(err))
	}
	if again := export(t, "--db", dbB); !bytes.Equal(again, exported) {
		t.Errorf("refused import changed the database")
	}

	// A corrupted line fails, names its line and writes nothing.
	for _, tc := range []struct {
		name string
		line int
		edit func(string) string
		want string
	}{
		{"truncated json", 3, func(l string) string { return l[:len(l)/2] }, "line 3"},
		{"unknown envelope field", 5, func(l string) string { return strings.Replace(l, `{"position"`, `{"extra":1,"position"`, 1) }, "line 5"},
		{"newer schema", 4, func(l string) string { return strings.Replace(l, `"schema":1`, `"schema":9`, 1) }, "line 4"},
		{"gap", 6, func(l string) string { return strings.Replace(l, `"position":6,`, `"position":7,`, 1) }, "line 6"},
		{"unknown type", len(lines), func(l string) string {
			return regexp.MustCompile(`"type":"[a-z._]+"`).ReplaceAllString(l, `"type":"note.deleted"`)
		}, fmt.Sprintf("line %d", len(lines))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := append([]string(nil), lines...)
			bad[tc.line-1] = tc.edit(bad[tc.line-1])
			if bad[tc.line-1] == lines[tc.line-1] {
				t.Fatal("the edit changed nothing")
			}
			badFile := filepath.Join(t.TempDir(), "bad.jsonl")
			if err := os.WriteFile(badFile, []byte(strings.Join(bad, "\n")+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			dbC := filepath.Join(t.TempDir(), "memory.db")
			err := run(ctx, []string{"import", "--db", dbC, badFile}, env(nil), nil, io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want+":") || exitCode(err) != 1 {
				t.Fatalf("import of a corrupted log: %v, want an error naming %q", err, tc.want)
			}
			if strings.Count(err.Error(), "line ") != 1 {
				t.Errorf("error names the line more than once: %v", err)
			}
			if _, err := os.Stat(dbC); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the failed import left its database behind: %v", err)
			}
			if err := run(ctx, []string{"import", "--db", dbC, file}, env(nil), nil, io.Discard, io.Discard); err != nil {
				t.Fatalf("clean import after a failed one: %v", err)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	for _, args := range [][]string{
		{"bogus"},
		{"serve", "extra"},
		{"serve", "--nope"},
		{"--nope"},
		{"serve", "--log-level", "loud", "--db", db},
		{"serve", "--max-body", "big"},
		{"export", "--db", db, "extra"},
		{"export", "--db", db, "--until", "soon"},
		{"import", "--db", db},
		{"import", "--db", db, "a.jsonl", "b.jsonl"},
		{"import", "a.jsonl"},
	} {
		err := run(context.Background(), args, env(nil), nil, io.Discard, io.Discard)
		var ue *usageError
		if !errors.As(err, &ue) || exitCode(err) != 2 {
			t.Errorf("run %q: %v (exit %d), want a usage error (exit 2)", args, err, exitCode(err))
		}
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a usage error created the database: %v", err)
	}
	// A failure of what was asked is exit 1, not a usage error.
	err := run(context.Background(), []string{"export", "--db", filepath.Join(dir, "missing.db")}, env(nil), nil, io.Discard, io.Discard)
	if err == nil || exitCode(err) != 1 {
		t.Errorf("export of a missing database: %v (exit %d), want exit 1", err, exitCode(err))
	}
	if _, err := os.Stat(filepath.Join(dir, "missing.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("export created the missing database")
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"help"}, env(nil), nil, &out, io.Discard); err != nil || !strings.Contains(out.String(), "usage: memoryd") {
		t.Errorf("help: %v %q", err, out.String())
	}
	// MEMORYD_DB is the default --db of export.
	if err := run(context.Background(), []string{"export"}, env(map[string]string{"MEMORYD_DB": filepath.Join(dir, "none.db")}), nil, io.Discard, io.Discard); err == nil || exitCode(err) != 1 {
		t.Errorf("export with MEMORYD_DB of a missing file: %v", err)
	}
}

func TestDefaultDBPath(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"MEMORYD_DB": "/x/m.db", "XDG_DATA_HOME": "/xdg", "HOME": "/home/u"}, "/x/m.db"},
		{map[string]string{"XDG_DATA_HOME": "/xdg", "HOME": "/home/u"}, "/xdg/memoryd/memory.db"},
		{map[string]string{"HOME": "/home/u"}, "/home/u/.local/share/memoryd/memory.db"},
	} {
		got, err := defaultDBPath(env(tc.env))
		if err != nil || got != tc.want {
			t.Errorf("defaultDBPath(%v) = %q, %v; want %q", tc.env, got, err, tc.want)
		}
	}
	if _, err := defaultDBPath(env(nil)); err == nil {
		t.Error("defaultDBPath without HOME succeeded")
	}
}

// TestDBThatLooksLikePostgresButIsNotAURL: a --db or MEMORYD_DB that
// starts with postgres: or postgresql: (any case) but is not a
// postgres:// or postgresql:// URL is a usage error (exit 2) naming the
// form expected, and nothing is created: it used to be an SQLite file
// named "postgres:" (two servers meant to share one PostgreSQL database
// wrote two files).
func TestDBThatLooksLikePostgresButIsNotAURL(t *testing.T) {
	t.Chdir(t.TempDir()) // where a relative "postgres:" file would land
	canceled, cancel := context.WithCancel(context.Background())
	cancel() // serve, were it to start, stops at once
	for _, c := range []struct {
		args []string
		env  map[string]string
	}{
		{[]string{"serve", "--addr", "127.0.0.1:0", "--db", "postgres:/memoryd?sslmode=disable"}, map[string]string{"MEMORYD_TOKEN": "x"}},
		{[]string{"serve", "--addr", "127.0.0.1:0"}, map[string]string{"MEMORYD_TOKEN": "x", "MEMORYD_DB": "postgresql:memoryd"}},
		{[]string{"serve", "--addr", "127.0.0.1:0", "--db", "POSTGRES://localhost/memoryd"}, map[string]string{"MEMORYD_TOKEN": "x"}},
		{[]string{"import", "--db", "Postgres:/memoryd", "log.jsonl"}, nil},
		{[]string{"verify"}, map[string]string{"MEMORYD_DB": "postgres:memoryd"}},
		{[]string{"tasks", "--db", "postgresql:/memoryd"}, nil},
	} {
		var stderr bytes.Buffer
		err := run(canceled, c.args, env(c.env), nil, io.Discard, &stderr)
		var ue *usageError
		if !errors.As(err, &ue) || exitCode(err) != 2 || !strings.Contains(err.Error(), "postgres://") {
			t.Errorf("run %q (env %v): %v (exit %d), want a usage error (exit 2) naming postgres://", c.args, c.env, err, exitCode(err))
		}
	}
	if left, _ := os.ReadDir("."); len(left) != 0 {
		t.Errorf("a refused --db left %v behind", left)
	}
}

// TestLongVerbsNoProgressWhenNotATerminal: export, import, replay,
// import-session and verify draw a progress bar only on a terminal. With stderr a
// buffer or a plain file they write nothing there at all.
func TestLongVerbsNoProgressWhenNotATerminal(t *testing.T) {
	if report, done := progress(&bytes.Buffer{}, "x", "events", 10); report != nil {
		done()
		t.Fatal("progress to a bytes.Buffer reports")
	}
	ctx := context.Background()
	dir := t.TempDir()
	// A session of 1100 entries; imported, a log of over 1100 events, so
	// that a bar reporting every 1024 events would draw.
	b := sessiongen.NewBuilder(11)
	for i := range 1100 {
		b.UserText(fmt.Sprintf("step %d", i))
	}
	var sb bytes.Buffer
	if err := b.Session().WriteJSONL(&sb); err != nil {
		t.Fatal(err)
	}
	session := filepath.Join(dir, "session.jsonl")
	if err := os.WriteFile(session, sb.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "memory.db")
	if err := run(ctx, []string{"import-session", "--db", db, session}, env(nil), nil, io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(dir, "log.jsonl")
	exported := export(t, "--db", db)
	if n := bytes.Count(exported, []byte("\n")); n < 1100 {
		t.Fatalf("the log has %d events", n)
	}
	if err := os.WriteFile(log, exported, 0o600); err != nil {
		t.Fatal(err)
	}

	// Every verb with stderr a buffer; a plain file (not a terminal: the
	// isatty check) for two of them.
	for _, tc := range []struct {
		args  []string
		kinds []string
	}{
		{[]string{"export", "--db", db}, []string{"buffer", "file"}},
		{[]string{"import", "--db", filepath.Join(dir, "imported-%s.db"), log}, []string{"buffer"}},
		{[]string{"replay", log}, []string{"buffer", "file"}},
		{[]string{"import-session", "--db", filepath.Join(dir, "session-%s.db"), session}, []string{"buffer"}},
		{[]string{"verify", "--db", db}, []string{"buffer", "file"}},
	} {
		for _, kind := range tc.kinds {
			args := slices.Clone(tc.args)
			for i, a := range args {
				if strings.Contains(a, "%s") {
					args[i] = fmt.Sprintf(a, kind)
				}
			}
			var stderr io.Writer
			var buf bytes.Buffer
			var f *os.File
			if kind == "buffer" {
				stderr = &buf
			} else {
				var err error
				if f, err = os.Create(filepath.Join(dir, "stderr-"+args[0])); err != nil {
					t.Fatal(err)
				}
				stderr = f
			}
			if err := run(ctx, args, env(nil), nil, io.Discard, stderr); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			got := buf.String()
			if f != nil {
				f.Close()
				b, err := os.ReadFile(f.Name())
				if err != nil {
					t.Fatal(err)
				}
				got = string(b)
			}
			if got != "" {
				t.Errorf("%v with stderr a %s wrote %.200q to it, want nothing", args, kind, got)
			}
		}
	}
}
