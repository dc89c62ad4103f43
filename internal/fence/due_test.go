package fence

import (
	"testing"
)

// TestDueRolloverRules: each rule of DueRollover and their precedence, on
// states written out field by field (what the Pi extension decided by
// itself before memoryd said it).
func TestDueRolloverRules(t *testing.T) {
	saved := &Manual{RequestID: "m1", WindowID: "w1", Phase: PhaseSaved}
	compacting := &Manual{RequestID: "m1", WindowID: "w1", Phase: PhaseCompacting}
	for _, r := range []struct {
		name string
		s    State
		want string
	}{
		{"nothing", State{}, ""},
		{"a prepared rollover: nothing more", State{PendingWindowID: "w2", PendingNewContext: true, CheckpointSaved: true}, ""},
		{"a prepared manual rollover: nothing more", State{PendingWindowID: "w2", Manual: compacting}, ""},
		{"manual saved", State{Manual: saved}, ReasonManual},
		{"manual compacting", State{Manual: compacting}, ReasonManual},
		{"manual awaiting", State{Manual: &Manual{Phase: PhaseAwaiting}}, ""},
		{"manual reusable", State{Manual: &Manual{Phase: PhaseReusable}}, ""},
		{"manual saved wins over a fence waiting", State{Manual: saved, FenceActive: true}, ReasonManual},
		{"manual saved wins over a saved checkpoint", State{Manual: saved, CheckpointSaved: true, PendingNewContext: true}, ReasonManual},
		{"fenced, not saved", State{FenceActive: true, PendingNewContext: true}, ""},
		{"fenced and claimed, not saved", State{FenceActive: true, Claim: "c1", RolloverRequested: true, HardLatched: true}, ""},
		{"checkpoint saved", State{FenceActive: true, CheckpointSaved: true, PendingNewContext: true}, ReasonFallback},
		{"checkpoint saved, hard latched and requested", State{FenceActive: true, CheckpointSaved: true, RolloverRequested: true, HardLatched: true}, ReasonHardRollover},
		{"checkpoint saved, latched but not requested", State{CheckpointSaved: true, HardLatched: true}, ReasonFallback},
		{"checkpoint saved, requested but not latched", State{CheckpointSaved: true, RolloverRequested: true}, ReasonFallback},
		{"new_context pending", State{PendingNewContext: true}, ReasonNewContext},
		{"new_context pending beside a queued fallback", State{PendingNewContext: true, FallbackDelivered: true}, ReasonNewContext},
		{"hard rollover requested, no checkpoint yet", State{RolloverRequested: true, HardLatched: true}, ""},
	} {
		if got := r.s.DueRollover(); got != r.want {
			t.Errorf("%s: DueRollover() = %q, want %q; state %s", r.name, got, r.want, js(r.s))
		}
	}
}

// TestDueRolloverReached: DueRollover in states reached by deciding and
// applying commands from Initial, and whether Prepare accepts the reason
// it names. Where it does not (refused), the host's prepare fails with a
// conflict and nothing happens, as before memoryd named the reason.
func TestDueRolloverReached(t *testing.T) {
	for _, r := range []struct {
		name    string
		from    []tCmd
		want    string
		refused bool
	}{
		{"READY", nil, "", false},
		{"REMINDED", tReminded, "", false},
		{"FALLBACK_QUEUED", tFallbackQueued, "", false},
		{"FENCED", tFenced, "", false},
		{"FENCED_CLAIMED", tClaimed, "", false},
		{"CHECKPOINT_SAVED", tSaved, ReasonFallback, false},
		{"CHECKPOINT_SAVED of a hard rollover", seq(tHardQueued, []tCmd{cArm(KindFallback, "w1"), cAdmit("c1", true), cWrite("c1")}), ReasonHardRollover, false},
		{"ROLLOVER_PENDING new_context", tPending, ReasonNewContext, false},
		{"ROLLOVER_PENDING hard, no checkpoint", tHardPending, "", false},
		{"FALLBACK_QUEUED of a hard rollover", tHardQueued, "", false},
		{"ROLLING_OVER new_context", tRollingNC, "", false},
		{"ROLLING_OVER fallback", tRollingFB, "", false},
		{"window 2", seq(tRollingNC, []tCmd{cCommit("w2")}), "", false},
		{"a failed rollover clears the request", seq(tRollingNC, []tCmd{cFail(false)}), "", false},
		{"an aborted rollover keeps it", seq(tRollingNC, []tCmd{cFail(true)}), ReasonNewContext, false},
		{"an aborted fallback rollover keeps it", seq(tRollingFB, []tCmd{cFail(true)}), ReasonFallback, false},
		{"MANUAL_AWAITING", tManualAwaiting, "", false},
		{"MANUAL_AWAITING claimed", tManualClaimed, "", false},
		{"MANUAL_SAVED", tManualSaved, ReasonManual, false},
		{"MANUAL_COMPACTING", tManualCompact, ReasonManual, false},
		{"MANUAL_COMPACTING prepared", tManualRolling, "", false},
		{"manual reusable", tReusable, "", false},
		{"a manual checkpoint cancelled", seq(tManualSaved, []tCmd{cManual(ActionCancel, "m1")}), "", false},
		// Row 6: the hard rollover's fallback queued beside a pending
		// new_context: the request is named, the prepare waits for the fence.
		{"new_context pending, then a hard rollover's fallback queued", seq(tPending, tHardQueued), ReasonNewContext, true},
		// A /compact queued (not yet armed) beside a pending new_context.
		{"new_context pending, then a manual request", seq(tPending, tManualQueued), ReasonNewContext, true},
	} {
		t.Run(r.name, func(t *testing.T) {
			s := reach(t, r.from...)
			if got := s.DueRollover(); got != r.want {
				t.Fatalf("DueRollover() = %q, want %q; phase %s, state %s", got, r.want, s.Phase(), js(s))
			}
			if r.want == "" {
				return
			}
			_, _, err := step(t, s, cPrepare(r.want))
			if refused := err != nil; refused != r.refused {
				t.Errorf("prepare %s: error %v, want refused=%v", r.want, err, r.refused)
			}
		})
	}
}

