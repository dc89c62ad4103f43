package projections

import (
	"context"
	"database/sql"
	"errors"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// applyLifecycle folds a lifecycle event into its agent's state.
func applyLifecycle(ctx context.Context, q projectionsdb.Querier, ev events.Event, ref events.AgentRef, payload any) error {
	s, err := agentState(ctx, q, ref.TaskID, ref.Agent)
	if err != nil {
		return err
	}
	return putAgentState(ctx, q, ref.TaskID, ref.Agent, fence.Apply(s, payload), ev.Position)
}

func putAgentState(ctx context.Context, q projectionsdb.Querier, taskID, agent string, s fence.State, position int64) error {
	b, err := encodeState(s)
	if err != nil {
		return err
	}
	return q.UpsertAgentState(ctx, projectionsdb.UpsertAgentStateParams{TaskID: taskID, Agent: agent, State: string(b), Position: position})
}

func agentState(ctx context.Context, q projectionsdb.Querier, taskID, agent string) (fence.State, error) {
	raw, err := q.GetAgentState(ctx, projectionsdb.GetAgentStateParams{TaskID: taskID, Agent: agent})
	if errors.Is(err, sql.ErrNoRows) {
		return fence.Initial(), nil
	}
	if err != nil {
		return fence.State{}, err
	}
	return states.decode(raw)
}

// lifecycleRef returns the agent a lifecycle payload belongs to.
func lifecycleRef(payload any) (events.AgentRef, bool) {
	switch p := payload.(type) {
	case *events.UsageReported:
		return p.AgentRef, true
	case *events.ControlDelivered:
		return p.AgentRef, true
	case *events.FenceArmed:
		return p.AgentRef, true
	case *events.ClaimTaken:
		return p.AgentRef, true
	case *events.ClaimReleased:
		return p.AgentRef, true
	case *events.CallBlocked:
		return p.AgentRef, true
	case *events.CheckpointSaved:
		return p.AgentRef, true
	case *events.NewContextRequested:
		return p.AgentRef, true
	case *events.UserInputReceived:
		return p.AgentRef, true
	case *events.RolloverPrepared:
		return p.AgentRef, true
	case *events.RolloverCommitted:
		return p.AgentRef, true
	case *events.RolloverFailed:
		return p.AgentRef, true
	case *events.ManualRequested:
		return p.AgentRef, true
	case *events.ManualPhaseChanged:
		return p.AgentRef, true
	case *events.ManualCancelled:
		return p.AgentRef, true
	case *events.FenceLifted:
		return p.AgentRef, true
	}
	return events.AgentRef{}, false
}
