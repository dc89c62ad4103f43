package fence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
)

// The transition table (docs/behaviour.md §D.3) as unit tests of the pure
// functions: every row starts from a state reached by deciding and
// applying a minimal command sequence from Initial, decides one command,
// checks its events (their types, in order) and the state they fold into,
// and checks that neither the decision nor Apply changed the state they
// were given.

var tRef = events.AgentRef{TaskID: "t1", Agent: "/root"}

// tBudget: a 100000-token window makes the reminder due at 76000 used,
// the fallback at 88000 and the hard rollover at 95000 (the defaults of
// memory.Service besides the window and the hard level).
var tBudget = events.Budget{
	ContextWindow:                  ptr64(100000),
	ReminderRemainingPercent:       0.25,
	ReminderRemainingFloorTokens:   21384,
	ReminderRemainingCeilingTokens: 60000,
	HardRolloverUsedTokens:         95000,
}

func ptr64(v int64) *int64 { return &v }

// tCmd is one command: its decision as a function of the state.
type tCmd struct {
	name   string
	decide func(State) (Decision, error)
}

func (c tCmd) String() string { return c.name }

func ok(d Decision) (Decision, error) { return d, nil }

func cUsage(used int64) tCmd {
	return tCmd{fmt.Sprintf("usage %d", used), func(s State) (Decision, error) {
		return ok(Usage(tRef, s, tBudget, ptr64(used), nil))
	}}
}

// cBranch is a move to another branch with used tokens (nil: unknown) and
// the fence's message on it or not.
func cBranch(used *int64, fenceInBranch bool) tCmd {
	name := "unknown"
	if used != nil {
		name = fmt.Sprint(*used)
	}
	return tCmd{fmt.Sprintf("branch used=%s fence_in_branch=%v", name, fenceInBranch), func(s State) (Decision, error) {
		return ok(BranchChanged(tRef, s, tBudget, used, nil, fenceInBranch))
	}}
}

func cDeliver(kind, window string) tCmd {
	return tCmd{"delivered " + kind + " " + window, func(s State) (Decision, error) {
		return Deliver(tRef, s, kind, window, kind+"-"+window)
	}}
}

func cArm(kind, window string) tCmd {
	return tCmd{"arm " + kind + " " + window, func(s State) (Decision, error) {
		return Arm(tRef, s, kind, window, kind+"-"+window)
	}}
}

// cAdmit admits a call: an own-notes write, or bash.
func cAdmit(callID string, ownWrite bool) tCmd {
	tool := "bash"
	if ownWrite {
		tool = "notes_write_file"
	}
	return tCmd{"admit " + callID + " " + tool, func(s State) (Decision, error) {
		return ok(Admit(tRef, s, callID, tool, ownWrite))
	}}
}

func cToolResult(callID string, isError bool) tCmd {
	return tCmd{fmt.Sprintf("tool-result %s error=%v", callID, isError), func(s State) (Decision, error) {
		return ok(ToolResult(tRef, s, callID, isError))
	}}
}

// cWrite is an own-notes write that succeeds, decided as the notes tool
// does: refused when blocked, a checkpoint when admitted.
func cWrite(callID string) tCmd {
	return tCmd{"write " + callID, func(s State) (Decision, error) {
		switch v, reason := s.Gate(callID, true); v {
		case Blocked:
			return Decision{}, errors.New("fenced: " + reason)
		case Admitted:
			return ok(Checkpoint(tRef, s, callID, "/root/notes/checkpoint.md"))
		}
		return Decision{}, nil
	}}
}

func cNewContext(callID string) tCmd {
	return tCmd{"new_context " + callID, func(s State) (Decision, error) { return NewContext(tRef, s, callID) }}
}

func cUserInput() tCmd {
	return tCmd{"user-input", func(s State) (Decision, error) { return ok(UserInput(tRef, s)) }}
}

func cPrepare(reason string) tCmd {
	return tCmd{"prepare " + reason, func(s State) (Decision, error) {
		return Prepare(tRef, s, reason, "bootstrap for "+reason)
	}}
}

func cCommit(window string) tCmd {
	return tCmd{"commit " + window, func(s State) (Decision, error) {
		return Commit(tRef, s, window, "compaction-"+window)
	}}
}

func cFail(aborted bool) tCmd {
	return tCmd{fmt.Sprintf("fail aborted=%v", aborted), func(s State) (Decision, error) {
		return ok(Fail(tRef, s, aborted, "Nothing to compact"))
	}}
}

func cManual(action, requestID string) tCmd {
	return tCmd{"manual " + action + " " + requestID, func(s State) (Decision, error) {
		return ManualAction(tRef, s, action, requestID)
	}}
}

// decode turns a decided event into the payload Apply gets from the log
// (a pointer decoded from the event's JSON).
func decode(tb testing.TB, ev events.Pending) any {
	tb.Helper()
	data, err := json.Marshal(ev.Data)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := events.Decode(events.Event{Type: ev.Type, Schema: 1, Data: data})
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func js(s State) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// deepCopy copies a state through JSON (its stored form): nothing of the
// copy is shared with s.
func deepCopy(tb testing.TB, s State) State {
	tb.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		tb.Fatal(err)
	}
	var c State
	if err := json.Unmarshal(b, &c); err != nil {
		tb.Fatal(err)
	}
	if !reflect.DeepEqual(c, s) {
		tb.Fatalf("the JSON copy of %+v differs: %+v", s, c)
	}
	return c
}

