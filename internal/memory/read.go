package memory

import (
	"context"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections"
)

// read runs fn over one read-only snapshot of the projections.
func (s *Service) read(ctx context.Context, fn func(r *projections.Reader) error) error {
	_, err := s.readAt(ctx, false, false, fn)
	return err
}

// readAt is read that also returns the log position of the snapshot
// when wantPosition asks for it (0 otherwise). With noteCache, the note fn reads with its
// caller (projections.Reader.AgentWithNote) may come from the service's
// note cache. If something was committed while such a call ran, fn runs
// again without the cache: any query fn made after taking the note would
// have read a newer state than the note's. (A call that made none would
// have been right as it was; it is rerun all the same, to keep one rule,
// and it is rare: the window is one call.)
func (s *Service) readAt(ctx context.Context, wantPosition, noteCache bool, fn func(r *projections.Reader) error) (int64, error) {
	var stamp eventlog.CommitStamp
	if noteCache && s.notes != nil {
		stamp, noteCache = s.store.CommitStamp() // before the transaction: no entry is tagged newer than its rows
	} else {
		noteCache = false
	}
	for {
		pos, retry, err := s.readOnce(ctx, wantPosition, noteCache, stamp, fn)
		if !retry {
			return pos, err
		}
		noteCache = false
	}
}

func (s *Service) readOnce(ctx context.Context, wantPosition, noteCache bool, stamp eventlog.CommitStamp,
	fn func(r *projections.Reader) error) (pos int64, retry bool, err error) {
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
	err = fn(r)
	if r.FromNoteCache() {
		if s.afterCachedRead != nil {
			s.afterCachedRead()
		}
		if now, ok := s.store.CommitStamp(); !ok || now != stamp {
			return 0, true, nil
		}
	}
	if wantPosition { // the snapshot's position, known by identify or asked for
		var ok bool
		if pos, ok = r.ReadPosition(); !ok {
			var perr error
			if pos, perr = eventlog.PositionIn(ctx, tx.DB()); perr != nil && err == nil {
				err = perr
			}
		}
	}
	return pos, false, err
}
