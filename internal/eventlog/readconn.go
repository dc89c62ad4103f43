package eventlog

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"sync"
)

// readConns are the connections read transactions run on.
// Each is taken out of database/sql's pool when first needed and kept,
// with its statements, BEGIN and ROLLBACK among them, prepared once.
// database/sql's BeginTx costs more than a short read; see
// docs/performance.md.
type readConns struct {
	db    *sql.DB
	idle  chan *keptConn // capacity max, so put never waits
	freed chan struct{}  // capacity max; a connection was discarded, so one may be opened
	gone  chan struct{}  // closed by close to end the waiting

	mu     sync.Mutex
	opened int // connections taken from db and not closed
	max    int
	closed bool
}

// keptConn is one kept connection, a reader's or the writer's.
// It serves one transaction at a time, so its statements need no lock.
type keptConn struct {
	conn  *sql.Conn
	stmts map[string]*sql.Stmt
	db    DBTX // runs queries through stmts
}

// maxConnStmts bounds the statements kept per connection.
// Queries past it run unprepared, though the code holds fewer.
const maxConnStmts = 256

func newReadConns(db *sql.DB, max int) *readConns {
	return &readConns{db: db, idle: make(chan *keptConn, max), freed: make(chan struct{}, max), gone: make(chan struct{}), max: max}
}

// get returns an idle connection, opens one while fewer than max are
// open, or waits for one to be put back or discarded.
func (p *readConns) get(ctx context.Context) (*keptConn, error) {
	for {
		c, retry, err := p.tryGet(ctx)
		if !retry {
			return c, err
		}
	}
}

func (p *readConns) tryGet(ctx context.Context) (c *keptConn, retry bool, err error) {
	select {
	case c := <-p.idle:
		return c, false, nil
	default:
	}
	if c, ok, err := p.open(ctx); ok || err != nil {
		return c, false, err
	}
	select {
	case c := <-p.idle:
		return c, false, nil
	case <-p.freed:
		return nil, true, nil
	case <-p.gone:
		return nil, true, nil // to find p closed
	case <-ctx.Done():
		return nil, false, ctx.Err()
	}
}

// put gives c back for the next transaction. c must not be in one.
func (p *readConns) put(c *keptConn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		p.opened--
		c.close(nil)
		return
	}
	p.idle <- c
}

// discard closes c for good, after an error that may have left it in a
// state the next transaction must not meet.
func (p *readConns) discard(c *keptConn) {
	c.close(driver.ErrBadConn)
	p.release()
}

// release counts one connection fewer, and lets a waiting get open one.
func (p *readConns) release() {
	p.mu.Lock()
	p.opened--
	p.mu.Unlock()
	select {
	case p.freed <- struct{}{}:
	default:
	}
}

// close closes the idle connections; those in use close when put back.
func (p *readConns) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.closed {
		close(p.gone)
	}
	p.closed = true
	for {
		select {
		case c := <-p.idle:
			p.opened--
			c.close(nil)
		default:
			return
		}
	}
}

// close closes c's statements and gives its connection back to
// database/sql, which closes it too when why is driver.ErrBadConn.
// Closing c again does nothing more.
func (c *keptConn) close(why error) {
	// The statements go first. database/sql does not close statements
	// prepared on an *sql.Conn with it, and modernc's driver crashes when
	// one is closed after its connection.
	for _, st := range c.stmts {
		st.Close()
	}
	if why != nil {
		_ = c.conn.Raw(func(any) error { return why })
	}
	c.conn.Close()
}

// valid reports whether the driver would take c back into a pool.
// It would not once c is closed or while an interrupt may be pending.
func (c *keptConn) valid() bool {
	ok := true
	if err := c.conn.Raw(func(dc any) error {
		if v, is := dc.(driver.Validator); is {
			ok = v.IsValid()
		}
		return nil
	}); err != nil {
		return false
	}
	return ok
}

