package api

import (
	"log/slog"
	"net/http"
	"os"

	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/version"
)

// handleHealth handles "GET /healthz". It names memoryd and says which
// one it is, so a client can tell it from another server on the address.
func handleHealth(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	v := version.Get()
	pid := os.Getpid()
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := svc.LastPosition(r.Context())
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, map[string]any{"status": "ok", "service": "memoryd", "position": p,
			"version": v.Version, "commit": v.Commit, "pid": pid})
	}
}

// handleShutdown handles "POST /v1/shutdown" for memoryd stop. It answers,
// then stops the server as SIGTERM does.
func handleShutdown(log *slog.Logger, shutdown func()) http.HandlerFunc {
	pid := os.Getpid()
	return func(w http.ResponseWriter, r *http.Request) {
		if shutdown == nil {
			writeError(w, r, log, httpErr(errNoRoute, "this memoryd cannot be stopped over HTTP: stop it with SIGTERM"))
			return
		}
		encode(w, http.StatusAccepted, map[string]any{"stopping": true, "pid": pid})
		shutdown()
	}
}
