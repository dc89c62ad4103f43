package eventlog

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// pgPipe is the PostgreSQL writer's connection as a write transaction
// sees it. A statement whose rows nobody reads (ExecContext) waits in a
// queue, and the queue goes to the server in one round trip, as a pgx
// batch, when a query needs its answer, when the request ends, or at the
// commit: an append's inserts cost one round trip instead of one each,
// while the writer holds the append lock. Queries run through database/sql
// on the same connection once the queue is sent, so they see every write
// before them.
//
// In a batch the server skips every statement after one that fails, up to
// the batch's end: a request's failure leaves what was queued after it
// undone, and the transaction aborted until a ROLLBACK TO or ROLLBACK.
// Only the writer goroutine uses a pgPipe.
type pgPipe struct {
	direct DBTX      // the connection's prepared statements, for queries
	sqlc   *sql.Conn // the connection as database/sql holds it
	conn   *pgx.Conn // the same connection, below database/sql
	queue  []pgQueued
	queued int // bytes of the queue's text and binary arguments
	// err is the first error a send met since the transaction or the
	// savepoint began: the request's failure, whatever a later statement
	// of the aborted transaction says.
	err error
	// saved says that the next request's savepoint was sent already, at
	// the end of the request before it.
	saved bool
	// committed says that the transaction's COMMIT was sent already, with
	// the statements of the request alone in it.
	committed bool
	// tip is the log's last position, read under the append lock with
	// BEGIN when tipRead is set, for checkTip.
	tip     int64
	tipRead bool
}

// pgQueued is a statement waiting in the queue.
type pgQueued struct {
	sql  string
	args []any
	res  *pgResult
	// keep marks the writer's own SAVEPOINT and RELEASE, which a ROLLBACK
	// TO sends rather than drops with the request's statements.
	keep bool
}

// pgResult is the result of a queued statement, known once it is sent.
type pgResult struct {
	p    *pgPipe
	sent bool
	tag  pgconn.CommandTag
	err  error
}

// RowsAffected sends the queue if the statement is still in it.
func (r *pgResult) RowsAffected() (int64, error) {
	if !r.sent {
		if _, err := r.p.send(context.Background()); err != nil && !r.sent {
			return 0, err
		}
	}
	if r.err != nil {
		return 0, r.err
	}
	return r.tag.RowsAffected(), nil
}

func (r *pgResult) LastInsertId() (int64, error) {
	return 0, errors.New("LastInsertId is not supported by PostgreSQL")
}

// pipeFor returns c's pipe, making it on the connection's first write
// transaction. The writer keeps its connection out of database/sql's pool
// (keptConn), so the *pgx.Conn taken out of it serves nobody else.
func pipeFor(c *keptConn) (*pgPipe, error) {
	if p, ok := c.db.(*pgPipe); ok {
		return p, nil
	}
	var conn *pgx.Conn
	if err := c.conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("eventlog: a PostgreSQL connection of type %T", dc)
		}
		conn = sc.Conn()
		return nil
	}); err != nil {
		return nil, err
	}
	p := &pgPipe{direct: c.db, sqlc: c.conn, conn: conn}
	c.db = p
	return p, nil
}

// pipeOf returns the pipe under a write transaction's DBTX.
func pipeOf(db DBTX) *pgPipe {
	if e, ok := db.(engineDB); ok {
		db = e.DBTX
	}
	p, _ := db.(*pgPipe)
	return p
}

// The queue is sent once it holds maxQueued statements or maxQueuedBytes
// of arguments, so that a request with many writes holds few in memory.
const (
	maxQueued      = 256
	maxQueuedBytes = 1 << 20
)

