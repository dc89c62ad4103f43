package api

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/memory"
)

// TestLifecycleCommandMatrix sends every lifecycle command, in each of its
// forms, in every state the fixtures below reach, through the HTTP API, and
// checks the answer against lcMatrix: an explicit table derived from
// docs/behaviour.md §D.3 and docs/contract-notes.md ("Fence and lifecycle").
// Every pair starts a new agent (a new task) on one server and reaches its
// state by replaying the fixture's minimal command sequence.

// lcFixtures are the columns of lcMatrix: every phase of the state machine
// (fence.State.Phase) and the sub-states in which a command is answered
// differently.
var lcFixtures = []struct {
	col   string // the column's name in lcMatrix
	phase string // the phase the steps reach
	from  []lcStep
}{
	{"R", fence.Ready, nil},
	{"R/reu", fence.Ready, lcReusable}, // SAVED_REUSABLE, a sub-state of READY (row 24)
	{"RM", fence.Reminded, lcReminded},
	{"FQ", fence.FallbackQueued, lcFallbackQueued},
	{"FQ/h", fence.FallbackQueued, lcHardQueued}, // the fallback of a hard crossing (rollover requested)
	{"F", fence.Fenced, lcFenced},
	{"FC", fence.FencedClaimed, lcClaimed},
	{"CS", fence.CheckpointSaved, lcSaved},
	{"RP", fence.RolloverPending, lcPending},
	{"RP/h", fence.RolloverPending, lcHardPending}, // hard crossing, fallback not yet queued
	{"RO", fence.RollingOver, lcRollingNC},
	{"RO/f", fence.RollingOver, lcRollingFB},        // the fallback's saved checkpoint, fence active
	{"RO/m", fence.RollingOver, lcManualPrepared},   // a saved manual checkpoint's window prepared
	{"MA/q", fence.ManualAwaiting, lcManualQueued},  // requested, the prompt not yet in the branch
	{"MA", fence.ManualAwaiting, lcManualAwaiting},  // the prompt in the branch: fenced
	{"MA/c", fence.ManualAwaiting, lcManualClaimed}, // its write admitted (claim c1)
	{"MS", fence.ManualSaved, lcManualSaved},
	{"MC", fence.ManualCompacting, lcManualCompacting},
	{"MC/p", fence.ManualCompacting, lcManualRolling}, // its window prepared
}

var (
	lcManualClaimed  = lcSeq(lcManualAwaiting, []lcStep{lcAdmit("c1", "notes_write_file", lcOwnWrite)})
	lcManualPrepared = lcSeq(lcManualSaved, []lcStep{lcPrepare(fence.ReasonManual)})
)

// lcCommands are the rows of lcMatrix: every command of the lifecycle
// routes, and the event each records when it acts.
var lcCommands = []struct {
	row   string
	do    lcStep
	event string
}{
	{"delivered:reminder", lcDelivered(fence.KindReminder, "w1"), evDelivered},
	{"delivered:fallback", lcDelivered(fence.KindFallback, "w1"), evDelivered},
	{"delivered:manual", lcDelivered(fence.KindManualCheckpoint, "w1"), evDelivered},
	{"delivered:stale", lcDelivered(fence.KindFallback, "w9"), evDelivered},
	{"arm:fallback", lcArm(fence.KindFallback, "w1"), evArmed},
	{"arm:manual", lcArm(fence.KindManualCheckpoint, "w1"), evArmed},
	{"arm:stale", lcArm(fence.KindFallback, "w9"), evArmed},
	{"admit:own-write", lcAdmit("c2", "notes_write_file", lcOwnWrite), evClaim},
	{"admit:bash", lcAdmit("b1", "bash", lcBash), evClaim},
	{"tool-result:c1-error", lcToolResult("c1", true), evRelease},
	{"user-input", lcUserInput(), evUser},
	{"prepare:new_context", lcPrepare(fence.ReasonNewContext), evPrepared},
	{"prepare:fallback", lcPrepare(fence.ReasonFallback), evPrepared},
	{"prepare:hard_rollover", lcPrepare(fence.ReasonHardRollover), evPrepared},
	{"prepare:manual_compact", lcPrepare(fence.ReasonManual), evPrepared},
	{"prepare:overflow", lcPrepare(fence.ReasonOverflow), evPrepared},
	{"commit:w2", lcCommit("w2"), evCommitted},
	{"fail:aborted", lcFail(true), evFailed},
	{"fail:not-aborted", lcFail(false), evFailed},
	{"manual:request", lcManual(fence.ActionRequest, "m2"), evManual},
	{"manual:saved", lcManual(fence.ActionSaved, "m1"), evManualStep},
	{"manual:compacting", lcManual(fence.ActionCompacting, "m1"), evManualStep},
	{"manual:cancel", lcManual(fence.ActionCancel, "m1"), evCancelled},
	{"branch:below", lcBranch(50000, false), evLifted},
}

