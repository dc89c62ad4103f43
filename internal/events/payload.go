package events

// Payload is the payload of an event of the catalog, whose type says which.
type Payload interface {
	EventType() string
}

// NewPending is the event to append with payload p, of p's type, so the
// two cannot disagree.
func NewPending(p Payload) Pending { return Pending{Type: p.EventType(), Data: p} }

// EventType returns TypeTaskCreated.
func (TaskCreated) EventType() string { return TypeTaskCreated }

// EventType returns TypeAgentRegistered.
func (AgentRegistered) EventType() string { return TypeAgentRegistered }

// EventType returns TypeAgentReattached.
func (AgentReattached) EventType() string { return TypeAgentReattached }

// EventType returns TypeNoteWritten.
func (NoteWritten) EventType() string { return TypeNoteWritten }

// EventType returns TypeNoteAppended.
func (NoteAppended) EventType() string { return TypeNoteAppended }

// EventType returns TypeHistoryEntryRecorded.
func (HistoryEntryRecorded) EventType() string { return TypeHistoryEntryRecorded }

// EventType returns TypeHistoryBranchChanged.
func (HistoryBranchChanged) EventType() string { return TypeHistoryBranchChanged }

// EventType returns TypeUsageReported.
func (UsageReported) EventType() string { return TypeUsageReported }

// EventType returns TypeControlDelivered.
func (ControlDelivered) EventType() string { return TypeControlDelivered }

// EventType returns TypeFenceArmed.
func (FenceArmed) EventType() string { return TypeFenceArmed }

// EventType returns TypeClaimTaken.
func (ClaimTaken) EventType() string { return TypeClaimTaken }

// EventType returns TypeClaimReleased.
func (ClaimReleased) EventType() string { return TypeClaimReleased }

// EventType returns TypeCallBlocked.
func (CallBlocked) EventType() string { return TypeCallBlocked }

// EventType returns TypeCheckpointSaved.
func (CheckpointSaved) EventType() string { return TypeCheckpointSaved }

// EventType returns TypeNewContextRequested.
func (NewContextRequested) EventType() string { return TypeNewContextRequested }

// EventType returns TypeUserInputReceived.
func (UserInputReceived) EventType() string { return TypeUserInputReceived }

// EventType returns TypeRolloverPrepared.
func (RolloverPrepared) EventType() string { return TypeRolloverPrepared }

// EventType returns TypeRolloverCommitted.
func (RolloverCommitted) EventType() string { return TypeRolloverCommitted }

// EventType returns TypeRolloverFailed.
func (RolloverFailed) EventType() string { return TypeRolloverFailed }

// EventType returns TypeManualRequested.
func (ManualRequested) EventType() string { return TypeManualRequested }

// EventType returns TypeManualPhaseChanged.
func (ManualPhaseChanged) EventType() string { return TypeManualPhaseChanged }

// EventType returns TypeManualCancelled.
func (ManualCancelled) EventType() string { return TypeManualCancelled }

// EventType returns TypeFenceLifted.
func (FenceLifted) EventType() string { return TypeFenceLifted }

// EventType returns TypeToolCalled.
func (ToolCalled) EventType() string { return TypeToolCalled }

// EventType returns TypeEventErased.
func (EventErased) EventType() string { return TypeEventErased }

// EventType returns TypeTaskErased.
func (TaskErased) EventType() string { return TypeTaskErased }

// EventType returns TypeTaskRetentionSet.
func (TaskRetentionSet) EventType() string { return TypeTaskRetentionSet }
