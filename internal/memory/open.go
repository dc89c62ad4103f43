package memory

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/memoryd/memoryd/internal/atrest"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/redact"
	"github.com/memoryd/memoryd/internal/tools"
)

// OpenOptions configure Open.
type OpenOptions struct {
	// Synchronous is SQLite's synchronous setting as eventlog.Options takes
	// it. Empty means full, and "off" is for a database that can be rebuilt.
	Synchronous string
	// Logf, if set, receives a rebuild of the projections that a migration
	// asks for.
	Logf func(format string, args ...any)
	// Warnf, if set, receives what the store warns about, such as a
	// database that other users can read.
	Warnf func(format string, args ...any)
	// AuditCalls and Logger are those of serviceOptions.
	AuditCalls bool
	Logger     *slog.Logger
	// PreloadChunkFilters loads in the background the history chunk
	// filters of the agents active most recently, so that the first search
	// costs what later ones do. Close stops the load.
	PreloadChunkFilters bool
	// Redactor, if set, replaces the secrets it finds in history entries
	// and note texts before they are stored (docs/redaction.md).
	Redactor *redact.Redactor
	// Sealer is the key of a database encrypted at rest, and Encrypt
	// makes a new database encrypted with it, as eventlog.Options takes
	// them (docs/encryption.md).
	Sealer  *atrest.Sealer
	Encrypt bool

	// The options below exist for tests, so that they open storage the
	// way the server does; the server leaves them unset.

	// Now is the clock for recorded_at and event ids, time.Now when nil. A
	// fixed clock makes a test's events reproducible.
	Now func() time.Time
	// BusyTimeout bounds how long a statement waits for another process's
	// lock.
	BusyTimeout time.Duration
	// WriterPragmas are extra pragmas for the writer connection, such as
	// one that makes a test's database full.
	WriterPragmas []string

	// afterCachedRead and syncToWriter are the test hooks of serviceOptions.
	afterCachedRead, syncToWriter func()
	// preload is the preload's options, a test's batch size and hook.
	preload projections.PreloadOptions
}

// Open opens the database db names, creating and migrating it, and returns
// a Service that owns it. It is the one way memoryd opens its storage and
// builds a Service outside this package.
func Open(ctx context.Context, db string, opts OpenOptions) (*Service, error) {
	loc := ParseLocation(db)
	if path, ok := loc.File(); ok { // a database file, in a private folder
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("create the database folder: %w", err)
		}
	}
	store, err := projections.Open(ctx, loc, eventlog.Options{
		Synchronous: opts.Synchronous, Warnf: opts.Warnf,
		Now: opts.Now, BusyTimeout: opts.BusyTimeout, WriterPragmas: opts.WriterPragmas,
		Sealer: opts.Sealer, Encrypt: opts.Encrypt,
	}, opts.Logf)
	if err != nil {
		return nil, err
	}
	s := newServiceWith(store, serviceOptions{AuditCalls: opts.AuditCalls, Logger: opts.Logger,
		afterCachedRead: opts.afterCachedRead, syncToWriter: opts.syncToWriter})
	s.owned = true
	s.redactor = opts.Redactor
	if opts.PreloadChunkFilters { // a serving service: warm what the first calls need
		go tools.Prepare()
		s.startPreload(opts.preload, opts.Logger)
	}
	return s, nil
}

// The refusals of Open for a database encrypted at rest
// (docs/encryption.md): no key, another key, or encryption asked of a
// database that holds plain events.
var (
	ErrKeyNeeded    = eventlog.ErrKeyNeeded
	ErrWrongKey     = eventlog.ErrWrongKey
	ErrNotEncrypted = eventlog.ErrNotEncrypted
)

// Location is a database name parsed once: its engine, and its file when
// the engine keeps one.
type Location = eventlog.Location

// ParseLocation returns the location a --db value names.
func ParseLocation(db string) Location { return eventlog.ParseLocation(db) }

// serviceOptions configure a Service.
type serviceOptions struct {
	// AuditCalls records every tool call as an audit.tool_called event, in
	// batches after the call returns.
	AuditCalls bool
	// Logger, if set, receives audit failures.
	Logger *slog.Logger

	// afterCachedRead and syncToWriter are test hooks, nil in production.
	// afterCachedRead runs after a tool call answered from the note cache,
	// before the check that nothing was committed meanwhile. syncToWriter
	// runs when a sync has passed the checks made before the writer.
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

// Close stops the preload and the read audit, then closes the store when
// Open opened it. A store given to newService stays open.
func (s *Service) Close() error {
	s.StopAudit()
	if s.owned {
		return s.store.Close()
	}
	return nil
}

// StopAudit stops the preload and the read audit and leaves the store
// open, for a shutdown that must not close it under a running handler.
func (s *Service) StopAudit() {
	s.stopPreload()
	if s.audit != nil {
		s.audit.close()
	}
}

// preload is a running load of the chunk filters.
type preload struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the load has ended
}

// startPreload loads the chunk filters in the background until they are
// loaded or stopPreload stops it. A failure is logged, and searches then
// load their agent's filters themselves.
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
		if err == nil {
			err = s.warmReaders(ctx, stats.LatestTask, stats.LatestAgent)
		}
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

// warmNeedle is what warmReaders searches for: no chunk filter passes its
// trigrams, so the search reads no chunk.
const warmNeedle = "\x00\x01\x02\x03"

// warmReaders runs, on each reader connection, the caller's query and a
// search of the agent taskID/agent for warmNeedle, as the first calls after
// a start would otherwise load the schema, prepare those statements and read
// the first pages themselves. It does nothing without an agent.
func (s *Service) warmReaders(ctx context.Context, taskID, agent string) error {
	if taskID == "" {
		return nil
	}
	one := count(1)
	return s.store.EachReader(ctx, func(tx *eventlog.ReadTx) error {
		r := projections.NewReader(tx.DB())
		r.UseChunkFilters(s.filters)
		c, err := identify(ctx, r, CallContext{TaskID: taskID, Agent: agent})
		if err != nil {
			return err
		}
		_, err = searchHistory(ctx, r, c, searchArgs{Query: warmNeedle, Limit: &one})
		return err
	})
}
