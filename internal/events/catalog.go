package events

import (
	"encoding/json"
	"fmt"
)

// Event type names are frozen. A released name never changes meaning, and
// a payload change bumps the type's schema number.
const (
	TypeTaskCreated     = "task.created"
	TypeAgentRegistered = "agent.registered"
	TypeAgentReattached = "agent.reattached"
	TypeNoteWritten     = "note.written"
	TypeNoteAppended    = "note.appended"

	TypeHistoryEntryRecorded = "history.entry_recorded"
	TypeHistoryBranchChanged = "history.branch_changed"

	TypeUsageReported       = "lifecycle.usage_reported"
	TypeControlDelivered    = "lifecycle.control_delivered"
	TypeFenceArmed          = "lifecycle.fence_armed"
	TypeClaimTaken          = "lifecycle.claim_taken"
	TypeClaimReleased       = "lifecycle.claim_released"
	TypeCallBlocked         = "lifecycle.call_blocked"
	TypeCheckpointSaved     = "lifecycle.checkpoint_saved"
	TypeNewContextRequested = "lifecycle.new_context_requested"
	TypeUserInputReceived   = "lifecycle.user_input_received"
	TypeRolloverPrepared    = "lifecycle.rollover_prepared"
	TypeRolloverCommitted   = "lifecycle.rollover_committed"
	TypeRolloverFailed      = "lifecycle.rollover_failed"
	TypeManualRequested     = "lifecycle.manual_requested"
	TypeManualPhaseChanged  = "lifecycle.manual_phase_changed"
	TypeManualCancelled     = "lifecycle.manual_cancelled"
	TypeFenceLifted         = "lifecycle.fence_lifted"

	TypeToolCalled = "audit.tool_called"

	TypeEventErased = "event.erased"
	TypeTaskErased  = "task.erased"

	TypeTaskRetentionSet = "task.retention_set"
)

// Catalog lists every event type with its current schema number and a
// constructor for an empty payload. It drives decoding and validation of
// imported logs.
var Catalog = []CatalogEntry{
	{Type: TypeTaskCreated, Schema: 1, New: func() any { return new(TaskCreated) }},
	{Type: TypeAgentRegistered, Schema: 1, New: func() any { return new(AgentRegistered) }},
	{Type: TypeAgentReattached, Schema: 1, New: func() any { return new(AgentReattached) }},
	{Type: TypeNoteWritten, Schema: 1, New: func() any { return new(NoteWritten) }},
	{Type: TypeNoteAppended, Schema: 1, New: func() any { return new(NoteAppended) }},
	{Type: TypeHistoryEntryRecorded, Schema: 1, New: func() any { return new(HistoryEntryRecorded) }},
	{Type: TypeHistoryBranchChanged, Schema: 1, New: func() any { return new(HistoryBranchChanged) }},
	{Type: TypeUsageReported, Schema: 1, New: func() any { return new(UsageReported) }},
	{Type: TypeControlDelivered, Schema: 1, New: func() any { return new(ControlDelivered) }},
	{Type: TypeFenceArmed, Schema: 1, New: func() any { return new(FenceArmed) }},
	{Type: TypeClaimTaken, Schema: 1, New: func() any { return new(ClaimTaken) }},
	{Type: TypeClaimReleased, Schema: 1, New: func() any { return new(ClaimReleased) }},
	{Type: TypeCallBlocked, Schema: 1, New: func() any { return new(CallBlocked) }},
	{Type: TypeCheckpointSaved, Schema: 1, New: func() any { return new(CheckpointSaved) }},
	{Type: TypeNewContextRequested, Schema: 1, New: func() any { return new(NewContextRequested) }},
	{Type: TypeUserInputReceived, Schema: 1, New: func() any { return new(UserInputReceived) }},
	{Type: TypeRolloverPrepared, Schema: 1, New: func() any { return new(RolloverPrepared) }},
	{Type: TypeRolloverCommitted, Schema: 1, New: func() any { return new(RolloverCommitted) }},
	{Type: TypeRolloverFailed, Schema: 1, New: func() any { return new(RolloverFailed) }},
	{Type: TypeManualRequested, Schema: 1, New: func() any { return new(ManualRequested) }},
	{Type: TypeManualPhaseChanged, Schema: 1, New: func() any { return new(ManualPhaseChanged) }},
	{Type: TypeManualCancelled, Schema: 1, New: func() any { return new(ManualCancelled) }},
	{Type: TypeFenceLifted, Schema: 1, New: func() any { return new(FenceLifted) }},
	{Type: TypeToolCalled, Schema: 3, New: func() any { return new(ToolCalled) },
		Legacy: func(schema int) Upcaster {
			if schema < 3 {
				return new(toolCalledV2)
			}
			return nil
		}},
	{Type: TypeEventErased, Schema: 1, New: func() any { return new(EventErased) }},
	{Type: TypeTaskErased, Schema: 2, New: func() any { return new(TaskErased) }},
	{Type: TypeTaskRetentionSet, Schema: 1, New: func() any { return new(TaskRetentionSet) }},
}

