package api

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/memoryd/memoryd/internal/memory"
)

// maxTurnSyncs bounds the syncs one turn request carries.
const maxTurnSyncs = 64

// turnRequest is the body of POST /v1/lifecycle/turn: the syncs, usage
// report and admit of a model turn, each the body of its own route without
// the context, which they share.
type turnRequest struct {
	Context memory.CallContext `json:"context"`
	Syncs   []turnSync         `json:"syncs"`
	Usage   *turnUsage         `json:"usage"`
	Admit   *turnAdmit         `json:"admit"`
}

// turnSync is a POST /v1/history/sync body without its context.
type turnSync struct {
	Entries          []json.RawMessage `json:"entries"`
	Branch           *[]string         `json:"branch"`
	ExpectedRevision *int64            `json:"expected_revision"`
	Delta            *memory.SyncDelta `json:"delta"`
}

// turnUsage is a POST /v1/lifecycle/usage body without its context.
type turnUsage struct {
	TokensUsed    *int64 `json:"tokens_used"`
	ContextWindow *int64 `json:"context_window"`
}

// turnAdmit is a POST /v1/lifecycle/admit body without its context.
type turnAdmit struct {
	CallID    string          `json:"call_id"`
	ToolName  string          `json:"tool_name"`
	Arguments json.RawMessage `json:"arguments"`
}

// turnResult answers a turn request: each part as its own route answers.
// Admit is omitted when it was not run: the usage made a control message
// due, which the host delivers before it admits the call.
type turnResult struct {
	Syncs []memory.SyncResult     `json:"syncs"`
	Usage *memory.UsageResult     `json:"usage,omitempty"`
	Admit *memory.LifecycleResult `json:"admit,omitempty"`
}

// handleLifecycleTurn handles "POST /v1/lifecycle/turn". The parts run in
// the order of the separate calls they stand for (syncs, usage, admit),
// through the same service calls, so the log gets the same events in the
// same order. The first part that fails ends the request with its error;
// the parts before it stay done, as separate calls would.
func handleLifecycleTurn(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, q turnRequest, id string) (turnResult, error) {
		ctx := r.Context()
		if len(q.Syncs) > maxTurnSyncs {
			return turnResult{}, httpErr(errBadRequest, "syncs holds at most 64 syncs")
		}
		res := turnResult{Syncs: make([]memory.SyncResult, 0, len(q.Syncs))}
		for _, s := range q.Syncs {
			sr, err := svc.Sync(ctx, memory.SyncRequest{Context: q.Context, Entries: s.Entries, Branch: s.Branch,
				ExpectedRevision: s.ExpectedRevision, Delta: s.Delta}, id)
			if err != nil {
				return turnResult{}, err
			}
			res.Syncs = append(res.Syncs, sr)
		}
		if q.Usage != nil {
			ur, err := svc.ReportUsage(ctx, q.Context, q.Usage.TokensUsed, q.Usage.ContextWindow, id)
			if err != nil {
				return turnResult{}, err
			}
			res.Usage = &ur
			if ur.Due != nil {
				return res, nil
			}
		}
		if q.Admit != nil {
			ar, err := svc.Admit(ctx, q.Context, q.Admit.CallID, q.Admit.ToolName, q.Admit.Arguments, id)
			if err != nil {
				return turnResult{}, err
			}
			res.Admit = &ar
		}
		return res, nil
	})
}
