package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"sync"

	"github.com/memoryd/memoryd/internal/eventlog/eventsdb"
)

// DBTX is what queries run on, a connection pool or a transaction whose
// statements are prepared once per connection and reused.
type DBTX = eventsdb.DBTX

// stmtCache holds the statements prepared on the reader pool by query text.
// They serve the pool's own queries outside read transactions, so a query
// is parsed once per connection instead of once per call.
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

// stmt returns the prepared statement of query. When there is none yet it
// starts preparing one and returns errNotPrepared.
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
		// Prepare in the background, since preparing on the pool needs a
		// free connection and the caller may hold the last one.
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

// close closes the prepared statements after the prepares in flight end.
func (c *stmtCache) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	// Each prepare holds a connection the pool must get back before it
	// closes, since the last connection to close checkpoints the WAL.
	c.preparing.Wait()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.m {
		st.Close()
	}
	c.m = map[string]*sql.Stmt{}
}

// preparedDB runs each query through the statement stmt returns for it,
// or on direct when stmt returns none. Running a query unprepared also
// reports the error of a preparation that failed.
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
