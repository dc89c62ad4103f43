package memory

import (
	"context"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/tools"
)

// newContextTool is new_context, an idempotent rollover request.
func newContextTool(ctx context.Context, s *Service, call toolCall) (ToolResult, int64, error) {
	cc := call.cc
	var d tools.NewContextDetails
	var readAt int64
	err := s.store.Update(ctx, requestIDOr(call.requestID, cc.CallID), func(tx *eventlog.Tx) error {
		defer func() {
			if call.wantPosition {
				readAt, _ = tx.Position(ctx)
			}
		}()
		r := projections.TxReader(tx)
		c, err := identify(ctx, r, cc)
		if err != nil {
			return err
		}
		dec, err := fence.NewContext(ref(c), c.state, c.callID)
		if err != nil {
			return fencedError(tools.NewContext, dec.Outcome.Reason)
		}
		d = tools.NewContextDetails{Pending: true, WindowID: dec.Outcome.WindowID}
		return appendOwn(ctx, tx, c, dec.Events)
	})
	if err != nil {
		return ToolResult{}, readAt, err
	}
	res := textResult(compactJSON(d), d)
	res.Terminate = true
	return res, readAt, nil
}

// contextRemaining is get_context_remaining.
func contextRemaining(ctx context.Context, r *projections.Reader, c caller, _ struct{}) (ToolResult, error) {
	st := c.state
	agents, err := r.TaskAgents(ctx, c.taskID)
	if err != nil {
		return ToolResult{}, err
	}
	d := tools.GetContextRemainingDetails{Agent: c.agent.Agent, WindowID: st.WindowID, RegisteredAgents: agents}
	w := st.ContextWindow
	if w == nil {
		w = c.agent.Budget.ContextWindow
	}
	if st.TokensUsed != nil {
		if w != nil {
			d.RemainingTokens = ptr(max(0, *w-*st.TokensUsed))
		}
		if hard := c.agent.Budget.HardRolloverUsedTokens; hard > 0 {
			d.HardRemainingTokens = ptr(max(0, hard-*st.TokensUsed))
		}
	}
	return textResult(compactJSON(d), d), nil
}
