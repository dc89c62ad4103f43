package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/tools"
)

// The acceptance edge cases (docs/behaviour.md §H.40–54), through the
// Service methods behind the lifecycle routes and the tools.

var fcCtx = context.Background()

// fcBudget: a 100000-token window (reminder due at 76000 used, fallback at
// 88000) with the hard rollover at 95000 used.
func fcBudget() *BudgetInput {
	w, hard := int64(100000), int64(95000)
	return &BudgetInput{ContextWindow: &w, HardRolloverUsedTokens: &hard}
}

// fcAttach attaches a new root session with a budget.
func fcAttach(tb testing.TB, s *Service, sessionKey string, b *BudgetInput) CallContext {
	tb.Helper()
	res, err := s.Attach(fcCtx, AttachRequest{SessionKey: sessionKey, Budget: b}, "")
	if err != nil {
		tb.Fatalf("attach %s: %v", sessionKey, err)
	}
	return CallContext{TaskID: res.TaskID, Agent: res.Agent}
}

func fcOK(tb testing.TB, what string, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

// fcTool calls a tool as the call callID.
func fcTool(s *Service, cc CallContext, callID, tool, args string) (ToolResult, error) {
	cc.CallID = callID
	return s.CallTool(fcCtx, tool, cc, json.RawMessage(args), "")
}

func fcMustTool(tb testing.TB, s *Service, cc CallContext, callID, tool, args string) ToolResult {
	tb.Helper()
	res, err := fcTool(s, cc, callID, tool, args)
	fcOK(tb, tool+" "+args, err)
	return res
}

// fcWantFenced asserts a tool error of the fence with its reason and
// terminate:true in the details.
func fcWantFenced(tb testing.TB, what string, err error, reason string) {
	tb.Helper()
	var e *Error
	if !errors.Is(err, ErrFenced) || !errors.As(err, &e) {
		tb.Fatalf("%s: error %v, want fenced", what, err)
	}
	if e.Details["reason"] != reason || e.Details["terminate"] != true {
		tb.Errorf("%s: details %v, want reason %q and terminate true", what, e.Details, reason)
	}
}

func fcState(tb testing.TB, s *Service, cc CallContext) StateView {
	tb.Helper()
	sv, err := s.State(fcCtx, cc)
	fcOK(tb, "state", err)
	return sv
}

func fcPhase(tb testing.TB, s *Service, cc CallContext, want string) StateView {
	tb.Helper()
	sv := fcState(tb, s, cc)
	if sv.Phase != want {
		tb.Fatalf("phase %s, want %s; state %+v", sv.Phase, want, sv)
	}
	return sv
}

func fcPos(tb testing.TB, s *Service) int64 {
	tb.Helper()
	p, err := s.Store().LastPosition(fcCtx)
	fcOK(tb, "position", err)
	return p
}

// fcTypes returns the types of a task's events after a position.
func fcTypes(tb testing.TB, s *Service, taskID string, after int64) []string {
	tb.Helper()
	evs, err := s.Store().Read(fcCtx, eventlog.Filter{After: after, TaskID: taskID, Limit: 10000})
	fcOK(tb, "read events", err)
	types := []string{}
	for _, e := range evs {
		types = append(types, e.Type)
	}
	return types
}

func fcCount(types []string, typ string) int {
	n := 0
	for _, t := range types {
		if t == typ {
			n++
		}
	}
	return n
}

func fcUsage(tb testing.TB, s *Service, cc CallContext, used int64) *string {
	tb.Helper()
	res, err := s.ReportUsage(fcCtx, cc, &used, nil, "")
	fcOK(tb, fmt.Sprintf("usage %d", used), err)
	return res.Due
}

func fcDeliver(tb testing.TB, s *Service, cc CallContext, kind, window string) LifecycleResult {
	tb.Helper()
	res, err := s.Delivered(fcCtx, cc, kind, window, kind+"-"+window, "")
	fcOK(tb, "delivered "+kind, err)
	return res
}

func fcArm(tb testing.TB, s *Service, cc CallContext, kind, window string) LifecycleResult {
	tb.Helper()
	res, err := s.Arm(fcCtx, cc, kind, window, kind+"-"+window, "")
	fcOK(tb, "arm "+kind, err)
	return res
}

func fcAdmit(tb testing.TB, s *Service, cc CallContext, callID, tool, args string) LifecycleResult {
	tb.Helper()
	res, err := s.Admit(fcCtx, cc, callID, tool, json.RawMessage(args), "")
	fcOK(tb, "admit "+tool, err)
	return res
}

func fcAllowed(res LifecycleResult) bool { return res.Allow != nil && *res.Allow }

func fcTerminates(res LifecycleResult) bool { return res.Terminate != nil && *res.Terminate }

// fcFence brings a new agent to FENCED through the fallback path.
func fcFence(tb testing.TB, s *Service, cc CallContext) {
	tb.Helper()
	if due := fcUsage(tb, s, cc, 88000); due == nil || *due != fence.DueFallback {
		tb.Fatalf("usage 88000: due %v, want fallback", due)
	}
	fcDeliver(tb, s, cc, fence.KindFallback, "w1")
	fcArm(tb, s, cc, fence.KindFallback, "w1")
	fcPhase(tb, s, cc, fence.Fenced)
}

func fcPrepare(tb testing.TB, s *Service, cc CallContext, reason string) LifecycleResult {
	tb.Helper()
	res, err := s.PrepareRollover(fcCtx, cc, reason, "")
	fcOK(tb, "prepare "+reason, err)
	return res
}

func fcCommit(tb testing.TB, s *Service, cc CallContext, window string) {
	tb.Helper()
	_, err := s.CommitRollover(fcCtx, cc, window, "compaction-"+window, "")
	fcOK(tb, "commit "+window, err)
}

func fcManual(tb testing.TB, s *Service, cc CallContext, action, requestID string) {
	tb.Helper()
	_, err := s.Manual(fcCtx, cc, action, requestID, "")
	fcOK(tb, "manual "+action, err)
}

// fcManualAwaiting brings a new agent to MANUAL_AWAITING with the manual
// checkpoint prompt in the branch (fenced).
func fcManualAwaiting(tb testing.TB, s *Service, cc CallContext) {
	tb.Helper()
	fcManual(tb, s, cc, fence.ActionRequest, "m1")
	fcDeliver(tb, s, cc, fence.KindManualCheckpoint, "w1")
	fcArm(tb, s, cc, fence.KindManualCheckpoint, "w1")
	if sv := fcPhase(tb, s, cc, fence.ManualAwaiting); !sv.FenceActive {
		tb.Fatalf("manual checkpoint armed but the fence is off: %+v", sv)
	}
}

func fcWantConflict(tb testing.TB, what string, err error, phase string) {
	tb.Helper()
	if !errors.Is(err, ErrConflict) {
		tb.Fatalf("%s: error %v, want conflict", what, err)
	}
	if !strings.Contains(err.Error(), "state "+phase) {
		tb.Errorf("%s: message %q does not name the state %s", what, err, phase)
	}
}

const (
	fcCheckpoint = `{"path":"checkpoint.md","text":"goal: H tests\nnext: commit"}`
	fcBash       = `{"command":"ls"}`
)

// The tools the host runs itself (only admit sees them) and the server's
// read tools with valid arguments.
var (
	fcHostTools   = []string{"bash", "read", "edit"}
	fcServerReads = []struct{ tool, args string }{
		{tools.HistoryListWindows, `{}`},
		{tools.HistoryListItems, `{}`},
		{tools.HistoryReadItem, `{"window_id":"w1","item_id":"e1"}`},
		{tools.HistorySearchContents, `{"query":"x"}`},
		{tools.NotesListFilesByPrefix, `{}`},
		{tools.NotesReadFile, `{"path":"checkpoint.md"}`},
		{tools.NotesSearchContents, `{"query":"x"}`},
		{tools.GetContextRemaining, `{}`},
		{tools.NewContext, `{}`},
	}
)

func TestH40FallbackInBranchBlocksEverythingButTheCheckpoint(t *testing.T) {
	s := mustOpenService(t)
	cc := fcAttach(t, s, "/s/h40.jsonl", fcBudget())
	fcMustTool(t, s, cc, "w0", tools.NotesWriteFile, `{"path":"checkpoint.md","text":"old"}`)
	fcFence(t, s, cc)

	for _, tool := range fcHostTools {
		res := fcAdmit(t, s, cc, "h-"+tool, tool, fcBash)
		if fcAllowed(res) || !fcTerminates(res) || *res.Reason != fence.ReasonCheckpointRequired {
			t.Errorf("H40 admit %s: allow %v terminate %v reason %v, want blocked with terminate", tool, *res.Allow, *res.Terminate, *res.Reason)
		}
	}
	pos := fcPos(t, s)
	for _, c := range fcServerReads {
		_, err := fcTool(s, cc, "s-"+c.tool, c.tool, c.args)
		fcWantFenced(t, "H40 "+c.tool, err, fence.ReasonCheckpointRequired)
		res := fcAdmit(t, s, cc, "a-"+c.tool, c.tool, c.args)
		if fcAllowed(res) || !fcTerminates(res) {
			t.Errorf("H40 admit %s allowed", c.tool)
		}
	}
	// Blocked tool calls write nothing; blocked admits record call_blocked.
	if got := fcTypes(t, s, cc.TaskID, pos); len(got) != len(fcServerReads) || fcCount(got, events.TypeCallBlocked) != len(got) {
		t.Errorf("H40 events %v, want %d call_blocked", got, len(fcServerReads))
	}
	if sv := fcPhase(t, s, cc, fence.Fenced); sv.PendingNewContext {
		t.Error("H40 a blocked new_context set pending_new_context")
	}
}

func TestH41SecondWriteInTheBatchBlocked(t *testing.T) {
	s := mustOpenService(t)
	cc := fcAttach(t, s, "/s/h41.jsonl", fcBudget())
	fcFence(t, s, cc)

	if res := fcAdmit(t, s, cc, "c1", tools.NotesWriteFile, fcCheckpoint); !fcAllowed(res) || fcTerminates(res) {
		t.Fatalf("H41 first write: %+v", res)
	}
	fcPhase(t, s, cc, fence.FencedClaimed)
	if res := fcAdmit(t, s, cc, "c2", tools.NotesAppendToFile, `{"path":"log.md","text":"x"}`); fcAllowed(res) || !fcTerminates(res) {
		t.Errorf("H41 second write admitted: %+v", res)
	}
	_, err := fcTool(s, cc, "c2", tools.NotesAppendToFile, `{"path":"log.md","text":"x"}`)
	fcWantFenced(t, "H41 second write", err, fence.ReasonCheckpointRequired)

	res := fcMustTool(t, s, cc, "c1", tools.NotesWriteFile, fcCheckpoint)
	if !res.Terminate {
		t.Error("H41 the admitted write did not terminate")
	}
	if sv := fcPhase(t, s, cc, fence.CheckpointSaved); !sv.PendingNewContext || sv.Claim != "" {
		t.Errorf("H41 state %+v", sv)
	}
	// After the checkpoint, every other write is blocked with the saved reason.
	_, err = fcTool(s, cc, "c3", tools.NotesWriteFile, fcCheckpoint)
	fcWantFenced(t, "H41 write after the checkpoint", err, fence.ReasonCheckpointSaved)
}

func TestH42CrossAgentWriteDoesNotLiftTheFence(t *testing.T) {
	s := mustOpenService(t)
	root := fcAttach(t, s, "/s/h42.jsonl", fcBudget())
	child := mustAttachChild(t, s, root.TaskID, "/s/h42-child.jsonl", "reviewer")
	cross := `{"path":"/root/reviewer/notes/handoff.md","text":"from root"}`

	t.Run("normal phase allows it", func(t *testing.T) {
		res := fcMustTool(t, s, root, "n1", tools.NotesWriteFile, cross)
		if res.Terminate {
			t.Error("a normal-phase cross-agent write terminated")
		}
		if res := fcAdmit(t, s, root, "n2", tools.NotesWriteFile, cross); !fcAllowed(res) {
			t.Errorf("normal-phase admit: %+v", res)
		}
	})
	t.Run("fenced: blocked, fence kept", func(t *testing.T) {
		fcFence(t, s, root)
		pos := fcPos(t, s)
		_, err := fcTool(s, root, "x1", tools.NotesWriteFile, cross)
		fcWantFenced(t, "H42 cross-agent write tool", err, fence.ReasonCheckpointRequired)
		_, err = fcTool(s, root, "x2", tools.NotesAppendToFile, cross)
		fcWantFenced(t, "H42 cross-agent append tool", err, fence.ReasonCheckpointRequired)
		if res := fcAdmit(t, s, root, "x3", tools.NotesWriteFile, cross); fcAllowed(res) || !fcTerminates(res) {
			t.Errorf("H42 cross-agent admit: %+v", res)
		}
		if got := fcTypes(t, s, root.TaskID, pos); !slices.Equal(got, []string{events.TypeCallBlocked}) {
			t.Errorf("H42 events %v", got)
		}
		if sv := fcPhase(t, s, root, fence.Fenced); sv.Claim != "" || sv.CheckpointSaved {
			t.Errorf("H42 state %+v", sv)
		}
		// The child is not fenced: its own tools still run.
		fcMustTool(t, s, child, "k1", tools.NotesReadFile, `{"path":"handoff.md"}`)
		// The root's own checkpoint still lifts it.
		if res := fcMustTool(t, s, root, "x4", tools.NotesWriteFile, fcCheckpoint); !res.Terminate {
			t.Error("H42 own checkpoint did not terminate")
		}
	})
}

func TestH43FailedAdmittedWriteReleasesTheClaim(t *testing.T) {
	for _, c := range []struct {
		name, tool, bad string
		kind            error
	}{
		{"invalid path", tools.NotesWriteFile, `{"path":"a//b.md","text":"x"}`, ErrInvalidArgument},
		{"dot segment", tools.NotesAppendToFile, `{"path":"../x.md","text":"x"}`, ErrInvalidArgument},
		{"write over the cap", tools.NotesWriteFile, `{"path":"checkpoint.md","text":"0123456789abcdefg"}`, ErrTooLarge},
		{"append over the cap", tools.NotesAppendToFile, `{"path":"checkpoint.md","text":"0123456789"}`, ErrTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := mustOpenService(t)
			b := fcBudget()
			limit := int64(16)
			b.NotesMaxFileBytes = &limit
			cc := fcAttach(t, s, "/s/h43.jsonl", b)
			fcMustTool(t, s, cc, "w0", tools.NotesWriteFile, `{"path":"checkpoint.md","text":"old: 12 bytes"}`)
			fcFence(t, s, cc)

			if res := fcAdmit(t, s, cc, "c1", c.tool, c.bad); !fcAllowed(res) {
				t.Fatalf("H43 admit of the failing write: %+v", res)
			}
			pos := fcPos(t, s)
			_, err := fcTool(s, cc, "c1", c.tool, c.bad)
			if !errors.Is(err, c.kind) {
				t.Fatalf("H43 failing write: %v, want %v", err, c.kind)
			}
			if got := fcTypes(t, s, cc.TaskID, pos); len(got) != 0 {
				t.Errorf("H43 the failed write recorded %v", got)
			}
			if got := mustCallNoFence(t, s, cc); got != "old: 12 bytes" {
				t.Errorf("H43 the failed write changed the note to %q", got)
			}
			fcPhase(t, s, cc, fence.FencedClaimed)
			res, err := s.ToolResult(fcCtx, cc, "c1", true, "")
			fcOK(t, "tool result", err)
			if res.State.Phase != fence.Fenced || res.State.Claim != "" {
				t.Errorf("H43 after the failed result: %+v", res.State)
			}
			if got := fcTypes(t, s, cc.TaskID, pos); !slices.Equal(got, []string{events.TypeClaimReleased}) {
				t.Errorf("H43 events %v, want claim_released", got)
			}
		})
	}
}

