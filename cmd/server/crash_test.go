package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
	"github.com/memoryd/memoryd/internal/projections"
)

// The crash harness runs the server as a child process (the test binary
// itself, see TestMain), drives it with several writers, SIGKILLs it at
// random moments and restarts it on the same database. After every kill
// it checks, offline and then through the restarted server, that:
//
//   - every write acknowledged (200) before the kill is there, once;
//   - a write in flight at the kill is there at most once, and its retry
//     with the same call_id after the restart makes it exactly once;
//   - the projections equal a rebuild from the log (forensics.Verify,
//     every fifth kill and at the end, then the verify verb);
//   - each fenced agent's state (GET /v1/state) is the one its last
//     acknowledged transition left, or the in-flight one's if it committed.

const (
	crashToken  = "crash-harness-token"
	crashCycles = 30
	crashSeed   = 20261202
)

var crashListening = regexp.MustCompile(`^listening on (http://127\.0\.0\.1:[0-9]+)$`)

// crashChild is one server process.
type crashChild struct {
	cmd    *exec.Cmd
	url    string
	stderr *memorytest.Buffer // the child's stderr
}

// startCrashChild starts the test binary as "memoryd serve" on db and waits
// for its listening line.
func startCrashChild(t *testing.T, db, syncMode string) *crashChild {
	t.Helper()
	cmd := exec.Command(os.Args[0], "serve", "--addr", "127.0.0.1:0", "--db", db, "--log-level", "warn", "--sync", syncMode)
	cmd.Env = append(os.Environ(), childEnv+"=serve", "MEMORYD_TOKEN="+crashToken)
	c := &crashChild{cmd: cmd, stderr: &memorytest.Buffer{}}
	cmd.Stderr = c.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// The child exits when its stdin closes (see TestMain): when this
	// process dies, even by a test timeout, no server is left behind.
	if _, err := cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // a test that fails half-way leaves no server either
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
	})
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, out)
	}()
	select {
	case line := <-lines:
		m := crashListening.FindStringSubmatch(line)
		if m == nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("child's first line %q; stderr:\n%s", line, c.stderr.String())
		}
		c.url = m[1]
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child did not listen; stderr:\n%s", c.stderr.String())
	}
	return c
}

// kill SIGKILLs the child and reaps it.
func (c *crashChild) kill(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Kill(); err != nil {
		t.Fatalf("kill: %v", err)
	}
	_ = c.cmd.Wait() // "signal: killed"
	if s := c.stderr.String(); strings.Contains(s, "DATA RACE") || strings.Contains(s, "panic") {
		t.Fatalf("child reported a race or a panic:\n%s", s)
	}
}

// crashClient talks to one child.
type crashClient struct {
	url  string
	http *http.Client
	oks  atomic.Int64 // acknowledged writes (POST answered 200)
}

func newCrashClient(url string) *crashClient {
	return &crashClient{url: url, http: &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{}}}
}

func (c *crashClient) close() { c.http.CloseIdleConnections() }

// do sends a request; err is set when no whole response came back (the
// request's fate is unknown).
func (c *crashClient) do(ctx context.Context, method, path string, body any) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url+path, r)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+crashToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	if method == "POST" && resp.StatusCode == http.StatusOK {
		c.oks.Add(1)
	}
	return resp.StatusCode, b, nil
}

type crashCtx struct {
	TaskID string `json:"task_id"`
	Agent  string `json:"agent"`
	CallID string `json:"call_id,omitempty"`
}

// crashWorker is one writer. run drives the server until the server dies
// or ctx ends; the worker keeps its model of what was acknowledged across
// runs. check compares the model with a database (the server is down).
type crashWorker interface {
	run(ctx context.Context, t *testing.T, c *crashClient)
	check(ctx context.Context, t *testing.T, r *projections.Reader, log []events.Event)
	acked() int
}

// noteWriter appends unique tokens, one line per call, each call with its
// own call_id.
type noteWriter struct {
	id   int
	cc   crashCtx
	path string // relative to the agent's notes root

	mu        sync.Mutex
	n         int
	ackedToks []string
	uncertain *noteCall // the call in flight at the last kill
}

type noteCall struct{ callID, token string }

func (w *noteWriter) acked() int { w.mu.Lock(); defer w.mu.Unlock(); return len(w.ackedToks) }

