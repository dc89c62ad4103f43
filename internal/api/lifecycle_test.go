package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/memory"
)

// The lifecycle tests walk the transition table (docs/behaviour.md §D.3)
// through the HTTP API. Every row starts a new task on one shared server,
// reaches its "From" state through the API, sends the trigger and checks
// the events recorded (their types, in order) and the state GET /v1/state
// reports afterwards.

const lcToken = "lifecycle-test-token"

// lcBudget: a 100000-token window makes the reminder due at 25000 tokens
// remaining (76000 used), the fallback at 12500 remaining (88000 used) and
// the hard rollover at 95000 used.
const lcBudget = `{"context_window":100000,"hard_rollover_used_tokens":95000}`

// lcAbsent marks a state field the JSON must not contain (omitempty).
const lcAbsent = "<absent>"

// lcServer is the HTTP interface over a real SQLite file.
type lcServer struct {
	srv   *httptest.Server
	close func() // stops the server and closes its database
}

// lcOpen serves the database at dbPath (created if needed) with open's
// options (startServer, the lifecycle token, no logs). It is closed by the
// test's cleanup or by close.
func lcOpen(tb testing.TB, dbPath string, open memory.OpenOptions) *lcServer {
	tb.Helper()
	ts, stop := startServer(tb, serverOptions{dbPath: dbPath, open: open, token: lcToken,
		edit: func(c *Config) { c.Logger = slog.New(slog.NewJSONHandler(io.Discard, nil)) }})
	return &lcServer{srv: ts.Server, close: stop}
}

// send sends a request with the token; body is marshalled unless nil.
func (s *lcServer) send(tb testing.TB, method, path string, body any) (int, []byte) {
	tb.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			tb.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.srv.URL+path, r)
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+lcToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.srv.Client().Do(req)
	if err != nil {
		tb.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, b
}

// okJSON sends a request that must answer 200 and decodes the body.
func (s *lcServer) okJSON(tb testing.TB, method, path string, body any) map[string]any {
	tb.Helper()
	st, b := s.send(tb, method, path, body)
	if st != http.StatusOK {
		tb.Fatalf("%s %s: status %d, body %s", method, path, st, b)
	}
	return lcDecode(tb, b)
}

func lcDecode(tb testing.TB, b []byte) map[string]any {
	tb.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatalf("decode %s: %v", b, err)
	}
	return m
}

// attach attaches a new root session with lcBudget.
func (s *lcServer) attach(tb testing.TB, sessionKey string) lcAgent {
	tb.Helper()
	var budget map[string]any
	if err := json.Unmarshal([]byte(lcBudget), &budget); err != nil {
		tb.Fatal(err)
	}
	res := s.okJSON(tb, "POST", "/v1/sessions/attach", map[string]any{"session_key": sessionKey, "budget": budget})
	return lcAgent{s: s, cc: memory.CallContext{TaskID: res["task_id"].(string), Agent: res["agent"].(string)}}
}

// position is the last log position (/healthz).
func (s *lcServer) position(tb testing.TB) int64 {
	tb.Helper()
	st, b := s.send(tb, "GET", "/healthz", nil)
	if st != http.StatusOK {
		tb.Fatalf("healthz: %d %s", st, b)
	}
	return int64(lcDecode(tb, b)["position"].(float64))
}

// lcAgent is one attached agent.
type lcAgent struct {
	s  *lcServer
	cc memory.CallContext
}

// lcStep is one request of an agent: a route below the server and its
// body without the context, which run adds (with callID as call_id).
type lcStep struct {
	path   string
	body   map[string]any
	callID string
}

func (st lcStep) String() string {
	b, _ := json.Marshal(st.body)
	return fmt.Sprintf("%s %s call_id=%q", st.path, b, st.callID)
}

func lcUsage(used int64) lcStep {
	return lcStep{path: "/v1/lifecycle/usage", body: map[string]any{"tokens_used": used}}
}

func lcBranch(used int64, fenceInBranch bool) lcStep {
	return lcStep{path: "/v1/lifecycle/branch", body: map[string]any{"tokens_used": used, "fence_in_branch": fenceInBranch}}
}

func lcDelivered(kind, window string) lcStep {
	return lcStep{path: "/v1/lifecycle/delivered", body: map[string]any{"kind": kind, "window_id": window, "request_id": kind + "-" + window}}
}

func lcArm(kind, window string) lcStep {
	return lcStep{path: "/v1/lifecycle/arm", body: map[string]any{"kind": kind, "window_id": window, "request_id": kind + "-" + window}}
}

func lcAdmit(callID, tool, args string) lcStep {
	return lcStep{path: "/v1/lifecycle/admit", body: map[string]any{"call_id": callID, "tool_name": tool, "arguments": json.RawMessage(args)}}
}

func lcToolResult(callID string, isError bool) lcStep {
	return lcStep{path: "/v1/lifecycle/tool-result", body: map[string]any{"call_id": callID, "is_error": isError}}
}

func lcTool(name, callID, args string) lcStep {
	return lcStep{path: "/v1/tools/" + name, body: map[string]any{"arguments": json.RawMessage(args)}, callID: callID}
}

func lcPrepare(reason string) lcStep {
	return lcStep{path: "/v1/lifecycle/rollover/prepare", body: map[string]any{"reason": reason}}
}

func lcCommit(window string) lcStep {
	return lcStep{path: "/v1/lifecycle/rollover/commit", body: map[string]any{"window_id": window, "compaction_entry_id": "compaction-" + window}}
}

func lcFail(aborted bool) lcStep {
	return lcStep{path: "/v1/lifecycle/rollover/fail", body: map[string]any{"aborted": aborted, "error": "Nothing to compact"}}
}

func lcManual(action, requestID string) lcStep {
	return lcStep{path: "/v1/lifecycle/manual", body: map[string]any{"action": action, "request_id": requestID}}
}

func lcUserInput() lcStep { return lcStep{path: "/v1/lifecycle/user-input", body: map[string]any{}} }

// run sends one step and returns the status and decoded body.
func (a lcAgent) run(tb testing.TB, st lcStep) (int, map[string]any) {
	tb.Helper()
	cc := a.cc
	cc.CallID = st.callID
	body := map[string]any{"context": cc}
	for k, v := range st.body {
		body[k] = v
	}
	code, b := a.s.send(tb, "POST", st.path, body)
	return code, lcDecode(tb, b)
}

// mustRun runs steps that must all succeed.
func (a lcAgent) mustRun(tb testing.TB, steps ...lcStep) {
	tb.Helper()
	for _, st := range steps {
		if code, res := a.run(tb, st); code != http.StatusOK {
			tb.Fatalf("setup %s: status %d, body %v", st, code, res)
		}
	}
}

// state is GET /v1/state of the agent.
func (a lcAgent) state(tb testing.TB) map[string]any {
	tb.Helper()
	return a.s.okJSON(tb, "GET", "/v1/state?task_id="+a.cc.TaskID+"&agent="+a.cc.Agent, nil)
}

// rawState is the body of GET /v1/state, byte for byte.
func (a lcAgent) rawState(tb testing.TB) string {
	tb.Helper()
	st, b := a.s.send(tb, "GET", "/v1/state?task_id="+a.cc.TaskID+"&agent="+a.cc.Agent, nil)
	if st != http.StatusOK {
		tb.Fatalf("state: %d %s", st, b)
	}
	return string(b)
}

