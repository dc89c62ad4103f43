package events

// Payload is the payload of an event of the catalog: its type says which.
type Payload interface {
	EventType() string
}

// NewPending is the event to append with payload p, of p's type: the two
// cannot disagree.
func NewPending(p Payload) Pending { return Pending{Type: p.EventType(), Data: p} }

// EventType is TypeTaskCreated.
func (TaskCreated) EventType() string { return TypeTaskCreated }

// EventType is TypeAgentRegistered.
func (AgentRegistered) EventType() string { return TypeAgentRegistered }

// EventType is TypeAgentReattached.
func (AgentReattached) EventType() string { return TypeAgentReattached }

// EventType is TypeNoteWritten.
func (NoteWritten) EventType() string { return TypeNoteWritten }

// EventType is TypeNoteAppended.
func (NoteAppended) EventType() string { return TypeNoteAppended }

// EventType is TypeHistoryEntryRecorded.
func (HistoryEntryRecorded) EventType() string { return TypeHistoryEntryRecorded }

// EventType is TypeHistoryBranchChanged.
func (HistoryBranchChanged) EventType() string { return TypeHistoryBranchChanged }

// EventType is TypeUsageReported.
func (UsageReported) EventType() string { return TypeUsageReported }

// EventType is TypeControlDelivered.
func (ControlDelivered) EventType() string { return TypeControlDelivered }

// EventType is TypeFenceArmed.
func (FenceArmed) EventType() string { return TypeFenceArmed }

// EventType is TypeClaimTaken.
func (ClaimTaken) EventType() string { return TypeClaimTaken }

// EventType is TypeClaimReleased.
func (ClaimReleased) EventType() string { return TypeClaimReleased }

// EventType is TypeCallBlocked.
func (CallBlocked) EventType() string { return TypeCallBlocked }

// EventType is TypeCheckpointSaved.
func (CheckpointSaved) EventType() string { return TypeCheckpointSaved }

// EventType is TypeNewContextRequested.
func (NewContextRequested) EventType() string { return TypeNewContextRequested }

// EventType is TypeUserInputReceived.
func (UserInputReceived) EventType() string { return TypeUserInputReceived }

// EventType is TypeRolloverPrepared.
func (RolloverPrepared) EventType() string { return TypeRolloverPrepared }

// EventType is TypeRolloverCommitted.
func (RolloverCommitted) EventType() string { return TypeRolloverCommitted }

// EventType is TypeRolloverFailed.
func (RolloverFailed) EventType() string { return TypeRolloverFailed }

// EventType is TypeManualRequested.
func (ManualRequested) EventType() string { return TypeManualRequested }

// EventType is TypeManualPhaseChanged.
func (ManualPhaseChanged) EventType() string { return TypeManualPhaseChanged }

// EventType is TypeManualCancelled.
func (ManualCancelled) EventType() string { return TypeManualCancelled }

// EventType is TypeFenceLifted.
func (FenceLifted) EventType() string { return TypeFenceLifted }

// EventType is TypeToolCalled.
func (ToolCalled) EventType() string { return TypeToolCalled }