func (w *noteWriter) send(ctx context.Context, c *crashClient, call noteCall) (int, []byte, error) {
	cc := w.cc
	cc.CallID = call.callID
	return c.do(ctx, "POST", "/v1/tools/notes_append_to_file", map[string]any{
		"context": cc, "arguments": map[string]string{"path": w.path, "text": call.token + "\n"}})
}

func (w *noteWriter) run(ctx context.Context, t *testing.T, c *crashClient) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for ctx.Err() == nil {
		call := w.uncertain
		if call == nil { // the retry of an unacknowledged call comes first
			call = &noteCall{fmt.Sprintf("toolu_w%d_%05d", w.id, w.n), fmt.Sprintf("<tok-w%d-%05d>", w.id, w.n)}
			w.n++
		}
		w.uncertain = call
		st, b, err := w.send(ctx, c, *call)
		if err != nil {
			return // the server died: the call stays uncertain
		}
		if st != http.StatusOK {
			t.Errorf("writer %d: append %s: %d %s", w.id, call.callID, st, b)
			return
		}
		w.ackedToks = append(w.ackedToks, call.token)
		w.uncertain = nil
	}
}

// check is done per file by checkNoteFile; the log check is here.
func (w *noteWriter) check(ctx context.Context, t *testing.T, r *projections.Reader, log []events.Event) {
}

// checkNoteFile checks a note file written by writers: each acknowledged
// token once, an uncertain one at most once, nothing else. It also checks
// the log holds each token in at most one event.
func checkNoteFile(ctx context.Context, t *testing.T, r *projections.Reader, log []events.Event, writers ...*noteWriter) {
	t.Helper()
	cc, path := writers[0].cc, writers[0].path
	n, err := r.Note(ctx, cc.TaskID, cc.Agent, path)
	if errors.Is(err, projections.ErrNotFound) {
		n.Content = ""
	} else if err != nil {
		t.Fatalf("read note %s: %v", path, err)
	}
	if int64(len(n.Content)) != n.Bytes {
		t.Errorf("note %s: bytes %d but content is %d bytes", path, n.Bytes, len(n.Content))
	}
	seen := map[string]int{}
	for _, line := range strings.Split(strings.TrimSuffix(n.Content, "\n"), "\n") {
		if line != "" {
			seen[line]++
		}
	}
	inLog := map[string]int{}
	for _, ev := range log {
		if ev.Type != events.TypeNoteAppended {
			continue
		}
		var p events.NoteAppended
		if err := json.Unmarshal(ev.Data, &p); err != nil {
			t.Fatal(err)
		}
		if p.TaskID == cc.TaskID && p.Agent == cc.Agent && p.Path == path {
			inLog[strings.TrimSuffix(p.Text, "\n")]++
		}
	}
	allowed := map[string]bool{}
	for _, w := range writers {
		for _, tok := range w.ackedToks {
			allowed[tok] = true
			if seen[tok] != 1 || inLog[tok] != 1 {
				t.Errorf("%s: acknowledged token %s appears %d times in the note and %d in the log, want 1",
					path, tok, seen[tok], inLog[tok])
			}
		}
		if u := w.uncertain; u != nil {
			allowed[u.token] = true
			if seen[u.token] > 1 || inLog[u.token] > 1 {
				t.Errorf("%s: in-flight token %s appears %d times (log %d), want at most once", path, u.token, seen[u.token], inLog[u.token])
			}
		}
	}
	for tok, k := range seen {
		if !allowed[tok] {
			t.Errorf("%s: line %q (%d times) was never sent", path, tok, k)
		}
	}
	if int64(len(seen)) != n.Revision {
		t.Errorf("%s: %d distinct lines but revision %d", path, len(seen), n.Revision)
	}
}

// historySyncer syncs a branch that grows by one to three entries each
// time, with a compaction every tenth entry.
type historySyncer struct {
	id int
	cc crashCtx

	mu      sync.Mutex
	entries []json.RawMessage
	ids     []string
	ackLen  int // branch length acknowledged
	pending int // branch length of the sync in flight at the kill (0: none)
	syncs   int // acknowledged syncs
	rng     *rand.Rand
}

func (h *historySyncer) acked() int { h.mu.Lock(); defer h.mu.Unlock(); return h.syncs }

