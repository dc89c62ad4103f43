package events

import (
	"context"
	"errors"
	"fmt"

	"github.com/memoryd/memoryd/internal/events/eventsdb"
)

// maxBatch bounds how many write requests one transaction commits.
const maxBatch = 256

// errClosed is returned by Update after Close.
var errClosed = fmt.Errorf("%w: the store is closed", ErrUnavailable)

// writeRequest is one Update waiting for the writer.
type writeRequest struct {
	ctx       context.Context
	requestID string
	fn        func(*Tx) error
	err       chan error
}

// Update runs fn in a write transaction and returns once that transaction
// is durable. If fn returns an error nothing it appended is kept. requestID
// is recorded on every event fn appends. Storage errors are returned as
// ErrUnavailable or ErrConflict; fn's own errors are returned unchanged.
//
// Updates are group-committed: the single writer runs every request that
// is waiting, in arrival order, in one transaction, each inside its own
// savepoint (a batch of one needs none), so a request sees the writes of
// those before it and a failing request is rolled back alone. Each is acknowledged only after the
// batch's commit; a failed commit fails every request of the batch.
func (s *Store) Update(ctx context.Context, requestID string, fn func(*Tx) error) error {
	req := &writeRequest{ctx: ctx, requestID: requestID, fn: fn, err: make(chan error, 1)}
	select {
	case s.writes <- req:
	case <-s.quit:
		return errClosed
	}
	return <-req.err
}

// writeLoop is the single writer: it takes the first waiting request, then
// every other one already waiting, and commits them together.
func (s *Store) writeLoop() {
	defer close(s.done)
	for {
		var first *writeRequest
		select {
		case first = <-s.writes:
		case <-s.quit:
			return
		}
		batch := []*writeRequest{first}
	drain:
		for len(batch) < maxBatch {
			select {
			case req := <-s.writes:
				batch = append(batch, req)
			default:
				break drain
			}
		}
		s.commitBatch(batch)
	}
}

// commitBatch runs a batch of requests in one transaction.
func (s *Store) commitBatch(batch []*writeRequest) {
	results := make([]error, len(batch))
	finish := func() {
		for i, req := range batch {
			req.err <- results[i]
		}
	}
	ctx := context.Background()
	sqlTx, err := s.writer.BeginTx(ctx, nil)
	if err != nil {
		err = classify(err)
		for i := range results {
			results[i] = err
		}
		finish()
		return
	}
	db := newCachedTx(sqlTx, s.writeStmts) // statements shared by the batch
	db.memo = map[any]any{}
	if err := s.tip.check(ctx, db); err != nil {
		s.failBatch(sqlTx, results, classify(err))
		finish()
		return
	}
	last := s.tip.last
	batchVersions := map[string]int64{} // what the batch's successful requests wrote
	ok := 0
	// A request runs in a savepoint of its own, so that its failure rolls
	// back only its writes; a batch of one needs none (its failure rolls
	// the transaction back).
	single := len(batch) == 1
	for i, req := range batch {
		if err := req.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		if !single {
			if _, err := db.ExecContext(ctx, "SAVEPOINT write_request"); err != nil {
				results[i] = classify(err)
				continue
			}
		}
		t := &Tx{s: s, tx: sqlTx, db: db, q: eventsdb.New(db), requestID: req.requestID, last: last, batch: batchVersions}
		if err := req.fn(t); err != nil {
			results[i] = classify(err)
			if single {
				break // rolled back below: nothing of it is kept
			}
			clear(db.memo) // it may remember rows the rollback undoes
			if _, rerr := db.ExecContext(ctx, "ROLLBACK TO write_request"); rerr != nil {
				// The transaction is unusable: SQLite rolls it back by
				// itself on some storage errors (SQLITE_FULL, SQLITE_IOERR,
				// SQLITE_NOMEM), savepoints and all. Nothing of the batch
				// is kept: fail it whole, as unavailable.
				s.failBatch(sqlTx, results, fmt.Errorf("%w: the write transaction was rolled back: %w", ErrUnavailable, rerr))
				finish()
				return
			}
		} else {
			last = t.last
			for stream, v := range t.versions {
				batchVersions[stream] = v
			}
			ok++
		}
		if single {
			continue
		}
		if _, err := db.ExecContext(ctx, "RELEASE write_request"); err != nil {
			s.failBatch(sqlTx, results, classify(err))
			finish()
			return
		}
	}
	if ok == 0 {
		_ = sqlTx.Rollback()
		finish()
		return
	}
	if err := sqlTx.Commit(); err != nil {
		s.failBatch(sqlTx, results, classify(err))
	} else {
		s.tip.merge(last, batchVersions)
	}
	finish()
}

// failBatch rolls the transaction back and gives err to every request
// that had succeeded so far.
func (s *Store) failBatch(sqlTx interface{ Rollback() error }, results []error, err error) {
	_ = sqlTx.Rollback()
	s.tip.forget() // the commit may have half happened: learn the log's end again
	if err == nil {
		err = errors.New("write batch failed")
	}
	for i := range results {
		if results[i] == nil {
			results[i] = err
		}
	}
}