// lcMatrix is the expected answer of every command (row) in every state
// (column). A cell is one of:
//
//	409    illegal: 409 conflict whose message names the state; no event
//	       recorded, the state byte for byte unchanged
//	-      accepted, nothing to do (a duplicate, or an idempotent repeat):
//	       200, no event, the state unchanged
//	ign    200 with "ignored": true, no event, the state unchanged
//	stale  200 with "stale": true (a control message of another window),
//	       no event, the state unchanged
//	allow  admit: the fence is not active; allowed, no event
//	block  admit: blocked with the checkpoint-required reason; records
//	       lifecycle.call_blocked, the state otherwise unchanged
//	saved  admit: blocked with the checkpoint-saved reason; records
//	       lifecycle.call_blocked, the state otherwise unchanged
//	=      200, the row's event recorded, the phase unchanged
//	PHASE+L  as PHASE, and lifecycle.fence_lifted recorded after the
//	       row's event (a refused rollover lifts a fallback's fence)
//	PHASE  200, the row's event recorded, the new phase (R READY,
//	       RM REMINDED, FQ FALLBACK_QUEUED, F FENCED, FC FENCED_CLAIMED,
//	       CS CHECKPOINT_SAVED, RP ROLLOVER_PENDING, RO ROLLING_OVER,
//	       MA MANUAL_AWAITING, MS MANUAL_SAVED, MC MANUAL_COMPACTING)
//
// Why, by row (the D.3 row numbers in brackets):
//   - delivered reports a control message queued: a reminder is recorded
//     once per window and never blocks [1, 3]; a fallback once, and not
//     once its fence is active [2, 4, 6]; the manual prompt only while a
//     manual checkpoint is awaited [18].
//   - arm reports the message entering the branch: the fallback arms the
//     fence from any state but a rollover in progress [5, 28], the manual
//     prompt only while awaited [18]; an already active fence of the same
//     kind records nothing [28], and the manual prompt joins the
//     fallback's active fence without re-arming it. The fallback joining a
//     manual checkpoint's fence keeps its claim.
//   - admit: D.2's "tools allowed" column [7, 8, 10, 19].
//   - tool-result: only the claimed call's failure releases the claim [9].
//   - user-input invalidates a saved or reusable manual checkpoint [25]
//     and abandons an awaited one (the turn ended without a save [22]);
//     while the manual window is being built it is ignored, as elsewhere.
//   - prepare: [12, 14, 20, 26]; not while fenced and unsaved [11] or
//     while the fallback is queued [6]; no nested compaction while a
//     manual checkpoint is active [23]; the same reason again returns the
//     prepared window [14].
//   - commit and fail need a prepared window [15, 16, 17, 24]; a failure
//     without one is ignored (contract notes); a refusal of the rollover a
//     saved fallback checkpoint asked for lifts the fence [16].
//   - manual: request [18, 24] (duplicates merge; a saved checkpoint is
//     reused); saved [19] and compacting [20] move forward only; cancel
//     [21, 22] ends the manual checkpoint in any phase until its window is
//     prepared, then the rollover is stopped with rollover/fail instead.
//   - branch: a branch without the fence's message, below the fallback
//     threshold, lifts a fallback's fence waiting for its checkpoint [29];
//     nothing else changes.
const lcMatrix = `
row                    R     R/reu RM    FQ    FQ/h  F     FC    CS    RP    RP/h  RO    RO/f  RO/m  MA/q  MA    MA/c  MS    MC    MC/p
delivered:reminder     RM    RM    -     =     =     =     =     =     =     =     =     =     =     =     =     =     =     =     =
delivered:fallback     FQ    FQ    FQ    -     -     -     -     -     FQ    FQ    =     -     -     =     -     -     -     -     -
delivered:manual       409   409   409   409   409   409   409   409   409   409   409   409   409   =     =     =     409   409   409
delivered:stale        stale stale stale stale stale stale stale stale stale stale stale stale stale stale stale stale stale stale stale
arm:fallback           F     F     F     F     F     -     -     -     F     F     409   409   409   =     =     =     =     =     409
arm:manual             409   409   409   409   409   409   409   409   409   409   409   409   409   =     -     -     -     -     409
arm:stale              stale stale stale stale stale stale stale stale stale stale stale stale stale stale stale stale stale stale stale
admit:own-write        allow allow allow allow allow FC    block saved allow allow allow saved saved allow =     block saved saved saved
admit:bash             allow allow allow allow allow block block saved allow allow allow saved saved allow block block saved saved saved
tool-result:c1-error   -     -     -     -     -     -     F     -     -     -     -     -     -     -     -     =     -     -     -
user-input             ign   R     ign   ign   ign   ign   ign   ign   ign   ign   ign   ign   ign   R     R     R     R     ign   ign
prepare:new_context    409   409   409   409   409   409   409   RO    RO    409   -     409   409   409   409   409   409   409   409
prepare:fallback       409   409   409   409   409   409   409   RO    409   409   409   -     409   409   409   409   409   409   409
prepare:hard_rollover  409   409   409   409   409   409   409   RO    409   RO    409   409   409   409   409   409   409   409   409
prepare:manual_compact 409   409   409   409   409   409   409   409   409   409   409   409   -     409   409   409   RO    =     -
prepare:overflow       RO    RO    RO    RO    RO    RO    RO    RO    RO    RO    409   409   409   409   409   409   409   409   409
commit:w2              409   409   409   409   409   409   409   409   409   409   R     R     R     409   409   409   409   409   R
fail:aborted           ign   ign   ign   ign   ign   ign   ign   ign   ign   ign   RP    CS    MS    ign   ign   ign   ign   ign   MC
fail:not-aborted       ign   ign   ign   ign   ign   ign   ign   ign   ign   ign   R     R+L   R     ign   ign   ign   ign   ign   R
manual:request         MA    MS    MA    MA    MA    MA    MA    MS    MA    MA    409   409   409   -     -     -     -     -     409
manual:saved           409   409   409   409   409   409   409   409   409   409   409   409   -     MS    MS    MS    -     409   409
manual:compacting      409   409   409   409   409   409   409   409   409   409   409   409   MC    409   409   409   MC    -     -
manual:cancel          409   R     409   409   409   409   409   409   409   409   409   409   409   R     R     R     R     R     409
branch:below           -     -     -     -     -     R     R     -     -     -     -     -     -     -     -     -     -     -     -
`

