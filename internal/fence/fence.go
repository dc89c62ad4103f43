// Package fence is the checkpoint fence and window rollover state machine
// of one agent, as pure functions.
//
// Each command, such as Usage, Admit or Prepare, turns the current State
// into a Decision with the events to record, or an error naming the state.
// Apply folds an event into the State. None reads a clock, storage or
// randomness, so a replayed log always rebuilds the same state and shows
// why each call was admitted or blocked. See docs/behaviour.md §D.
package fence

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/memoryd/memoryd/internal/events"
)

// ErrIllegal means the command is not allowed in the agent's current state.
var ErrIllegal = errors.New("illegal in the current state")

// Phases of the state, as docs/behaviour.md §D.2 names them.
const (
	Ready            = "READY"
	Reminded         = "REMINDED"
	FallbackQueued   = "FALLBACK_QUEUED"
	Fenced           = "FENCED"
	FencedClaimed    = "FENCED_CLAIMED"
	CheckpointSaved  = "CHECKPOINT_SAVED"
	RolloverPending  = "ROLLOVER_PENDING"
	RollingOver      = "ROLLING_OVER"
	ManualAwaiting   = "MANUAL_AWAITING"
	ManualSaved      = "MANUAL_SAVED"
	ManualCompacting = "MANUAL_COMPACTING"
)

// Control message kinds, manual phases and rollover reasons.
const (
	KindReminder         = "reminder"
	KindFallback         = "fallback"
	KindManualCheckpoint = "manual_checkpoint"

	PhaseAwaiting   = "awaiting"
	PhaseSaved      = "saved"
	PhaseCompacting = "compacting"
	PhaseReusable   = "reusable"

	ReasonNewContext   = "new_context"
	ReasonFallback     = "fallback"
	ReasonHardRollover = "hard_rollover"
	ReasonManual       = "manual_compact"
	ReasonOverflow     = "overflow"
)

// Reasons the fence gives a blocked call.
const (
	ReasonCheckpointRequired = "Checkpoint required: only one notes_write_file or notes_append_to_file to your own notes is allowed before the context window rolls over."
	ReasonCheckpointSaved    = "Checkpoint already saved; the context window rollover is pending."
)

// Manual is a manual /compact checkpoint in progress.
type Manual struct {
	RequestID string
	WindowID  string
	Phase     string
}

// State is one agent's lifecycle state, as in docs/behaviour.md §D.1.
type State struct {
	WindowID         string
	WindowNumber     int
	PreviousWindowID string

	// One-shot, per window.
	ReminderDue       bool
	FallbackDue       bool
	ReminderDelivered bool
	FallbackDelivered bool

	FenceActive     bool
	FenceKind       string
	FenceRequestID  string
	Claim           string
	CheckpointSaved bool
	// CheckpointCallID is the call that saved the checkpoint, so that its
	// idempotent retry is answered as the original was.
	CheckpointCallID string

	PendingNewContext bool
	RolloverRequested bool
	HardLatched       bool

	Manual *Manual

	PendingWindowID  string
	PendingReason    string
	PendingBootstrap string

	TokensUsed    *int64
	ContextWindow *int64
}

// Initial is the state of a newly registered agent.
func Initial() State { return State{WindowID: "w1", WindowNumber: 1} }

// Phase names the state.
func (s State) Phase() string {
	switch {
	case s.PendingWindowID != "" && s.Manual != nil && s.Manual.Phase == PhaseCompacting:
		return ManualCompacting
	case s.PendingWindowID != "":
		return RollingOver
	case s.Manual != nil && s.Manual.Phase == PhaseAwaiting:
		return ManualAwaiting
	case s.Manual != nil && s.Manual.Phase == PhaseSaved:
		return ManualSaved
	case s.Manual != nil && s.Manual.Phase == PhaseCompacting:
		return ManualCompacting
	case s.FenceActive && s.CheckpointSaved:
		return CheckpointSaved
	case s.FenceActive && s.Claim != "":
		return FencedClaimed
	case s.FenceActive:
		return Fenced
	case s.FallbackDelivered:
		return FallbackQueued
	case s.PendingNewContext || s.RolloverRequested:
		return RolloverPending
	case s.ReminderDelivered:
		return Reminded
	}
	return Ready
}

// NextWindowID is the id the next rollover opens.
func (s State) NextWindowID() string { return "w" + strconv.Itoa(s.WindowNumber+1) }

// manualSaved reports a manual checkpoint saved and waiting for its
// compaction, which blocks every tool.
func (s State) manualSaved() bool {
	return s.Manual != nil && (s.Manual.Phase == PhaseSaved || s.Manual.Phase == PhaseCompacting)
}

// Verdict is the fence's answer for one tool call.
type Verdict int

const (
	// Open means no fence, so the call runs normally.
	Open Verdict = iota
	// Admitted is the one own-notes write the fence lets through, whose
	// success saves the checkpoint.
	Admitted
	// Blocked means the fence refuses the call.
	Blocked
)