// entry returns entry i (0-based), building it on first use.
func (h *historySyncer) entry(i int) json.RawMessage {
	for len(h.entries) <= i {
		k := len(h.entries)
		id := fmt.Sprintf("h%d-%05d", h.id, k)
		var parent any
		if k > 0 {
			parent = h.ids[k-1]
		}
		ts := time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC).Add(time.Duration(k) * time.Second).Format("2006-01-02T15:04:05.000Z")
		var e map[string]any
		switch {
		case k > 0 && k%10 == 0:
			e = map[string]any{"type": "compaction", "id": id, "parentId": parent, "timestamp": ts,
				"summary": fmt.Sprintf("summary %d of syncer %d", k, h.id), "firstKeptEntryId": h.ids[k-1], "tokensBefore": 1000 + k}
		case k%2 == 0:
			e = map[string]any{"type": "message", "id": id, "parentId": parent, "timestamp": ts,
				"message": map[string]any{"role": "user", "content": fmt.Sprintf("request %d of syncer %d ✅", k, h.id), "timestamp": 1 + k}}
		default:
			e = map[string]any{"type": "message", "id": id, "parentId": parent, "timestamp": ts,
				"message": map[string]any{"role": "assistant", "content": []map[string]any{{"type": "text", "text": fmt.Sprintf("answer %d", k)}},
					"stopReason": "stop", "timestamp": 1 + k}}
		}
		b, _ := json.Marshal(e)
		h.entries = append(h.entries, b)
		h.ids = append(h.ids, id)
	}
	return h.entries[i]
}

func (h *historySyncer) run(ctx context.Context, t *testing.T, c *crashClient) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ctx.Err() == nil {
		target := h.pending
		if target == 0 {
			target = h.ackLen + 1 + h.rng.IntN(3)
		}
		for i := range target {
			h.entry(i)
		}
		h.pending = target
		// The entries not yet acknowledged (a retry resends the in-flight
		// ones: equal entries are a no-op) and the whole branch.
		st, b, err := c.do(ctx, "POST", "/v1/history/sync", map[string]any{
			"context": h.cc, "entries": h.entries[h.ackLen:target], "branch": h.ids[:target]})
		if err != nil {
			return
		}
		if st != http.StatusOK {
			t.Errorf("syncer %d: sync to %d entries: %d %s", h.id, target, st, b)
			return
		}
		h.ackLen, h.pending = target, 0
		h.syncs++
	}
}

func (h *historySyncer) check(ctx context.Context, t *testing.T, r *projections.Reader, _ []events.Event) {
	t.Helper()
	got, err := r.BranchIDs(ctx, h.cc.TaskID, h.cc.Agent)
	if err != nil {
		t.Fatal(err)
	}
	ok := strings.Join(got, ",") == strings.Join(h.ids[:h.ackLen], ",")
	if h.pending > 0 && strings.Join(got, ",") == strings.Join(h.ids[:h.pending], ",") {
		ok = true
	}
	if !ok {
		t.Errorf("syncer %d: branch has %d entries, want the acknowledged %d (or the in-flight %d)", h.id, len(got), h.ackLen, h.pending)
	}
	stored, err := r.StoredEntries(ctx, h.cc.TaskID, h.cc.Agent, h.ids[:h.ackLen])
	if err != nil {
		t.Errorf("syncer %d: %v", h.id, err)
	}
	for _, id := range h.ids[:h.ackLen] {
		if !stored[id] {
			t.Errorf("syncer %d: acknowledged entry %s missing", h.id, id)
		}
	}
}

// fenceDriver walks a child agent around the checkpoint fence, one window
// after another: delivered, arm, admit (claim), tool-result (error:
// release), admit again, the admitted write (checkpoint), prepare, commit.
type fenceDriver struct {
	id int
	cc crashCtx

	mu         sync.Mutex
	done       int  // transitions acknowledged (or found committed)
	inflight   bool // transition done+1 was sent and not acknowledged
	reconciled bool // the state was checked since the last restart
	checkedVia int  // GET /v1/state checks after a restart
}

const fenceSteps = 8

func (f *fenceDriver) acked() int { f.mu.Lock(); defer f.mu.Unlock(); return f.done }