func newKeptConn(conn *sql.Conn) *keptConn {
	c := &keptConn{conn: conn, stmts: map[string]*sql.Stmt{}}
	c.db = preparedDB{direct: conn, stmt: c.stmt}
	return c
}

// stmt returns query's statement, preparing it the first time.
// It returns nil when the connection keeps as many as it may or the
// preparation fails.
func (c *keptConn) stmt(ctx context.Context, query string) *sql.Stmt {
	if st := c.stmts[query]; st != nil {
		return st
	}
	if len(c.stmts) >= maxConnStmts {
		return nil
	}
	st, err := c.conn.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.stmts[query] = st
	return st
}

// exec runs query, prepared once, with no arguments.
func (c *keptConn) exec(ctx context.Context, query string) error {
	_, err := c.db.ExecContext(ctx, query)
	return err
}

// ReadTx is a read-only transaction on a reader connection.
// Every query in it sees one snapshot of the log and the projections.
// It must be used by one goroutine at a time and closed.
type ReadTx struct {
	p  *readConns
	c  *keptConn
	db DBTX // c's queries, marked with the store's engine
}

// BeginRead starts a read transaction. While every reader connection is
// in use, it waits for one until ctx ends.
func (s *Store) BeginRead(ctx context.Context) (*ReadTx, error) {
	var err error
	for range 2 { // a connection that fails to BEGIN is replaced once
		var c *keptConn
		if c, err = s.readConns.get(ctx); err != nil {
			return nil, err
		}
		if err = s.engine.beginRead(c); err == nil {
			return &ReadTx{p: s.readConns, c: c, db: s.wrap(c.db)}, nil
		}
		s.readConns.discard(c)
	}
	return nil, classify(err)
}

// DB returns the transaction's queries.
func (r *ReadTx) DB() DBTX { return r.db }

// Close ends the read transaction. Closing it again does nothing.
func (r *ReadTx) Close() error {
	c := r.c
	if c == nil {
		return nil
	}
	r.c = nil
	err := c.exec(context.Background(), "ROLLBACK")
	if err != nil || !c.valid() {
		r.p.discard(c) // it may still be in the transaction or interrupted
		return classify(err)
	}
	r.p.put(c)
	return nil
}

// EachReader runs fn in a read transaction on each connection read
// transactions may keep, the idle ones and then those not open yet, so
// that each has loaded the schema, prepared fn's statements and read its
// pages before the first calls. It holds one connection at a time and
// skips those in use. fn's error ends it.
func (s *Store) EachReader(ctx context.Context, fn func(tx *ReadTx) error) error {
	p := s.readConns
	run := func(c *keptConn) error {
		if err := s.engine.beginRead(c); err != nil {
			p.discard(c)
			return classify(err)
		}
		ferr := fn(&ReadTx{p: p, c: c, db: s.wrap(c.db)})
		if err := c.exec(context.Background(), "ROLLBACK"); err != nil || !c.valid() {
			p.discard(c)
			return errors.Join(ferr, classify(err))
		}
		p.put(c) // last in the queue of idle connections
		return ferr
	}
	for range len(p.idle) {
		select {
		case c := <-p.idle:
			if err := run(c); err != nil {
				return err
			}
		default:
			return nil
		}
	}
	for {
		c, ok, err := p.open(ctx)
		if err != nil || !ok {
			return err
		}
		if err := run(c); err != nil {
			return err
		}
	}
}

// open opens a connection unless max are open: ok is false then.
func (p *readConns) open(ctx context.Context) (c *keptConn, ok bool, err error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, false, errClosed
	}
	if p.opened >= p.max {
		p.mu.Unlock()
		return nil, false, nil
	}
	p.opened++
	p.mu.Unlock()
	conn, err := p.db.Conn(ctx)
	if err != nil {
		p.release()
		return nil, false, classify(err)
	}
	return newKeptConn(conn), true, nil
}
