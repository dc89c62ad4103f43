package projections

import (
	"context"
	"fmt"
	"strings"

	"github.com/memoryd/memoryd/internal/eventlog"
)

// Open opens the event log at loc with the projections as its projector.
// When a migration marked the projections for a rebuild, it rebuilds them
// from the log in one transaction before returning, and logs why through
// logf.
func Open(ctx context.Context, loc eventlog.Location, opts eventlog.Options, logf func(format string, args ...any)) (*eventlog.Store, error) {
	return open(ctx, loc, opts, logf, noteFlush{})
}

// open is Open with flush bounding the notes a deferring request holds.
func open(ctx context.Context, loc eventlog.Location, opts eventlog.Options, logf func(format string, args ...any), flush noteFlush) (*eventlog.Store, error) {
	opts.Projector = Projector{flush: flush}
	if opts.Warnf == nil { // logf takes the open's warnings too
		opts.Warnf = logf
	}
	store, err := eventlog.OpenAt(ctx, loc, opts)
	if err != nil {
		return nil, err
	}
	// The common case reads one empty table on the reader pool, so opening
	// a database for export or call takes no write lock just to look.
	var marks int
	if err := store.Reader().QueryRowContext(ctx, "SELECT count(*) FROM projection_rebuilds").Scan(&marks); err != nil || marks == 0 {
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("open %s: %w", loc, err)
		}
		return store, nil
	}
	err = store.Update(ctx, "", func(tx *eventlog.Tx) error {
		var reasons []string
		rows, err := tx.DB().QueryContext(ctx, "SELECT reason FROM projection_rebuilds")
		if err != nil {
			return err
		}
		for rows.Next() {
			var r string
			if err := rows.Scan(&r); err != nil {
				rows.Close()
				return err
			}
			reasons = append(reasons, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(reasons) == 0 {
			return err
		}
		if logf != nil {
			logf("rebuilding the projections from the log: %s", strings.Join(reasons, "; "))
		}
		if err := rebuild(ctx, tx); err != nil {
			return err
		}
		_, err = tx.DB().ExecContext(ctx, "DELETE FROM projection_rebuilds")
		return err
	})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("rebuild the projections of %s: %w", loc, err)
	}
	return store, nil
}