var lcPhaseAbbrev = map[string]string{
	"R": fence.Ready, "RM": fence.Reminded, "FQ": fence.FallbackQueued, "F": fence.Fenced, "FC": fence.FencedClaimed,
	"CS": fence.CheckpointSaved, "RP": fence.RolloverPending, "RO": fence.RollingOver, "MA": fence.ManualAwaiting,
	"MS": fence.ManualSaved, "MC": fence.ManualCompacting,
}

// lcIllegalExtras are refused commands that need a particular argument
// or state besides the matrix's.
var lcIllegalExtras = []struct {
	from  []lcStep
	phase string
	do    lcStep
}{
	{lcRollingNC, fence.RollingOver, lcCommit("w3")},                                                                    // not the prepared window
	{lcWindow2, fence.Ready, lcCommit("w2")},                                                                            // already committed
	{lcSeq(lcPending, lcFenced), fence.Fenced, lcPrepare(fence.ReasonNewContext)},                                       // row 14 guard: fenced-unsaved
	{lcManualAwaiting, fence.ManualAwaiting, lcManual(fence.ActionCancel, "m9")},                                        // another request
	{lcManualSaved, fence.ManualSaved, lcManual(fence.ActionSaved, "m9")},                                               // another request
	{lcManualRolling, fence.ManualCompacting, lcManual(fence.ActionCancel, "m1")},                                       // stopped by rollover/fail
	{lcReusable, fence.Ready, lcManual(fence.ActionCompacting, "m1")},                                                   // reusable: request it again first
	{lcSeq(lcHardQueued, []lcStep{lcArm(fence.KindFallback, "w1")}), fence.Fenced, lcPrepare(fence.ReasonHardRollover)}, // row 11
}

