package memory

import (
	"context"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections"
)

// read runs fn over one read-only snapshot of the projections.
func (s *Service) read(ctx context.Context, fn func(r *projections.Reader) error) error {
	_, err := s.readAt(ctx, false, false, func(r *projections.Reader) (int64, error) { return 0, fn(r) })
	return err
}

// readAt is read for a tool call, returning the snapshot's position when
// wantPosition asks for it. fn returns the log position its caller was read
// at, or 0 when it does not know it. With noteCache, the note fn reads with
// its caller may come from the service's note cache.
func (s *Service) readAt(ctx context.Context, wantPosition, noteCache bool, fn func(r *projections.Reader) (int64, error)) (int64, error) {
	var stamp eventlog.CommitStamp
	if noteCache && s.notes != nil {
		stamp, noteCache = s.store.CommitStamp() // before the transaction, so no entry is tagged newer than its rows
	} else {
		noteCache = false
	}
	for {
		pos, retry, err := s.readOnce(ctx, wantPosition, noteCache, stamp, fn)
		if !retry {
			return pos, err
		}
		// Something was committed while fn ran with a cached note, so a
		// query fn made after taking the note read a newer state than the
		// note's. Run fn again without the cache.
		noteCache = false
	}
}

func (s *Service) readOnce(ctx context.Context, wantPosition, noteCache bool, stamp eventlog.CommitStamp,
	fn func(r *projections.Reader) (int64, error)) (pos int64, retry bool, err error) {
	tx, err := s.store.BeginRead(ctx)
	if err != nil {
		return 0, false, err
	}
	defer tx.Close()
	r := projections.NewReader(tx.DB())
	r.UseChunkFilters(s.filters)
	if noteCache {
		r.UseNoteCache(s.notes, stamp)
	}
	pos, err = fn(r)
	if r.FromNoteCache() {
		if s.afterCachedRead != nil {
			s.afterCachedRead()
		}
		if now, ok := s.store.CommitStamp(); !ok || now != stamp {
			return 0, true, nil
		}
	}
	if !wantPosition {
		return 0, false, err
	}
	if pos == 0 { // fn failed before it read its caller
		var perr error
		if pos, perr = eventlog.PositionIn(ctx, tx.DB()); perr != nil && err == nil {
			err = perr
		}
	}
	return pos, false, err
}