func TestH43CorrectedWriteSucceeds(t *testing.T) {
	for _, c := range []struct{ name, bad string }{
		{"invalid path", `{"path":"a//b.md","text":"x"}`},
		{"over the cap", `{"path":"checkpoint.md","text":"0123456789abcdefg"}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := mustOpenService(t)
			b := fcBudget()
			limit := int64(16)
			b.NotesMaxFileBytes = &limit
			cc := fcAttach(t, s, "/s/h43b.jsonl", b)
			fcFence(t, s, cc)

			fcAdmit(t, s, cc, "c1", tools.NotesWriteFile, c.bad)
			if _, err := fcTool(s, cc, "c1", tools.NotesWriteFile, c.bad); err == nil {
				t.Fatal("H43 the bad write succeeded")
			}
			fcPhase(t, s, cc, fence.FencedClaimed)
			res, err := s.ToolResult(fcCtx, cc, "c1", true, "")
			fcOK(t, "tool result", err)
			if res.State.Phase != fence.Fenced || res.State.Claim != "" {
				t.Fatalf("H43 after the failed result: %+v", res.State)
			}
			if res := fcAdmit(t, s, cc, "c2", tools.NotesWriteFile, `{"path":"checkpoint.md","text":"fixed"}`); !fcAllowed(res) {
				t.Fatalf("H43 corrected write not admitted: %+v", res)
			}
			out := fcMustTool(t, s, cc, "c2", tools.NotesWriteFile, `{"path":"checkpoint.md","text":"fixed"}`)
			if !out.Terminate {
				t.Error("H43 the corrected write did not return terminate:true")
			}
			if sv := fcPhase(t, s, cc, fence.CheckpointSaved); sv.CheckpointCallID != "c2" {
				t.Errorf("H43 checkpoint call %q", sv.CheckpointCallID)
			}
		})
	}
}

func TestH44QueuedFallbackBlocksNothing(t *testing.T) {
	s := mustOpenService(t)
	cc := fcAttach(t, s, "/s/h44.jsonl", fcBudget())
	fcMustTool(t, s, cc, "w0", tools.NotesWriteFile, fcCheckpoint)
	fcUsage(t, s, cc, 88000)
	fcDeliver(t, s, cc, fence.KindFallback, "w1")
	fcPhase(t, s, cc, fence.FallbackQueued)

	for _, c := range fcServerReads {
		if c.tool == tools.HistoryReadItem || c.tool == tools.NewContext {
			continue // no such item; new_context is checked last
		}
		fcMustTool(t, s, cc, "r-"+c.tool, c.tool, c.args)
	}
	for _, tool := range fcHostTools {
		if res := fcAdmit(t, s, cc, "h-"+tool, tool, fcBash); !fcAllowed(res) || fcTerminates(res) {
			t.Errorf("H44 admit %s: %+v", tool, res)
		}
	}
	res := fcMustTool(t, s, cc, "w1", tools.NotesWriteFile, fcCheckpoint)
	if res.Terminate {
		t.Error("H44 a write while only queued terminated (no fence yet)")
	}
	fcPhase(t, s, cc, fence.FallbackQueued)
	if res := fcMustTool(t, s, cc, "nc", tools.NewContext, `{}`); !res.Terminate {
		t.Error("H44 new_context did not terminate")
	}
}

func TestH45ConcurrentNewContext(t *testing.T) {
	s := mustOpenService(t)
	cc := fcAttach(t, s, "/s/h45.jsonl", fcBudget())
	pos := fcPos(t, s)

	results := make([]ToolResult, 3)
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = fcTool(s, cc, fmt.Sprintf("nc%d", i), tools.NewContext, `{}`)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		fcOK(t, fmt.Sprintf("new_context %d", i), err)
	}
	first, _ := json.Marshal(results[0])
	for i, r := range results {
		if !r.Terminate {
			t.Errorf("H45 result %d has no terminate:true", i)
		}
		if b, _ := json.Marshal(r); string(b) != string(first) {
			t.Errorf("H45 result %d differs:\n%s\n%s", i, b, first)
		}
	}
	if d := detailsMap(t, results[0]); d["pending"] != true || d["window_id"] != "w1" {
		t.Errorf("H45 details %v", d)
	}
	got := fcTypes(t, s, cc.TaskID, pos)
	if !slices.Equal(got, []string{events.TypeNewContextRequested}) {
		t.Fatalf("H45 events %v, want exactly one new_context_requested", got)
	}

	// One rollover at the settled boundary: a repeated prepare is the same one.
	p1 := fcPrepare(t, s, cc, fence.ReasonNewContext)
	p2 := fcPrepare(t, s, cc, fence.ReasonNewContext)
	if p1.WindowID != "w2" || p2.WindowID != p1.WindowID || *p2.Bootstrap != *p1.Bootstrap {
		t.Errorf("H45 prepare twice: %s / %s", p1.WindowID, p2.WindowID)
	}
	fcCommit(t, s, cc, "w2")
	got = fcTypes(t, s, cc.TaskID, pos)
	if fcCount(got, events.TypeRolloverPrepared) != 1 || fcCount(got, events.TypeRolloverCommitted) != 1 {
		t.Errorf("H45 events %v, want one rollover", got)
	}
	if sv := fcPhase(t, s, cc, fence.Ready); sv.WindowID != "w2" || sv.PendingNewContext {
		t.Errorf("H45 after the rollover: %+v", sv)
	}
}

func TestH46CommitResetsAllButTheHardLatch(t *testing.T) {
	s := mustOpenService(t)
	cc := fcAttach(t, s, "/s/h46.jsonl", fcBudget())
	fcUsage(t, s, cc, 76000)
	fcDeliver(t, s, cc, fence.KindReminder, "w1")
	fcMustTool(t, s, cc, "nc", tools.NewContext, `{}`)
	if due := fcUsage(t, s, cc, 96000); due == nil || *due != fence.DueHardRollover {
		t.Fatalf("usage 96000: due %v", due)
	}
	fcDeliver(t, s, cc, fence.KindFallback, "w1")
	fcArm(t, s, cc, fence.KindFallback, "w1")
	fcAdmit(t, s, cc, "c1", tools.NotesWriteFile, fcCheckpoint)
	before := fcPhase(t, s, cc, fence.FencedClaimed)
	if !before.ReminderDelivered || !before.FallbackDelivered || !before.PendingNewContext || !before.RolloverRequested || !before.HardLatched {
		t.Fatalf("setup state %+v", before)
	}
	// An overflow rollover may run while claimed (emergency, row 26).
	fcPrepare(t, s, cc, fence.ReasonOverflow)
	fcCommit(t, s, cc, "w2")

	sv := fcPhase(t, s, cc, fence.Ready)
	want := fence.State{WindowID: "w2", WindowNumber: 2, PreviousWindowID: "w1", HardLatched: true}
	if !fcSameState(sv, want) {
		t.Errorf("H46 after commit %+v, want %+v", sv, want)
	}
	// The latch survives: no second hard rollover in the new window.
	if due := fcUsage(t, s, cc, 96000); due != nil && *due == fence.DueHardRollover {
		t.Error("H46 hard rollover due again while latched")
	}
}

func fcSameState(sv StateView, want fence.State) bool {
	x, _ := json.Marshal(sv)
	y, _ := json.Marshal(view(caller{taskID: sv.TaskID, agent: projections.Agent{Agent: sv.Agent}}, want))
	return string(x) == string(y)
}

// fcRollingFallback: an agent whose fallback checkpoint is saved and whose
// rollover is prepared (ROLLING_OVER).
func fcRollingFallback(t *testing.T) (*Service, CallContext) {
	t.Helper()
	s := mustOpenService(t)
	cc := fcAttach(t, s, "/s/h47-fallback.jsonl", fcBudget())
	fcFence(t, s, cc)
	fcMustTool(t, s, cc, "c1", tools.NotesWriteFile, fcCheckpoint)
	fcPrepare(t, s, cc, fence.ReasonFallback)
	return s, cc
}

func TestH47CompactionFailure(t *testing.T) {
	t.Run("not aborted under a fence without its checkpoint: the fence stays armed", func(t *testing.T) {
		s := mustOpenService(t)
		cc := fcAttach(t, s, "/s/h47a.jsonl", fcBudget())
		fcFence(t, s, cc)
		fcPrepare(t, s, cc, fence.ReasonOverflow)
		res, err := s.FailRollover(fcCtx, cc, false, "Nothing to compact", "")
		fcOK(t, "fail", err)
		if *res.Ignored {
			t.Fatal("H47 failure ignored")
		}
		sv := fcPhase(t, s, cc, fence.Fenced)
		if sv.PendingNewContext || sv.CheckpointSaved || !sv.FenceActive || sv.PendingWindowID != "" {
			t.Errorf("H47 state %+v", sv)
		}
		_, err = fcTool(s, cc, "r1", tools.GetContextRemaining, `{}`)
		fcWantFenced(t, "H47 read after the failure", err, fence.ReasonCheckpointRequired)
		if out := fcMustTool(t, s, cc, "c2", tools.NotesWriteFile, fcCheckpoint); !out.Terminate {
			t.Error("H47 writing the checkpoint did not terminate")
		}
		fcPhase(t, s, cc, fence.CheckpointSaved)
	})
	// Differs from H47 (issue 30): the rollover a saved fallback checkpoint
	// asked for, refused by Pi, lifts the fence instead of blocking every
	// tool until another write (behaviour.md §D.3 row 16).
	t.Run("not aborted after the fallback's checkpoint: the fence is lifted, tools reopen", func(t *testing.T) {
		s, cc := fcRollingFallback(t)
		_, err := s.FailRollover(fcCtx, cc, false, "Nothing to compact", "")
		fcOK(t, "fail", err)
		sv := fcPhase(t, s, cc, fence.Ready)
		if sv.PendingNewContext || sv.CheckpointSaved || sv.FenceActive || sv.PendingWindowID != "" {
			t.Errorf("H47 state %+v", sv)
		}
		if _, err := fcTool(s, cc, "r1", tools.GetContextRemaining, `{}`); err != nil {
			t.Errorf("H47 read after the refused rollover: %v", err)
		}
	})
	t.Run("not aborted new_context request cleared", func(t *testing.T) {
		s := mustOpenService(t)
		cc := fcAttach(t, s, "/s/h47b.jsonl", fcBudget())
		fcMustTool(t, s, cc, "nc", tools.NewContext, `{}`)
		fcPrepare(t, s, cc, fence.ReasonNewContext)
		_, err := s.FailRollover(fcCtx, cc, false, "Already compacted", "")
		fcOK(t, "fail", err)
		if sv := fcPhase(t, s, cc, fence.Ready); sv.PendingNewContext {
			t.Error("H47 pending_new_context kept")
		}
	})
	t.Run("aborted keeps the intent", func(t *testing.T) {
		s := mustOpenService(t)
		cc := fcAttach(t, s, "/s/h47c.jsonl", fcBudget())
		fcMustTool(t, s, cc, "nc", tools.NewContext, `{}`)
		fcPrepare(t, s, cc, fence.ReasonNewContext)
		_, err := s.FailRollover(fcCtx, cc, true, "cancelled", "")
		fcOK(t, "fail", err)
		if sv := fcPhase(t, s, cc, fence.RolloverPending); !sv.PendingNewContext {
			t.Error("H47 aborted attempt lost the request")
		}
		// The next settled boundary runs it.
		fcPrepare(t, s, cc, fence.ReasonNewContext)
		fcCommit(t, s, cc, "w2")
		fcPhase(t, s, cc, fence.Ready)
	})
	t.Run("aborted keeps a saved fallback checkpoint", func(t *testing.T) {
		s, cc := fcRollingFallback(t)
		_, err := s.FailRollover(fcCtx, cc, true, "cancelled", "")
		fcOK(t, "fail", err)
		if sv := fcPhase(t, s, cc, fence.CheckpointSaved); !sv.PendingNewContext || !sv.CheckpointSaved {
			t.Errorf("H47 state %+v", sv)
		}
	})
}

func TestH48ManualCompact(t *testing.T) {
	t.Run("regardless of budget, the same compaction builds the window", func(t *testing.T) {
		s := mustOpenService(t)
		cc := fcAttach(t, s, "/s/h48a.jsonl", fcBudget())
		fcUsage(t, s, cc, 1000) // far from any threshold
		fcManualAwaiting(t, s, cc)
		if out := fcMustTool(t, s, cc, "c1", tools.NotesWriteFile, fcCheckpoint); !out.Terminate {
			t.Error("H48 the manual checkpoint write did not terminate")
		}
		if sv := fcPhase(t, s, cc, fence.ManualSaved); sv.PendingNewContext {
			t.Error("H48 a manual checkpoint requested new_context")
		}
		fcManual(t, s, cc, fence.ActionCompacting, "m1")
		p := fcPrepare(t, s, cc, fence.ReasonManual)
		if p.WindowID != "w2" || !strings.Contains(*p.Bootstrap, "Reset reason: manual_compact") {
			t.Errorf("H48 prepare: %s\n%s", p.WindowID, *p.Bootstrap)
		}
		fcCommit(t, s, cc, "w2")
		if sv := fcPhase(t, s, cc, fence.Ready); sv.Manual != nil || sv.FenceActive {
			t.Errorf("H48 after commit: %+v", sv)
		}
	})
	t.Run("a user message before the compaction reopens tools", func(t *testing.T) {
		s := mustOpenService(t)
		cc := fcAttach(t, s, "/s/h48b.jsonl", fcBudget())
		fcManualAwaiting(t, s, cc)
		fcMustTool(t, s, cc, "c1", tools.NotesWriteFile, fcCheckpoint)
		fcPhase(t, s, cc, fence.ManualSaved)
		_, err := fcTool(s, cc, "r1", tools.GetContextRemaining, `{}`)
		fcWantFenced(t, "H48 read while saved", err, fence.ReasonCheckpointSaved)

		res, err := s.UserInput(fcCtx, cc, "")
		fcOK(t, "user input", err)
		if *res.Ignored {
			t.Fatal("H48 user input ignored")
		}
		if sv := fcPhase(t, s, cc, fence.Ready); sv.Manual != nil || sv.FenceActive {
			t.Errorf("H48 after the user message: %+v", sv)
		}
		fcMustTool(t, s, cc, "r2", tools.GetContextRemaining, `{}`)
		_, err = s.PrepareRollover(fcCtx, cc, fence.ReasonManual, "")
		fcWantConflict(t, "H48 compaction of the invalidated checkpoint", err, fence.Ready)
	})
}

func TestH49NestedCompactionDuringManual(t *testing.T) {
	s := mustOpenService(t)
	cc := fcAttach(t, s, "/s/h49.jsonl", fcBudget())
	fcManualAwaiting(t, s, cc)
	for _, reason := range []string{fence.ReasonFallback, fence.ReasonOverflow, fence.ReasonHardRollover, fence.ReasonNewContext} {
		_, err := s.PrepareRollover(fcCtx, cc, reason, "")
		fcWantConflict(t, "H49 awaiting "+reason, err, fence.ManualAwaiting)
	}
	// A threshold crossing while the manual checkpoint is in the branch makes no fallback due.
	if due := fcUsage(t, s, cc, 90000); due != nil && *due == fence.DueFallback {
		t.Error("H49 fallback due during the manual checkpoint")
	}
	fcMustTool(t, s, cc, "c1", tools.NotesWriteFile, fcCheckpoint)
	fcPhase(t, s, cc, fence.ManualSaved)
	pos := fcPos(t, s)
	for _, reason := range []string{fence.ReasonFallback, fence.ReasonOverflow} {
		_, err := s.PrepareRollover(fcCtx, cc, reason, "")
		fcWantConflict(t, "H49 saved "+reason, err, fence.ManualSaved)
		res, err := s.FailRollover(fcCtx, cc, false, "compaction cancelled", "")
		fcOK(t, "fail", err)
		if !*res.Ignored {
			t.Errorf("H49 the nested failure after %s was not ignored", reason)
		}
	}
	if got := fcTypes(t, s, cc.TaskID, pos); len(got) != 0 {
		t.Errorf("H49 nested attempts recorded %v", got)
	}
	if sv := fcPhase(t, s, cc, fence.ManualSaved); sv.Manual.Phase != fence.PhaseSaved {
		t.Errorf("H49 manual %+v", sv.Manual)
	}
	if got := mustCallNoFence(t, s, cc); got != "goal: H tests\nnext: commit" {
		t.Errorf("H49 saved note %q", got)
	}
	fcPrepare(t, s, cc, fence.ReasonManual)
	fcCommit(t, s, cc, "w2")
	fcPhase(t, s, cc, fence.Ready)
}

// mustCallNoFence reads checkpoint.md from the log's projection directly
// (the tools are fenced).
func mustCallNoFence(tb testing.TB, s *Service, cc CallContext) string {
	tb.Helper()
	n, err := projections.NewReader(s.store.Reader()).Note(fcCtx, cc.TaskID, cc.Agent, "checkpoint.md")
	fcOK(tb, "read the note", err)
	return n.Content
}

// fcBootstrap runs new_context and prepare and returns the bootstrap.
func fcBootstrap(tb testing.TB, s *Service, cc CallContext) string {
	tb.Helper()
	fcMustTool(tb, s, cc, "nc", tools.NewContext, `{}`)
	return *fcPrepare(tb, s, cc, fence.ReasonNewContext).Bootstrap
}

// fcNotesIndex returns the lines of the bootstrap's notes index.
func fcNotesIndex(tb testing.TB, bootstrap, agent string) []string {
	tb.Helper()
	head := "Existing notes for " + agent + " at this context-window reset"
	i := strings.Index(bootstrap, head)
	if i < 0 {
		tb.Fatalf("no notes index in\n%s", bootstrap)
	}
	rest := bootstrap[i:]
	lines := strings.Split(strings.TrimSuffix(rest, "\n"), "\n")
	return lines[1:]
}

func TestH50BootstrapNotesIndexBounds(t *testing.T) {
	t.Run("30 files: 25 newest, 5 omitted", func(t *testing.T) {
		s := mustOpenService(t)
		cc := fcAttach(t, s, "/s/h50a.jsonl", fcBudget())
		for i := range 30 {
			fcMustTool(t, s, cc, fmt.Sprintf("w%d", i), tools.NotesWriteFile, fmt.Sprintf(`{"path":"n%02d.md","text":"x"}`, i))
		}
		// Rewriting an old file makes it the newest.
		fcMustTool(t, s, cc, "w-again", tools.NotesAppendToFile, `{"path":"n03.md","text":"y"}`)
		lines := fcNotesIndex(t, fcBootstrap(t, s, cc), cc.Agent)
		if len(lines) != 26 {
			t.Fatalf("H50 %d index lines, want 25 + omission:\n%s", len(lines), strings.Join(lines, "\n"))
		}
		want := []string{"/root/notes/n03.md"}
		for i := 29; len(want) < 25; i-- {
			if i != 3 {
				want = append(want, fmt.Sprintf("/root/notes/n%02d.md", i))
			}
		}
		for i, l := range lines[:25] {
			var n struct {
				Path      string `json:"path"`
				Bytes     int64  `json:"bytes"`
				UpdatedAt string `json:"updated_at"`
			}
			if err := json.Unmarshal([]byte(l), &n); err != nil {
				t.Fatalf("H50 line %q: %v", l, err)
			}
			if n.Path != want[i] || n.UpdatedAt == "" {
				t.Errorf("H50 line %d = %s, want path %s", i, l, want[i])
			}
		}
		last := lines[25]
		if !strings.Contains(last, `"omitted":5`) || !strings.Contains(last, "notes_list_files_by_prefix") {
			t.Errorf("H50 omission line %q", last)
		}
	})
	t.Run("long paths stop at 6000 code points on a whole line", func(t *testing.T) {
		s := mustOpenService(t)
		cc := fcAttach(t, s, "/s/h50b.jsonl", fcBudget())
		for i := range 20 {
			p := fmt.Sprintf("%02d-%s.md", i, strings.Repeat("é", 500))
			fcMustTool(t, s, cc, fmt.Sprintf("w%d", i), tools.NotesWriteFile, fmt.Sprintf(`{"path":%q,"text":"x"}`, p))
		}
		lines := fcNotesIndex(t, fcBootstrap(t, s, cc), cc.Agent)
		total := 0
		for _, l := range lines {
			total += len([]rune(l)) + 1
		}
		if total-1 > 6000 {
			t.Errorf("H50 notes index is %d code points", total-1)
		}
		kept := len(lines) - 1
		for _, l := range lines[:kept] {
			if !json.Valid([]byte(l)) {
				t.Errorf("H50 line is not whole JSON: %.80s…", l)
			}
		}
		last := lines[kept]
		if !strings.Contains(last, fmt.Sprintf(`"omitted":%d`, 20-kept)) || !strings.Contains(last, "notes_list_files_by_prefix") {
			t.Errorf("H50 %d kept, omission line %q", kept, last)
		}
		if kept == 0 || kept >= 20 {
			t.Errorf("H50 kept %d of 20 long lines", kept)
		}
	})
}

func TestH51BootstrapPathRoundTrips(t *testing.T) {
	s := mustOpenService(t)
	cc := fcAttach(t, s, "/s/h51.jsonl", fcBudget())
	path := "say \"hi\"\nthen \\ leave.md"
	args, _ := json.Marshal(map[string]string{"path": path, "text": "found me"})
	fcMustTool(t, s, cc, "w1", tools.NotesWriteFile, string(args))
	b := fcBootstrap(t, s, cc)
	lines := fcNotesIndex(t, b, cc.Agent)
	if len(lines) != 1 {
		t.Fatalf("H51 index %q", lines)
	}
	if !strings.Contains(lines[0], `say \"hi\"\nthen \\ leave.md`) {
		t.Errorf("H51 path not JSON-escaped: %s", lines[0])
	}
	var n struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &n); err != nil {
		t.Fatal(err)
	}
	if n.Path != "/root/notes/"+path {
		t.Fatalf("H51 path %q", n.Path)
	}
	fcCommit(t, s, cc, "w2")
	readArgs, _ := json.Marshal(map[string]string{"path": n.Path})
	d := detailsMap(t, fcMustTool(t, s, cc, "r1", tools.NotesReadFile, string(readArgs)))
	if d["text"] != "found me" || d["path"] != n.Path {
		t.Errorf("H51 read back %v", d)
	}
}

