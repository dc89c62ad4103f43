package fence

import (
	"math"

	"github.com/memoryd/memoryd/internal/events"
)

// Usage thresholds made due by a usage report.
const (
	DueReminder     = "reminder"
	DueFallback     = "fallback"
	DueHardRollover = "hard_rollover"
)

// Outcome is what a decision tells the caller besides its events.
type Outcome struct {
	Due       string // for a usage report, the threshold first crossed now
	Stale     bool   // a control message of another window, ignored
	Ignored   bool   // nothing to do, as for a rejected compaction's failure
	Allow     bool   // Admit lets the call run
	Terminate bool   // Admit ends the tool batch
	Reason    string // why Admit blocks the call
	Bootstrap string // the bootstrap of the next window Prepare builds
	WindowID  string // the next window for Prepare, the current one for NewContext
}

// Decision is the events a command records and its outcome.
type Decision struct {
	Events  []events.Pending
	Outcome Outcome
}

func record(ev ...events.Pending) Decision { return Decision{Events: ev} }

// ReminderThreshold is the remaining-token level at which the reminder is
// due, by the formula of docs/behaviour.md §G.
func ReminderThreshold(w int64, b events.Budget) int64 {
	t := min(int64(math.Floor(b.ReminderRemainingPercent*float64(w))), b.ReminderRemainingCeilingTokens)
	return min(max(t, b.ReminderRemainingFloorTokens), w/2)
}

// FallbackThreshold is the remaining-token level at which the fallback is
// due, half the reminder threshold. See docs/contract-notes.md.
func FallbackThreshold(w int64, b events.Budget) int64 { return ReminderThreshold(w, b) / 2 }

// Usage decides a usage report.
func Usage(ref events.AgentRef, s State, b events.Budget, used, window *int64) Decision {
	ev := events.UsageReported{AgentRef: ref, TokensUsed: used, ContextWindow: window}
	w := window
	if w == nil {
		w = s.ContextWindow
	}
	if w == nil {
		w = b.ContextWindow
	}
	if used != nil {
		u := *used
		hard := b.HardRolloverUsedTokens
		fencing := s.FenceActive || s.FallbackDelivered
		switch {
		case hard > 0 && u >= hard && !s.HardLatched && !fencing:
			ev.Due = DueHardRollover
		case w != nil && !fencing && !s.FallbackDue && !s.PendingNewContext && *w-u <= FallbackThreshold(*w, b):
			ev.Due = DueFallback
		case w != nil && !s.ReminderDue && !s.ReminderDelivered && !s.PendingNewContext && *w-u <= ReminderThreshold(*w, b):
			ev.Due = DueReminder
		}
		if s.HardLatched && hard > 0 && float64(u) < 0.9*float64(hard) {
			ev.Unlatched = true
		}
	}
	d := record(events.NewPending(ev))
	d.Outcome.Due = ev.Due
	return d
}

// Deliver decides a control message queued for the model.
func Deliver(ref events.AgentRef, s State, kind, windowID, requestID string) (Decision, error) {
	if windowID != s.WindowID {
		return Decision{Outcome: Outcome{Stale: true}}, nil
	}
	switch kind {
	case KindReminder:
		if s.ReminderDelivered {
			return Decision{}, nil
		}
	case KindFallback:
		if s.FallbackDelivered || s.FenceActive {
			return Decision{}, nil
		}
	case KindManualCheckpoint:
		if s.Manual == nil || s.Manual.Phase != PhaseAwaiting {
			return Decision{}, illegal(s, "no manual checkpoint is awaited")
		}
	}
	return record(events.NewPending(events.ControlDelivered{AgentRef: ref, Kind: kind, WindowID: windowID, RequestID: requestID})), nil
}

