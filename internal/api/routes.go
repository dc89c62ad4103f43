// Package api is memoryd's HTTP JSON interface. It has one chi route tree
// with token auth, DNS-rebinding and browser protection, body limits, the
// error envelope, request logs and Prometheus metrics. Handlers decode a
// request, call internal/memory and encode the result, and errors.go alone
// maps errors to HTTP.
package api

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/memoryd/memoryd/internal/inspector"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/retention"
)

// Config holds every dependency of the HTTP interface.
type Config struct {
	Service *memory.Service
	Logger  *slog.Logger
	// Token is the bearer token every /v1 request must carry.
	Token string
	// MaxBody is the largest request body accepted, in bytes.
	MaxBody int64
	// CheckHost refuses requests whose Host is not a loopback name or
	// address. It is set when listening on loopback.
	CheckHost bool
	// Registry receives memoryd's metrics. When nil, a new one is made.
	Registry *prometheus.Registry
	// Inspector, when set, is served at /ui. NewInspector makes it, and
	// its maker closes it.
	Inspector *inspector.Inspector
	// InspectorScratch bounds the disk the inspector's past states take,
	// in bytes. Zero means the inspector's default.
	InspectorScratch int64
	// InspectorOnly serves the inspector alone, for the inspect verb.
	InspectorOnly bool
	// Activity, when set, is called when a request has passed the token or
	// session check, and done when it ends. --idle-exit counts only these.
	Activity func() (done func())
	// Retain is the server's retention policy (--retain), which GET
	// /v1/retention weighs; the zero policy is off.
	Retain retention.Policy
	// Shutdown, when set, stops the server as SIGTERM does. POST
	// /v1/shutdown calls it after it has answered.
	Shutdown func()
}

// NewServer returns the HTTP handler of memoryd. Requests under /ui go to
// the inspector behind the same request ids, logs, metrics and recovery.
func NewServer(cfg Config) http.Handler {
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 8 << 20
	}
	if cfg.Registry == nil {
		cfg.Registry = prometheus.NewRegistry()
	}
	log := cfg.Logger
	m := newMetrics(cfg.Registry, cfg.Service)
	ids := newRequestIDs()

	r := chi.NewRouter()
	srv := &server{Mux: r}
	if cfg.Inspector != nil {
		srv.ui = observe(log, m, ids)(recoverer(log)(cfg.Inspector))
	}
	r.Use(observe(log, m, ids))
	r.Use(recoverer(log))
	r.Use(refuseForeign(cfg.CheckHost, log))
	r.Use(limitBody(cfg.MaxBody, log))
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, log, httpErr(errNoRoute, "no such route; see the API contract"))
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, r, log, httpErr(errMethod, "method not allowed on this route"))
	})

	r.Get("/healthz", handleHealth(log, cfg.Service))
	// A browser pointed at memoryd's address finds the inspector.
	r.Get("/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/ui", http.StatusSeeOther)
	})
	if cfg.InspectorOnly {
		return srv
	}
	r.Get("/v1/proof", handleProof(cfg.Token, log))
	r.Group(func(r chi.Router) {
		r.Use(requireToken(cfg.Token, log, cfg.Activity))
		r.Handle("/metrics", handleMetrics(cfg.Registry))
		r.Post("/v1/sessions/attach", handleSessionAttach(log, cfg.Service))
		r.Post("/v1/history/sync", handleHistorySync(log, cfg.Service))
		r.Get("/v1/tools", handleToolsList())
		r.Post("/v1/tools/{name}", handleToolCall(log, cfg.Service, m))
		r.Get("/v1/events", handleEventsList(log, cfg.Service))
		r.Get("/v1/tasks", handleTasksList(log, cfg.Service))
		r.Post("/v1/tasks/{task_id}/forget", handleTaskForget(log, cfg.Service))
		r.Put("/v1/tasks/{task_id}/retention", handleTaskRetention(log, cfg.Service))
		r.Get("/v1/retention", handleRetentionPlan(log, cfg.Service, cfg.Retain))
		r.Get("/v1/state", handleState(log, cfg.Service))
		r.Post("/v1/lifecycle/usage", handleLifecycleUsage(log, cfg.Service))
		r.Post("/v1/lifecycle/branch", handleLifecycleBranch(log, cfg.Service))
		r.Post("/v1/lifecycle/delivered", handleLifecycleDelivered(log, cfg.Service))
		r.Post("/v1/lifecycle/arm", handleLifecycleArm(log, cfg.Service))
		r.Post("/v1/lifecycle/admit", handleLifecycleAdmit(log, cfg.Service))
		r.Post("/v1/lifecycle/tool-result", handleLifecycleToolResult(log, cfg.Service))
		r.Post("/v1/lifecycle/user-input", handleLifecycleUserInput(log, cfg.Service))
		r.Post("/v1/lifecycle/rollover/prepare", handleLifecycleRolloverPrepare(log, cfg.Service))
		r.Post("/v1/lifecycle/rollover/commit", handleLifecycleRolloverCommit(log, cfg.Service))
		r.Post("/v1/lifecycle/rollover/fail", handleLifecycleRolloverFail(log, cfg.Service))
		r.Post("/v1/lifecycle/manual", handleLifecycleManual(log, cfg.Service))
		r.Post("/v1/lifecycle/turn", handleLifecycleTurn(log, cfg.Service))
		r.Post("/v1/shutdown", handleShutdown(log, cfg.Shutdown))
		r.Post("/v1/hooks/{host}", handleHostHook(log, cfg.Service))
		r.Handle("/v1/mcp", handleMCP(cfg.Service))
	})
	return srv
}