func TestH52BootstrapEmptyAndUnavailableIndex(t *testing.T) {
	t.Run("no notes", func(t *testing.T) {
		s := mustOpenSQLite(t)
		cc := fcAttach(t, s, "/s/h52a.jsonl", fcBudget())
		lines := fcNotesIndex(t, fcBootstrap(t, s, cc), cc.Agent)
		if len(lines) != 1 || !strings.Contains(lines[0], "no note files") {
			t.Errorf("H52 empty index %q", lines)
		}
	})
	t.Run("index unavailable, rollover completes", func(t *testing.T) {
		s := mustOpenSQLite(t)
		cc := fcAttach(t, s, "/s/h52b.jsonl", fcBudget())
		fcMustTool(t, s, cc, "w1", tools.NotesWriteFile, fcCheckpoint)
		fcMustTool(t, s, cc, "nc", tools.NewContext, `{}`)
		// Make the notes projection unreadable: the index query fails.
		db, err := sql.Open("sqlite", eventlog.FileURI(fcDBPath(t, s), nil))
		fcOK(t, "open", err)
		defer db.Close()
		_, err = db.Exec(`ALTER TABLE notes RENAME TO notes_unavailable`)
		fcOK(t, "rename", err)

		b := *fcPrepare(t, s, cc, fence.ReasonNewContext).Bootstrap
		lines := fcNotesIndex(t, b, cc.Agent)
		if len(lines) != 1 || !strings.Contains(lines[0], "unavailable") || !strings.Contains(lines[0], "notes_list_files_by_prefix") {
			t.Errorf("H52 unavailable index %q", lines)
		}
		fcCommit(t, s, cc, "w2")
		if sv := fcPhase(t, s, cc, fence.Ready); sv.WindowID != "w2" {
			t.Errorf("H52 window %s", sv.WindowID)
		}
	})
}

