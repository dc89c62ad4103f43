package eventlog

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
)

// maxBatch bounds how many write requests one transaction commits.
const maxBatch = 256

// writeRequest is one Update waiting for the writer.
type writeRequest struct {
	ctx       context.Context
	requestID string
	fn        func(*Tx) error
	err       chan error
	alone     bool // committed in a batch of its own (UpdateAlone)
}

// The writer's own statements, on every engine. PostgreSQL's pipe tells
// them apart by their text: it runs the last three at once rather than
// queue them.
const (
	sqlSavepoint  = "SAVEPOINT write_request"
	sqlRelease    = "RELEASE write_request"
	sqlRollbackTo = "ROLLBACK TO write_request"
	sqlRollback   = "ROLLBACK"
	sqlCommit     = "COMMIT"
)

// Update runs fn in a write transaction and returns once it is durable.
// If fn returns an error, nothing it appended is kept. requestID is recorded
// on every event fn appends. Storage errors come back as ErrUnavailable or
// ErrConflict, and fn's own errors unchanged. Updates are group-committed
// in arrival order; see docs/durability.md.
func (s *Store) Update(ctx context.Context, requestID string, fn func(*Tx) error) error {
	return s.update(&writeRequest{ctx: ctx, requestID: requestID, fn: fn, err: make(chan error, 1)})
}

// UpdateAlone is Update in a transaction of its own, with no other request
// of a batch beside it, so without a savepoint: SQLite then keeps no copy
// of the pages it changes, however many. An erasure runs so.
func (s *Store) UpdateAlone(ctx context.Context, requestID string, fn func(*Tx) error) error {
	return s.update(&writeRequest{ctx: ctx, requestID: requestID, fn: fn, err: make(chan error, 1), alone: true})
}

func (s *Store) update(req *writeRequest) error {
	select {
	case s.writes <- req:
	case <-s.quit:
		return errClosed
	}
	return <-req.err
}

// writeLoop is the single writer. It takes the first waiting request and
// every other one already waiting, and commits them together.
func (s *Store) writeLoop() {
	defer close(s.done)
	defer func() {
		if s.wconn != nil {
			s.wconn.close(nil) // back to the pool, which Close then closes
		}
	}()
	for {
		first := s.next
		s.next = nil
		if first == nil {
			select {
			case first = <-s.writes:
			case <-s.quit:
				return
			}
		}
		s.commitBatch(s.drain([]*writeRequest{first}))
	}
}

// drain adds to batch every request already waiting, up to maxBatch. A
// request to be committed alone is kept for the next batch.
func (s *Store) drain(batch []*writeRequest) []*writeRequest {
	for len(batch) < maxBatch && !batch[0].alone && s.next == nil {
		select {
		case req := <-s.writes:
			if req.alone {
				s.next = req // the next batch, alone
				return batch
			}
			batch = append(batch, req)
		default:
			return batch
		}
	}
	return batch
}

// writerConn begins a transaction on the writer's connection and returns it.
// The connection is kept out of database/sql's pool with its statements
// prepared once, which saves the writer CPU on every batch; see
// docs/performance.md.
func (s *Store) writerConn(ctx context.Context) (*keptConn, error) {
	var err error
	for range 2 {
		if s.wconn == nil {
			conn, cerr := s.writer.Conn(ctx)
			if cerr != nil {
				return nil, cerr
			}
			s.wconn = newKeptConn(conn)
		}
		if err = s.engine.beginWrite(ctx, s.wconn); err == nil {
			return s.wconn, nil
		}
		if s.wconn.valid() {
			return nil, err // busy, full, …; the connection is fine
		}
		s.dropWriterConn() // broken; replaced once
	}
	return nil, err
}

// dropWriterConn closes the writer's connection for good.
// The next batch takes a new one from the pool.
func (s *Store) dropWriterConn() {
	s.wconn.close(driver.ErrBadConn)
	s.wconn = nil
	s.erased = false // a new connection starts without an erasure's setting
	// The tip's data_version was the old connection's, and a new
	// connection counts from its own start, so learn the log's end again.
	s.tip = logTip{last: -1, dataVersion: -1, epoch: s.tip.epoch + 1}
}

// endBatch rolls back what the transaction left uncommitted. It drops the
// connection when it cannot tell that no transaction is left open.
func (s *Store) endBatch(ctx context.Context, committed bool) {
	if !committed {
		if err := s.wconn.exec(ctx, sqlRollback); err != nil {
			// SQLite may have rolled back by itself already. Closing the
			// connection ends whatever it still holds, so the next batch
			// does not meet a transaction in progress.
			s.dropWriterConn()
			return
		}
	}
	// An interrupt the driver says is still pending, from a context
	// canceled while its statement ran, is the check database/sql makes
	// before it pools a connection again. SQLite clears an interrupt once
	// no statement runs, so the tests do not reach this guard.
	if !s.wconn.valid() {
		s.dropWriterConn()
		return
	}
	if s.erased {
		s.erased = false
		if err := s.engine.endErase(ctx, s.wconn); err != nil {
			s.dropWriterConn() // a new one starts without the erasure's setting
		}
	}
}

