package memory

import (
	"context"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections"
)

// read runs fn over one read-only snapshot of the projections.
func (s *Service) read(ctx context.Context, fn func(r *projections.Reader) error) error {
	return s.readAt(ctx, nil, false, fn)
}

// readAt is read that also sets *pos (if pos is not nil) to the log
// position of the snapshot. With noteCache, the note fn reads with its
// caller (projections.Reader.AgentWithNote) may come from the service's
// note cache. If something was committed while such a call ran, fn runs
// again without the cache: any query fn made after taking the note would
// have read a newer state than the note's. (A call that made none would
// have been right as it was; it is rerun all the same, to keep one rule,
// and it is rare: the window is one call.)
func (s *Service) readAt(ctx context.Context, pos *int64, noteCache bool, fn func(r *projections.Reader) error) error {
	var stamp eventlog.CommitStamp
	if noteCache && s.notes != nil {
		stamp, noteCache = s.store.CommitStamp() // before the transaction: no entry is tagged newer than its rows
	} else {
		noteCache = false
	}
	for {
		retry, err := s.readOnce(ctx, pos, noteCache, stamp, fn)
		if !retry {
			return err
		}
		noteCache = false
	}
}

func (s *Service) readOnce(ctx context.Context, pos *int64, noteCache bool, stamp eventlog.CommitStamp,
	fn func(r *projections.Reader) error) (retry bool, err error) {
	tx, err := s.store.BeginRead(ctx)
	if err != nil {
		return false, err
	}
	defer tx.Close()
	r := projections.NewReader(tx.DB())
	r.UseChunkFilters(s.filters)
	if noteCache {
		r.UseNoteCache(s.notes, stamp)
	}
	err = fn(r)
	if r.FromNoteCache() {
		if s.afterCachedRead != nil {
			s.afterCachedRead()
		}
		if now, ok := s.store.CommitStamp(); !ok || now != stamp {
			return true, nil
		}
	}
	if pos != nil { // the snapshot's position, known by identify or asked for
		var ok bool
		if *pos, ok = r.ReadPosition(); !ok {
			var perr error
			if *pos, perr = eventlog.PositionIn(ctx, tx.DB()); perr != nil && err == nil {
				err = perr
			}
		}
	}
	return false, err
}