// fenceSig is what identifies the state after a number of transitions.
type fenceSig struct {
	Window, Phase, Claim, Pending string
}

func (s fenceSig) String() string {
	return fmt.Sprintf("%s %s claim=%q pending=%q", s.Window, s.Phase, s.Claim, s.Pending)
}

// expectedFence is the state after g transitions from a new agent.
func expectedFence(g int) fenceSig {
	n, s := g/fenceSteps+1, g%fenceSteps
	w := fmt.Sprintf("w%d", n)
	switch s {
	case 1:
		return fenceSig{w, fence.FallbackQueued, "", ""}
	case 2, 4:
		return fenceSig{w, fence.Fenced, "", ""}
	case 3:
		return fenceSig{w, fence.FencedClaimed, fmt.Sprintf("a-%d", n), ""}
	case 5:
		return fenceSig{w, fence.FencedClaimed, fmt.Sprintf("b-%d", n), ""}
	case 6:
		return fenceSig{w, fence.CheckpointSaved, "", ""}
	case 7:
		return fenceSig{w, fence.RollingOver, "", fmt.Sprintf("w%d", n+1)}
	}
	return fenceSig{w, fence.Ready, "", ""}
}

// stateOfAnswer decodes a GET /v1/state answer, and the fence state its
// fields make (whose phase the answer's phase must be).
func stateOfAnswer(b []byte) (memory.StateView, fence.State, error) {
	var v memory.StateView
	if err := json.Unmarshal(b, &v); err != nil {
		return v, fence.State{}, err
	}
	s := fence.State{WindowID: v.WindowID, WindowNumber: v.WindowNumber, PreviousWindowID: v.PreviousWindowID,
		ReminderDue: v.ReminderDue, FallbackDue: v.FallbackDue, ReminderDelivered: v.ReminderDelivered, FallbackDelivered: v.FallbackDelivered,
		FenceActive: v.FenceActive, FenceKind: v.FenceKind, FenceRequestID: v.FenceRequestID, Claim: v.Claim,
		CheckpointSaved: v.CheckpointSaved, CheckpointCallID: v.CheckpointCallID,
		PendingNewContext: v.PendingNewContext, RolloverRequested: v.RolloverRequested, HardLatched: v.HardLatched,
		PendingWindowID: v.PendingWindowID, PendingReason: v.PendingReason, PendingBootstrap: v.PendingBootstrap,
		TokensUsed: v.TokensUsed, ContextWindow: v.ContextWindow}
	if m := v.Manual; m != nil {
		s.Manual = &fence.Manual{RequestID: m.RequestID, WindowID: m.WindowID, Phase: m.Phase}
	}
	return v, s, nil
}

func sigOf(s fence.State) fenceSig {
	return fenceSig{s.WindowID, s.Phase(), s.Claim, s.PendingWindowID}
}

// transition returns the request of transition g+1 (from the state after g).
func (f *fenceDriver) transition(g int) (path string, body map[string]any) {
	n, s := g/fenceSteps+1, g%fenceSteps
	w := fmt.Sprintf("w%d", n)
	write := map[string]string{"path": "checkpoint.md", "text": fmt.Sprintf("goal: survive crashes\nwindow: %s\n", w)}
	switch s {
	case 0:
		return "/v1/lifecycle/delivered", map[string]any{"context": f.cc, "kind": "fallback", "window_id": w, "request_id": "fb-" + w}
	case 1:
		return "/v1/lifecycle/arm", map[string]any{"context": f.cc, "kind": "fallback", "window_id": w, "request_id": "fb-" + w}
	case 2:
		return "/v1/lifecycle/admit", map[string]any{"context": f.cc, "call_id": fmt.Sprintf("a-%d", n), "tool_name": "notes_write_file", "arguments": write}
	case 3:
		return "/v1/lifecycle/tool-result", map[string]any{"context": f.cc, "call_id": fmt.Sprintf("a-%d", n), "is_error": true}
	case 4:
		return "/v1/lifecycle/admit", map[string]any{"context": f.cc, "call_id": fmt.Sprintf("b-%d", n), "tool_name": "notes_write_file", "arguments": write}
	case 5:
		cc := f.cc
		cc.CallID = fmt.Sprintf("b-%d", n)
		return "/v1/tools/notes_write_file", map[string]any{"context": cc, "arguments": write}
	case 6:
		return "/v1/lifecycle/rollover/prepare", map[string]any{"context": f.cc, "reason": "fallback"}
	}
	return "/v1/lifecycle/rollover/commit", map[string]any{"context": f.cc, "window_id": fmt.Sprintf("w%d", n+1), "compaction_entry_id": fmt.Sprintf("cmp-%d", n)}
}