// Arm decides a fallback or manual checkpoint request entering the branch.
func Arm(ref events.AgentRef, s State, kind, windowID, requestID string) (Decision, error) {
	if windowID != s.WindowID {
		return Decision{Outcome: Outcome{Stale: true}}, nil
	}
	if s.PendingWindowID != "" {
		return Decision{}, illegal(s, "a rollover to %s is in progress", s.PendingWindowID)
	}
	if s.FenceActive && s.FenceKind == kind {
		return Decision{}, nil
	}
	if kind == KindManualCheckpoint && (s.Manual == nil || s.Manual.Phase != PhaseAwaiting) {
		return Decision{}, illegal(s, "no manual checkpoint is awaited")
	}
	if kind == KindManualCheckpoint && s.FenceActive {
		// The fallback's fence already asks for the one checkpoint the
		// manual request asks for. It stays, with its claim, and outlives
		// the manual checkpoint if that is cancelled.
		return Decision{}, nil
	}
	return record(events.NewPending(events.FenceArmed{AgentRef: ref, Kind: kind, WindowID: windowID, RequestID: requestID})), nil
}

// Admit decides whether the host may run a tool call, taking the claim.
func Admit(ref events.AgentRef, s State, callID, tool string, ownWrite bool) Decision {
	v, reason := s.Gate(callID, ownWrite)
	switch {
	case v == Open:
		return Decision{Outcome: Outcome{Allow: true}}
	case v == Admitted && s.Claim == callID:
		return Decision{Outcome: Outcome{Allow: true}}
	case v == Admitted:
		d := record(events.NewPending(events.ClaimTaken{AgentRef: ref, CallID: callID, ToolName: tool}))
		d.Outcome.Allow = true
		return d
	}
	d := record(events.NewPending(events.CallBlocked{AgentRef: ref, CallID: callID, ToolName: tool, Reason: reason}))
	d.Outcome = Outcome{Terminate: true, Reason: reason}
	return d
}

// ToolResult decides a tool result reported by the host. A claimed call
// that failed releases the claim.
func ToolResult(ref events.AgentRef, s State, callID string, isError bool) Decision {
	if !isError || s.Claim == "" || s.Claim != callID {
		return Decision{}
	}
	return record(events.NewPending(events.ClaimReleased{AgentRef: ref, CallID: callID}))
}

// Checkpoint records the admitted own-notes write succeeding.
func Checkpoint(ref events.AgentRef, s State, callID, path string) Decision {
	return record(events.NewPending(events.CheckpointSaved{AgentRef: ref, CallID: callID, Path: path, WindowID: s.WindowID}))
}

// NewContext decides a new_context call, which is idempotent and refused
// while fenced.
func NewContext(ref events.AgentRef, s State, callID string) (Decision, error) {
	if v, reason := s.Gate(callID, false); v == Blocked {
		return Decision{Outcome: Outcome{Reason: reason}}, illegal(s, "%s", reason)
	}
	d := Decision{Outcome: Outcome{WindowID: s.WindowID}}
	if !s.PendingNewContext {
		d.Events = []events.Pending{events.NewPending(events.NewContextRequested{AgentRef: ref, CallID: callID, WindowID: s.WindowID})}
	}
	return d, nil
}

// UserInput decides an ordinary user message.
func UserInput(ref events.AgentRef, s State) Decision {
	if s.Manual == nil || s.Manual.Phase == PhaseCompacting || s.PendingWindowID != "" {
		return Decision{Outcome: Outcome{Ignored: true}}
	}
	return record(events.NewPending(events.UserInputReceived{AgentRef: ref}))
}