// eventTypes returns the types of the task's events after position, in
// order, read through GET /v1/events.
func (a lcAgent) eventTypes(tb testing.TB, after int64) []string {
	tb.Helper()
	res := a.s.okJSON(tb, "GET", fmt.Sprintf("/v1/events?task_id=%s&after=%d", a.cc.TaskID, after), nil)
	types := []string{}
	for _, e := range res["events"].([]any) {
		types = append(types, e.(map[string]any)["type"].(string))
	}
	return types
}

// lcLookup returns the value at a dotted path of a decoded JSON object.
func lcLookup(m map[string]any, path string) (any, bool) {
	var cur any = m
	for _, k := range strings.Split(path, ".") {
		obj, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = obj[k]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// lcCheckFields compares fields at dotted paths with JSON literals (or
// lcAbsent).
func lcCheckFields(tb testing.TB, what string, got map[string]any, want map[string]string) {
	tb.Helper()
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w := want[k]
		v, ok := lcLookup(got, k)
		if w == lcAbsent {
			if ok {
				tb.Errorf("%s: %s = %v, want it absent", what, k, v)
			}
			continue
		}
		if !ok {
			tb.Errorf("%s: %s is missing, want %s", what, k, w)
			continue
		}
		var wv any
		if err := json.Unmarshal([]byte(w), &wv); err != nil {
			tb.Fatalf("%s: bad JSON literal %q for %s: %v", what, w, k, err)
		}
		gb, _ := json.Marshal(v)
		wb, _ := json.Marshal(wv)
		if !bytes.Equal(gb, wb) {
			tb.Errorf("%s: %s = %s, want %s", what, k, gb, wb)
		}
	}
}

func lcSeq(parts ...[]lcStep) []lcStep { return slices.Concat(parts...) }

func lcQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Arguments of tool calls.
const (
	lcOwnWrite   = `{"path":"checkpoint.md","text":"goal: ship the fence tests"}`
	lcOwnAppend  = `{"path":"/root/notes/log.md","text":"progress\n"}`
	lcCrossWrite = `{"path":"/root/other/notes/x.md","text":"not mine"}`
	lcBadPath    = `{"path":"a//b.md","text":"x"}`
	lcBash       = `{"command":"ls"}`
)

// States reached through the API from a new agent (READY in w1).
var (
	lcReminded       = []lcStep{lcUsage(76000), lcDelivered(fence.KindReminder, "w1")}
	lcFallbackQueued = []lcStep{lcUsage(88000), lcDelivered(fence.KindFallback, "w1")}
	lcFenced         = lcSeq(lcFallbackQueued, []lcStep{lcArm(fence.KindFallback, "w1")})
	lcClaimed        = lcSeq(lcFenced, []lcStep{lcAdmit("c1", "notes_write_file", lcOwnWrite)})
	lcSaved          = lcSeq(lcClaimed, []lcStep{lcTool("notes_write_file", "c1", lcOwnWrite)})
	lcPending        = []lcStep{lcTool("new_context", "nc1", `{}`)}
	lcHardPending    = []lcStep{lcUsage(96000)}
	lcHardQueued     = lcSeq(lcHardPending, []lcStep{lcDelivered(fence.KindFallback, "w1")})
	lcRollingNC      = lcSeq(lcPending, []lcStep{lcPrepare(fence.ReasonNewContext)})
	lcRollingFB      = lcSeq(lcSaved, []lcStep{lcPrepare(fence.ReasonFallback)})
	lcRollingHard    = lcSeq(lcHardPending, []lcStep{lcPrepare(fence.ReasonHardRollover)})
	lcWindow2        = lcSeq(lcRollingNC, []lcStep{lcCommit("w2")})
	lcManualQueued   = []lcStep{lcManual(fence.ActionRequest, "m1")}
	lcManualAwaiting = lcSeq(lcManualQueued, []lcStep{
		lcDelivered(fence.KindManualCheckpoint, "w1"), lcArm(fence.KindManualCheckpoint, "w1")})
	lcManualSaved      = lcSeq(lcManualAwaiting, []lcStep{lcTool("notes_write_file", "c1", lcOwnWrite)})
	lcManualCompacting = lcSeq(lcManualSaved, []lcStep{lcManual(fence.ActionCompacting, "m1")})
	lcManualRolling    = lcSeq(lcManualCompacting, []lcStep{lcPrepare(fence.ReasonManual)})
	lcReusable         = lcSeq(lcManualSaved, []lcStep{lcPrepare(fence.ReasonManual), lcFail(false)})
)

// lcRow is one transition: from the state the steps reach (checked to
// be fromPhase), do must answer status with resp fields, record events
// and leave the state in phase with the state fields.
type lcRow struct {
	name      string
	from      []lcStep
	fromPhase string
	do        lcStep
	status    int // 0: 200
	resp      map[string]string
	check     func(tb testing.TB, resp map[string]any)
	events    []string
	phase     string
	state     map[string]string
}

const (
	evUsage      = events.TypeUsageReported
	evDelivered  = events.TypeControlDelivered
	evArmed      = events.TypeFenceArmed
	evClaim      = events.TypeClaimTaken
	evRelease    = events.TypeClaimReleased
	evBlocked    = events.TypeCallBlocked
	evSaved      = events.TypeCheckpointSaved
	evNewContext = events.TypeNewContextRequested
	evUser       = events.TypeUserInputReceived
	evPrepared   = events.TypeRolloverPrepared
	evCommitted  = events.TypeRolloverCommitted
	evFailed     = events.TypeRolloverFailed
	evManual     = events.TypeManualRequested
	evManualStep = events.TypeManualPhaseChanged
	evCancelled  = events.TypeManualCancelled
	evLifted     = events.TypeFenceLifted
)

var lcRows = []lcRow{
	// Row 1: READY → REMINDED (usage makes the reminder due, delivery sets reminderDelivered).
	{name: "1 usage below the reminder threshold", fromPhase: fence.Ready,
		do: lcUsage(70000), resp: map[string]string{"due": "null"},
		events: []string{evUsage}, phase: fence.Ready,
		state: map[string]string{"tokens_used": "70000", "reminder_due": "false"}},
	{name: "1 usage crosses the reminder threshold", fromPhase: fence.Ready,
		do: lcUsage(76000), resp: map[string]string{"due": `"reminder"`, "state.phase": `"READY"`},
		events: []string{evUsage}, phase: fence.Ready,
		state: map[string]string{"tokens_used": "76000", "reminder_due": "true"}},
	{name: "1 unknown usage makes nothing due", fromPhase: fence.Ready,
		do:   lcStep{path: "/v1/lifecycle/usage", body: map[string]any{"tokens_used": nil}},
		resp: map[string]string{"due": "null"}, events: []string{evUsage}, phase: fence.Ready,
		state: map[string]string{"tokens_used": "null"}},
	{name: "1 reminder is due only when first crossed", from: []lcStep{lcUsage(76000)}, fromPhase: fence.Ready,
		do: lcUsage(77000), resp: map[string]string{"due": "null"},
		events: []string{evUsage}, phase: fence.Ready},
	{name: "1 reminder delivered: REMINDED", from: []lcStep{lcUsage(76000)}, fromPhase: fence.Ready,
		do: lcDelivered(fence.KindReminder, "w1"), resp: map[string]string{"stale": "false"},
		events: []string{evDelivered}, phase: fence.Reminded,
		state: map[string]string{"reminder_delivered": "true"}},
	{name: "1 reminder delivered twice records one event", from: lcReminded, fromPhase: fence.Reminded,
		do: lcDelivered(fence.KindReminder, "w1"), events: []string{}, phase: fence.Reminded},
	{name: "1 guard: no reminder while new_context is pending", from: lcPending, fromPhase: fence.RolloverPending,
		do: lcUsage(76000), resp: map[string]string{"due": "null"},
		events: []string{evUsage}, phase: fence.RolloverPending},

	// Row 2: used ≥ hard_rollover_used_tokens → fallback queued with the hard latch.
	{name: "2 READY usage crosses the hard rollover", fromPhase: fence.Ready,
		do: lcUsage(96000), resp: map[string]string{"due": `"hard_rollover"`},
		events: []string{evUsage}, phase: fence.RolloverPending,
		state: map[string]string{"hard_rollover_latched": "true", "rollover_requested": "true"}},
	{name: "2 REMINDED usage crosses the hard rollover", from: lcReminded, fromPhase: fence.Reminded,
		do: lcUsage(96000), resp: map[string]string{"due": `"hard_rollover"`},
		events: []string{evUsage}, phase: fence.RolloverPending,
		state: map[string]string{"hard_rollover_latched": "true", "reminder_delivered": "true"}},
	{name: "2 fallback of the hard rollover delivered: FALLBACK_QUEUED", from: lcHardPending, fromPhase: fence.RolloverPending,
		do: lcDelivered(fence.KindFallback, "w1"), events: []string{evDelivered}, phase: fence.FallbackQueued,
		state: map[string]string{"fallback_delivered": "true", "rollover_requested": "true", "hard_rollover_latched": "true"}},
	{name: "2 guard: latched, nothing more is due", from: lcHardPending, fromPhase: fence.RolloverPending,
		do: lcUsage(97000), resp: map[string]string{"due": "null"},
		events: []string{evUsage}, phase: fence.RolloverPending,
		state: map[string]string{"hard_rollover_latched": "true"}},
	{name: "2 hysteresis: below 90% of the hard level unlatches", from: lcHardPending, fromPhase: fence.RolloverPending,
		do: lcUsage(85000), resp: map[string]string{"due": "null"},
		events: []string{evUsage}, phase: fence.RolloverPending,
		state: map[string]string{"hard_rollover_latched": "false"}},

	// Row 3: Pi's threshold compaction in READY with no reminder in the
	// branch. The host cancels the compaction (session_before_compact with
	// reason "threshold" in clients/pi-extension/src/index.ts) and
	// delivers the reminder, which memoryd records although no usage
	// report made it due.
	{name: "3 threshold compaction without a reminder: the reminder is delivered, REMINDED", fromPhase: fence.Ready,
		do: lcDelivered(fence.KindReminder, "w1"), resp: map[string]string{"stale": "false"},
		events: []string{evDelivered}, phase: fence.Reminded,
		state: map[string]string{"reminder_delivered": "true", "reminder_due": "false"}},
	{name: "3 the cancelled compaction's failure is ignored", from: []lcStep{lcDelivered(fence.KindReminder, "w1")}, fromPhase: fence.Reminded,
		do: lcFail(true), resp: map[string]string{"ignored": "true"}, events: []string{}, phase: fence.Reminded},

	// Row 4 (memoryd: the fallback is due at half the reminder threshold).
	{name: "4 REMINDED usage crosses the fallback threshold", from: lcReminded, fromPhase: fence.Reminded,
		do: lcUsage(88000), resp: map[string]string{"due": `"fallback"`},
		events: []string{evUsage}, phase: fence.Reminded,
		state: map[string]string{"fallback_due": "true"}},
	{name: "4 READY straight past both thresholds: fallback", fromPhase: fence.Ready,
		do: lcUsage(90000), resp: map[string]string{"due": `"fallback"`},
		events: []string{evUsage}, phase: fence.Ready,
		state: map[string]string{"fallback_due": "true", "reminder_due": "true"}},
	{name: "4 fallback delivered: FALLBACK_QUEUED", from: []lcStep{lcUsage(88000)}, fromPhase: fence.Ready,
		do: lcDelivered(fence.KindFallback, "w1"), resp: map[string]string{"stale": "false"},
		events: []string{evDelivered}, phase: fence.FallbackQueued,
		state: map[string]string{"fallback_delivered": "true", "fence_active": "false"}},
	{name: "4 fallback delivered twice records one event", from: lcFallbackQueued, fromPhase: fence.FallbackQueued,
		do: lcDelivered(fence.KindFallback, "w1"), events: []string{}, phase: fence.FallbackQueued},
	{name: "4 H44 a queued fallback blocks nothing", from: lcFallbackQueued, fromPhase: fence.FallbackQueued,
		do: lcTool("get_context_remaining", "t1", `{}`), resp: map[string]string{"details.remaining_tokens": "12000"},
		events: []string{}, phase: fence.FallbackQueued},

	// Row 5: the fallback enters the branch.
	{name: "5 fallback enters the branch: FENCED", from: lcFallbackQueued, fromPhase: fence.FallbackQueued,
		do: lcArm(fence.KindFallback, "w1"), resp: map[string]string{"stale": "false", "state.phase": `"FENCED"`},
		events: []string{evArmed}, phase: fence.Fenced,
		state: map[string]string{"fence_active": "true", "fence_kind": `"fallback"`, "fence_request_id": `"fallback-w1"`,
			"claim": lcAbsent, "checkpoint_saved": "false"}},
	{name: "5 the fallback arrives again: no event", from: lcFenced, fromPhase: fence.Fenced,
		do: lcArm(fence.KindFallback, "w1"), events: []string{}, phase: fence.Fenced},

	// Row 6: the fallback is missing from the branch at a compaction or
	// agent_settled. Finding it missing and re-sending it is host-side
	// (resendLostFallback, called on agent_settled, in
	// clients/pi-extension/src/index.ts); memoryd records no second
	// delivery, refuses every rollover but the overflow one while the
	// fallback is queued, and the re-sent fallback arms the fence when it
	// enters the branch (row 5).
	{name: "6 the lost fallback re-sent: no second delivery", from: lcFallbackQueued, fromPhase: fence.FallbackQueued,
		do: lcDelivered(fence.KindFallback, "w1"), resp: map[string]string{"stale": "false"},
		events: []string{}, phase: fence.FallbackQueued},
	{name: "6 no hard rollover while its fallback is queued", from: lcHardQueued, fromPhase: fence.FallbackQueued,
		do: lcPrepare(fence.ReasonHardRollover), status: http.StatusConflict,
		resp: map[string]string{"error.code": `"conflict"`}, events: []string{}, phase: fence.FallbackQueued,
		state: map[string]string{"rollover_requested": "true", "pending_window_id": lcAbsent}},
	{name: "6 no new_context rollover while a fallback is queued", from: lcSeq(lcPending, lcFallbackQueued), fromPhase: fence.FallbackQueued,
		do: lcPrepare(fence.ReasonNewContext), status: http.StatusConflict,
		resp: map[string]string{"error.code": `"conflict"`}, events: []string{}, phase: fence.FallbackQueued,
		state: map[string]string{"pending_new_context": "true"}},
	{name: "6 the re-sent fallback enters the branch: FENCED", from: lcSeq(lcFallbackQueued, []lcStep{lcDelivered(fence.KindFallback, "w1")}),
		fromPhase: fence.FallbackQueued, do: lcArm(fence.KindFallback, "w1"), events: []string{evArmed}, phase: fence.Fenced},

	// Stale control messages: another window's reminder or fallback does nothing.
	{name: "stale fallback of another window does not arm", from: lcFallbackQueued, fromPhase: fence.FallbackQueued,
		do: lcArm(fence.KindFallback, "w7"), resp: map[string]string{"stale": "true"},
		events: []string{}, phase: fence.FallbackQueued, state: map[string]string{"fence_active": "false"}},
	{name: "stale reminder delivery is ignored", fromPhase: fence.Ready,
		do: lcDelivered(fence.KindReminder, "w0"), resp: map[string]string{"stale": "true"},
		events: []string{}, phase: fence.Ready, state: map[string]string{"reminder_delivered": "false"}},
	{name: "stale fallback delivery is ignored", fromPhase: fence.Ready,
		do: lcDelivered(fence.KindFallback, "w3"), resp: map[string]string{"stale": "true"},
		events: []string{}, phase: fence.Ready, state: map[string]string{"fallback_delivered": "false"}},
	{name: "stale fallback of the closed window after a rollover", from: lcWindow2, fromPhase: fence.Ready,
		do: lcArm(fence.KindFallback, "w1"), resp: map[string]string{"stale": "true"},
		events: []string{}, phase: fence.Ready, state: map[string]string{"window_id": `"w2"`, "fence_active": "false"}},

	// Row 7: the one own-notes write takes the claim.
	{name: "7 FENCED own write admitted: FENCED_CLAIMED", from: lcFenced, fromPhase: fence.Fenced,
		do:     lcAdmit("c1", "notes_write_file", lcOwnWrite),
		resp:   map[string]string{"allow": "true", "terminate": "false", "reason": `""`},
		events: []string{evClaim}, phase: fence.FencedClaimed, state: map[string]string{"claim": `"c1"`}},
	{name: "7 FENCED own append by full path admitted", from: lcFenced, fromPhase: fence.Fenced,
		do: lcAdmit("c1", "notes_append_to_file", lcOwnAppend), resp: map[string]string{"allow": "true"},
		events: []string{evClaim}, phase: fence.FencedClaimed, state: map[string]string{"claim": `"c1"`}},
	{name: "7 the claimed call admitted again: no event", from: lcClaimed, fromPhase: fence.FencedClaimed,
		do: lcAdmit("c1", "notes_write_file", lcOwnWrite), resp: map[string]string{"allow": "true"},
		events: []string{}, phase: fence.FencedClaimed},
	{name: "7 admit without a call_id is refused", from: lcFenced, fromPhase: fence.Fenced,
		do: lcAdmit("", "notes_write_file", lcOwnWrite), status: http.StatusBadRequest,
		resp: map[string]string{"error.code": `"invalid_argument"`}, events: []string{}, phase: fence.Fenced},
	{name: "7 admit takes the call_id of the context", from: lcFenced, fromPhase: fence.Fenced,
		do:     lcStep{path: "/v1/lifecycle/admit", body: map[string]any{"tool_name": "notes_write_file", "arguments": json.RawMessage(lcOwnWrite)}, callID: "ctx1"},
		events: []string{evClaim}, phase: fence.FencedClaimed, state: map[string]string{"claim": `"ctx1"`}},
	{name: "7 READY admits everything without an event", fromPhase: fence.Ready,
		do: lcAdmit("b1", "bash", lcBash), resp: map[string]string{"allow": "true", "terminate": "false"},
		events: []string{}, phase: fence.Ready},

	// Row 8: everything else is blocked.
	{name: "8 FENCED bash blocked", from: lcFenced, fromPhase: fence.Fenced,
		do:     lcAdmit("b1", "bash", lcBash),
		resp:   map[string]string{"allow": "false", "terminate": "true", "reason": lcQuote(fence.ReasonCheckpointRequired)},
		events: []string{evBlocked}, phase: fence.Fenced, state: map[string]string{"claim": lcAbsent}},
	{name: "8 FENCED cross-agent write blocked, fence kept", from: lcFenced, fromPhase: fence.Fenced,
		do: lcAdmit("c2", "notes_write_file", lcCrossWrite), resp: map[string]string{"allow": "false", "terminate": "true"},
		events: []string{evBlocked}, phase: fence.Fenced, state: map[string]string{"fence_active": "true"}},
	{name: "8 FENCED_CLAIMED a second write blocked", from: lcClaimed, fromPhase: fence.FencedClaimed,
		do: lcAdmit("c2", "notes_append_to_file", lcOwnAppend), resp: map[string]string{"allow": "false", "terminate": "true"},
		events: []string{evBlocked}, phase: fence.FencedClaimed, state: map[string]string{"claim": `"c1"`}},
	{name: "8 FENCED get_context_remaining tool is fenced", from: lcFenced, fromPhase: fence.Fenced,
		do: lcTool("get_context_remaining", "t1", `{}`), status: http.StatusLocked,
		resp:   map[string]string{"error.code": `"fenced"`, "error.details.reason": lcQuote(fence.ReasonCheckpointRequired)},
		events: []string{}, phase: fence.Fenced},
	{name: "8 FENCED new_context tool is fenced", from: lcFenced, fromPhase: fence.Fenced,
		do: lcTool("new_context", "nc1", `{}`), status: http.StatusLocked,
		resp:   map[string]string{"error.code": `"fenced"`, "error.details.terminate": "true"},
		events: []string{}, phase: fence.Fenced, state: map[string]string{"pending_new_context": "false"}},
	{name: "8 FENCED notes_read_file tool is fenced", from: lcFenced, fromPhase: fence.Fenced,
		do: lcTool("notes_read_file", "r1", `{"path":"checkpoint.md"}`), status: http.StatusLocked,
		resp: map[string]string{"error.code": `"fenced"`}, events: []string{}, phase: fence.Fenced},
	{name: "8 FENCED cross-agent write tool is fenced", from: lcFenced, fromPhase: fence.Fenced,
		do: lcTool("notes_write_file", "c2", lcCrossWrite), status: http.StatusLocked,
		resp: map[string]string{"error.code": `"fenced"`}, events: []string{}, phase: fence.Fenced},
	{name: "8 FENCED_CLAIMED another call's write tool is fenced", from: lcClaimed, fromPhase: fence.FencedClaimed,
		do: lcTool("notes_write_file", "c2", lcOwnWrite), status: http.StatusLocked,
		resp: map[string]string{"error.code": `"fenced"`}, events: []string{}, phase: fence.FencedClaimed},

	// Row 9: a claimed call that failed releases the claim.
	{name: "9 FENCED_CLAIMED failed result releases the claim", from: lcClaimed, fromPhase: fence.FencedClaimed,
		do: lcToolResult("c1", true), events: []string{evRelease}, phase: fence.Fenced,
		state: map[string]string{"claim": lcAbsent, "fence_active": "true"}},
	{name: "9 a successful result keeps the claim", from: lcClaimed, fromPhase: fence.FencedClaimed,
		do: lcToolResult("c1", false), events: []string{}, phase: fence.FencedClaimed},
	{name: "9 another call's failure keeps the claim", from: lcClaimed, fromPhase: fence.FencedClaimed,
		do: lcToolResult("c9", true), events: []string{}, phase: fence.FencedClaimed},
	{name: "9 the admitted write fails (bad path): nothing recorded", from: lcClaimed, fromPhase: fence.FencedClaimed,
		do: lcTool("notes_write_file", "c1", lcBadPath), status: http.StatusBadRequest,
		resp: map[string]string{"error.code": `"invalid_argument"`}, events: []string{}, phase: fence.FencedClaimed},
	{name: "9 after the release a corrected write saves the checkpoint",
		from:      lcSeq(lcClaimed, []lcStep{lcToolResult("c1", true), lcAdmit("c2", "notes_write_file", lcOwnWrite)}),
		fromPhase: fence.FencedClaimed,
		do:        lcTool("notes_write_file", "c2", lcOwnWrite), resp: map[string]string{"terminate": "true"},
		events: []string{events.TypeNoteWritten, evSaved}, phase: fence.CheckpointSaved},

	// Row 10: the admitted write succeeds.
	{name: "10 FENCED_CLAIMED write succeeds: CHECKPOINT_SAVED", from: lcClaimed, fromPhase: fence.FencedClaimed,
		do:     lcTool("notes_write_file", "c1", lcOwnWrite),
		resp:   map[string]string{"terminate": "true", "details.path": `"/root/notes/checkpoint.md"`, "details.created": "true"},
		events: []string{events.TypeNoteWritten, evSaved}, phase: fence.CheckpointSaved,
		state: map[string]string{"checkpoint_saved": "true", "pending_new_context": "true", "claim": lcAbsent,
			"checkpoint_call_id": `"c1"`, "fence_active": "true"}},
	{name: "10 FENCED write without admit takes the free claim", from: lcFenced, fromPhase: fence.Fenced,
		do: lcTool("notes_append_to_file", "c5", lcOwnAppend), resp: map[string]string{"terminate": "true"},
		events: []string{events.TypeNoteAppended, evSaved}, phase: fence.CheckpointSaved,
		state: map[string]string{"checkpoint_call_id": `"c5"`}},
	{name: "10 the checkpoint write retried: same answer, no event", from: lcSaved, fromPhase: fence.CheckpointSaved,
		do: lcTool("notes_write_file", "c1", lcOwnWrite), resp: map[string]string{"terminate": "true", "details.revision": "1"},
		events: []string{}, phase: fence.CheckpointSaved},
	{name: "10 CHECKPOINT_SAVED blocks every admit", from: lcSaved, fromPhase: fence.CheckpointSaved,
		do:     lcAdmit("c2", "notes_write_file", lcOwnWrite),
		resp:   map[string]string{"allow": "false", "terminate": "true", "reason": lcQuote(fence.ReasonCheckpointSaved)},
		events: []string{evBlocked}, phase: fence.CheckpointSaved},
	{name: "10 CHECKPOINT_SAVED new_context tool is fenced", from: lcSaved, fromPhase: fence.CheckpointSaved,
		do: lcTool("new_context", "nc1", `{}`), status: http.StatusLocked,
		resp:   map[string]string{"error.details.reason": lcQuote(fence.ReasonCheckpointSaved)},
		events: []string{}, phase: fence.CheckpointSaved},

	// Row 11: agent_settled or a threshold compaction while fenced and
	// unsaved: no compaction. The host does not prepare one (dueRollover)
	// and cancels Pi's (session_before_compact); memoryd refuses to
	// prepare one and ignores the cancelled attempt's failure.
	{name: "11 FENCED: no rollover is prepared", from: lcFenced, fromPhase: fence.Fenced,
		do: lcPrepare(fence.ReasonFallback), status: http.StatusConflict,
		resp: map[string]string{"error.code": `"conflict"`}, events: []string{}, phase: fence.Fenced},
	{name: "11 FENCED_CLAIMED after a hard crossing: no rollover is prepared",
		from:      lcSeq(lcHardQueued, []lcStep{lcArm(fence.KindFallback, "w1"), lcAdmit("c1", "notes_write_file", lcOwnWrite)}),
		fromPhase: fence.FencedClaimed, do: lcPrepare(fence.ReasonHardRollover), status: http.StatusConflict,
		resp: map[string]string{"error.code": `"conflict"`}, events: []string{}, phase: fence.FencedClaimed,
		state: map[string]string{"claim": `"c1"`}},
	{name: "11 the cancelled compaction's failure is ignored", from: lcClaimed, fromPhase: fence.FencedClaimed,
		do: lcFail(false), resp: map[string]string{"ignored": "true"}, events: []string{}, phase: fence.FencedClaimed,
		state: map[string]string{"claim": `"c1"`, "fence_active": "true"}},

	// Row 13: new_context.
	{name: "13 READY new_context: ROLLOVER_PENDING", fromPhase: fence.Ready,
		do:     lcTool("new_context", "nc1", `{}`),
		resp:   map[string]string{"terminate": "true", "details": `{"pending":true,"window_id":"w1"}`},
		events: []string{evNewContext}, phase: fence.RolloverPending,
		state: map[string]string{"pending_new_context": "true"}},
	{name: "13 REMINDED new_context: ROLLOVER_PENDING", from: lcReminded, fromPhase: fence.Reminded,
		do: lcTool("new_context", "nc1", `{}`), resp: map[string]string{"terminate": "true"},
		events: []string{evNewContext}, phase: fence.RolloverPending},
	{name: "13 new_context again is idempotent", from: lcPending, fromPhase: fence.RolloverPending,
		do:     lcTool("new_context", "nc2", `{}`),
		resp:   map[string]string{"terminate": "true", "details": `{"pending":true,"window_id":"w1"}`},
		events: []string{}, phase: fence.RolloverPending},

	// Rows 14 and 12: the settled boundary prepares the next window.
	{name: "14 ROLLOVER_PENDING prepare: ROLLING_OVER", from: lcPending, fromPhase: fence.RolloverPending,
		do:   lcPrepare(fence.ReasonNewContext),
		resp: map[string]string{"window_id": `"w2"`, "previous_window_id": `"w1"`},
		check: func(tb testing.TB, resp map[string]any) {
			b, _ := resp["bootstrap"].(string)
			if !strings.HasPrefix(b, "<context_window_reset/>\n") || !strings.Contains(b, "Current context window id: w2\n") ||
				!strings.Contains(b, "Previous context window id: w1\n") {
				tb.Errorf("bootstrap:\n%s", b)
			}
		},
		events: []string{evPrepared}, phase: fence.RollingOver,
		state: map[string]string{"pending_window_id": `"w2"`, "pending_reason": `"new_context"`, "window_id": `"w1"`}},
	{name: "14 prepare again with the same reason is idempotent", from: lcRollingNC, fromPhase: fence.RollingOver,
		do: lcPrepare(fence.ReasonNewContext), resp: map[string]string{"window_id": `"w2"`},
		events: []string{}, phase: fence.RollingOver},
	{name: "14 hard rollover pending prepare: ROLLING_OVER", from: lcHardPending, fromPhase: fence.RolloverPending,
		do: lcPrepare(fence.ReasonHardRollover), resp: map[string]string{"window_id": `"w2"`},
		events: []string{evPrepared}, phase: fence.RollingOver},
	{name: "12 CHECKPOINT_SAVED prepare: ROLLING_OVER", from: lcSaved, fromPhase: fence.CheckpointSaved,
		do: lcPrepare(fence.ReasonFallback), resp: map[string]string{"window_id": `"w2"`},
		events: []string{evPrepared}, phase: fence.RollingOver,
		state: map[string]string{"pending_reason": `"fallback"`, "checkpoint_saved": "true"}},

	// Row 15: the new window goes live.
	{name: "15 ROLLING_OVER commit: READY in w2", from: lcRollingNC, fromPhase: fence.RollingOver,
		do:     lcCommit("w2"),
		resp:   map[string]string{"window_id": `"w2"`, "previous_window_id": `"w1"`},
		events: []string{evCommitted}, phase: fence.Ready,
		state: map[string]string{"window_id": `"w2"`, "window_number": "2", "previous_window_id": `"w1"`,
			"pending_new_context": "false", "pending_window_id": lcAbsent, "tokens_used": "null"}},
	{name: "15 commit resets flags, fence, claim and saved; keeps the hard latch",
		from: lcSeq(lcHardQueued, []lcStep{lcArm(fence.KindFallback, "w1"), lcTool("notes_write_file", "c1", lcOwnWrite),
			lcPrepare(fence.ReasonHardRollover)}),
		fromPhase: fence.RollingOver,
		do:        lcCommit("w2"), events: []string{evCommitted}, phase: fence.Ready,
		state: map[string]string{"window_id": `"w2"`, "fence_active": "false", "fence_kind": lcAbsent, "claim": lcAbsent,
			"checkpoint_saved": "false", "checkpoint_call_id": lcAbsent, "pending_new_context": "false", "rollover_requested": "false",
			"reminder_due": "false", "fallback_due": "false", "reminder_delivered": "false", "fallback_delivered": "false",
			"hard_rollover_latched": "true"}},
	{name: "15 one-shot flags are per window: the reminder is due again", from: lcSeq(lcReminded, lcRollingNC, []lcStep{lcCommit("w2")}),
		fromPhase: fence.Ready, do: lcUsage(76000), resp: map[string]string{"due": `"reminder"`},
		events: []string{evUsage}, phase: fence.Ready},

	// Row 16: a real compaction failure.
	{name: "16 fallback rollover refused: the fence is lifted", from: lcRollingFB, fromPhase: fence.RollingOver,
		do: lcFail(false), resp: map[string]string{"ignored": "false", "state.threshold_due": `"fallback"`},
		events: []string{evFailed, evLifted}, phase: fence.Ready,
		state: map[string]string{"fence_active": "false", "checkpoint_saved": "false", "pending_new_context": "false",
			"claim": lcAbsent, "pending_window_id": lcAbsent, "checkpoint_call_id": lcAbsent, "fallback_delivered": "false"}},
	{name: "16 after the refusal tools are open", from: lcSeq(lcRollingFB, []lcStep{lcFail(false)}),
		fromPhase: fence.Ready, do: lcTool("history_list_windows", "c7", `{}`), events: []string{}, phase: fence.Ready},
	{name: "16 new_context rollover fails: READY, request cleared", from: lcRollingNC, fromPhase: fence.RollingOver,
		do: lcFail(false), events: []string{evFailed}, phase: fence.Ready,
		state: map[string]string{"pending_new_context": "false", "window_id": `"w1"`}},
	{name: "16 hard rollover fails: request cleared, latch kept", from: lcRollingHard, fromPhase: fence.RollingOver,
		do: lcFail(false), events: []string{evFailed}, phase: fence.Ready,
		state: map[string]string{"rollover_requested": "false", "hard_rollover_latched": "true"}},

	// Row 17: our own cancel keeps the intent.
	{name: "17 aborted new_context rollover keeps the request", from: lcRollingNC, fromPhase: fence.RollingOver,
		do: lcFail(true), events: []string{evFailed}, phase: fence.RolloverPending,
		state: map[string]string{"pending_new_context": "true", "pending_window_id": lcAbsent}},
	{name: "17 aborted fallback rollover keeps the saved checkpoint", from: lcRollingFB, fromPhase: fence.RollingOver,
		do: lcFail(true), events: []string{evFailed}, phase: fence.CheckpointSaved,
		state: map[string]string{"checkpoint_saved": "true", "pending_new_context": "true"}},
	{name: "17 aborted hard rollover keeps the request", from: lcRollingHard, fromPhase: fence.RollingOver,
		do: lcFail(true), events: []string{evFailed}, phase: fence.RolloverPending,
		state: map[string]string{"rollover_requested": "true"}},
	{name: "17 a failure with nothing prepared is ignored", from: lcPending, fromPhase: fence.RolloverPending,
		do: lcFail(false), resp: map[string]string{"ignored": "true"}, events: []string{}, phase: fence.RolloverPending,
		state: map[string]string{"pending_new_context": "true"}},

	// Row 18: manual /compact.
	{name: "18 READY manual request: MANUAL_AWAITING", fromPhase: fence.Ready,
		do: lcManual(fence.ActionRequest, "m1"), events: []string{evManual}, phase: fence.ManualAwaiting,
		state: map[string]string{"manual": `{"request_id":"m1","window_id":"w1","phase":"awaiting"}`, "fence_active": "false"}},
	{name: "18 not gated by the budget: REMINDED manual request", from: lcReminded, fromPhase: fence.Reminded,
		do: lcManual(fence.ActionRequest, "m1"), events: []string{evManual}, phase: fence.ManualAwaiting},
	{name: "18 duplicate /compact commands merge", from: lcManualQueued, fromPhase: fence.ManualAwaiting,
		do: lcManual(fence.ActionRequest, "m2"), events: []string{}, phase: fence.ManualAwaiting,
		state: map[string]string{"manual.request_id": `"m1"`}},
	{name: "18 manual checkpoint prompt delivered", from: lcManualQueued, fromPhase: fence.ManualAwaiting,
		do: lcDelivered(fence.KindManualCheckpoint, "w1"), events: []string{evDelivered}, phase: fence.ManualAwaiting,
		state: map[string]string{"fence_active": "false"}},
	{name: "18 manual checkpoint prompt enters the branch: fenced",
		from: lcSeq(lcManualQueued, []lcStep{lcDelivered(fence.KindManualCheckpoint, "w1")}), fromPhase: fence.ManualAwaiting,
		do: lcArm(fence.KindManualCheckpoint, "w1"), events: []string{evArmed}, phase: fence.ManualAwaiting,
		state: map[string]string{"fence_active": "true", "fence_kind": `"manual_checkpoint"`}},
	{name: "18 MANUAL_AWAITING is fenced like FENCED", from: lcManualAwaiting, fromPhase: fence.ManualAwaiting,
		do: lcAdmit("b1", "bash", lcBash), resp: map[string]string{"allow": "false", "reason": lcQuote(fence.ReasonCheckpointRequired)},
		events: []string{evBlocked}, phase: fence.ManualAwaiting},

	// Row 19: the manual checkpoint is saved.
	{name: "19 MANUAL_AWAITING own write: MANUAL_SAVED", from: lcManualAwaiting, fromPhase: fence.ManualAwaiting,
		do: lcTool("notes_write_file", "c1", lcOwnWrite), resp: map[string]string{"terminate": "true"},
		events: []string{events.TypeNoteWritten, evSaved}, phase: fence.ManualSaved,
		state: map[string]string{"manual.phase": `"saved"`, "pending_new_context": "false", "checkpoint_saved": "false"}},
	{name: "19 host reports the manual checkpoint saved", from: lcManualAwaiting, fromPhase: fence.ManualAwaiting,
		do: lcManual(fence.ActionSaved, "m1"), events: []string{evManualStep}, phase: fence.ManualSaved,
		state: map[string]string{"manual.phase": `"saved"`}},
	{name: "19 saved reported twice: no event", from: lcManualSaved, fromPhase: fence.ManualSaved,
		do: lcManual(fence.ActionSaved, "m1"), events: []string{}, phase: fence.ManualSaved},
	{name: "19 MANUAL_SAVED blocks everything", from: lcManualSaved, fromPhase: fence.ManualSaved,
		do: lcAdmit("c2", "notes_write_file", lcOwnWrite), resp: map[string]string{"allow": "false", "reason": lcQuote(fence.ReasonCheckpointSaved)},
		events: []string{evBlocked}, phase: fence.ManualSaved},

	// Row 20: the same compaction builds the new window.
	{name: "20 MANUAL_SAVED compacting: MANUAL_COMPACTING", from: lcManualSaved, fromPhase: fence.ManualSaved,
		do: lcManual(fence.ActionCompacting, "m1"), events: []string{evManualStep}, phase: fence.ManualCompacting,
		state: map[string]string{"manual.phase": `"compacting"`}},
	{name: "20 MANUAL_COMPACTING prepare", from: lcManualCompacting, fromPhase: fence.ManualCompacting,
		do: lcPrepare(fence.ReasonManual), resp: map[string]string{"window_id": `"w2"`},
		events: []string{evPrepared}, phase: fence.ManualCompacting, state: map[string]string{"pending_window_id": `"w2"`}},
	{name: "20 MANUAL_SAVED prepare: ROLLING_OVER", from: lcManualSaved, fromPhase: fence.ManualSaved,
		do: lcPrepare(fence.ReasonManual), events: []string{evPrepared}, phase: fence.RollingOver},
	{name: "20 manual commit: READY in w2", from: lcManualRolling, fromPhase: fence.ManualCompacting,
		do: lcCommit("w2"), events: []string{evCommitted}, phase: fence.Ready,
		state: map[string]string{"window_id": `"w2"`, "manual": lcAbsent, "fence_active": "false", "pending_new_context": "false"}},

	// Rows 21 and 22: the manual checkpoint is cancelled.
	{name: "21 MANUAL_AWAITING cancel: back to the previous state", from: lcSeq(lcReminded, lcManualAwaiting),
		fromPhase: fence.ManualAwaiting, do: lcManual(fence.ActionCancel, "m1"), events: []string{evCancelled},
		phase: fence.Reminded, state: map[string]string{"manual": lcAbsent, "fence_active": "false", "window_id": `"w1"`}},

	// Row 22: the checkpoint turn ends without a save. The host reports it
	// as a cancel; the Pi extension does not detect it yet (it never sends
	// action "cancel"), and an ordinary user message (user-input) ends the
	// awaited checkpoint the same way.
	{name: "22 the checkpoint turn ends without a save: back to the previous state",
		from: lcSeq(lcFallbackQueued, lcManualAwaiting), fromPhase: fence.ManualAwaiting,
		do: lcManual(fence.ActionCancel, "m1"), events: []string{evCancelled}, phase: fence.FallbackQueued,
		state: map[string]string{"manual": lcAbsent, "fence_active": "false", "fallback_delivered": "true", "window_id": `"w1"`}},
	{name: "22 a user message after the turn: back to the previous state", from: lcSeq(lcReminded, lcManualAwaiting),
		fromPhase: fence.ManualAwaiting, do: lcUserInput(), resp: map[string]string{"ignored": "false"},
		events: []string{evUser}, phase: fence.Reminded, state: map[string]string{"manual": lcAbsent, "fence_active": "false"}},

	// A manual /compact while the fallback's fence is active (the host asks
	// for a manual checkpoint when FENCED): one fence, one claim, one
	// checkpoint, and the fallback's fence outlives a cancelled manual one.
	{name: "18 FENCED_CLAIMED /compact: the manual prompt in the branch keeps the fence and its claim",
		from:      lcSeq(lcClaimed, lcManualQueued, []lcStep{lcDelivered(fence.KindManualCheckpoint, "w1")}),
		fromPhase: fence.ManualAwaiting, do: lcArm(fence.KindManualCheckpoint, "w1"), events: []string{}, phase: fence.ManualAwaiting,
		state: map[string]string{"claim": `"c1"`, "fence_kind": `"fallback"`}},
	{name: "19 FENCED_CLAIMED /compact: the claimed write saves the manual checkpoint",
		from:      lcSeq(lcClaimed, lcManualQueued, []lcStep{lcArm(fence.KindManualCheckpoint, "w1")}),
		fromPhase: fence.ManualAwaiting, do: lcTool("notes_write_file", "c1", lcOwnWrite), resp: map[string]string{"terminate": "true"},
		events: []string{events.TypeNoteWritten, evSaved}, phase: fence.ManualSaved},
	{name: "21 FENCED /compact cancelled: FENCED again", from: lcSeq(lcFenced, lcManualAwaiting), fromPhase: fence.ManualAwaiting,
		do: lcManual(fence.ActionCancel, "m1"), events: []string{evCancelled}, phase: fence.Fenced,
		state: map[string]string{"fence_kind": `"fallback"`, "manual": lcAbsent}},
	{name: "5 the fallback enters the branch during a claimed manual checkpoint: the claim is kept",
		from: lcSeq(lcManualAwaiting, []lcStep{lcAdmit("c1", "notes_write_file", lcOwnWrite)}), fromPhase: fence.ManualAwaiting,
		do: lcArm(fence.KindFallback, "w1"), events: []string{evArmed}, phase: fence.ManualAwaiting,
		state: map[string]string{"claim": `"c1"`, "fence_kind": `"fallback"`}},
	{name: "18 CHECKPOINT_SAVED /compact reuses the saved checkpoint", from: lcSaved, fromPhase: fence.CheckpointSaved,
		do: lcManual(fence.ActionRequest, "m1"), events: []string{evManual}, phase: fence.ManualSaved,
		state: map[string]string{"manual.phase": `"saved"`, "checkpoint_saved": "true"}},

	// Row 23: nested compactions during a manual checkpoint.
	{name: "23 MANUAL_AWAITING nested failure ignored", from: lcManualAwaiting, fromPhase: fence.ManualAwaiting,
		do: lcFail(false), resp: map[string]string{"ignored": "true"}, events: []string{}, phase: fence.ManualAwaiting},
	{name: "23 MANUAL_SAVED nested failure does not reset the saved note", from: lcManualSaved, fromPhase: fence.ManualSaved,
		do: lcFail(false), resp: map[string]string{"ignored": "true"}, events: []string{}, phase: fence.ManualSaved,
		state: map[string]string{"manual.phase": `"saved"`}},

	// Row 24: the manual compaction fails: the checkpoint is reusable.
	{name: "24 MANUAL_SAVED compaction fails: SAVED_REUSABLE (READY)",
		from: lcSeq(lcManualSaved, []lcStep{lcPrepare(fence.ReasonManual)}), fromPhase: fence.RollingOver,
		do: lcFail(false), events: []string{evFailed}, phase: fence.Ready,
		state: map[string]string{"manual.phase": `"reusable"`, "fence_active": "false", "pending_window_id": lcAbsent}},
	{name: "24 the next /compact reuses the saved checkpoint", from: lcReusable, fromPhase: fence.Ready,
		do: lcManual(fence.ActionRequest, "m2"), events: []string{evManual}, phase: fence.ManualSaved,
		state: map[string]string{"manual": `{"request_id":"m2","window_id":"w1","phase":"saved"}`}},

	// Row 25: an ordinary user message invalidates the checkpoint.
	{name: "25 SAVED_REUSABLE user message: READY", from: lcReusable, fromPhase: fence.Ready,
		do: lcUserInput(), resp: map[string]string{"ignored": "false"}, events: []string{evUser}, phase: fence.Ready,
		state: map[string]string{"manual": lcAbsent}},
	{name: "25 MANUAL_SAVED user message: READY, tools reopen", from: lcManualSaved, fromPhase: fence.ManualSaved,
		do: lcUserInput(), events: []string{evUser}, phase: fence.Ready,
		state: map[string]string{"manual": lcAbsent, "fence_active": "false"}},
	{name: "25 user message with nothing to invalidate: no event", from: lcFenced, fromPhase: fence.Fenced,
		do: lcUserInput(), resp: map[string]string{"ignored": "true"}, events: []string{}, phase: fence.Fenced},

	// Row 26: an emergency overflow rollover.
	{name: "26 FENCED overflow: ROLLING_OVER", from: lcFenced, fromPhase: fence.Fenced,
		do: lcPrepare(fence.ReasonOverflow), resp: map[string]string{"window_id": `"w2"`},
		events: []string{evPrepared}, phase: fence.RollingOver, state: map[string]string{"pending_reason": `"overflow"`}},
	{name: "26 READY overflow: ROLLING_OVER", fromPhase: fence.Ready,
		do: lcPrepare(fence.ReasonOverflow), events: []string{evPrepared}, phase: fence.RollingOver},
	{name: "26 overflow commit: READY, fence reset", from: lcSeq(lcFenced, []lcStep{lcPrepare(fence.ReasonOverflow)}),
		fromPhase: fence.RollingOver, do: lcCommit("w2"), events: []string{evCommitted}, phase: fence.Ready,
		state: map[string]string{"window_id": `"w2"`, "fence_active": "false", "fallback_delivered": "false"}},

	// Row 29: the host moved to another branch (Pi's /tree).
	{name: "29 branch without the fallback, below its threshold: lifted", from: lcFenced, fromPhase: fence.Fenced,
		do: lcBranch(50000, false), resp: map[string]string{"due": "null", "state.phase": `"READY"`},
		events: []string{evLifted}, phase: fence.Ready, state: map[string]string{"fence_active": "false", "fallback_due": "false"}},
	{name: "29 branch without the fallback, above its threshold: delivered again", from: lcClaimed, fromPhase: fence.FencedClaimed,
		do: lcBranch(90000, false), resp: map[string]string{"due": `"fallback"`}, events: []string{}, phase: fence.FencedClaimed},
	{name: "29 branch with the fallback: unchanged", from: lcFenced, fromPhase: fence.Fenced,
		do: lcBranch(50000, true), resp: map[string]string{"due": "null"}, events: []string{}, phase: fence.Fenced},
	{name: "29 checkpoint saved: unchanged", from: lcSaved, fromPhase: fence.CheckpointSaved,
		do: lcBranch(50000, false), resp: map[string]string{"due": "null", "state.rollover_due": `"fallback"`},
		events: []string{}, phase: fence.CheckpointSaved},
	{name: "29 negative usage is refused", from: lcFenced, fromPhase: fence.Fenced,
		do: lcBranch(-1, false), status: 400, events: []string{}, phase: fence.Fenced},

	// Row 27 (session_shutdown) is host-side: the Pi extension's
	// session_shutdown handler (clients/pi-extension/src/index.ts) forgets
	// its prepared rollover and claimed calls. memoryd has no route for it
	// and keeps the agent's state, a projection of the log, across a
	// shutdown and a restart (TestLifecycleRow28Restart).
}

func TestLifecycleTransitions(t *testing.T) {
	s := lcOpen(t, filepath.Join(t.TempDir(), "memory.db"), memory.OpenOptions{})
	for i, row := range lcRows {
		t.Run(row.name, func(t *testing.T) {
			a := s.attach(t, fmt.Sprintf("/sessions/transition-%d.jsonl", i))
			a.mustRun(t, row.from...)
			if got := a.state(t)["phase"]; got != row.fromPhase {
				t.Fatalf("setup reached %v, want %s", got, row.fromPhase)
			}
			before := s.position(t)
			code, res := a.run(t, row.do)
			want := row.status
			if want == 0 {
				want = http.StatusOK
			}
			if code != want {
				t.Fatalf("%s: status %d, want %d; body %v", row.do, code, want, res)
			}
			lcCheckFields(t, "response", res, row.resp)
			if row.check != nil {
				row.check(t, res)
			}
			if got := a.eventTypes(t, before); !slices.Equal(got, row.events) {
				t.Errorf("events %v, want %v", got, row.events)
			}
			st := a.state(t)
			if st["phase"] != row.phase {
				t.Errorf("phase %v, want %s; state %v", st["phase"], row.phase, st)
			}
			lcCheckFields(t, "state", st, row.state)
			if rs, ok := res["state"].(map[string]any); ok && code == http.StatusOK {
				// A lifecycle response carries the new state, the same as GET /v1/state.
				if !slices.Equal(lcKeys(rs), lcKeys(st)) || fmt.Sprint(rs) != fmt.Sprint(st) {
					t.Errorf("response state %v\n differs from GET /v1/state %v", rs, st)
				}
			}
		})
	}
}

func lcKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestLifecycleRow28Restart: row 28 — the fence of the current window
// survives a restart of the server (it is a projection of the log), and
// the host re-deriving it from the branch at session_start records nothing.
func TestLifecycleRow28Restart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "memory.db")
	s := lcOpen(t, db, memory.OpenOptions{})
	a := s.attach(t, "/sessions/restart.jsonl")
	a.mustRun(t, lcSeq(lcPending, lcClaimed)...)
	before := a.rawState(t)
	pos := s.position(t)
	s.close()

	s2 := lcOpen(t, db, memory.OpenOptions{})
	a.s = s2
	if got := a.rawState(t); got != before {
		t.Fatalf("state after restart:\n%s\nwant\n%s", got, before)
	}
	if got := a.state(t)["phase"]; got != fence.FencedClaimed {
		t.Fatalf("phase %v, want FENCED_CLAIMED", got)
	}
	a.mustRun(t, lcArm(fence.KindFallback, "w1"), lcAdmit("c1", "notes_write_file", lcOwnWrite))
	if got := s2.position(t); got != pos {
		t.Errorf("re-deriving the fence recorded %v", a.eventTypes(t, pos))
	}
	code, res := a.run(t, lcAdmit("c2", "notes_write_file", lcOwnWrite))
	if code != http.StatusOK {
		t.Fatalf("admit: %d %v", code, res)
	}
	lcCheckFields(t, "second write after restart", res, map[string]string{"allow": "false", "terminate": "true"})
}