// match moves the model to the state found: the acknowledged one, or the
// in-flight transition's if it committed.
func (f *fenceDriver) match(t *testing.T, got fenceSig, where string) bool {
	t.Helper()
	switch {
	case got == expectedFence(f.done):
	case f.inflight && got == expectedFence(f.done+1):
		f.done++
	default:
		want := expectedFence(f.done).String()
		if f.inflight {
			want += " or " + expectedFence(f.done+1).String()
		}
		t.Errorf("fence %d (%s): state %s after %d acknowledged transitions, want %s", f.id, where, got, f.done, want)
		return false
	}
	f.inflight = false
	return true
}

// reconcile checks the state found after a restart against the model,
// once per restart. It reports whether the state is confirmed.
func (f *fenceDriver) reconcile(ctx context.Context, t *testing.T, c *crashClient) bool {
	if f.reconciled {
		return true
	}
	st, b, err := c.do(ctx, "GET", fmt.Sprintf("/v1/state?task_id=%s&agent=%s", f.cc.TaskID, f.cc.Agent), nil)
	if err != nil {
		return false
	}
	view, s, err := stateOfAnswer(b)
	if st != http.StatusOK || err != nil {
		t.Errorf("fence %d: GET /v1/state: %d %s", f.id, st, b)
		return false
	}
	got := sigOf(s)
	if got.Phase != view.Phase {
		t.Errorf("fence %d: GET /v1/state says phase %s, its fields make %s", f.id, view.Phase, got.Phase)
	}
	if !f.match(t, got, "GET /v1/state after restart") {
		return false
	}
	f.reconciled = true
	f.checkedVia++
	return true
}

func (f *fenceDriver) run(ctx context.Context, t *testing.T, c *crashClient) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.reconcile(ctx, t, c) {
		return
	}
	for ctx.Err() == nil {
		path, body := f.transition(f.done)
		f.inflight = true
		// The end of a drive does not cancel the transition under way: its
		// answer is awaited, so a reconcile never races a server still
		// committing a transition whose client left.
		st, b, err := c.do(context.WithoutCancel(ctx), "POST", path, body)
		if err != nil {
			f.reconciled = false
			return
		}
		if st != http.StatusOK {
			t.Errorf("fence %d: transition %d (%s): %d %s", f.id, f.done+1, path, st, b)
			return
		}
		f.done++
		f.inflight = false
		// Lifecycle routes answer with the new state; tool calls do not
		// (their effect is checked through GET /v1/state after restarts).
		if want := expectedFence(f.done).Phase; strings.HasPrefix(path, "/v1/lifecycle/") && !strings.Contains(string(b), `"phase":"`+want+`"`) {
			t.Errorf("fence %d: transition %d (%s) answered %s, want phase %s", f.id, f.done, path, b, want)
		}
	}
}

func (f *fenceDriver) check(ctx context.Context, t *testing.T, r *projections.Reader, _ []events.Event) {
	t.Helper()
	s, err := r.AgentState(ctx, f.cc.TaskID, f.cc.Agent)
	if err != nil {
		t.Fatal(err)
	}
	// Offline the model is only compared, not moved: the restarted
	// server's GET /v1/state moves it.
	got := sigOf(s)
	if got != expectedFence(f.done) && !(f.inflight && got == expectedFence(f.done+1)) {
		t.Errorf("fence %d: stored state %s after %d acknowledged transitions (in flight: %v)", f.id, got, f.done, f.inflight)
	}
}