// Prepare decides building the next window for a reason. bootstrap is the
// text the one bootstrap builder built for it.
func Prepare(ref events.AgentRef, s State, reason, bootstrap string) (Decision, error) {
	if s.PendingWindowID != "" {
		if s.PendingReason == reason {
			return Decision{Outcome: Outcome{WindowID: s.PendingWindowID, Bootstrap: s.PendingBootstrap}}, nil
		}
		return Decision{}, illegal(s, "a rollover to %s is already prepared for %s", s.PendingWindowID, s.PendingReason)
	}
	manualActive := s.Manual != nil && s.Manual.Phase != PhaseReusable
	switch reason {
	case ReasonManual:
		if !s.manualSaved() {
			return Decision{}, illegal(s, "save the manual checkpoint before its compaction")
		}
	case ReasonOverflow:
		if manualActive {
			return Decision{}, illegal(s, "a manual checkpoint is in progress; nested compactions are refused")
		}
	default:
		if manualActive {
			return Decision{}, illegal(s, "a manual checkpoint is in progress; nested compactions are refused")
		}
		if s.FenceActive && !s.CheckpointSaved {
			return Decision{}, illegal(s, "the checkpoint fence is active and no checkpoint is saved")
		}
		if s.FallbackDelivered && !s.FenceActive {
			// Per row 6, the compaction is skipped while the fallback is
			// queued, and the rollover waits for its checkpoint.
			return Decision{}, illegal(s, "the fallback is queued and not yet in the branch")
		}
		switch reason {
		case ReasonNewContext:
			if !s.PendingNewContext {
				return Decision{}, illegal(s, "no new_context request is pending")
			}
		case ReasonFallback:
			if !s.CheckpointSaved {
				return Decision{}, illegal(s, "no fallback checkpoint is saved")
			}
		case ReasonHardRollover:
			if !s.RolloverRequested && !s.CheckpointSaved {
				return Decision{}, illegal(s, "no hard rollover is requested")
			}
		}
	}
	next := s.NextWindowID()
	d := record(events.NewPending(events.RolloverPrepared{AgentRef: ref,
		Reason: reason, WindowID: next, PreviousWindowID: s.WindowID, Bootstrap: bootstrap}))
	d.Outcome = Outcome{WindowID: next, Bootstrap: bootstrap}
	return d, nil
}

// Commit decides the prepared window going live.
func Commit(ref events.AgentRef, s State, windowID, compactionEntryID string) (Decision, error) {
	if s.PendingWindowID == "" {
		return Decision{}, illegal(s, "no rollover is prepared")
	}
	if windowID != s.PendingWindowID {
		return Decision{}, illegal(s, "the prepared window is %s, not %s", s.PendingWindowID, windowID)
	}
	return record(events.NewPending(events.RolloverCommitted{AgentRef: ref,
		WindowID: windowID, PreviousWindowID: s.WindowID, CompactionEntryID: compactionEntryID})), nil
}

// Follow decides the windows a host's own compactions opened (Claude Code
// and Codex compact without memoryd preparing a rollover): each is
// committed in turn, so the one-shot flags and the reminder start again
// in every window, as after a rollover. windowIDs are the history's
// windows after the agent's current one, in order. A prepared rollover is
// the host's to commit, so none is followed then.
func Follow(ref events.AgentRef, s State, windowIDs []string) Decision {
	if s.PendingWindowID != "" {
		return Decision{}
	}
	var d Decision
	previous := s.WindowID
	for _, id := range windowIDs {
		d.Events = append(d.Events, events.NewPending(events.RolloverCommitted{AgentRef: ref, WindowID: id, PreviousWindowID: previous}))
		previous = id
	}
	return d
}

// Fail decides a failed compaction. Without a prepared rollover it is the
// failure of an attempt memoryd refused or never saw, and is ignored.
func Fail(ref events.AgentRef, s State, aborted bool, msg string) Decision {
	if s.PendingWindowID == "" {
		return Decision{Outcome: Outcome{Ignored: true}}
	}
	d := record(events.NewPending(events.RolloverFailed{AgentRef: ref, Aborted: aborted, Error: msg}))
	// Pi refusing the rollover a saved fallback checkpoint asked for will
	// not roll this branch over, so lift the fence rather than keep every
	// tool blocked for good. The host tells the model the window was not reset.
	if !aborted && s.FenceActive && s.FenceKind == KindFallback && s.CheckpointSaved {
		d.Events = append(d.Events, events.NewPending(events.FenceLifted{AgentRef: ref, Reason: events.LiftRolloverRefused, WindowID: s.WindowID}))
	}
	return d
}

