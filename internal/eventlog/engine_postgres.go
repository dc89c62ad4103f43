package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/memoryd/memoryd/internal/eventlog/eventsdb"
	"github.com/memoryd/memoryd/internal/eventlog/eventspg"
	"github.com/memoryd/memoryd/migrations"
)

// appendLock is the key of the advisory lock every PostgreSQL write
// transaction takes first. The writers of all servers sharing a database
// append one at a time, so positions are gapless and in commit order, and
// a decision such as a fence step sees every earlier commit.
const appendLock int64 = 0x6d656d6f72796401 // "memoryd" 1

//go:generate go run ../pgadapter -pkg eventlog -sqlite eventsdb -pg eventspg

// Postgres is PostgreSQL's engine, for a database that several memoryd
// servers may share. A --db of postgres://… or postgresql://… names it.
const Postgres Engine = "postgres"

func init() {
	register(Postgres, engineDef{
		schemes: []string{"postgres://", "postgresql://"},
		open:    openPostgres,
		display: displayPostgres,
		ownsPool: func(db *sql.DB) bool {
			_, ok := db.Driver().(*stdlib.Driver)
			return ok
		},
		queries:  func(db DBTX) eventsdb.Querier { return pgQueries{eventspg.New(db)} },
		classify: classifyPostgres,
	}, false)
}

// postgresEngine is PostgreSQL's engine.
type postgresEngine struct{}

// beginWrite begins a READ COMMITTED transaction, waits for the append
// lock and reads the log's last position under it, in one round trip.
// The lock is released after the commit is visible, so the next writer's
// read sees it.
func (postgresEngine) beginWrite(ctx context.Context, c *keptConn) error {
	p, err := pipeFor(c)
	if err != nil {
		return err
	}
	p.queue, p.queued, p.err, p.saved, p.committed, p.tipRead = p.queue[:0], 0, nil, false, false, false
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	b.Queue("SELECT pg_advisory_xact_lock($1)", appendLock)
	b.Queue(pgLastPosition)
	br := p.conn.SendBatch(ctx, b)
	_, err = br.Exec()
	if err == nil {
		_, err = br.Exec()
	}
	if err == nil {
		err = br.QueryRow().Scan(&p.tip)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	p.checkConn()
	if err != nil {
		_ = c.exec(ctx, sqlRollback)
		return err
	}
	p.tipRead = true
	return nil
}

// pgLastPosition is the query LastPosition of queries_pg.sql, sent with
// BEGIN (TestPostgresBeginReadsTheTip).
const pgLastPosition = "SELECT coalesce(max(position), 0)::bigint FROM events"

// checkTip takes the log's last position that beginWrite read under the
// append lock. When another server has appended, the stream versions t
// knew are forgotten.
func (postgresEngine) checkTip(ctx context.Context, db DBTX, t *logTip) error {
	var p int64
	if pp := pipeOf(db); pp != nil && pp.tipRead {
		p, pp.tipRead = pp.tip, false
	} else {
		var err error
		if p, err = queriesOf(db).LastPosition(ctx); err != nil {
			return err
		}
	}
	if p != t.last {
		t.forget()
		t.last = p
	}
	return nil
}

// savepoint queues the request's savepoint, unless the request before it
// sent it already.
func (postgresEngine) savepoint(ctx context.Context, db DBTX) error {
	if p := pipeOf(db); p != nil && p.saved {
		p.saved = false
		return nil
	}
	_, err := db.ExecContext(ctx, sqlSavepoint)
	return err
}

// endRequest sends what the request queued, with its savepoint's release
// and the next request's savepoint, or with the COMMIT of a request alone
// in its batch, in one round trip. A request fails
// with the first error it met, its statements' or its own.
func (postgresEngine) endRequest(ctx context.Context, db DBTX, savepoint bool, err error) (reqErr, txErr error) {
	p := pipeOf(db)
	if p == nil {
		return err, nil
	}
	if err != nil {
		// A statement still queued may have failed before err: send them
		// to learn, so the request fails with the first error, as if each
		// statement had run when made.
		if _, serr := p.send(ctx); serr != nil {
			return p.err, nil
		}
		return err, nil
	}
	own := len(p.queue)
	var commit *pgResult
	if savepoint {
		p.queueKept(sqlRelease)
		p.queueKept(sqlSavepoint) // the next request's, or left to the commit
	} else {
		// A request alone in its batch is committed next, so its COMMIT
		// goes with its statements; the server skips it if one fails.
		p.queueKept(sqlCommit)
		commit = p.queue[len(p.queue)-1].res
	}
	at, err := p.send(ctx)
	switch {
	case err == nil && commit != nil && commit.tag.String() != "COMMIT":
		return nil, fmt.Errorf("%w: the write transaction was rolled back (%s)", ErrUnavailable, commit.tag)
	case err == nil:
		p.saved = savepoint
		p.committed = commit != nil
		return nil, nil
	case at < own:
		return err, nil
	default:
		return nil, err
	}
}

// beginRead begins a REPEATABLE READ transaction, whose statements all see
// the snapshot its first one took.
func (postgresEngine) beginRead(c *keptConn) error {
	return c.exec(context.Background(), "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
}

func (postgresEngine) wrap(db DBTX) DBTX { return engineDB{DBTX: db, engine: Postgres} }

// openPostgres opens the log in the PostgreSQL database dsn names and
// applies the migrations. Other servers may have it open.
func openPostgres(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("--db: not a PostgreSQL URL: %w", pgSafe(err))
	}
	name := postgresName(cfg)
	writer, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", name, pgSafe(err))
	}
	writer.SetMaxOpenConns(1)
	writer.SetMaxIdleConns(1)
	if err := writer.PingContext(ctx); err != nil {
		writer.Close()
		return nil, fmt.Errorf("open %s: %w", name, classify(err))
	}
	if err := migrations.UpPostgres(ctx, writer); err != nil {
		writer.Close()
		return nil, fmt.Errorf("open %s: %w", name, classify(err))
	}
	if opts.Sealer, err = openAtRest(ctx, pgQueries{eventspg.New(writer)}, opts); err != nil {
		writer.Close()
		return nil, fmt.Errorf("open %s: %w", name, err)
	}
	reader, err := sql.Open("pgx", dsn)
	if err != nil {
		writer.Close()
		return nil, fmt.Errorf("open %s: %w", name, pgSafe(err))
	}
	reader.SetMaxOpenConns(opts.Readers + 2)
	reader.SetMaxIdleConns(opts.Readers + 2)
	return newStore(writer, reader, opts, postgresEngine{}, nil), nil
}

