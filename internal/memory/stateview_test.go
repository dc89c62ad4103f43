package memory

import (
	"encoding/json"
	"testing"

	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections"
)

// everyStateField is a fence.State with every field set (not a state the
// fence reaches: a probe of the encodings).
func everyStateField() fence.State {
	used, window := int64(150_000), int64(200_000)
	return fence.State{
		WindowID: "w3", WindowNumber: 3, PreviousWindowID: "w2",
		ReminderDue: true, FallbackDue: true, ReminderDelivered: true, FallbackDelivered: true,
		FenceActive: true, FenceKind: fence.KindFallback, FenceRequestID: "req-1", Claim: "toolu_9",
		CheckpointSaved: true, CheckpointCallID: "toolu_9",
		PendingNewContext: true, RolloverRequested: true, HardLatched: true,
		Manual:          &fence.Manual{RequestID: "m-1", WindowID: "w3", Phase: fence.PhaseSaved},
		PendingWindowID: "w4", PendingReason: "fallback", PendingBootstrap: "Current context window id: w4",
		TokensUsed: &used, ContextWindow: &window,
	}
}

// TestStateViewJSON pins the JSON of GET /v1/state and of every
// lifecycle answer's state: StateView is the API's, field by field,
// whatever fence.State becomes.
func TestStateViewJSON(t *testing.T) {
	c := caller{taskID: "01JTASK", agent: projections.Agent{Agent: "/root"}}
	for _, tc := range []struct {
		name  string
		state fence.State
		want  string
	}{
		{"initial", fence.Initial(), `{"task_id":"01JTASK","agent":"/root","phase":"READY","window_id":"w1","window_number":1,"reminder_due":false,"fallback_due":false,"reminder_delivered":false,"fallback_delivered":false,"fence_active":false,"checkpoint_saved":false,"pending_new_context":false,"rollover_requested":false,"hard_rollover_latched":false,"tokens_used":null,"context_window":null,"threshold_due":"reminder"}`},
		{"every field", everyStateField(), `{"task_id":"01JTASK","agent":"/root","phase":"ROLLING_OVER","window_id":"w3","window_number":3,"previous_window_id":"w2","reminder_due":true,"fallback_due":true,"reminder_delivered":true,"fallback_delivered":true,"fence_active":true,"fence_kind":"fallback","fence_request_id":"req-1","claim":"toolu_9","checkpoint_saved":true,"checkpoint_call_id":"toolu_9","pending_new_context":true,"rollover_requested":true,"hard_rollover_latched":true,"manual":{"request_id":"m-1","window_id":"w3","phase":"saved"},"pending_window_id":"w4","pending_reason":"fallback","pending_bootstrap":"Current context window id: w4","tokens_used":150000,"context_window":200000,"manual_in_progress":"m-1"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(view(c, tc.state))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("StateView JSON\n%s\nwant\n%s", b, tc.want)
			}
		})
	}
}