// lcParseMatrix returns the cells of lcMatrix by row and column, checking
// that it has exactly the rows of lcCommands and the columns of
// lcFixtures.
func lcParseMatrix(tb testing.TB) map[string]map[string]string {
	tb.Helper()
	lines := strings.Split(strings.TrimSpace(lcMatrix), "\n")
	header := strings.Fields(lines[0])[1:]
	var cols []string
	for _, f := range lcFixtures {
		cols = append(cols, f.col)
	}
	if !slices.Equal(header, cols) {
		tb.Fatalf("matrix columns %v, want the fixtures %v", header, cols)
	}
	cells := map[string]map[string]string{}
	var rows []string
	for _, line := range lines[1:] {
		f := strings.Fields(line)
		if len(f) != len(cols)+1 {
			tb.Fatalf("matrix row %q has %d cells, want %d", f[0], len(f)-1, len(cols))
		}
		if _, dup := cells[f[0]]; dup {
			tb.Fatalf("matrix row %q twice", f[0])
		}
		rows = append(rows, f[0])
		cells[f[0]] = map[string]string{}
		for i, c := range f[1:] {
			switch c {
			case "409", "-", "ign", "stale", "allow", "block", "saved", "=":
			default:
				if lcPhaseAbbrev[strings.TrimSuffix(c, "+L")] == "" {
					tb.Fatalf("matrix row %q, column %s: unknown cell %q", f[0], cols[i], c)
				}
			}
			cells[f[0]][cols[i]] = c
		}
	}
	var want []string
	for _, c := range lcCommands {
		want = append(want, c.row)
	}
	if !slices.Equal(rows, want) {
		tb.Fatalf("matrix rows %v, want the commands %v", rows, want)
	}
	return cells
}

func TestLifecycleCommandMatrix(t *testing.T) {
	cells := lcParseMatrix(t)
	// Without fsync: the matrix writes a few thousand events it never
	// reads back after the test.
	s := lcOpen(t, filepath.Join(t.TempDir(), "memory.db"), memory.OpenOptions{Synchronous: "off"})
	for fi, f := range lcFixtures {
		t.Run(f.col, func(t *testing.T) {
			t.Parallel()
			n := 0
			fresh := func(t *testing.T, from []lcStep) lcAgent {
				n++
				a := s.attach(t, fmt.Sprintf("/sessions/matrix-%d-%d.jsonl", fi, n))
				a.mustRun(t, from...)
				return a
			}
			// A cell that must leave the state unchanged reuses one agent
			// of the fixture (a new one if a cell did change it); a cell
			// that changes it gets its own.
			var shared *lcAgent
			for _, c := range lcCommands {
				cell := cells[c.row][f.col]
				t.Run(c.row, func(t *testing.T) {
					if !lcUnchanging(cell) {
						lcCheckCell(t, fresh(t, f.from), f.phase, c.do, c.event, cell)
						return
					}
					a := shared
					if a == nil {
						b := fresh(t, f.from)
						a = &b
					}
					shared = nil // until the cell is checked to leave the state as it was
					if lcCheckCell(t, *a, f.phase, c.do, c.event, cell) {
						shared = a
					}
				})
			}
		})
	}
	t.Run("extras", func(t *testing.T) {
		for i, x := range lcIllegalExtras {
			t.Run(fmt.Sprintf("%s %s", x.phase, x.do), func(t *testing.T) {
				a := s.attach(t, fmt.Sprintf("/sessions/matrix-extra-%d.jsonl", i))
				a.mustRun(t, x.from...)
				lcCheckCell(t, a, x.phase, x.do, "", "409")
			})
		}
	})
}