// step decides c in s and applies its events, checking that neither the
// decision nor any Apply changed the state it was given.
func step(tb testing.TB, s State, c tCmd) (State, Decision, error) {
	tb.Helper()
	before := deepCopy(tb, s)
	d, err := c.decide(s)
	if !reflect.DeepEqual(s, before) {
		tb.Fatalf("%s: the decision changed its input state\n%s\n→\n%s", c, js(before), js(s))
	}
	if err != nil {
		if len(d.Events) != 0 {
			tb.Errorf("%s: refused with events %v", c, d.Events)
		}
		return s, d, err
	}
	for _, ev := range d.Events {
		in := deepCopy(tb, s)
		next := Apply(s, decode(tb, ev))
		if !reflect.DeepEqual(s, in) {
			tb.Fatalf("%s: Apply(%s) changed its input state\n%s\n→\n%s", c, ev.Type, js(in), js(s))
		}
		s = next
	}
	return s, d, nil
}

// reach runs a setup sequence from Initial; every command must succeed.
func reach(tb testing.TB, cmds ...tCmd) State {
	tb.Helper()
	s := Initial()
	for _, c := range cmds {
		var err error
		if s, _, err = step(tb, s, c); err != nil {
			tb.Fatalf("setup %s: %v", c, err)
		}
	}
	return s
}

func seq(parts ...[]tCmd) []tCmd { return slices.Concat(parts...) }

// States reached from Initial (READY in w1).
var (
	tReminded       = []tCmd{cUsage(76000), cDeliver(KindReminder, "w1")}
	tFallbackQueued = []tCmd{cUsage(88000), cDeliver(KindFallback, "w1")}
	tFenced         = seq(tFallbackQueued, []tCmd{cArm(KindFallback, "w1")})
	tClaimed        = seq(tFenced, []tCmd{cAdmit("c1", true)})
	tSaved          = seq(tClaimed, []tCmd{cWrite("c1")})
	tPending        = []tCmd{cNewContext("nc1")}
	tHardPending    = []tCmd{cUsage(96000)}
	tHardQueued     = seq(tHardPending, []tCmd{cDeliver(KindFallback, "w1")})
	tRollingNC      = seq(tPending, []tCmd{cPrepare(ReasonNewContext)})
	tRollingFB      = seq(tSaved, []tCmd{cPrepare(ReasonFallback)})
	tManualQueued   = []tCmd{cManual(ActionRequest, "m1")}
	tManualAwaiting = seq(tManualQueued, []tCmd{cDeliver(KindManualCheckpoint, "w1"), cArm(KindManualCheckpoint, "w1")})
	tManualClaimed  = seq(tManualAwaiting, []tCmd{cAdmit("c1", true)})
	tManualSaved    = seq(tManualAwaiting, []tCmd{cWrite("c1")})
	tManualPrepared = seq(tManualSaved, []tCmd{cPrepare(ReasonManual)})
	tManualCompact  = seq(tManualSaved, []tCmd{cManual(ActionCompacting, "m1")})
	tManualRolling  = seq(tManualCompact, []tCmd{cPrepare(ReasonManual)})
	tReusable       = seq(tManualPrepared, []tCmd{cFail(false)})
)

// tRow is one transition. err: the command is refused (ErrIllegal, or
// blocked for a tool); otherwise it records events and the state folds
// into phase with the fields of want (JSON literals at dotted paths of the
// state's JSON; "<absent>" for an omitted field).
type tRow struct {
	row    string // the D.3 row(s)
	name   string
	from   []tCmd
	do     tCmd
	err    bool
	out    func(tb testing.TB, o Outcome)
	events []string
	phase  string
	want   map[string]string
}

const absent = "<absent>"

