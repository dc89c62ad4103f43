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
