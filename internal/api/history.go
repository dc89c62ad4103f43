package api

import (
	"log/slog"
	"net/http"

	"github.com/memoryd/memoryd/internal/memory"
)

// handleHistorySync handles "POST /v1/history/sync".
func handleHistorySync(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req memory.SyncRequest
		if err := decode(r, &req); err != nil {
			writeError(w, r, log, err)
			return
		}
		res, err := svc.Sync(r.Context(), req, requestID(r.Context()))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, res)
	}
}
