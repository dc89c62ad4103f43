package api

import (
	"log/slog"
	"net/http"

	"github.com/memoryd/memoryd/internal/memory"
)

// handleHistorySync handles "POST /v1/history/sync".
func handleHistorySync(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, req memory.SyncRequest, id string) (memory.SyncResult, error) {
		return svc.Sync(r.Context(), req, id)
	})
}