// TestDueOnThreshold: the control message the host sends instead of Pi's
// own threshold compaction, in states reached from Initial: the reminder
// first, then the fallback, nothing while a fallback is queued or fenced
// (no reminder under the fence), while a manual checkpoint or a rollover is
// in progress, or while new_context is pending (DueRollover names it).
func TestDueOnThreshold(t *testing.T) {
	for _, r := range []struct {
		name string
		from []tCmd
		want string
	}{
		{"READY", nil, KindReminder},
		{"READY, reminder threshold crossed but not delivered", []tCmd{cUsage(76000)}, KindReminder},
		{"READY, fallback threshold crossed but not delivered", []tCmd{cUsage(88000)}, KindFallback},
		{"REMINDED", tReminded, KindFallback},
		{"FALLBACK_QUEUED", tFallbackQueued, ""},
		{"FENCED", tFenced, ""},
		{"FENCED_CLAIMED", tClaimed, ""},
		{"CHECKPOINT_SAVED", tSaved, ""},
		{"ROLLOVER_PENDING new_context", tPending, ""},
		{"ROLLOVER_PENDING hard, fallback not yet queued", tHardPending, KindFallback},
		{"ROLLING_OVER", tRollingNC, ""},
		{"MANUAL_AWAITING", tManualAwaiting, ""},
		{"MANUAL_SAVED", tManualSaved, ""},
		{"manual reusable", tReusable, KindReminder},
		{"fence lifted by a refused rollover", seq(tRollingFB, []tCmd{cFail(false)}), KindFallback},
		{"fence lifted by a branch change", seq(tFenced, []tCmd{cBranch(ptr64(50000), false)}), KindReminder},
		{"window 2", seq(tReminded, tRollingNC, []tCmd{cCommit("w2")}), KindReminder},
	} {
		t.Run(r.name, func(t *testing.T) {
			s := reach(t, r.from...)
			if got := s.DueOnThreshold(); got != r.want {
				t.Errorf("DueOnThreshold() = %q, want %q; phase %s, state %s", got, r.want, s.Phase(), js(s))
			}
		})
	}
}

// TestManualInProgress: the manual checkpoint request the host keeps in
// the model's context, in each manual phase.
func TestManualInProgress(t *testing.T) {
	for _, r := range []struct {
		name string
		from []tCmd
		want string
	}{
		{"none", nil, ""},
		{"queued", tManualQueued, "m1"},
		{"awaiting", tManualAwaiting, "m1"},
		{"saved", tManualSaved, "m1"},
		{"compacting, prepared", tManualRolling, "m1"},
		{"reusable", tReusable, ""},
		{"cancelled", seq(tManualAwaiting, []tCmd{cManual(ActionCancel, "m1")}), ""},
		{"committed", seq(tManualRolling, []tCmd{cCommit("w2")}), ""},
	} {
		t.Run(r.name, func(t *testing.T) {
			if got := reach(t, r.from...).ManualInProgress(); got != r.want {
				t.Errorf("ManualInProgress() = %q, want %q", got, r.want)
			}
		})
	}
}
