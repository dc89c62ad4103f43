package fence

// DueRollover is the rollover the host should prepare at its next settled
// boundary, or "" for none: ReasonManual for a saved manual checkpoint (or
// one whose compaction is already under way), ReasonHardRollover or
// ReasonFallback for a fence whose checkpoint is saved (hard when the hard
// rollover is latched and requested), ReasonNewContext for a pending
// new_context request. Nothing is due while a rollover is prepared or while
// a fence waits for its checkpoint. The host never decides this itself:
// GET /v1/state and every lifecycle response carry it as rollover_due. It is
// derived from the state when a response is written, never stored, so the
// projections and their digests do not change with it.
func (s State) DueRollover() string {
	switch {
	case s.PendingWindowID != "":
		return ""
	case s.manualSaved():
		return ReasonManual
	case s.FenceActive && !s.CheckpointSaved:
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

// DueOnThreshold is the control message the host sends instead of Pi's own
// threshold compaction, which would summarize the window (the host always
// cancels that compaction unless DueRollover names a rollover): KindReminder
// while no reminder was sent in this window, then KindFallback; "" (cancel
// only) while a fallback is queued or its fence is on, while a manual
// checkpoint or a rollover is in progress, and while a new_context request
// is pending (DueRollover). Derived like DueRollover, never stored.
func (s State) DueOnThreshold() string {
	switch {
	case s.PendingWindowID != "", s.ManualInProgress() != "", s.FenceActive, s.FallbackDelivered, s.PendingNewContext:
		return ""
	case s.FallbackDue || s.ReminderDelivered || s.RolloverRequested:
		return KindFallback
	}
	return KindReminder
}

// ManualInProgress is the request id of the manual /compact checkpoint in
// progress in the current window (awaiting, saved or compacting), or "":
// the one manual-checkpoint message the host keeps in the model's context.
// A reusable checkpoint is not in progress.
func (s State) ManualInProgress() string {
	if s.Manual == nil || s.Manual.Phase == PhaseReusable || s.Manual.WindowID != s.WindowID {
		return ""
	}
	return s.Manual.RequestID
}
