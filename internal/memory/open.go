package memory

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections"
)

// OpenOptions configure Open.
type OpenOptions struct {
	// Synchronous is SQLite's synchronous setting: "" (the default, full),
	// "normal", or "off" for a database that can be rebuilt (replays,
	// tests); see eventlog.Options.
	Synchronous string
	// Logf receives a rebuild of the projections that a migration asks for
	// (nil: not reported).
	Logf func(format string, args ...any)
	// Warnf receives what the store warns about, such as a database that
	// other users can read (nil: not reported).
	Warnf func(format string, args ...any)
	// AuditCalls and Logger are those of serviceOptions.
	AuditCalls bool
	Logger     *slog.Logger
	// PreloadChunkFilters loads the history chunk filters of the agents
	// active most recently in the background, as many as the cache holds,
	// so that the first search after the open costs what later ones do
	// (projections.ChunkFilters.Preload; the server sets it). Close stops
	// the load. Logger receives a line when it ends.
	PreloadChunkFilters bool

	// The options below exist for tests, so that they open storage the
	// way the server does; the server leaves them unset.

	// Now is the clock for recorded_at and event ids (default time.Now):
	// a fixed clock makes a test's events reproducible.
	Now func() time.Time
	// BusyTimeout bounds how long a statement waits for another process's
	// lock (default 5s).
	BusyTimeout time.Duration
	// WriterPragmas are extra pragmas for the writer connection, e.g.
	// "max_page_count(100)" to make a test's database full.
	WriterPragmas []string

	// Test hooks, those of serviceOptions.
	afterCachedRead, syncToWriter func()
	// preload is the preload's options (a test's batch size and hook).
	preload projections.PreloadOptions
}

// Open opens (creating it, in a 0700 folder, and migrating it) the
// database at path (or the PostgreSQL database a postgres:// path names) with the projections as its projector, and returns a
// Service over it that owns it: Close flushes the audit and closes the
// database. It is the one way memoryd opens its storage, and the one way
// to build a Service outside this package.
func Open(ctx context.Context, path string, opts OpenOptions) (*Service, error) {
	if !eventlog.IsPostgres(path) {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("create the database folder: %w", err)
		}
	}
	store, err := projections.Open(ctx, path, eventlog.Options{
		Synchronous: opts.Synchronous, Warnf: opts.Warnf,
		Now: opts.Now, BusyTimeout: opts.BusyTimeout, WriterPragmas: opts.WriterPragmas,
	}, opts.Logf)
	if err != nil {
		return nil, err
	}
	s := newServiceWith(store, serviceOptions{AuditCalls: opts.AuditCalls, Logger: opts.Logger,
		afterCachedRead: opts.afterCachedRead, syncToWriter: opts.syncToWriter})
	s.owned = true
	if opts.PreloadChunkFilters {
		s.startPreload(opts.preload, opts.Logger)
	}
	return s, nil
}

// IsPostgres reports whether a database name (--db, MEMORYD_DB) is a
// PostgreSQL URL (postgres:// or postgresql://) rather than an SQLite file.
func IsPostgres(db string) bool { return eventlog.IsPostgres(db) }

// DatabaseName is how a database is named in logs and messages: an SQLite
// file's path, or a PostgreSQL URL without its password or parameters.
func DatabaseName(db string) string { return eventlog.DatabaseName(db) }

// serviceOptions configure a Service.
type serviceOptions struct {
	// AuditCalls records every tool call as an audit.tool_called event,
	// in batches after the call returns (the read audit).
	AuditCalls bool
	// Logger receives audit failures (default: discard).
	Logger *slog.Logger

	// Test hooks, nil in production (and settable only by the package's
	// own tests). afterCachedRead runs after a tool call answered from the
	// note cache, before the check that nothing was committed meanwhile;
	// syncToWriter runs when a sync has passed the checks made before the
	// writer and queues for it.
	afterCachedRead func()
	syncToWriter    func()
}

// newServiceWith returns a Service over store with opts. Close it to
// flush the audit.
func newServiceWith(store *eventlog.Store, opts serviceOptions) *Service {
	s := newService(store)
	s.afterCachedRead, s.syncToWriter = opts.afterCachedRead, opts.syncToWriter
	if opts.AuditCalls {
		log := opts.Logger
		if log == nil {
			log = slog.New(slog.DiscardHandler)
		}
		s.audit = newAuditor(store, log)
	}
	return s
}

// Close stops the preload of the chunk filters, flushes and stops the
// read audit, then closes the store when the Service opened it (Open); a
// store given to newService or newServiceWith stays open. It returns the
// store's Close error.
func (s *Service) Close() error {
	s.StopAudit()
	if s.owned {
		return s.store.Close()
	}
	return nil
}

// StopAudit stops the preload of the chunk filters (waiting for it to
// end), flushes and stops the read audit and leaves the store open: for a
// shutdown that must not close the store under a handler still running.
func (s *Service) StopAudit() {
	s.stopPreload()
	if s.audit != nil {
		s.audit.close()
	}
}

// preload is a running load of the chunk filters (startPreload).
type preload struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the load has ended
}

// startPreload loads the chunk filters in the background until they are
// loaded or stopPreload stops it. A failure only means that searches load
// their agent's filters themselves, as without the preload: it is logged.
func (s *Service) startPreload(opts projections.PreloadOptions, log *slog.Logger) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &preload{cancel: cancel, done: make(chan struct{})}
	s.preload = p
	go func() {
		defer close(p.done)
		start := time.Now()
		stats, err := s.filters.Preload(ctx, s.store, opts)
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("loading the history chunk filters", "err", err.Error())
		case err == nil:
			log.Info("loaded the history chunk filters", "agents", stats.Agents, "chunks", stats.Chunks,
				"duration_ms", float64(time.Since(start).Microseconds())/1000)
		}
	}()
}

// stopPreload stops the preload, if one runs, and waits for its end.
func (s *Service) stopPreload() {
	if s.preload != nil {
		s.preload.cancel()
		<-s.preload.done
	}
}