// CatalogEntry describes one event type.
type CatalogEntry struct {
	Type   string
	Schema int
	New    func() any
	// Legacy, if set, returns an empty payload of an older schema whose
	// data New's payload cannot hold, or nil for a schema it can (one
	// that only lacks optional members added since).
	Legacy func(schema int) Upcaster
}

// Upcaster is the payload of an older schema of a type, which Upcast turns
// into the current one. Decode and CheckPayload return the current payload
// of every event; the data of an old event stays as it was written.
type Upcaster interface {
	Upcast() any
}

// empty returns an empty payload to decode data of the given schema into.
func (e CatalogEntry) empty(schema int) any {
	if e.Legacy != nil {
		if v := e.Legacy(schema); v != nil {
			return v
		}
	}
	return e.New()
}

// current returns v, or the current payload of an older schema's v.
func current(v any) any {
	if u, ok := v.(Upcaster); ok {
		return u.Upcast()
	}
	return v
}

// Lookup returns the catalog entry of an event type.
func Lookup(typ string) (CatalogEntry, bool) {
	for _, e := range Catalog {
		if e.Type == typ {
			return e, true
		}
	}
	return CatalogEntry{}, false
}

// entryOf returns the catalog entry of ev's type, if this build knows the
// type and ev's schema.
func entryOf(ev Event) (CatalogEntry, error) {
	e, ok := Lookup(ev.Type)
	if !ok {
		return CatalogEntry{}, fmt.Errorf("%w: unknown event type %q", ErrUnknownEvent, ev.Type)
	}
	if ev.Schema > e.Schema || ev.Schema < 1 {
		return CatalogEntry{}, fmt.Errorf("%w: event type %q has schema %d, this build knows schema %d", ErrUnknownEvent, ev.Type, ev.Schema, e.Schema)
	}
	return e, nil
}

// Decoded returns ev with its payload checked by CheckPayload and kept, so
// that a log reader checks ahead of the writer and Decode need not decode
// it again. Why a payload breaks a rule is kept for the import to report.
func Decoded(ev Event) Event {
	ev.payload, ev.refused = CheckPayload(ev)
	return ev
}

// Decode returns the typed payload of ev, a pointer to one of the payload
// structs of this file. Callers must not modify it, since Decoded may share
// it with other copies of ev.
func Decode(ev Event) (any, error) {
	if ev.payload != nil {
		return ev.payload, nil
	}
	e, err := entryOf(ev)
	if err != nil {
		return nil, err
	}
	v := e.empty(ev.Schema)
	if err := json.Unmarshal(ev.Data, v); err != nil {
		return nil, fmt.Errorf("decode %s payload: %w", ev.Type, err)
	}
	return current(v), nil
}

