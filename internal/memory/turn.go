package memory

import (
	"context"
	"encoding/json"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections"
)

// MaxTurnSyncs bounds the syncs of one turn.
const MaxTurnSyncs = 64

// TurnUsage is the usage report of a turn (POST /v1/lifecycle/usage's).
type TurnUsage struct {
	TokensUsed    *int64 `json:"tokens_used"`
	ContextWindow *int64 `json:"context_window"`
}

// TurnAdmit is the admit of a turn (POST /v1/lifecycle/admit's).
type TurnAdmit struct {
	CallID    string          `json:"call_id"`
	ToolName  string          `json:"tool_name"`
	Arguments json.RawMessage `json:"arguments"`
}

// TurnResult answers a turn: each part as its own call answers. Admit is
// nil when it was not run: the usage made a control message due, which the
// host delivers before it admits the call.
type TurnResult struct {
	Syncs []SyncResult     `json:"syncs"`
	Usage *UsageResult     `json:"usage,omitempty"`
	Admit *LifecycleResult `json:"admit,omitempty"`
}

// Turn runs a model turn's syncs, usage report and admit, in that order,
// in one transaction, for POST /v1/lifecycle/turn. Each part is decided as
// Sync, ReportUsage and Admit decide it, and appends the same events, so
// the log is the one the separate calls make. It is all or nothing: a part
// that fails leaves nothing done.
func (s *Service) Turn(ctx context.Context, cc CallContext, syncs []SyncRequest, usage *TurnUsage, admit *TurnAdmit, requestID string) (TurnResult, error) {
	if len(syncs) > MaxTurnSyncs {
		return TurnResult{}, invalidf("a turn carries at most %d syncs", MaxTurnSyncs)
	}
	plans := make([]*syncPlan, len(syncs))
	for i := range syncs {
		syncs[i].Context = cc
		p, err := planSync(syncs[i], s.redactor)
		if err != nil {
			return TurnResult{}, err
		}
		// Rendered before the writer, as Sync renders: every entry, since
		// which are stored is known only in the transaction.
		if err := p.render(); err != nil {
			return TurnResult{}, err
		}
		plans[i] = p
	}
	if usage != nil {
		if err := checkUsage(usage.TokensUsed, usage.ContextWindow); err != nil {
			return TurnResult{}, err
		}
	}
	var callID string
	if admit != nil {
		var err error
		if callID, err = checkAdmit(cc, admit.CallID, admit.ToolName); err != nil {
			return TurnResult{}, err
		}
	}
	var res TurnResult
	err := s.store.Update(ctx, requestID, func(tx *eventlog.Tx) error {
		res = TurnResult{Syncs: make([]SyncResult, 0, len(plans))}
		r := projections.TxReader(tx)
		for i, p := range plans {
			// Checked in tx itself, as a session import's syncs are: each
			// sees the branch the one before it left.
			if err := p.checkStored(ctx, r, cc, syncs[i].ExpectedRevision); err != nil {
				return err
			}
			sr, err := syncTx(ctx, tx, p, syncs[i])
			if err != nil {
				return err
			}
			res.Syncs = append(res.Syncs, sr)
		}
		if usage != nil {
			out, sv, err := lifecycleTx(ctx, tx, cc, func(_ *projections.Reader, c caller, st fence.State) (fence.Decision, error) {
				return fence.Usage(ref(c), st, c.agent.Budget, usage.TokensUsed, usage.ContextWindow), nil
			})
			if err != nil {
				return err
			}
			ur := usageResult(out, sv)
			res.Usage = &ur
			if ur.Due != nil {
				return nil
			}
		}
		if admit != nil {
			out, sv, err := lifecycleTx(ctx, tx, cc, admitDecision(callID, admit.ToolName, admit.Arguments))
			if err != nil {
				return err
			}
			ar := admitResult(out, sv)
			res.Admit = &ar
		}
		return nil
	})
	if err != nil {
		return TurnResult{}, err
	}
	return res, nil
}