var (
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

func due(want string) func(testing.TB, Outcome) {
	return func(tb testing.TB, o Outcome) {
		if o.Due != want {
			tb.Errorf("due %q, want %q", o.Due, want)
		}
	}
}

func outcome(want Outcome) func(testing.TB, Outcome) {
	return func(tb testing.TB, o Outcome) {
		if o != want {
			tb.Errorf("outcome %+v, want %+v", o, want)
		}
	}
}

var tRows = []tRow{
	{row: "1", name: "usage crosses the reminder threshold", do: cUsage(76000), out: due(DueReminder),
		events: []string{evUsage}, phase: Ready, want: map[string]string{"reminder_due": "true", "tokens_used": "76000"}},
	{row: "1", name: "below the threshold nothing is due", do: cUsage(70000), out: due(""),
		events: []string{evUsage}, phase: Ready, want: map[string]string{"reminder_due": "false"}},
	{row: "1", name: "reminder delivered: REMINDED", from: []tCmd{cUsage(76000)}, do: cDeliver(KindReminder, "w1"),
		events: []string{evDelivered}, phase: Reminded, want: map[string]string{"reminder_delivered": "true"}},
	{row: "1", name: "guard: reminder delivered once per window", from: tReminded, do: cDeliver(KindReminder, "w1"),
		events: nil, phase: Reminded},
	{row: "1", name: "guard: no reminder while new_context is pending", from: tPending, do: cUsage(76000), out: due(""),
		events: []string{evUsage}, phase: RolloverPending},

	{row: "2", name: "READY crosses the hard level", do: cUsage(96000), out: due(DueHardRollover),
		events: []string{evUsage}, phase: RolloverPending,
		want: map[string]string{"hard_rollover_latched": "true", "rollover_requested": "true", "fallback_due": "true"}},
	{row: "2", name: "REMINDED crosses the hard level", from: tReminded, do: cUsage(96000), out: due(DueHardRollover),
		events: []string{evUsage}, phase: RolloverPending, want: map[string]string{"hard_rollover_latched": "true"}},
	{row: "2", name: "its fallback delivered: FALLBACK_QUEUED", from: tHardPending, do: cDeliver(KindFallback, "w1"),
		events: []string{evDelivered}, phase: FallbackQueued,
		want: map[string]string{"fallback_delivered": "true", "rollover_requested": "true"}},
	{row: "2", name: "guard: latched", from: tHardPending, do: cUsage(97000), out: due(""),
		events: []string{evUsage}, phase: RolloverPending},
	{row: "2", name: "guard: a fallback already queued", from: tFallbackQueued, do: cUsage(96000), out: due(""),
		events: []string{evUsage}, phase: FallbackQueued, want: map[string]string{"hard_rollover_latched": "false"}},
	{row: "2", name: "hysteresis: below 90% of the hard level unlatches", from: tHardPending, do: cUsage(85000), out: due(""),
		events: []string{evUsage}, phase: RolloverPending, want: map[string]string{"hard_rollover_latched": "false"}},

	{row: "3", name: "threshold compaction without a reminder: the reminder is sent", do: cDeliver(KindReminder, "w1"),
		events: []string{evDelivered}, phase: Reminded},

	{row: "4", name: "REMINDED crosses the fallback threshold", from: tReminded, do: cUsage(88000), out: due(DueFallback),
		events: []string{evUsage}, phase: Reminded, want: map[string]string{"fallback_due": "true"}},
	{row: "4", name: "REMINDED fallback delivered: FALLBACK_QUEUED", from: tReminded, do: cDeliver(KindFallback, "w1"),
		events: []string{evDelivered}, phase: FallbackQueued, want: map[string]string{"fence_active": "false"}},

	{row: "5", name: "the fallback enters the branch: FENCED", from: tFallbackQueued, do: cArm(KindFallback, "w1"),
		events: []string{evArmed}, phase: Fenced,
		want: map[string]string{"fence_active": "true", "fence_kind": `"fallback"`, "claim": absent, "checkpoint_saved": "false"}},
	{row: "5", name: "stale: another window's fallback arms nothing", from: tFallbackQueued, do: cArm(KindFallback, "w0"),
		out: outcome(Outcome{Stale: true}), events: nil, phase: FallbackQueued},
	{row: "5", name: "stale: another window's reminder is not delivered", do: cDeliver(KindReminder, "w2"),
		out: outcome(Outcome{Stale: true}), events: nil, phase: Ready},

	{row: "6", name: "the lost fallback re-sent: nothing new is recorded", from: tFallbackQueued, do: cDeliver(KindFallback, "w1"),
		events: nil, phase: FallbackQueued},
	{row: "6", name: "no rollover while the fallback is queued", from: tFallbackQueued, do: cPrepare(ReasonFallback),
		err: true, phase: FallbackQueued},

	{row: "6", name: "no hard rollover while its fallback is queued", from: tHardQueued, do: cPrepare(ReasonHardRollover),
		err: true, phase: FallbackQueued},
	{row: "6", name: "no new_context rollover while a fallback is queued", from: seq(tPending, tFallbackQueued),
		do: cPrepare(ReasonNewContext), err: true, phase: FallbackQueued},
	{row: "7", name: "own write admitted: FENCED_CLAIMED", from: tFenced, do: cAdmit("c1", true),
		out: outcome(Outcome{Allow: true}), events: []string{evClaim}, phase: FencedClaimed, want: map[string]string{"claim": `"c1"`}},
	{row: "7", name: "the claimed call admitted again: no event", from: tClaimed, do: cAdmit("c1", true),
		out: outcome(Outcome{Allow: true}), events: nil, phase: FencedClaimed},

	{row: "8", name: "FENCED blocks any other call", from: tFenced, do: cAdmit("b1", false),
		out:    outcome(Outcome{Terminate: true, Reason: ReasonCheckpointRequired}),
		events: []string{evBlocked}, phase: Fenced},
	{row: "8", name: "FENCED blocks new_context", from: tFenced, do: cNewContext("nc1"), err: true, phase: Fenced},
	{row: "8", name: "FENCED_CLAIMED blocks a second write", from: tClaimed, do: cAdmit("c2", true),
		out:    outcome(Outcome{Terminate: true, Reason: ReasonCheckpointRequired}),
		events: []string{evBlocked}, phase: FencedClaimed, want: map[string]string{"claim": `"c1"`}},

	{row: "9", name: "the claimed write fails: FENCED, claim free", from: tClaimed, do: cToolResult("c1", true),
		events: []string{evRelease}, phase: Fenced, want: map[string]string{"claim": absent}},
	{row: "9", name: "another call's failure keeps the claim", from: tClaimed, do: cToolResult("c9", true),
		events: nil, phase: FencedClaimed},

	{row: "10", name: "the claimed write succeeds: CHECKPOINT_SAVED", from: tClaimed, do: cWrite("c1"),
		events: []string{evSaved}, phase: CheckpointSaved,
		want: map[string]string{"checkpoint_saved": "true", "pending_new_context": "true", "claim": absent, "checkpoint_call_id": `"c1"`}},
	{row: "10", name: "CHECKPOINT_SAVED blocks everything", from: tSaved, do: cAdmit("c2", true),
		out:    outcome(Outcome{Terminate: true, Reason: ReasonCheckpointSaved}),
		events: []string{evBlocked}, phase: CheckpointSaved},

	{row: "11", name: "FENCED: no compaction", from: tFenced, do: cPrepare(ReasonFallback), err: true, phase: Fenced},
	{row: "11", name: "FENCED_CLAIMED: no compaction", from: tClaimed, do: cPrepare(ReasonFallback), err: true, phase: FencedClaimed},
	{row: "11", name: "FENCED after a hard crossing: no compaction", from: seq(tHardQueued, []tCmd{cArm(KindFallback, "w1")}),
		do: cPrepare(ReasonHardRollover), err: true, phase: Fenced},
	{row: "11", name: "the refused compaction's failure is ignored", from: tFenced, do: cFail(false),
		out: outcome(Outcome{Ignored: true}), events: nil, phase: Fenced},

	{row: "12", name: "CHECKPOINT_SAVED settles: ROLLING_OVER", from: tSaved, do: cPrepare(ReasonFallback),
		out:    outcome(Outcome{WindowID: "w2", Bootstrap: "bootstrap for fallback"}),
		events: []string{evPrepared}, phase: RollingOver,
		want: map[string]string{"pending_window_id": `"w2"`, "pending_reason": `"fallback"`, "window_id": `"w1"`}},

	{row: "13", name: "READY new_context: ROLLOVER_PENDING", do: cNewContext("nc1"),
		out: outcome(Outcome{WindowID: "w1"}), events: []string{evNewContext}, phase: RolloverPending},
	{row: "13", name: "REMINDED new_context: ROLLOVER_PENDING", from: tReminded, do: cNewContext("nc1"),
		events: []string{evNewContext}, phase: RolloverPending},
	{row: "13", name: "new_context is idempotent", from: tPending, do: cNewContext("nc2"),
		out: outcome(Outcome{WindowID: "w1"}), events: nil, phase: RolloverPending},

	{row: "14", name: "ROLLOVER_PENDING settles: ROLLING_OVER", from: tPending, do: cPrepare(ReasonNewContext),
		events: []string{evPrepared}, phase: RollingOver},
	{row: "14", name: "the hard rollover settles: ROLLING_OVER", from: tHardPending, do: cPrepare(ReasonHardRollover),
		events: []string{evPrepared}, phase: RollingOver},
	{row: "14", name: "prepare again is idempotent", from: tRollingNC, do: cPrepare(ReasonNewContext),
		out:    outcome(Outcome{WindowID: "w2", Bootstrap: "bootstrap for new_context"}),
		events: nil, phase: RollingOver},
	{row: "14", name: "guard: fenced-unsaved", from: seq(tPending, tFenced), do: cPrepare(ReasonNewContext), err: true, phase: Fenced},

	{row: "15", name: "commit: READY in w2, flags reset, latch kept",
		from: seq(tHardQueued, []tCmd{cArm(KindFallback, "w1"), cWrite("c1"), cPrepare(ReasonHardRollover)}),
		do:   cCommit("w2"), events: []string{evCommitted}, phase: Ready,
		want: map[string]string{"window_id": `"w2"`, "window_number": "2", "previous_window_id": `"w1"`,
			"fence_active": "false", "checkpoint_saved": "false", "pending_new_context": "false", "rollover_requested": "false",
			"fallback_delivered": "false", "reminder_due": "false", "pending_window_id": absent, "hard_rollover_latched": "true"}},
	{row: "15", name: "commit of another window is refused", from: tRollingNC, do: cCommit("w3"), err: true, phase: RollingOver},

	{row: "16", name: "fallback rollover refused: the fence is lifted", from: tRollingFB, do: cFail(false),
		events: []string{evFailed, evLifted}, phase: Ready,
		want: map[string]string{"fence_active": "false", "checkpoint_saved": "false", "pending_new_context": "false", "pending_window_id": absent,
			"fallback_delivered": "false", "fallback_due": "true"}},
	{row: "16", name: "after the refusal the fallback is not due again in the window", from: seq(tRollingFB, []tCmd{cFail(false)}),
		do: cUsage(91000), out: due(""), events: []string{evUsage}, phase: Ready},
	{row: "16", name: "an overflow rollover refused under an unsaved fence: the fence stays",
		from: seq(tFenced, []tCmd{cPrepare(ReasonOverflow)}), do: cFail(false),
		events: []string{evFailed}, phase: Fenced, want: map[string]string{"fence_active": "true"}},
	{row: "16", name: "new_context rollover fails: READY", from: tRollingNC, do: cFail(false),
		events: []string{evFailed}, phase: Ready, want: map[string]string{"pending_new_context": "false"}},

	{row: "29", name: "branch without the fallback, below its threshold: the fence is lifted", from: tFenced, do: cBranch(ptr64(50000), false),
		events: []string{evLifted}, phase: Ready,
		want: map[string]string{"fence_active": "false", "fallback_delivered": "false", "fallback_due": "false", "reminder_due": "true"}},
	{row: "29", name: "the fallback is due again when that branch crosses its threshold", from: seq(tFenced, []tCmd{cBranch(ptr64(50000), false)}),
		do: cUsage(88000), out: due(DueFallback), events: []string{evUsage}, phase: Ready},
	{row: "29", name: "branch without the fallback, above its threshold: delivered again", from: tFenced, do: cBranch(ptr64(90000), false),
		out: due(DueFallback), events: nil, phase: Fenced},
	{row: "29", name: "branch without the fallback, usage unknown: delivered again", from: tClaimed, do: cBranch(nil, false),
		out: due(DueFallback), events: nil, phase: FencedClaimed},
	{row: "29", name: "branch with the fallback: unchanged", from: tFenced, do: cBranch(ptr64(50000), true),
		out: due(""), events: nil, phase: Fenced},
	{row: "29", name: "checkpoint saved: the rollover goes on", from: tSaved, do: cBranch(ptr64(50000), false),
		out: due(""), events: nil, phase: CheckpointSaved},
	{row: "29", name: "a manual checkpoint's fence: unchanged", from: tManualAwaiting, do: cBranch(ptr64(50000), false),
		out: due(""), events: nil, phase: ManualAwaiting},
	{row: "29", name: "no fence: nothing", from: tReminded, do: cBranch(ptr64(90000), false),
		out: due(""), events: nil, phase: Reminded},

	{row: "17", name: "aborted: the new_context intent is kept", from: tRollingNC, do: cFail(true),
		events: []string{evFailed}, phase: RolloverPending, want: map[string]string{"pending_new_context": "true"}},
	{row: "17", name: "aborted: the saved checkpoint is kept", from: tRollingFB, do: cFail(true),
		events: []string{evFailed}, phase: CheckpointSaved},
	{row: "17", name: "a failure with nothing prepared is ignored", from: tPending, do: cFail(true),
		out: outcome(Outcome{Ignored: true}), events: nil, phase: RolloverPending},

	{row: "18", name: "READY /compact: MANUAL_AWAITING", do: cManual(ActionRequest, "m1"),
		events: []string{evManual}, phase: ManualAwaiting,
		want: map[string]string{"manual": `{"request_id":"m1","window_id":"w1","phase":"awaiting"}`}},
	{row: "18", name: "not gated by the budget: FENCED /compact", from: tFenced, do: cManual(ActionRequest, "m1"),
		events: []string{evManual}, phase: ManualAwaiting},
	{row: "18", name: "duplicate /compact merged", from: tManualQueued, do: cManual(ActionRequest, "m2"),
		events: nil, phase: ManualAwaiting, want: map[string]string{"manual.request_id": `"m1"`}},
	{row: "18", name: "the manual prompt enters the branch: fenced", from: seq(tManualQueued, []tCmd{cDeliver(KindManualCheckpoint, "w1")}),
		do: cArm(KindManualCheckpoint, "w1"), events: []string{evArmed}, phase: ManualAwaiting,
		want: map[string]string{"fence_active": "true", "fence_kind": `"manual_checkpoint"`}},
	{row: "18", name: "MANUAL_AWAITING is fenced like FENCED", from: tManualAwaiting, do: cAdmit("b1", false),
		out:    outcome(Outcome{Terminate: true, Reason: ReasonCheckpointRequired}),
		events: []string{evBlocked}, phase: ManualAwaiting},

	{row: "19", name: "the manual checkpoint written: MANUAL_SAVED", from: tManualClaimed, do: cWrite("c1"),
		events: []string{evSaved}, phase: ManualSaved,
		want: map[string]string{"manual.phase": `"saved"`, "checkpoint_saved": "false", "pending_new_context": "false"}},
	{row: "19", name: "the host reports it saved", from: tManualAwaiting, do: cManual(ActionSaved, "m1"),
		events: []string{evManualStep}, phase: ManualSaved},
	{row: "19", name: "MANUAL_SAVED blocks everything", from: tManualSaved, do: cAdmit("c2", true),
		out:    outcome(Outcome{Terminate: true, Reason: ReasonCheckpointSaved}),
		events: []string{evBlocked}, phase: ManualSaved},

	{row: "20", name: "MANUAL_SAVED settles: MANUAL_COMPACTING", from: tManualSaved, do: cManual(ActionCompacting, "m1"),
		events: []string{evManualStep}, phase: ManualCompacting},
	{row: "20", name: "MANUAL_COMPACTING prepares the window", from: tManualCompact, do: cPrepare(ReasonManual),
		events: []string{evPrepared}, phase: ManualCompacting, want: map[string]string{"pending_window_id": `"w2"`}},
	{row: "20", name: "MANUAL_SAVED prepares the window: ROLLING_OVER", from: tManualSaved, do: cPrepare(ReasonManual),
		events: []string{evPrepared}, phase: RollingOver},
	{row: "20", name: "the manual window goes live", from: tManualRolling, do: cCommit("w2"),
		events: []string{evCommitted}, phase: Ready,
		want: map[string]string{"window_id": `"w2"`, "manual": absent, "fence_active": "false"}},

	{row: "21", name: "Esc: back to the previous state", from: seq(tReminded, tManualAwaiting), do: cManual(ActionCancel, "m1"),
		events: []string{evCancelled}, phase: Reminded, want: map[string]string{"manual": absent, "fence_active": "false"}},
	{row: "22", name: "the checkpoint turn ends without a save: previous state", from: seq(tFallbackQueued, tManualAwaiting),
		do: cManual(ActionCancel, "m1"), events: []string{evCancelled}, phase: FallbackQueued,
		want: map[string]string{"manual": absent, "fence_active": "false", "fallback_delivered": "true"}},
	{row: "21", name: "cancel in MANUAL_SAVED: the checkpoint is dropped, tools reopen", from: tManualSaved, do: cManual(ActionCancel, "m1"),
		events: []string{evCancelled}, phase: Ready, want: map[string]string{"manual": absent, "fence_active": "false"}},
	{row: "21", name: "cancel in MANUAL_COMPACTING before the window is prepared", from: tManualCompact, do: cManual(ActionCancel, "m1"),
		events: []string{evCancelled}, phase: Ready, want: map[string]string{"manual": absent, "fence_active": "false"}},
	{row: "22", name: "a cancel of another request is refused", from: tManualAwaiting, do: cManual(ActionCancel, "m9"),
		err: true, phase: ManualAwaiting},

	{row: "23", name: "MANUAL_AWAITING: a nested overflow is refused", from: tManualAwaiting, do: cPrepare(ReasonOverflow),
		err: true, phase: ManualAwaiting},
	{row: "23", name: "MANUAL_AWAITING: a nested threshold rollover is refused", from: tManualAwaiting, do: cPrepare(ReasonFallback),
		err: true, phase: ManualAwaiting},
	{row: "23", name: "MANUAL_SAVED: the nested failure is ignored", from: tManualSaved, do: cFail(false),
		out: outcome(Outcome{Ignored: true}), events: nil, phase: ManualSaved, want: map[string]string{"manual.phase": `"saved"`}},

	{row: "24", name: "the manual compaction fails: SAVED_REUSABLE", from: tManualPrepared, do: cFail(false),
		events: []string{evFailed}, phase: Ready,
		want: map[string]string{"manual.phase": `"reusable"`, "fence_active": "false", "pending_window_id": absent}},
	{row: "24", name: "the manual compaction fails while compacting: SAVED_REUSABLE", from: tManualRolling, do: cFail(false),
		events: []string{evFailed}, phase: Ready, want: map[string]string{"manual.phase": `"reusable"`}},
	{row: "24", name: "the next /compact reuses the checkpoint", from: tReusable, do: cManual(ActionRequest, "m2"),
		events: []string{evManual}, phase: ManualSaved, want: map[string]string{"manual.phase": `"saved"`, "manual.request_id": `"m2"`}},

	{row: "25", name: "SAVED_REUSABLE user message: READY, invalidated", from: tReusable, do: cUserInput(),
		events: []string{evUser}, phase: Ready, want: map[string]string{"manual": absent}},
	{row: "25", name: "MANUAL_SAVED user message: READY, tools reopen", from: tManualSaved, do: cUserInput(),
		events: []string{evUser}, phase: Ready, want: map[string]string{"manual": absent, "fence_active": "false"}},
	{row: "25", name: "a user message while the manual window is prepared is ignored", from: tManualPrepared, do: cUserInput(),
		out: outcome(Outcome{Ignored: true}), events: nil, phase: RollingOver},

	{row: "26", name: "FENCED overflow: ROLLING_OVER", from: tFenced, do: cPrepare(ReasonOverflow),
		events: []string{evPrepared}, phase: RollingOver, want: map[string]string{"pending_reason": `"overflow"`}},
	{row: "26", name: "MANUAL_SAVED: overflow refused", from: tManualSaved, do: cPrepare(ReasonOverflow), err: true, phase: ManualSaved},

	// A manual /compact while the fallback's fence is active: one fence,
	// one claim, one checkpoint; cancelling the manual checkpoint leaves
	// the fallback's fence as it was (rows 18, 21, 22).
	{row: "18", name: "FENCED /compact: the manual prompt entering the branch keeps the fallback fence",
		from: seq(tFenced, tManualQueued, []tCmd{cDeliver(KindManualCheckpoint, "w1")}), do: cArm(KindManualCheckpoint, "w1"),
		events: nil, phase: ManualAwaiting, want: map[string]string{"fence_kind": `"fallback"`}},
	{row: "18", name: "FENCED_CLAIMED /compact: the claim survives the manual prompt",
		from: seq(tClaimed, tManualQueued), do: cArm(KindManualCheckpoint, "w1"),
		events: nil, phase: ManualAwaiting, want: map[string]string{"claim": `"c1"`}},
	{row: "19", name: "FENCED /compact: the write saves the manual checkpoint",
		from: seq(tClaimed, tManualQueued, []tCmd{cArm(KindManualCheckpoint, "w1")}), do: cWrite("c1"),
		events: []string{evSaved}, phase: ManualSaved},
	{row: "21", name: "FENCED /compact cancelled: FENCED again",
		from: seq(tFenced, tManualQueued, []tCmd{cArm(KindManualCheckpoint, "w1")}), do: cManual(ActionCancel, "m1"),
		events: []string{evCancelled}, phase: Fenced, want: map[string]string{"fence_kind": `"fallback"`, "manual": absent}},
	{row: "22", name: "FENCED /compact, then a user message: FENCED again",
		from: seq(tFenced, tManualQueued, []tCmd{cArm(KindManualCheckpoint, "w1")}), do: cUserInput(),
		events: []string{evUser}, phase: Fenced},
	{row: "5", name: "the fallback enters the branch during a claimed manual checkpoint: the claim is kept",
		from: tManualClaimed, do: cArm(KindFallback, "w1"),
		events: []string{evArmed}, phase: ManualAwaiting, want: map[string]string{"claim": `"c1"`, "fence_kind": `"fallback"`}},
	{row: "21", name: "the fallback joined the manual fence: cancel leaves FENCED",
		from: seq(tManualAwaiting, []tCmd{cArm(KindFallback, "w1")}), do: cManual(ActionCancel, "m1"),
		events: []string{evCancelled}, phase: Fenced},
	{row: "18", name: "CHECKPOINT_SAVED /compact reuses the saved checkpoint", from: tSaved, do: cManual(ActionRequest, "m1"),
		events: []string{evManual}, phase: ManualSaved, want: map[string]string{"manual.phase": `"saved"`}},
	{row: "21", name: "CHECKPOINT_SAVED /compact cancelled: CHECKPOINT_SAVED again",
		from: seq(tSaved, []tCmd{cManual(ActionRequest, "m1")}), do: cManual(ActionCancel, "m1"),
		events: []string{evCancelled}, phase: CheckpointSaved},

	// Row 27 (session_shutdown) is host-side: the state memoryd keeps is
	// not reset by a shutdown, and no command corresponds to it.

	{row: "28", name: "the fence re-derived after a restart records nothing", from: tClaimed, do: cArm(KindFallback, "w1"),
		events: nil, phase: FencedClaimed, want: map[string]string{"claim": `"c1"`}},
	{row: "28", name: "the manual fence re-derived records nothing", from: tManualClaimed, do: cArm(KindManualCheckpoint, "w1"),
		events: nil, phase: ManualAwaiting, want: map[string]string{"claim": `"c1"`}},

	// A prepared rollover is stopped by its failure, not by cancelling
	// the manual checkpoint it is built on.
	{row: "20", name: "MANUAL_COMPACTING prepared: cancel refused", from: tManualRolling, do: cManual(ActionCancel, "m1"),
		err: true, phase: ManualCompacting},
	{row: "20", name: "ROLLING_OVER of a manual checkpoint: cancel refused", from: tManualPrepared, do: cManual(ActionCancel, "m1"),
		err: true, phase: RollingOver},
}

func TestTransitions(t *testing.T) {
	for _, r := range tRows {
		t.Run(r.row+" "+r.name, func(t *testing.T) {
			from := reach(t, r.from...)
			before, err := json.Marshal(from)
			if err != nil {
				t.Fatal(err)
			}
			got, d, err := step(t, from, r.do)
			if r.err {
				if err == nil {
					t.Fatalf("%s: accepted with events %v, want refused", r.do, types(d.Events))
				}
				if !errors.Is(err, ErrIllegal) {
					t.Errorf("%s: error %v is not ErrIllegal", r.do, err)
				} else if !strings.Contains(err.Error(), "(state "+from.Phase()+")") {
					t.Errorf("%s: error %q does not name the state %s", r.do, err, from.Phase())
				}
			} else if err != nil {
				t.Fatalf("%s: %v", r.do, err)
			}
			if tp := types(d.Events); !slices.Equal(tp, r.events) {
				t.Errorf("events %v, want %v", tp, r.events)
			}
			if r.out != nil {
				r.out(t, d.Outcome)
			}
			if got.Phase() != r.phase {
				t.Errorf("phase %s, want %s; state %s", got.Phase(), r.phase, js(got))
			}
			if len(d.Events) == 0 {
				if after, _ := json.Marshal(got); !bytes.Equal(after, before) {
					t.Errorf("no events, but the state changed:\n%s\n→\n%s", before, after)
				}
			}
			checkFields(t, got, r.want)
		})
	}
}

func types(evs []events.Pending) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

// fieldsByName is a State with its fields named as the store and the API
// name them (projections' stored form, memory.StateView), so that the
// tables read as docs/behaviour.md does. TestFieldsByNameCoversState
// keeps it complete.
type fieldsByName struct {
	WindowID          string        `json:"window_id"`
	WindowNumber      int           `json:"window_number"`
	PreviousWindowID  string        `json:"previous_window_id,omitempty"`
	ReminderDue       bool          `json:"reminder_due"`
	FallbackDue       bool          `json:"fallback_due"`
	ReminderDelivered bool          `json:"reminder_delivered"`
	FallbackDelivered bool          `json:"fallback_delivered"`
	FenceActive       bool          `json:"fence_active"`
	FenceKind         string        `json:"fence_kind,omitempty"`
	FenceRequestID    string        `json:"fence_request_id,omitempty"`
	Claim             string        `json:"claim,omitempty"`
	CheckpointSaved   bool          `json:"checkpoint_saved"`
	CheckpointCallID  string        `json:"checkpoint_call_id,omitempty"`
	PendingNewContext bool          `json:"pending_new_context"`
	RolloverRequested bool          `json:"rollover_requested"`
	HardLatched       bool          `json:"hard_rollover_latched"`
	Manual            *manualByName `json:"manual,omitempty"`
	PendingWindowID   string        `json:"pending_window_id,omitempty"`
	PendingReason     string        `json:"pending_reason,omitempty"`
	PendingBootstrap  string        `json:"pending_bootstrap,omitempty"`
	TokensUsed        *int64        `json:"tokens_used"`
	ContextWindow     *int64        `json:"context_window"`
}

type manualByName struct {
	RequestID string `json:"request_id"`
	WindowID  string `json:"window_id"`
	Phase     string `json:"phase"`
}

func namedFields(s State) fieldsByName {
	n := fieldsByName{WindowID: s.WindowID, WindowNumber: s.WindowNumber, PreviousWindowID: s.PreviousWindowID,
		ReminderDue: s.ReminderDue, FallbackDue: s.FallbackDue, ReminderDelivered: s.ReminderDelivered, FallbackDelivered: s.FallbackDelivered,
		FenceActive: s.FenceActive, FenceKind: s.FenceKind, FenceRequestID: s.FenceRequestID, Claim: s.Claim,
		CheckpointSaved: s.CheckpointSaved, CheckpointCallID: s.CheckpointCallID,
		PendingNewContext: s.PendingNewContext, RolloverRequested: s.RolloverRequested, HardLatched: s.HardLatched,
		PendingWindowID: s.PendingWindowID, PendingReason: s.PendingReason, PendingBootstrap: s.PendingBootstrap,
		TokensUsed: s.TokensUsed, ContextWindow: s.ContextWindow}
	if m := s.Manual; m != nil {
		n.Manual = &manualByName{RequestID: m.RequestID, WindowID: m.WindowID, Phase: m.Phase}
	}
	return n
}

// TestFieldsByNameCoversState: a field added to State is named for the
// tables too.
func TestFieldsByNameCoversState(t *testing.T) {
	if a, b := reflect.TypeFor[State]().NumField(), reflect.TypeFor[fieldsByName]().NumField(); a != b {
		t.Errorf("State has %d fields, fieldsByName %d", a, b)
	}
	if a, b := reflect.TypeFor[Manual]().NumField(), reflect.TypeFor[manualByName]().NumField(); a != b {
		t.Errorf("Manual has %d fields, manualByName %d", a, b)
	}
}

// checkFields compares fields at dotted paths of the state's JSON (its
// fields by name) with JSON literals (or absent).
func checkFields(tb testing.TB, s State, want map[string]string) {
	tb.Helper()
	b, _ := json.Marshal(namedFields(s))
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		tb.Fatal(err)
	}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var cur any = m
		found := true
		for _, part := range strings.Split(k, ".") {
			obj, ok := cur.(map[string]any)
			if !ok {
				found = false
				break
			}
			if cur, ok = obj[part]; !ok {
				found = false
				break
			}
		}
		if want[k] == absent {
			if found {
				tb.Errorf("%s = %v, want it absent", k, cur)
			}
			continue
		}
		if !found {
			tb.Errorf("%s is missing, want %s", k, want[k])
			continue
		}
		var wv any
		if err := json.Unmarshal([]byte(want[k]), &wv); err != nil {
			tb.Fatalf("bad literal %q for %s", want[k], k)
		}
		gb, _ := json.Marshal(cur)
		wb, _ := json.Marshal(wv)
		if !bytes.Equal(gb, wb) {
			tb.Errorf("%s = %s, want %s", k, gb, wb)
		}
	}
}

