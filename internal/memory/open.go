package memory

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections"
)

// OpenOptions configure Open.
type OpenOptions struct {
	// Synchronous is SQLite's synchronous setting ("" for the default;
	// see eventlog.Options).
	Synchronous string
	// Logf receives a rebuild of the projections that a migration asks for
	// (nil: not reported).
	Logf func(format string, args ...any)
	// Warnf receives what the store warns about, such as a database that
	// other users can read (nil: not reported).
	Warnf func(format string, args ...any)
	// AuditCalls and Logger are those of Options.
	AuditCalls bool
	Logger     *slog.Logger
}

// Open opens (creating it, in a 0700 folder, and migrating it) the
// database at path with the projections as its projector, and returns a
// Service over it that owns it: Close flushes the audit and closes the
// database. It is the one way memoryd opens its storage.
func Open(ctx context.Context, path string, opts OpenOptions) (*Service, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create the database folder: %w", err)
	}
	store, err := projections.Open(ctx, path, eventlog.Options{Synchronous: opts.Synchronous, Warnf: opts.Warnf}, opts.Logf)
	if err != nil {
		return nil, err
	}
	s := NewWithOptions(store, Options{AuditCalls: opts.AuditCalls, Logger: opts.Logger})
	s.owned = true
	return s, nil
}