// fcDBPath is the file of the service's database.
func fcDBPath(tb testing.TB, s *Service) string {
	tb.Helper()
	var seq int
	var name, file string
	err := s.store.Reader().QueryRowContext(fcCtx, `PRAGMA database_list`).Scan(&seq, &name, &file)
	fcOK(tb, "database_list", err)
	return file
}

func TestH53StaleControlMessagesDoNotArm(t *testing.T) {
	s := mustOpenService(t)
	cc := fcAttach(t, s, "/s/h53.jsonl", fcBudget())
	pos := fcPos(t, s)
	for _, kind := range []string{fence.KindReminder, fence.KindFallback} {
		if res := fcDeliver(t, s, cc, kind, "w9"); !*res.Stale {
			t.Errorf("H53 delivered %s of w9 not stale", kind)
		}
	}
	if res := fcArm(t, s, cc, fence.KindFallback, "w0"); !*res.Stale {
		t.Error("H53 arm of w0 not stale")
	}
	if got := fcTypes(t, s, cc.TaskID, pos); len(got) != 0 {
		t.Errorf("H53 stale messages recorded %v", got)
	}
	fcPhase(t, s, cc, fence.Ready)

	// A fallback queued in w1 that arrives after the rollover to w2.
	fcUsage(t, s, cc, 88000)
	fcDeliver(t, s, cc, fence.KindFallback, "w1")
	fcPrepare(t, s, cc, fence.ReasonOverflow)
	fcCommit(t, s, cc, "w2")
	pos = fcPos(t, s)
	if res := fcArm(t, s, cc, fence.KindFallback, "w1"); !*res.Stale {
		t.Error("H53 old window's fallback not stale")
	}
	if got := fcTypes(t, s, cc.TaskID, pos); len(got) != 0 {
		t.Errorf("H53 stale fallback recorded %v", got)
	}
	if sv := fcPhase(t, s, cc, fence.Ready); sv.FenceActive {
		t.Error("H53 stale fallback armed the fence")
	}
	fcMustTool(t, s, cc, "r1", tools.GetContextRemaining, `{}`)
}

