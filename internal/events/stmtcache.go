package events

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/memoryd/memoryd/internal/events/eventsdb"
)

// DBTX is what queries run on: a connection pool or a transaction whose
// statements are prepared once per connection and reused.
type DBTX = eventsdb.DBTX

// stmtCache holds the statements prepared on one pool, by query text.
// database/sql keeps each one prepared on every connection it has run on,
// so a query is parsed once per connection instead of once per call.
//
// A query seen for the first time runs unprepared, and is prepared in the
// background: preparing on the pool needs a free connection, and the
// caller may hold the only one (the writer) or the last one (a reader).
type stmtCache struct {
	db        *sql.DB
	mu        sync.RWMutex
	m         map[string]*sql.Stmt
	pending   map[string]bool
	closed    bool
	preparing sync.WaitGroup // the background prepares, waited for by close
}

func newStmtCache(db *sql.DB) *stmtCache {
	return &stmtCache{db: db, m: map[string]*sql.Stmt{}, pending: map[string]bool{}}
}

// stmt returns the prepared statement of query, or nil (and starts
// preparing it) when there is none yet.
func (c *stmtCache) stmt(_ context.Context, query string) (*sql.Stmt, error) {
	c.mu.RLock()
	st := c.m[query]
	c.mu.RUnlock()
	if st != nil {
		return st, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.m[query]; st != nil {
		return st, nil
	}
	if !c.pending[query] && !c.closed {
		c.pending[query] = true
		c.preparing.Add(1)
		go c.prepare(query)
	}
	return nil, errNotPrepared
}

var errNotPrepared = errors.New("statement not prepared yet")

func (c *stmtCache) prepare(query string) {
	defer c.preparing.Done()
	st, err := c.db.PrepareContext(context.Background(), query)
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pending, query)
	if err != nil {
		return // tried again on next use
	}
	if c.closed {
		st.Close()
		return
	}
	c.m[query] = st
}

// close closes the prepared statements, after waiting for the prepares
// in flight (each holds a connection the pool must get back before it
// closes: the last connection to close checkpoints and removes the WAL).
func (c *stmtCache) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.preparing.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = map[string]*sql.Stmt{}
}

// cachedTx runs a transaction's queries through the pool's statements.
// A query the pool has not prepared yet (its background prepare waits for
// a free connection, and this transaction may hold the only one) is
// prepared on the transaction itself, once: a long transaction such as an
// import parses each query once, not once per call.
type cachedTx struct {
	tx    *sql.Tx
	c     *stmtCache
	local map[string]*sql.Stmt // closed by database/sql when tx ends
	memo  map[any]any          // a write transaction's (see TxMemo); nil for reads
	// deferring: the request may defer projection writes (Tx.DeferProjections)
	deferring bool
}

// TxMemo returns the memo of the write transaction db, or nil when db is
// not one: memory that projections keep with a transaction, to remember
// rows of their own tables they have read or written in it. The writer
// empties it whenever some of the transaction's writes are rolled back (a
// failed request of a batch); whoever changes those tables other than
// through the code that keeps the memo (a projection rebuild's deletes)
// must empty it too. Keys must be of a type of the caller's own.
func TxMemo(db DBTX) map[any]any {
	if t, ok := db.(cachedTx); ok {
		return t.memo
	}
	return nil
}

// TxDeferring reports whether the applier may defer its projection writes
// in db until Options.Flush (see Tx.DeferProjections).
func TxDeferring(db DBTX) bool {
	t, ok := db.(cachedTx)
	return ok && t.deferring
}

func newCachedTx(tx *sql.Tx, c *stmtCache) cachedTx {
	return cachedTx{tx: tx, c: c, local: map[string]*sql.Stmt{}}
}

// stmt returns query's statement bound to the transaction.
func (t cachedTx) stmt(ctx context.Context, query string) (*sql.Stmt, error) {
	if st := t.local[query]; st != nil {
		return st, nil
	}
	if st, err := t.c.stmt(ctx, query); err == nil {
		st = t.tx.StmtContext(ctx, st)
		t.local[query] = st
		return st, nil
	}
	st, err := t.tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	t.local[query] = st
	return st, nil
}

func (t cachedTx) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

func (t cachedTx) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return t.tx.PrepareContext(ctx, query)
}

func (t cachedTx) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := t.stmt(ctx, query)
	if err != nil {
		return nil, err
	}
	return st.QueryContext(ctx, args...)
}

func (t cachedTx) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := t.stmt(ctx, query)
	if err != nil {
		// A *sql.Row cannot be built with an error: let the transaction
		// report the same preparation error.
		return t.tx.QueryRowContext(ctx, query, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// preparedDB runs each query through the statement stmt returns for it,
// or on direct when stmt returns none (not prepared yet, or its
// preparation failed: running it unprepared then reports the error).
type preparedDB struct {
	direct DBTX
	stmt   func(ctx context.Context, query string) *sql.Stmt
}

func (d preparedDB) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if st := d.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return d.direct.ExecContext(ctx, query, args...)
}

func (d preparedDB) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	return d.direct.PrepareContext(ctx, query)
}

func (d preparedDB) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := d.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return d.direct.QueryContext(ctx, query, args...)
}

func (d preparedDB) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st := d.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return d.direct.QueryRowContext(ctx, query, args...)
}

// queries runs queries on the pool through its prepared statements.
func (c *stmtCache) queries() DBTX {
	return preparedDB{direct: c.db, stmt: func(ctx context.Context, query string) *sql.Stmt {
		st, _ := c.stmt(ctx, query)
		return st
	}}
}