// lcUnchanging reports a cell whose command must leave the state as it
// was (a blocked admit records lifecycle.call_blocked, which changes no
// state).
func lcUnchanging(cell string) bool {
	switch cell {
	case "409", "-", "ign", "stale", "allow", "block", "saved":
		return true
	}
	return false
}

// lcCheckCell sends do in the agent's state (which must be in phase) and
// checks the answer, the events recorded and the state against cell. It
// reports whether the state is as it was.
func lcCheckCell(t *testing.T, a lcAgent, phase string, do lcStep, event, cell string) (same bool) {
	t.Helper()
	before := a.rawState(t)
	if got := lcDecode(t, []byte(before))["phase"]; got != phase {
		t.Fatalf("setup reached %v, want %s", got, phase)
	}
	pos := a.s.position(t)
	code, res := a.run(t, do)
	evs := a.eventTypes(t, pos)
	after := a.rawState(t)
	afterPhase := lcDecode(t, []byte(after))["phase"]
	same = after == before

	unchanged := func() {
		t.Helper()
		if len(evs) != 0 {
			t.Errorf("recorded events %v, want none", evs)
		}
		if after != before {
			t.Errorf("state changed:\n%s\n→\n%s", before, after)
		}
	}
	if cell == "409" {
		if code != http.StatusConflict {
			t.Fatalf("status %d, want 409; body %v", code, res)
		}
		lcCheckFields(t, "response", res, map[string]string{"error.code": `"conflict"`})
		if msg, _ := lcLookup(res, "error.message"); !strings.Contains(fmt.Sprint(msg), "(state "+phase+")") {
			t.Errorf("message %q does not name the state %s", msg, phase)
		}
		unchanged()
		return same
	}
	if code != http.StatusOK {
		t.Fatalf("status %d, want 200 (%s); body %v", code, cell, res)
	}
	if got, _ := lcLookup(res, "state.phase"); got != afterPhase {
		t.Errorf("response state.phase %v, GET /v1/state %v", got, afterPhase)
	}
	resp := map[string]string{}
	switch cell {
	case "-":
		unchanged()
	case "ign":
		resp["ignored"] = "true"
		unchanged()
	case "stale":
		resp["stale"] = "true"
		unchanged()
	case "allow":
		resp["allow"], resp["terminate"] = "true", "false"
		unchanged()
	case "block", "saved":
		reason := fence.ReasonCheckpointRequired
		if cell == "saved" {
			reason = fence.ReasonCheckpointSaved
		}
		resp["allow"], resp["terminate"], resp["reason"] = "false", "true", lcQuote(reason)
		if !slices.Equal(evs, []string{evBlocked}) {
			t.Errorf("events %v, want [%s]", evs, evBlocked)
		}
		if !same {
			t.Errorf("state changed:\n%s\n→\n%s", before, after)
		}
	default:
		want, wantEvents := phase, []string{event}
		if phaseCell, lifted := strings.CutSuffix(cell, "+L"); lifted {
			cell, wantEvents = phaseCell, append(wantEvents, evLifted)
		}
		if cell != "=" {
			want = lcPhaseAbbrev[cell]
		}
		if !slices.Equal(evs, wantEvents) {
			t.Errorf("events %v, want %v", evs, wantEvents)
		}
		if afterPhase != want {
			t.Errorf("phase %v, want %s; state %s", afterPhase, want, after)
		}
	}
	// Fields every accepted answer of the route carries.
	switch {
	case strings.HasSuffix(do.path, "/delivered"), strings.HasSuffix(do.path, "/arm"):
		if cell != "stale" {
			resp["stale"] = "false"
		}
	case strings.HasSuffix(do.path, "/user-input"), strings.HasSuffix(do.path, "/rollover/fail"):
		if cell != "ign" {
			resp["ignored"] = "false"
		}
	case strings.HasSuffix(do.path, "/rollover/prepare"), strings.HasSuffix(do.path, "/rollover/commit"):
		resp["window_id"] = `"w2"`
	case strings.HasSuffix(do.path, "/admit") && cell != "block" && cell != "saved":
		resp["allow"], resp["terminate"] = "true", "false"
	}
	lcCheckFields(t, "response", res, resp)
	return same
}
