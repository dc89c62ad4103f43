package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/memoryd/memoryd/internal/inspector"
)

// NewInspector returns the web inspector of cfg.Service for Config's
// Inspector, with the API's token, Host check and error statuses. Its
// caller closes it when the server has stopped.
func NewInspector(cfg Config) *inspector.Inspector {
	ic := inspector.Config{Service: cfg.Service, Logger: cfg.Logger, Token: cfg.Token, Activity: cfg.Activity, ScratchBytes: cfg.InspectorScratch,
		ErrorStatus: func(err error) (int, string) {
			st, body := errorObject(err)
			return st, body.Message
		}}
	if cfg.CheckHost {
		ic.HostAllowed = loopbackHost
	}
	return inspector.New(ic)
}

// server is the API's route tree, with /ui sent to the inspector. Walking
// it walks only the API's routes, as the inspector's are its own.
type server struct {
	*chi.Mux
	ui http.Handler // nil without an inspector
}

// ServeHTTP sends a request under /ui to the inspector, and any other to
// the API's routes.
func (s *server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.ui != nil && (r.URL.Path == inspector.Prefix || strings.HasPrefix(r.URL.Path, inspector.Prefix+"/")) {
		// The inspector's route tree fills in this route context, so
		// that observe logs and counts the route's pattern.
		rctx := chi.NewRouteContext()
		s.ui.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), chi.RouteCtxKey, rctx)))
		return
	}
	s.Mux.ServeHTTP(w, r)
}