// commitBatch runs a batch of requests in one transaction. The requests
// that came while it began, waiting for the write lock another server or
// process held, join it.
func (s *Store) commitBatch(batch []*writeRequest) {
	ctx := context.Background()
	conn, err := s.writerConn(ctx)
	if err == nil {
		batch = s.drain(batch)
	}
	results := make([]error, len(batch))
	finish := func() {
		for i, req := range batch {
			req.err <- results[i]
		}
	}
	if err != nil {
		err = classify(err)
		for i := range results {
			results[i] = err
		}
		finish()
		return
	}
	db := s.wrap(conn.db)
	proj := s.projector.Begin()
	if err := s.engine.checkTip(ctx, db, &s.tip); err != nil {
		s.failBatch(ctx, results, classify(err))
		finish()
		return
	}
	last := s.tip.last
	batchVersions := map[string]int64{} // what the batch's successful requests wrote
	ok := 0
	// A request runs in a savepoint of its own, so that its failure rolls
	// back only its writes. A batch of one needs none, because its failure
	// rolls the transaction back.
	single := len(batch) == 1
	for i, req := range batch {
		if err := req.ctx.Err(); err != nil {
			results[i] = err
			continue
		}
		if !single {
			if err := s.engine.savepoint(ctx, db); err != nil {
				results[i] = classify(err)
				continue
			}
		}
		t := &Tx{s: s, db: db, q: queriesOf(db), requestID: req.requestID, last: last, batch: batchVersions, proj: proj}
		err := req.fn(t)
		if err == nil {
			err = t.FlushProjections(ctx) // what it deferred is part of it
		}
		err, txErr := s.engine.endRequest(ctx, db, !single, err)
		if txErr != nil {
			s.failBatch(ctx, results, classify(txErr))
			finish()
			return
		}
		if err != nil {
			results[i] = classify(err)
			if single {
				break // rolled back below, so nothing of it is kept
			}
			proj.Rollback() // it may remember rows the rollback undoes
			if _, rerr := db.ExecContext(ctx, sqlRollbackTo); rerr != nil {
				if req.ctx.Err() != nil {
					// Its own context interrupted a write statement, and
					// SQLite then rolls back the whole transaction. The
					// batch's other requests are not at fault.
					s.rerunWithout(ctx, batch, results, i)
					return
				}
				// The transaction is unusable. SQLite rolls it back by
				// itself, savepoints and all, on some storage errors such
				// as SQLITE_FULL, SQLITE_IOERR and SQLITE_NOMEM. Nothing of
				// the batch is kept, so fail it whole as unavailable.
				s.failBatch(ctx, results, fmt.Errorf("%w: the write transaction was rolled back: %w", ErrUnavailable, rerr))
				finish()
				return
			}
			if _, err := db.ExecContext(ctx, sqlRelease); err != nil {
				s.failBatch(ctx, results, classify(err))
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
	}
	if ok == 0 {
		s.endBatch(ctx, false)
		finish()
		return
	}
	if err := conn.exec(ctx, sqlCommit); err != nil {
		s.failBatch(ctx, results, classify(err))
	} else {
		s.tip.merge(last, batchVersions)
		s.endBatch(ctx, true)
	}
	finish()
}

// rerunWithout ends a transaction that SQLite rolled back because request
// failed was interrupted. The requests that failed get their errors, and
// the others, whose writes were lost, run again in a new batch.
func (s *Store) rerunWithout(ctx context.Context, batch []*writeRequest, results []error, failed int) {
	s.endBatch(ctx, false)
	s.tip.forget()
	var again []*writeRequest
	for j, req := range batch {
		if j != failed && results[j] == nil {
			again = append(again, req)
			continue
		}
		req.err <- results[j]
	}
	if len(again) > 0 {
		s.commitBatch(again)
	}
}

// failBatch rolls the transaction back and gives err to every request
// that had succeeded so far.
func (s *Store) failBatch(ctx context.Context, results []error, err error) {
	s.endBatch(ctx, false)
	s.tip.forget() // the commit may have half happened; learn the log's end again
	if err == nil {
		err = errors.New("write batch failed")
	}
	for i := range results {
		if results[i] == nil {
			results[i] = err
		}
	}
}