// Budget is an agent's effective budget configuration, defaults resolved.
type Budget struct {
	ContextWindow                  *int64  `json:"context_window"`
	ReminderRemainingPercent       float64 `json:"reminder_remaining_percent"`
	ReminderRemainingFloorTokens   int64   `json:"reminder_remaining_floor_tokens"`
	ReminderRemainingCeilingTokens int64   `json:"reminder_remaining_ceiling_tokens"`
	HardRolloverUsedTokens         int64   `json:"hard_rollover_used_tokens"`
	MaxToolOutputChars             int64   `json:"max_tool_output_chars"`
	NotesMaxFileBytes              int64   `json:"notes_max_file_bytes"`
	HistoryItemPreviewChars        int64   `json:"history_item_preview_chars"`
}

// TaskCreated records a new root task in the stream <task_id>/root.
type TaskCreated struct {
	TaskID     string `json:"task_id"`
	SessionKey string `json:"session_key"`
}

// AgentRegistered records an agent joining a task, as the root agent of a
// new task or as a child, in the agent's own stream.
type AgentRegistered struct {
	TaskID      string `json:"task_id"`
	Agent       string `json:"agent"`
	ParentAgent string `json:"parent_agent,omitempty"`
	SessionKey  string `json:"session_key"`
	SessionID   string `json:"session_id,omitempty"`
	SessionFile string `json:"session_file,omitempty"`
	Budget      Budget `json:"budget"`
}

// AgentReattached records a known session attaching again with a different
// runtime session id, session file or budget, in the agent's own stream.
type AgentReattached struct {
	TaskID      string `json:"task_id"`
	Agent       string `json:"agent"`
	SessionID   string `json:"session_id,omitempty"`
	SessionFile string `json:"session_file,omitempty"`
	Budget      Budget `json:"budget"`
}

// NoteWritten records a whole-file write of a note in the note owner's
// stream. Path is relative to the owner's notes root, and By is the caller.
type NoteWritten struct {
	TaskID     string `json:"task_id"`
	Agent      string `json:"agent"`
	Path       string `json:"path"`
	Text       string `json:"text"`
	By         string `json:"by"`
	CallID     string `json:"call_id,omitempty"`
	RequestKey string `json:"request_key,omitempty"`
}

// NoteAppended records text appended to a note, creating it if missing.
// Its fields are NoteWritten's, so one converts to the other.
type NoteAppended NoteWritten

// HistoryEntryRecorded records one raw Pi session entry, verbatim and
// immutable, in an agent's history journal and stream.
type HistoryEntryRecorded struct {
	TaskID  string          `json:"task_id"`
	Agent   string          `json:"agent"`
	EntryID string          `json:"entry_id"`
	Entry   json.RawMessage `json:"entry"`
}

// HistoryBranchChanged records a new current branch of an agent in its
// stream. The branch keeps the previous one's first Keep entry ids, then
// Append, and Revision is the new branch revision.
type HistoryBranchChanged struct {
	TaskID   string   `json:"task_id"`
	Agent    string   `json:"agent"`
	Revision int64    `json:"revision"`
	Keep     int64    `json:"keep"`
	Append   []string `json:"append"`
	Length   int64    `json:"length"`
}

// AgentRef names the agent whose lifecycle state an event changes. It is
// embedded in every lifecycle payload; the stream is the agent's own.
type AgentRef struct {
	TaskID string `json:"task_id"`
	Agent  string `json:"agent"`
}

// UsageReported records a token usage report and the threshold it made
// due, if any, among reminder, fallback and hard_rollover.
type UsageReported struct {
	AgentRef
	TokensUsed    *int64 `json:"tokens_used"`
	ContextWindow *int64 `json:"context_window"`
	Due           string `json:"due,omitempty"`
	Unlatched     bool   `json:"unlatched,omitempty"`
}

// ControlDelivered records a control message queued for the model but not
// yet in the branch. Kind is reminder, fallback or manual_checkpoint.
type ControlDelivered struct {
	AgentRef
	Kind      string `json:"kind"`
	WindowID  string `json:"window_id"`
	RequestID string `json:"request_id,omitempty"`
}

