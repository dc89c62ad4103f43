package fence

// DueRollover is the rollover the host should prepare at its next settled
// boundary, or "" for none. Responses carry it as rollover_due, derived and
// never stored, so the projections do not change with it. See
// docs/contract-notes.md.
func (s State) DueRollover() string {
	switch {
	case s.PendingWindowID != "": // a rollover is prepared already
		return ""
	case s.manualSaved(): // saved, or its compaction under way
		return ReasonManual
	case s.FenceActive && !s.CheckpointSaved: // the fence waits for its checkpoint
		return ""
	case s.CheckpointSaved && s.RolloverRequested && s.HardLatched:
		return ReasonHardRollover
	case s.CheckpointSaved:
		return ReasonFallback
	case s.PendingNewContext:
		return ReasonNewContext
	}
	return ""
}

// DueOnThreshold is the control message the host sends when it cancels
// Pi's own threshold compaction, or "" to only cancel it. Like DueRollover,
// it is derived and never stored.
func (s State) DueOnThreshold() string {
	switch {
	case s.PendingWindowID != "", s.ManualInProgress() != "", s.FenceActive, s.FallbackDelivered, s.PendingNewContext:
		return "" // cancel only
	case s.FallbackDue || s.ReminderDelivered || s.RolloverRequested:
		return KindFallback
	}
	return KindReminder
}

// ManualInProgress is the request id of the manual /compact checkpoint in
// progress in the current window, or "". The host keeps that one
// manual-checkpoint message in the model's context.
func (s State) ManualInProgress() string {
	if s.Manual == nil || s.Manual.Phase == PhaseReusable || s.Manual.WindowID != s.WindowID { // a reusable checkpoint is not in progress
		return ""
	}
	return s.Manual.RequestID
}