// Gate decides whether a tool call may run. ownWrite reports a notes write
// whose target is the agent's own notes.
func (s State) Gate(callID string, ownWrite bool) (Verdict, string) {
	if !s.FenceActive && !s.manualSaved() {
		return Open, ""
	}
	if s.CheckpointSaved || s.manualSaved() {
		return Blocked, ReasonCheckpointSaved
	}
	if ownWrite && (s.Claim == "" || s.Claim == callID) {
		return Admitted, ""
	}
	return Blocked, ReasonCheckpointRequired
}

func illegal(s State, format string, args ...any) error {
	return fmt.Errorf("%w: %s (state %s)", ErrIllegal, fmt.Sprintf(format, args...), s.Phase())
}

// Apply folds one lifecycle event payload into the state. Payloads of
// other event types leave it unchanged, and it never changes its argument.
func Apply(s State, payload any) State {
	// Manual.Phase is the one field Apply writes through a pointer, so copy
	// it first, and the result shares nothing Apply changed with s.
	if s.Manual != nil {
		m := *s.Manual
		s.Manual = &m
	}
	switch p := payload.(type) {
	case *events.UsageReported:
		s.TokensUsed = p.TokensUsed
		if p.ContextWindow != nil {
			s.ContextWindow = p.ContextWindow
		}
		switch p.Due {
		case DueHardRollover:
			// The hard rollover sends the fallback, per docs/behaviour.md
			// §D.3 row 2, so neither it nor the reminder is due again in
			// this window.
			s.HardLatched, s.RolloverRequested = true, true
			s.FallbackDue, s.ReminderDue = true, true
		case DueFallback:
			s.FallbackDue, s.ReminderDue = true, true
		case DueReminder:
			s.ReminderDue = true
		}
		if p.Unlatched {
			s.HardLatched = false
		}
	case *events.ControlDelivered:
		switch p.Kind {
		case KindReminder:
			s.ReminderDelivered = true
		case KindFallback:
			s.FallbackDelivered = true
		}
	case *events.FenceArmed:
		if !s.FenceActive {
			s.Claim, s.CheckpointSaved = "", false
		}
		// A fence already active, a manual checkpoint's that the fallback
		// joins, keeps its claim, since the admitted write is running.
		s.FenceActive, s.FenceKind, s.FenceRequestID = true, p.Kind, p.RequestID
	case *events.ClaimTaken:
		s.Claim = p.CallID
	case *events.ClaimReleased:
		s.Claim = ""
	case *events.CheckpointSaved:
		s.Claim, s.CheckpointCallID = "", p.CallID
		if s.Manual != nil && s.Manual.Phase == PhaseAwaiting {
			s.Manual.Phase = PhaseSaved
		} else {
			s.CheckpointSaved, s.PendingNewContext = true, true
		}
	case *events.NewContextRequested:
		s.PendingNewContext = true
	case *events.UserInputReceived:
		s.Manual = nil
		if s.FenceKind == KindManualCheckpoint {
			s = fenceOff(s)
		}
	case *events.RolloverPrepared:
		s.PendingWindowID, s.PendingReason, s.PendingBootstrap = p.WindowID, p.Reason, p.Bootstrap
	case *events.RolloverCommitted:
		latched := s.HardLatched
		n := s.WindowNumber + 1
		s = State{WindowID: p.WindowID, WindowNumber: n, PreviousWindowID: p.PreviousWindowID, HardLatched: latched}
	case *events.RolloverFailed:
		s.PendingWindowID, s.PendingReason, s.PendingBootstrap = "", "", ""
		if p.Aborted {
			break
		}
		s.RolloverRequested, s.PendingNewContext, s.CheckpointSaved, s.Claim = false, false, false, ""
		s.CheckpointCallID = ""
		if s.Manual != nil && (s.Manual.Phase == PhaseSaved || s.Manual.Phase == PhaseCompacting) {
			s.Manual.Phase = PhaseReusable
			if s.FenceKind == KindManualCheckpoint {
				s = fenceOff(s)
			}
		}
	case *events.ManualRequested:
		s.Manual = &Manual{RequestID: p.RequestID, WindowID: p.WindowID, Phase: p.Phase}
	case *events.ManualPhaseChanged:
		if s.Manual != nil {
			s.Manual.Phase = p.Phase
		}
	case *events.ManualCancelled:
		s.Manual = nil
		if s.FenceKind == KindManualCheckpoint {
			s = fenceOff(s)
		}
	case *events.FenceLifted:
		s = fenceOff(s)
		s.FallbackDelivered = false
		if p.Reason == events.LiftBranchChanged {
			// The branch now in context is below the fallback threshold, so
			// crossing it again on this branch makes the fallback due again.
			s.FallbackDue = false
		}
	}
	return s
}

func fenceOff(s State) State {
	s.FenceActive, s.FenceKind, s.FenceRequestID, s.Claim, s.CheckpointSaved = false, "", "", "", false
	s.CheckpointCallID = ""
	return s
}
