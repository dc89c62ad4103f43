// Package inspector is memoryd's read-only web inspector.
//
// Its pages are rendered on the server without JavaScript. They show a
// memory's tasks and agents, an agent's timeline, its notes with their
// revisions and diffs, its history with search, and the event log, each
// as of any log position.
//
// internal/api mounts it at /ui. It owns the /ui session, the Origin and
// Host rules of /ui, and the security headers of every /ui response. It
// never writes and reads only through memory's read paths. As of a past
// position it reads the log up to there, and for the history page a copy
// of the task's history up to there.
package inspector

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/memoryd/memoryd/internal/memory"
)

// Prefix is where the inspector is served.
const Prefix = "/ui"

// Config holds the inspector's dependencies.
type Config struct {
	// Service is the memory shown, the live one or one an inspect verb
	// imported a log into.
	Service *memory.Service
	Logger  *slog.Logger
	// Token is what the login form must be given. An empty Token refuses
	// every login, but one-time codes still work.
	Token string
	// HostAllowed, when set, refuses requests whose Host it rejects.
	HostAllowed func(host string) bool
	// ErrorStatus gives the status and safe message of an error, as the
	// API maps them.
	ErrorStatus func(error) (status int, message string)
	// Scratches is how many copies of a task's history as of a past
	// position are kept open. Zero means defaultKept.
	Scratches int
	// Builders is how many such copies are built at once, and Waiting how
	// many more positions may wait for a builder. Zero means the default.
	Builders, Waiting int
	// ScratchBytes bounds the disk the copies take, kept and being built.
	// Zero means defaultScratchBytes.
	ScratchBytes int64
	// Activity, when set, brackets each request in a valid session. It is
	// the API's Config.Activity.
	Activity func() (done func())
}

// Inspector is the /ui handler. Close releases the past states it keeps.
type Inspector struct {
	cfg      Config
	log      *slog.Logger
	sessions *sessions
	states   *states
	routes   chi.Router
	pages    *pages
}

// New returns the inspector of cfg.Service.
func New(cfg Config) *Inspector {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.ErrorStatus == nil {
		cfg.ErrorStatus = func(error) (int, string) { return http.StatusInternalServerError, "internal error" }
	}
	lim := limits{kept: cfg.Scratches, builders: cfg.Builders, waiting: cfg.Waiting, disk: cfg.ScratchBytes}
	if lim.kept <= 0 {
		lim.kept = defaultKept
	}
	if lim.builders <= 0 {
		lim.builders = defaultBuilders
	}
	if lim.waiting <= 0 {
		lim.waiting = defaultWaiting
	}
	if lim.disk <= 0 {
		lim.disk = defaultScratchBytes
	}
	in := &Inspector{cfg: cfg, log: cfg.Logger, sessions: newSessions(),
		states: newStates(cfg.Service, lim), pages: mustParsePages()}
	in.routes = in.routeTree()
	if cfg.Service != nil {
		cfg.Service.OnErase(in.states.forgetTask) // its copies hold the task's history
	}
	return in
}

// Routes returns the inspector's route tree, for tests that walk it.
func (in *Inspector) Routes() chi.Routes { return in.routes }

// ServeHTTP serves a request under /ui. The guard runs first, then the
// session check, then the page.
func (in *Inspector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	in.guard(in.routes).ServeHTTP(w, r)
}

// LoginLink returns the path of a new one-time login link. It logs one
// browser in once and holds no token.
func (in *Inspector) LoginLink() string {
	return Prefix + "/login/once?code=" + in.sessions.newCode()
}

// Close closes the past states the inspector keeps open.
func (in *Inspector) Close() error { return in.states.close() }

// routeTree returns the inspector's routes.
func (in *Inspector) routeTree() chi.Router {
	r := chi.NewRouter()
	r.Get(Prefix+"/style.css", serveCSS)
	r.Get(Prefix+"/login", in.loginPage)
	r.Post(Prefix+"/login", in.login)
	r.Get(Prefix+"/login/once", in.loginOnce)
	r.Get(Prefix+"/logout", in.logout)
	r.Group(func(r chi.Router) {
		r.Use(in.requireSession)
		r.Get(Prefix, in.tasksPage)
		r.Get(Prefix+"/", in.tasksPage) // what a user types for the start page
		r.Get(Prefix+"/tasks/{task}/agents/*", in.timelinePage)
		r.Get(Prefix+"/tasks/{task}/notes", in.notesPage)
		r.Get(Prefix+"/tasks/{task}/history", in.historyPage)
		r.Get(Prefix+"/events", in.eventsPage)
		r.Get(Prefix+"/search", in.searchPage)
	})
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		in.renderError(w, r, http.StatusNotFound, "no such page")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		in.renderError(w, r, http.StatusMethodNotAllowed, "the inspector only reads: this method is not allowed here")
	})
	return r
}

// fail renders err as an error page with the status and message the API
// would give it.
func (in *Inspector) fail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return // the browser gave up and nobody reads the page
	}
	if errors.Is(err, errBusy) {
		w.Header().Set("Retry-After", "5")
	}
	st, msg := in.cfg.ErrorStatus(err)
	if st >= 500 {
		in.log.LogAttrs(r.Context(), slog.LevelError, "inspector page failed", slog.String("path", r.URL.Path), slog.String("error", err.Error()))
	}
	in.renderError(w, r, st, msg)
}
