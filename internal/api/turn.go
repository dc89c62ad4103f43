package api

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/memoryd/memoryd/internal/memory"
)

// turnRequest is the body of POST /v1/lifecycle/turn: the syncs, usage
// report and admit of a model turn, each the body of its own route without
// the context, which they share.
type turnRequest struct {
	Context memory.CallContext `json:"context"`
	Syncs   []turnSync         `json:"syncs"`
	Usage   *memory.TurnUsage  `json:"usage"`
	Admit   *memory.TurnAdmit  `json:"admit"`
}

// turnSync is a POST /v1/history/sync body without its context.
type turnSync struct {
	Entries          []json.RawMessage `json:"entries"`
	Branch           *[]string         `json:"branch"`
	ExpectedRevision *int64            `json:"expected_revision"`
	Delta            *memory.SyncDelta `json:"delta"`
}

// handleLifecycleTurn handles "POST /v1/lifecycle/turn".
func handleLifecycleTurn(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, q turnRequest, id string) (memory.TurnResult, error) {
		syncs := make([]memory.SyncRequest, len(q.Syncs))
		for i, s := range q.Syncs {
			syncs[i] = memory.SyncRequest{Entries: s.Entries, Branch: s.Branch, ExpectedRevision: s.ExpectedRevision, Delta: s.Delta}
		}
		return svc.Turn(r.Context(), q.Context, syncs, q.Usage, q.Admit, id)
	})
}
