package projections

import (
	"reflect"
	"testing"

	"github.com/memoryd/memoryd/internal/fence"
)

// storedStateGolden is the stored form (version 1) of storedStateProbe.
const storedStateGolden = `{"window_id":"w3","window_number":3,"previous_window_id":"w2","reminder_due":true,"fallback_due":true,"reminder_delivered":true,"fallback_delivered":true,"fence_active":true,"fence_kind":"fallback","fence_request_id":"req-1","claim":"toolu_9","checkpoint_saved":true,"checkpoint_call_id":"toolu_9","pending_new_context":true,"rollover_requested":true,"hard_rollover_latched":true,"manual":{"request_id":"m-1","window_id":"w3","phase":"saved"},"pending_window_id":"w4","pending_reason":"fallback","pending_bootstrap":"Current context window id: w4","tokens_used":150000,"context_window":200000}`

// storedStateProbe has every field of a fence.State set.
func storedStateProbe() fence.State {
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

// TestStoredStateForm pins how agent_states stores a fence state: the
// rows of every existing database and the projection digests depend on
// it, whatever fence.State or the API become.
func TestStoredStateForm(t *testing.T) {
	b, err := encodeState(storedStateProbe())
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != storedStateGolden {
		t.Errorf("stored\n%s\nwant\n%s", b, storedStateGolden)
	}
	back, err := states.decode(storedStateGolden)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, storedStateProbe()) {
		t.Errorf("decoded %+v, want %+v", back, storedStateProbe())
	}
	initial, err := encodeState(fence.Initial())
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"window_id":"w1","window_number":1,"reminder_due":false,"fallback_due":false,"reminder_delivered":false,"fallback_delivered":false,"fence_active":false,"checkpoint_saved":false,"pending_new_context":false,"rollover_requested":false,"hard_rollover_latched":false,"tokens_used":null,"context_window":null}`; string(initial) != want {
		t.Errorf("stored initial state\n%s\nwant\n%s", initial, want)
	}
}