// BranchChanged decides the fence when the host moved to another branch with
// Pi's /tree, so that the agent is never blocked for a reason absent from its
// context. Only a fallback fence waiting for its checkpoint, whose message is
// not on the new branch, changes.
func BranchChanged(ref events.AgentRef, s State, b events.Budget, used, window *int64, fenceInBranch bool) Decision {
	if !s.FenceActive || s.FenceKind != KindFallback || s.CheckpointSaved || s.PendingWindowID != "" || fenceInBranch {
		return Decision{}
	}
	w := window
	if w == nil {
		w = s.ContextWindow
	}
	if w == nil {
		w = b.ContextWindow
	}
	// Below the fallback threshold the fence is lifted, and the fallback
	// may become due again on this branch.
	if used != nil && w != nil && *w-*used > FallbackThreshold(*w, b) {
		return record(events.NewPending(events.FenceLifted{AgentRef: ref, Reason: events.LiftBranchChanged, WindowID: s.WindowID}))
	}
	// Otherwise, or with the usage unknown, the fence stays and the host
	// delivers the fallback message again into the branch now in context.
	return Decision{Outcome: Outcome{Due: DueFallback}}
}

// Manual actions.
const (
	ActionRequest    = "request"
	ActionSaved      = "saved"
	ActionCompacting = "compacting"
	ActionCancel     = "cancel"
)

// ManualAction decides a manual /compact checkpoint phase change.
func ManualAction(ref events.AgentRef, s State, action, requestID string) (Decision, error) {
	m := s.Manual
	switch action {
	case ActionRequest:
		if s.PendingWindowID != "" {
			return Decision{}, illegal(s, "a rollover to %s is in progress", s.PendingWindowID)
		}
		if m != nil && m.Phase != PhaseReusable {
			return Decision{}, nil // duplicate /compact commands merge
		}
		phase := PhaseAwaiting
		if m != nil || s.CheckpointSaved {
			// Reuse the checkpoint saved before a failed compaction, per
			// row 24, or the one the fallback's fence saved.
			phase = PhaseSaved
		}
		return record(events.NewPending(events.ManualRequested{AgentRef: ref, RequestID: requestID, WindowID: s.WindowID, Phase: phase})), nil
	case ActionSaved, ActionCompacting, ActionCancel:
		if m == nil {
			return Decision{}, illegal(s, "no manual checkpoint is in progress")
		}
		if requestID != "" && requestID != m.RequestID {
			return Decision{}, illegal(s, "the manual checkpoint in progress is %q, not %q", m.RequestID, requestID)
		}
	}
	switch action {
	case ActionSaved:
		if m.Phase == PhaseSaved {
			return Decision{}, nil
		}
		if m.Phase != PhaseAwaiting {
			return Decision{}, illegal(s, "the manual checkpoint is %s, not awaiting", m.Phase)
		}
	case ActionCompacting:
		if m.Phase == PhaseCompacting {
			return Decision{}, nil
		}
		if m.Phase != PhaseSaved {
			return Decision{}, illegal(s, "the manual checkpoint is %s, not saved", m.Phase)
		}
	case ActionCancel:
		if s.PendingWindowID != "" {
			// The prepared window is built on the saved checkpoint, so the
			// compaction is stopped by reporting its failure, per rows 17
			// and 24.
			return Decision{}, illegal(s, "a rollover to %s is prepared; report its failure to stop it", s.PendingWindowID)
		}
		return record(events.NewPending(events.ManualCancelled{AgentRef: ref, RequestID: m.RequestID})), nil
	}
	return record(events.NewPending(events.ManualPhaseChanged{AgentRef: ref, RequestID: m.RequestID, Phase: action})), nil
}
