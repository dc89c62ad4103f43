package projections

import (
	"encoding/json"

	"github.com/memoryd/memoryd/internal/fence"
)

// storedState is how agent_states stores a fence.State, version 1.
// Stored rows and the projection digests depend on it, so a change to this
// form is a new version with a rebuild, never an edit.
type storedState struct {
	WindowID          string        `json:"window_id"`
	WindowNumber      int           `json:"window_number"`
	PreviousWindowID  string        `json:"previous_window_id,omitempty"`
	ReminderDue       bool          `json:"reminder_due"`
	FallbackDue       bool          `json:"fallback_due"`
	ReminderDelivered bool          `json:"reminder_delivered"`
	FallbackDelivered bool          `json:"fallback_delivered"`
	FenceActive       bool          `json:"fence_active"`
	FenceKind         string        `json:"fence_kind,omitempty"`
	FenceRequestID    string        `json:"fence_request_id,omitempty"`
	Claim             string        `json:"claim,omitempty"`
	CheckpointSaved   bool          `json:"checkpoint_saved"`
	CheckpointCallID  string        `json:"checkpoint_call_id,omitempty"`
	PendingNewContext bool          `json:"pending_new_context"`
	RolloverRequested bool          `json:"rollover_requested"`
	HardLatched       bool          `json:"hard_rollover_latched"`
	Manual            *storedManual `json:"manual,omitempty"`
	PendingWindowID   string        `json:"pending_window_id,omitempty"`
	PendingReason     string        `json:"pending_reason,omitempty"`
	PendingBootstrap  string        `json:"pending_bootstrap,omitempty"`
	TokensUsed        *int64        `json:"tokens_used"`
	ContextWindow     *int64        `json:"context_window"`
}

// storedManual is the stored form of a fence.Manual, version 1.
type storedManual struct {
	RequestID string `json:"request_id"`
	WindowID  string `json:"window_id"`
	Phase     string `json:"phase"`
}

// encodeState returns the stored form of s.
func encodeState(s fence.State) ([]byte, error) {
	st := storedState{
		WindowID: s.WindowID, WindowNumber: s.WindowNumber, PreviousWindowID: s.PreviousWindowID,
		ReminderDue: s.ReminderDue, FallbackDue: s.FallbackDue,
		ReminderDelivered: s.ReminderDelivered, FallbackDelivered: s.FallbackDelivered,
		FenceActive: s.FenceActive, FenceKind: s.FenceKind, FenceRequestID: s.FenceRequestID, Claim: s.Claim,
		CheckpointSaved: s.CheckpointSaved, CheckpointCallID: s.CheckpointCallID,
		PendingNewContext: s.PendingNewContext, RolloverRequested: s.RolloverRequested, HardLatched: s.HardLatched,
		PendingWindowID: s.PendingWindowID, PendingReason: s.PendingReason, PendingBootstrap: s.PendingBootstrap,
		TokensUsed: s.TokensUsed, ContextWindow: s.ContextWindow,
	}
	if m := s.Manual; m != nil {
		st.Manual = &storedManual{RequestID: m.RequestID, WindowID: m.WindowID, Phase: m.Phase}
	}
	return json.Marshal(st)
}

// decodeState reads a fence.State from its stored form.
func decodeState(raw []byte) (fence.State, error) {
	var st storedState
	if err := json.Unmarshal(raw, &st); err != nil {
		return fence.State{}, err
	}
	s := fence.State{
		WindowID: st.WindowID, WindowNumber: st.WindowNumber, PreviousWindowID: st.PreviousWindowID,
		ReminderDue: st.ReminderDue, FallbackDue: st.FallbackDue,
		ReminderDelivered: st.ReminderDelivered, FallbackDelivered: st.FallbackDelivered,
		FenceActive: st.FenceActive, FenceKind: st.FenceKind, FenceRequestID: st.FenceRequestID, Claim: st.Claim,
		CheckpointSaved: st.CheckpointSaved, CheckpointCallID: st.CheckpointCallID,
		PendingNewContext: st.PendingNewContext, RolloverRequested: st.RolloverRequested, HardLatched: st.HardLatched,
		PendingWindowID: st.PendingWindowID, PendingReason: st.PendingReason, PendingBootstrap: st.PendingBootstrap,
		TokensUsed: st.TokensUsed, ContextWindow: st.ContextWindow,
	}
	if m := st.Manual; m != nil {
		s.Manual = &fence.Manual{RequestID: m.RequestID, WindowID: m.WindowID, Phase: m.Phase}
	}
	return s, nil
}
