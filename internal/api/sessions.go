package api

import (
	"log/slog"
	"net/http"

	"github.com/memoryd/memoryd/internal/memory"
)

// handleSessionAttach handles "POST /v1/sessions/attach".
func handleSessionAttach(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, req memory.AttachRequest, id string) (memory.AttachResult, error) {
		return svc.Attach(r.Context(), req, id)
	})
}