// FenceArmed records a fallback or manual checkpoint request entering the
// branch, which makes the checkpoint fence active.
type FenceArmed struct {
	AgentRef
	Kind      string `json:"kind"`
	WindowID  string `json:"window_id"`
	RequestID string `json:"request_id,omitempty"`
}

// ClaimTaken records the one notes write admitted while fenced.
type ClaimTaken struct {
	AgentRef
	CallID   string `json:"call_id"`
	ToolName string `json:"tool_name"`
}

// ClaimReleased records an admitted write that failed, so the fence admits
// a corrected write again.
type ClaimReleased struct {
	AgentRef
	CallID string `json:"call_id"`
}

// CallBlocked records a tool call refused by the fence, with the reason
// the model was given.
type CallBlocked struct {
	AgentRef
	CallID   string `json:"call_id,omitempty"`
	ToolName string `json:"tool_name"`
	Reason   string `json:"reason"`
}

// CheckpointSaved records the admitted own-notes write succeeding, so the
// checkpoint is saved and a rollover is requested.
type CheckpointSaved struct {
	AgentRef
	CallID   string `json:"call_id,omitempty"`
	Path     string `json:"path"`
	WindowID string `json:"window_id"`
}

// NewContextRequested records a new_context call, which leaves a rollover
// pending.
type NewContextRequested struct {
	AgentRef
	CallID   string `json:"call_id,omitempty"`
	WindowID string `json:"window_id"`
}

// UserInputReceived records an ordinary user message that invalidated a
// saved manual checkpoint.
type UserInputReceived struct {
	AgentRef
}

// RolloverPrepared records the bootstrap built for the next window.
type RolloverPrepared struct {
	AgentRef
	Reason           string `json:"reason"`
	WindowID         string `json:"window_id"`
	PreviousWindowID string `json:"previous_window_id"`
	Bootstrap        string `json:"bootstrap"`
}

// RolloverCommitted records the next window going live.
type RolloverCommitted struct {
	AgentRef
	WindowID          string `json:"window_id"`
	PreviousWindowID  string `json:"previous_window_id"`
	CompactionEntryID string `json:"compaction_entry_id,omitempty"`
}

// RolloverFailed records a failed compaction. Aborted means the extension
// cancelled it itself, and the rollover intent is kept.
type RolloverFailed struct {
	AgentRef
	Aborted bool   `json:"aborted"`
	Error   string `json:"error,omitempty"`
}

// Reasons a fallback fence is lifted, for FenceLifted.Reason.
const (
	// LiftRolloverRefused means the checkpoint was saved and Pi refused the
	// rollover it asked for, such as when the session is too small.
	LiftRolloverRefused = "rollover_refused"
	// LiftBranchChanged means the branch now in context lacks the fallback
	// message and is below the fallback threshold.
	LiftBranchChanged = "branch_changed"
)

// FenceLifted records a fallback fence ended without a rollover for Reason,
// which reopens the tools.
type FenceLifted struct {
	AgentRef
	Reason   string `json:"reason"`
	WindowID string `json:"window_id"`
}

// ManualRequested records a manual /compact. A checkpoint is awaited, or a
// saved reusable one is reused with Phase "saved".
type ManualRequested struct {
	AgentRef
	RequestID string `json:"request_id"`
	WindowID  string `json:"window_id"`
	Phase     string `json:"phase"`
}

// ManualPhaseChanged records a manual checkpoint moving to Phase, saved or
// compacting.
type ManualPhaseChanged struct {
	AgentRef
	RequestID string `json:"request_id"`
	Phase     string `json:"phase"`
}

// ManualCancelled records a manual checkpoint cancelled by Esc or by a turn
// that ended without a save. The window is kept.
type ManualCancelled struct {
	AgentRef
	RequestID string `json:"request_id"`
}