func TestH54SessionsAndTasks(t *testing.T) {
	s := mustOpenService(t)
	first, err := s.Attach(fcCtx, AttachRequest{SessionKey: "/home/u/proj/.pi/sessions/a.jsonl", SessionID: "sid-a"}, "")
	fcOK(t, "attach first", err)
	a := CallContext{TaskID: first.TaskID, Agent: first.Agent}
	fcMustTool(t, s, a, "w1", tools.NotesWriteFile, `{"path":"secret.md","text":"first session"}`)
	child := mustAttachChild(t, s, a.TaskID, "/home/u/proj/.pi/sessions/a-child.jsonl", "")

	// A new session in the same folder is a new task.
	second, err := s.Attach(fcCtx, AttachRequest{SessionKey: "/home/u/proj/.pi/sessions/b.jsonl", SessionID: "sid-b"}, "")
	fcOK(t, "attach second", err)
	if second.TaskID == first.TaskID || second.Resumed {
		t.Fatalf("H54 second session %+v joined the first task", second)
	}
	b := CallContext{TaskID: second.TaskID, Agent: second.Agent}
	if _, err := fcTool(s, b, "r1", tools.NotesReadFile, `{"path":"/root/notes/secret.md"}`); !errors.Is(err, ErrNotFound) {
		t.Errorf("H54 second session read the first one's note: %v", err)
	}
	if _, err := fcTool(s, b, "r2", tools.NotesReadFile, fmt.Sprintf(`{"path":"%s/notes/x.md"}`, child.Agent)); !errors.Is(err, ErrForbidden) {
		t.Errorf("H54 second session reached the first task's child: %v", err)
	}

	// With a TaskContext the launcher joins the first task.
	joined, err := s.Attach(fcCtx, AttachRequest{SessionKey: "/tmp/worker.jsonl",
		Task: &TaskRef{TaskID: first.TaskID, ParentAgent: "/root", AgentName: "worker"}}, "")
	fcOK(t, "attach with task", err)
	w := CallContext{TaskID: joined.TaskID, Agent: joined.Agent}
	if joined.TaskID != first.TaskID || joined.Agent != "/root/worker" {
		t.Fatalf("H54 joined %+v", joined)
	}
	if d := detailsMap(t, fcMustTool(t, s, w, "r3", tools.NotesReadFile, `{"path":"/root/notes/secret.md"}`)); d["text"] != "first session" {
		t.Errorf("H54 joined agent read %v", d)
	}

	// Resuming the same session file gives the same task and address.
	again, err := s.Attach(fcCtx, AttachRequest{SessionKey: "/home/u/proj/.pi/sessions/a.jsonl", SessionID: "sid-a"}, "")
	fcOK(t, "resume", err)
	if !again.Resumed || again.TaskID != first.TaskID || again.Agent != first.Agent {
		t.Errorf("H54 resume %+v, want task %s agent %s", again, first.TaskID, first.Agent)
	}
	childAgain := mustAttachChild(t, s, a.TaskID, "/home/u/proj/.pi/sessions/a-child.jsonl", "")
	if childAgain != child {
		t.Errorf("H54 child resumed as %+v, want %+v", childAgain, child)
	}
}