// crashAttach attaches a session through the child and returns its context.
func crashAttach(t *testing.T, c *crashClient, key string, task *map[string]string) crashCtx {
	t.Helper()
	body := map[string]any{"session_key": key}
	if task != nil {
		body["task"] = *task
	}
	st, b, err := c.do(context.Background(), "POST", "/v1/sessions/attach", body)
	if err != nil || st != http.StatusOK {
		t.Fatalf("attach %s: %d %s %v", key, st, b, err)
	}
	var res struct {
		TaskID string `json:"task_id"`
		Agent  string `json:"agent"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return crashCtx{TaskID: res.TaskID, Agent: res.Agent}
}

// checkOffline opens the database of the dead server and checks every
// worker's model against it and, with rebuild, the projections against a
// rebuild from the log (forensics.Verify, the costly part: it replays the
// whole log). It returns the number of events.
func checkOffline(t *testing.T, db string, notes [][]*noteWriter, workers []crashWorker, rebuild bool) int {
	t.Helper()
	ctx := context.Background()
	svc, err := openExistingService(ctx, os.Getenv, db, io.Discard)
	if err != nil {
		t.Fatalf("reopen after the kill: %v", err)
	}
	defer svc.Close()
	var log []events.Event
	if err := svc.Store().Each(ctx, eventlog.Filter{Limit: 2000}, func(ev events.Event) error {
		if ev.Position != int64(len(log)+1) {
			return fmt.Errorf("position %d at index %d: the log has a gap", ev.Position, len(log))
		}
		log = append(log, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r := projections.NewReader(svc.Store().Reader())
	for _, file := range notes {
		checkNoteFile(ctx, t, r, log, file...)
	}
	for _, w := range workers {
		w.check(ctx, t, r, log)
	}
	if !rebuild {
		return len(log)
	}
	scratch, cleanup, err := forensics.Scratch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	diffs, violations, err := forensics.Verify(ctx, svc, scratch, 3)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if len(diffs) > 0 || len(violations) > 0 {
		t.Errorf("projections differ from a rebuild of the log after a kill: %+v; events that break a rule: %+v", diffs, violations)
	}
	return len(log)
}

// TestCrashRecovery runs the harness with synchronous=FULL, the default.
func TestCrashRecovery(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash harness starts 30 server processes")
	}
	crashHarness(t, "full", crashCycles)
}

// TestCrashRecoveryNormalSync: synchronous=NORMAL makes the same promise
// for a process crash (the WAL is in the operating system's cache), so a
// shorter run of the same harness must pass too.
func TestCrashRecoveryNormalSync(t *testing.T) {
	if testing.Short() {
		t.Skip("the crash harness starts server processes")
	}
	crashHarness(t, "normal", crashCycles/5)
}

func crashHarness(t *testing.T, syncMode string, cycles int) {
	start := time.Now()
	rng := rand.New(rand.NewPCG(crashSeed, 1))
	db := filepath.Join(t.TempDir(), "data", "memory.db")

	// Setup, with no kill: two tasks and their agents.
	child := startCrashChild(t, db, syncMode)
	c := newCrashClient(child.url)
	root := crashAttach(t, c, "/crash/a.jsonl", nil)
	child1 := func(name string) crashCtx {
		return crashAttach(t, c, "/crash/"+name+".jsonl", &map[string]string{"task_id": root.TaskID, "parent_agent": "/root", "agent_name": name})
	}
	scribe, histA, fenceA, fenceB := child1("scribe"), child1("hist_a"), child1("fence_a"), child1("fence_b")
	other := crashAttach(t, c, "/crash/b.jsonl", nil)

	w0 := &noteWriter{id: 0, cc: root, path: "log.md"}
	w1 := &noteWriter{id: 1, cc: root, path: "log.md"} // the same file as w0
	w2 := &noteWriter{id: 2, cc: scribe, path: "daily/scribe.md"}
	h0 := &historySyncer{id: 0, cc: histA, rng: rand.New(rand.NewPCG(crashSeed, 2))}
	h1 := &historySyncer{id: 1, cc: other, rng: rand.New(rand.NewPCG(crashSeed, 3))}
	f0 := &fenceDriver{id: 0, cc: fenceA, reconciled: true}
	f1 := &fenceDriver{id: 1, cc: fenceB, reconciled: true}
	notes := [][]*noteWriter{{w0, w1}, {w2}}
	workers := []crashWorker{w0, w1, w2, h0, h1, f0, f1}

	var evCount int
	for cycle := range cycles {
		if cycle > 0 {
			child = startCrashChild(t, db, syncMode)
			c = newCrashClient(child.url)
		}
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for _, w := range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				w.run(ctx, t, c)
			}()
		}
		// Kill at a random moment: now and then at once (during the
		// restart's own reconciliation), mostly under load.
		delay := time.Duration(rng.IntN(350)) * time.Millisecond
		early := rng.IntN(6) == 0
		if early {
			delay = time.Duration(rng.IntN(15)) * time.Millisecond
		}
		before := c.oks.Load()
		time.Sleep(delay)
		// Under load means under load, however slow the machine: unless this
		// is an early kill, wait for acknowledged writes of this cycle.
		for deadline := time.Now().Add(10 * time.Second); !early && c.oks.Load() < before+3 && time.Now().Before(deadline); {
			time.Sleep(5 * time.Millisecond)
		}
		child.kill(t)
		cancel()
		wg.Wait()
		c.close()
		if t.Failed() {
			t.Fatalf("cycle %d failed", cycle+1)
		}
		// The log is verified against a rebuild every fifth kill (and after
		// the last run); the acknowledged writes after every kill.
		evCount = checkOffline(t, db, notes, workers, cycle%5 == 4)
		if t.Failed() {
			t.Fatalf("cycle %d (killed after %v) failed its checks", cycle+1, delay)
		}
	}

	// A last clean run: retries of the in-flight calls land exactly once,
	// the fence states are confirmed through GET /v1/state, and verify
	// (the verb) finds nothing.
	child = startCrashChild(t, db, syncMode)
	c = newCrashClient(child.url)
	for _, w := range []*noteWriter{w0, w1, w2} {
		if w.uncertain != nil {
			st, b, err := w.send(context.Background(), c, *w.uncertain)
			if err != nil || st != http.StatusOK {
				t.Fatalf("retry of %s after restart: %d %s %v", w.uncertain.callID, st, b, err)
			}
			w.ackedToks = append(w.ackedToks, w.uncertain.token)
			w.uncertain = nil
		}
	}
	for _, f := range []*fenceDriver{f0, f1} {
		if !f.reconciled {
			if !f.reconcile(context.Background(), t, c) {
				t.Fatalf("fence %d: state not confirmed after the last restart", f.id)
			}
		}
	}
	for _, h := range []*historySyncer{h0, h1} {
		if h.pending > 0 { // settle the in-flight sync by resending it
			st, b, err := c.do(context.Background(), "POST", "/v1/history/sync", map[string]any{
				"context": h.cc, "entries": h.entries[h.ackLen:h.pending], "branch": h.ids[:h.pending]})
			if err != nil || st != http.StatusOK {
				t.Fatalf("resend of the in-flight sync: %d %s %v", st, b, err)
			}
			h.ackLen, h.pending = h.pending, 0
			h.syncs++
		}
	}
	child.kill(t)
	c.close()
	evCount = checkOffline(t, db, notes, workers, true)
	var out bytes.Buffer
	if err := run(context.Background(), []string{"verify", "--db", db}, func(string) string { return "" }, nil, &out, io.Discard); err != nil {
		t.Fatalf("verify verb after %d kills: %v\n%s", cycles, err, out.String())
	}

	noteAcks, syncAcks, fenceAcks := w0.acked()+w1.acked()+w2.acked(), h0.acked()+h1.acked(), f0.acked()+f1.acked()
	if noteAcks == 0 || syncAcks == 0 || fenceAcks == 0 || noteAcks+syncAcks+fenceAcks < 2*cycles {
		t.Errorf("too little load to mean anything: %d appends, %d syncs, %d fence transitions, %d state checks after restarts",
			noteAcks, syncAcks, fenceAcks, f0.checkedVia+f1.checkedVia)
	}
	t.Logf("crash harness (sync %s): %d SIGKILL cycles in %v; %d acknowledged writes checked after every later kill "+
		"(%d note appends, %d history syncs reaching %d+%d entries, %d fence transitions over %d windows); "+
		"%d fence states confirmed by GET /v1/state after restarts; log of %d events verified against a rebuild %d times",
		syncMode, cycles, time.Since(start).Round(time.Millisecond), noteAcks+syncAcks+fenceAcks,
		noteAcks, syncAcks, h0.ackLen, h1.ackLen, fenceAcks, (f0.done+f1.done)/fenceSteps,
		f0.checkedVia+f1.checkedVia, evCount, cycles/5+1)
}