// ExecContext queues query. Its error, if any, comes with the send.
// A ROLLBACK TO drops the statements queued since the savepoint, which it
// would undo, and runs at once, as do ROLLBACK and COMMIT.
func (p *pgPipe) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if query == sqlCommit && p.committed {
		p.committed = false
		return &pgResult{p: p, sent: true}, nil
	}
	p.committed = false
	switch query {
	case sqlRollbackTo:
		p.dropUnkept()
		p.saved = false
	case sqlRollback:
		p.queue, p.queued = p.queue[:0], 0
		p.saved = false
	}
	r := &pgResult{p: p}
	keep := query == sqlSavepoint || query == sqlRelease
	p.queue = append(p.queue, pgQueued{sql: query, args: args, res: r, keep: keep})
	for _, a := range args {
		switch a := a.(type) {
		case string:
			p.queued += len(a)
		case []byte:
			p.queued += len(a)
		}
	}
	switch query {
	case sqlRollbackTo, sqlRollback:
		if _, err := p.send(ctx); err != nil {
			return nil, err
		}
		p.err = nil
		return r, nil
	case sqlCommit:
		if _, err := p.send(ctx); err != nil {
			return nil, err
		}
		// COMMIT of an aborted transaction rolls it back without an error.
		if r.tag.String() != "COMMIT" {
			return nil, fmt.Errorf("%w: the write transaction was rolled back (%s)", ErrUnavailable, r.tag)
		}
		return r, nil
	}
	if len(p.queue) >= maxQueued || p.queued >= maxQueuedBytes {
		// An import queues a whole log in one request.
		if _, err := p.send(ctx); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// dropUnkept drops the queued statements after the last kept one.
func (p *pgPipe) dropUnkept() {
	n := 0
	for i, q := range p.queue {
		if q.keep {
			n = i + 1
		}
	}
	for _, q := range p.queue[n:] {
		q.res.sent, q.res.err = true, errors.New("eventlog: rolled back before it was sent")
	}
	p.queue, p.queued = p.queue[:n], 0
}

// queueKept queues one of the writer's own statements.
func (p *pgPipe) queueKept(query string) {
	p.queue = append(p.queue, pgQueued{sql: query, res: &pgResult{p: p}, keep: true})
}

// send sends the queue in one round trip. It returns the first error and
// the index of the statement that failed.
func (p *pgPipe) send(ctx context.Context) (int, error) {
	if len(p.queue) == 0 {
		return -1, p.err
	}
	b := &pgx.Batch{}
	for _, q := range p.queue {
		b.Queue(q.sql, q.args...)
	}
	queue := p.queue
	p.queue, p.queued = p.queue[:0], 0
	br := p.conn.SendBatch(ctx, b)
	at, first := -1, error(nil)
	for i, q := range queue {
		q.res.sent = true
		q.res.tag, q.res.err = br.Exec()
		if q.res.err != nil && first == nil {
			at, first = i, q.res.err
		}
	}
	if err := br.Close(); err != nil && first == nil {
		at, first = len(queue)-1, err
	}
	p.checkConn()
	clear(queue) // drop the arguments
	if first != nil && p.err == nil {
		p.err = first
	}
	return at, first
}

// checkConn tells database/sql of a connection that pgx found closed, so
// that keptConn.valid reports it and the writer takes a new one.
// database/sql learns it by itself of the statements it runs.
func (p *pgPipe) checkConn() {
	if p.conn.IsClosed() {
		_ = p.sqlc.Raw(func(any) error { return driver.ErrBadConn })
	}
}

func (p *pgPipe) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	if _, err := p.send(ctx); err != nil {
		return nil, err
	}
	return p.direct.PrepareContext(ctx, query)
}

func (p *pgPipe) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if _, err := p.send(ctx); err != nil {
		return nil, err
	}
	return p.direct.QueryContext(ctx, query, args...)
}

// QueryRowContext sends the queue first. If that fails, the query still
// runs, in the aborted transaction, and fails; the request ends with the
// first error (pgPipe.err).
func (p *pgPipe) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	_, _ = p.send(ctx)
	return p.direct.QueryRowContext(ctx, query, args...)
}