// ToolCalled is the read audit of a batch of one agent's tool calls: each
// call's arguments, the log position its reads saw and a digest of its
// result or error. The calls are recorded after they answer, in batches, so
// that no read waits for an fsync. Projections ignore it, and replay
// --check-reads re-executes its calls. Schema 3 holds a batch; schemas 1
// and 2 held one call each and decode as a batch of one. See
// docs/events.md.
type ToolCalled struct {
	AgentRef
	Calls []CallRecord `json:"calls"` // in the order they were made
}

// MaxCallRecords is the most calls one audit.tool_called event holds.
const MaxCallRecords = 256

// CallRecord is one audited tool call. Bulk and oversized arguments are
// kept as a Digest.
type CallRecord struct {
	CallID          string            `json:"call_id,omitempty"`
	Tool            string            `json:"tool"`
	Arguments       json.RawMessage   `json:"arguments"`
	ElidedArguments map[string]Digest `json:"elided_arguments,omitempty"` // top-level arguments left out of Arguments
	ArgumentsDigest *Digest           `json:"arguments_digest,omitempty"` // if set, all of them, and Arguments is null
	ReadPosition    int64             `json:"read_position"`
	Outcome         string            `json:"outcome"`
	ResultDigest    string            `json:"result_digest"`
}

// ArgumentsWhole reports whether the record holds every argument of the
// call, so that the call can be run again exactly.
func (c *CallRecord) ArgumentsWhole() bool {
	return c.ArgumentsDigest == nil && len(c.ElidedArguments) == 0
}

// toolCalledV2 is audit.tool_called at schemas 1 and 2: one call, its
// members beside the agent's.
type toolCalledV2 struct {
	AgentRef
	CallRecord
}

// Upcast returns the call as a batch of one.
func (c *toolCalledV2) Upcast() any {
	return &ToolCalled{AgentRef: c.AgentRef, Calls: []CallRecord{c.CallRecord}}
}

// Digest stands for a value an event does not hold by its size in bytes and
// its hex SHA-256. A string is digested as UTF-8 text, anything else as JSON.
type Digest struct {
	Bytes  int64  `json:"bytes"`
	SHA256 string `json:"sha256"`
}

// EventErased is a tombstone: what an event of an erased task became. The
// event keeps its position, id, stream, stream version and recorded_at,
// so the log stays gapless and every other stream unchanged, but its type,
// its payload and its request id are gone. ErasedBy is the position of
// the erasure (task.erased) that made it. See docs/forgetting.md.
type EventErased struct {
	ErasedBy int64 `json:"erased_by"`
}

// TaskErased records that a task was erased: every earlier event of the
// task became a tombstone (EventErased), Events of them by this erasure,
// and its projection rows were deleted. It is the last event of the task,
// in the stream <task_id>/root. Retention (schema 2) is set when a
// retention policy erased it, not a user's forget.
type TaskErased struct {
	TaskID    string             `json:"task_id"`
	Events    int64              `json:"events"`
	Retention *ErasedByRetention `json:"retention,omitempty"`
}

// ErasedByRetention says why a retention policy erased a task: the
// policy, a period such as 90d, where it came from (global: the server's
// --retain; task: the task's own task.retention_set), and the task's last
// activity, the recorded_at of its latest event before the erasure, at
// least Retain before the erasure's own recorded_at.
type ErasedByRetention struct {
	Retain       string `json:"retain"`
	Source       string `json:"source"`
	LastActivity string `json:"last_activity"`
}

// Sources of a retention policy, for ErasedByRetention.Source.
const (
	RetentionGlobal = "global"
	RetentionTask   = "task"
)

// TaskRetentionSet records a task's own retention policy, in the stream
// <task_id>/root: a period (30d), forever, or default (the task follows the
// server's policy again). docs/forgetting.md, Retention.
type TaskRetentionSet struct {
	TaskID string `json:"task_id"`
	Retain string `json:"retain"`
}

// Tombstone returns the data of a tombstone made by the erasure at
// position erasedBy, byte for byte as the log stores it.
func Tombstone(erasedBy int64) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"erased_by":%d}`, erasedBy))
}