// tFixtures are the states the HTTP matrix test reaches, with the
// sub-states that behave differently.
var tFixtures = []struct {
	name string
	from []tCmd
}{
	{"READY", nil},
	{"READY (SAVED_REUSABLE)", tReusable},
	{"REMINDED", tReminded},
	{"FALLBACK_QUEUED", tFallbackQueued},
	{"FALLBACK_QUEUED (hard)", tHardQueued},
	{"FENCED", tFenced},
	{"FENCED_CLAIMED", tClaimed},
	{"CHECKPOINT_SAVED", tSaved},
	{"ROLLOVER_PENDING", tPending},
	{"ROLLOVER_PENDING (hard)", tHardPending},
	{"ROLLING_OVER", tRollingNC},
	{"ROLLING_OVER (fallback)", tRollingFB},
	{"ROLLING_OVER (manual)", tManualPrepared},
	{"MANUAL_AWAITING (queued)", tManualQueued},
	{"MANUAL_AWAITING", tManualAwaiting},
	{"MANUAL_AWAITING (claimed)", tManualClaimed},
	{"MANUAL_SAVED", tManualSaved},
	{"MANUAL_COMPACTING", tManualCompact},
	{"MANUAL_COMPACTING (prepared)", tManualRolling},
}

// tCommands are every command in each of its forms.
func tCommands() []tCmd {
	cmds := []tCmd{
		cUsage(50000), cUsage(76000), cUsage(88000), cUsage(96000),
		cDeliver(KindReminder, "w1"), cDeliver(KindFallback, "w1"), cDeliver(KindManualCheckpoint, "w1"),
		cDeliver(KindFallback, "w9"),
		cArm(KindFallback, "w1"), cArm(KindManualCheckpoint, "w1"), cArm(KindFallback, "w9"),
		cAdmit("c1", true), cAdmit("c2", true), cAdmit("b1", false),
		cToolResult("c1", true), cToolResult("c1", false), cWrite("c1"), cWrite("c2"),
		cNewContext("nc2"), cUserInput(), cCommit("w2"), cCommit("w3"), cFail(true), cFail(false),
	}
	for _, r := range []string{ReasonNewContext, ReasonFallback, ReasonHardRollover, ReasonManual, ReasonOverflow} {
		cmds = append(cmds, cPrepare(r))
	}
	for _, a := range []string{ActionRequest, ActionSaved, ActionCompacting, ActionCancel} {
		cmds = append(cmds, cManual(a, "m1"), cManual(a, "m2"))
	}
	return cmds
}

// TestPure: in every state, every command's decision and the Apply of
// each of its events leave the state they are given unchanged (step
// checks it against a deep copy), and a refusal names the state.
func TestPure(t *testing.T) {
	for _, f := range tFixtures {
		from := reach(t, f.from...)
		if !strings.HasPrefix(f.name, from.Phase()) {
			t.Fatalf("fixture %s reached %s", f.name, from.Phase())
		}
		for _, c := range tCommands() {
			_, _, err := step(t, from, c)
			if errors.Is(err, ErrIllegal) && !strings.HasSuffix(err.Error(), "(state "+from.Phase()+")") {
				t.Errorf("%s: %s: error %q does not name the state", f.name, c, err)
			}
		}
	}
}