// postgresName names a PostgreSQL database in messages and logs by its
// user, host, port and database, never its password.
func postgresName(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("postgres://%s@%s:%d/%s", cfg.User, cfg.Host, cfg.Port, cfg.Database)
}

// displayPostgres names a PostgreSQL database in messages and logs by its
// URL without a password and parameters.
func displayPostgres(db string) string {
	cfg, err := pgx.ParseConfig(db)
	if err != nil {
		return "postgres://(a URL that cannot be parsed)"
	}
	return postgresName(cfg)
}

// pgSafe drops what a connection string error could repeat of the
// string itself, such as a password.
func pgSafe(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return errors.New("the connection string cannot be parsed")
	}
	return err
}

// classifyPostgres maps PostgreSQL's errors to the store's vocabulary.
// Unique violations are conflicts. A server or connection that is gone,
// shutting down, out of resources or refusing the transaction is
// unavailable, since a transaction that did not commit wrote nothing.
func classifyPostgres(err error) (error, bool) {
	var ce *pgconn.ConnectError
	if errors.As(err, &ce) { // no connection, so nothing written, whatever the server said
		return fmt.Errorf("%w: %w", ErrUnavailable, err), true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == "23505": // unique_violation
			return fmt.Errorf("%w: %w", ErrConflict, err), true
		case pe.Code[:2] == "08", pe.Code[:2] == "53", pe.Code[:2] == "57", pe.Code[:2] == "40":
			// connection, insufficient resources, operator intervention
			// such as shutdown or cancel, transaction rollback such as
			// serialization failure or deadlock
			return fmt.Errorf("%w: %w", ErrUnavailable, err), true
		}
		return err, true
	}
	if pgconn.SafeToRetry(err) || pgconn.Timeout(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err), true
	}
	return err, false
}

// PostgreSQL overwrites nothing in place: an UPDATE or DELETE leaves the
// old row version as a dead tuple, which scrub's VACUUM FULL drops by
// rewriting the table.
func (postgresEngine) beginErase(context.Context, DBTX) error    { return nil }
func (postgresEngine) endErase(context.Context, *keptConn) error { return nil }
func (postgresEngine) zeroFreePages(context.Context, DBTX) (int64, error) {
	return 0, nil
}

// reclaim rewrites every table in tables with VACUUM FULL, on a
// connection of its own (VACUUM runs outside a transaction).
func (postgresEngine) reclaim(ctx context.Context, s *Store, tables []string) error {
	conn, err := s.reader.Conn(ctx)
	if err != nil {
		return classify(err)
	}
	defer conn.Close()
	for _, t := range tables {
		if _, err := conn.ExecContext(ctx, "VACUUM (FULL) "+pgx.Identifier{t}.Sanitize()); err != nil {
			return fmt.Errorf("vacuum %s: %w", t, classify(err))
		}
	}
	return nil
}

// scrub rewrites the log and every table in tables with VACUUM FULL, on a
// connection of its own, so that their files hold no dead tuple of the
// erased rows (a plain VACUUM marks their space free without overwriting
// it). Each table is locked while it is rewritten. What PostgreSQL keeps
// elsewhere, memoryd cannot reach: docs/forgetting.md.
func (postgresEngine) scrub(ctx context.Context, s *Store, tables []string, _ ScrubOptions) (Scrub, error) {
	r := Scrub{Engine: Postgres, Vacuumed: []string{}, Left: []string{
		"PostgreSQL's own WAL segments (pg_wal, until recycled), its WAL archive, its replicas and base backups hold the erased rows " +
			"as they were written; memoryd cannot erase them (docs/forgetting.md)"}}
	conn, err := s.reader.Conn(ctx)
	if err != nil {
		return r, classify(err)
	}
	defer conn.Close()
	for _, t := range append([]string{"events"}, tables...) {
		if _, err := conn.ExecContext(ctx, "VACUUM (FULL) "+pgx.Identifier{t}.Sanitize()); err != nil {
			return r, fmt.Errorf("vacuum %s: %w", t, classify(err))
		}
		r.Vacuumed = append(r.Vacuumed, t)
	}
	return r, nil
}
