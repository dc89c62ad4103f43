package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver

	"github.com/memoryd/memoryd/internal/eventlog/eventsdb"
	"github.com/memoryd/memoryd/internal/eventlog/eventspg"
	"github.com/memoryd/memoryd/migrations"
)

// appendLock is the key of the advisory lock every PostgreSQL write
// transaction takes first. The writers of all servers sharing a database
// append one at a time, so positions are gapless and in commit order, and
// a decision such as a fence step sees every earlier commit.
const appendLock int64 = 0x6d656d6f72796401 // "memoryd" 1

// postgresEngine is PostgreSQL's engine, for a database that several
// memoryd servers may share.
type postgresEngine struct{}

// beginWrite begins a READ COMMITTED transaction and waits for the append
// lock. The lock is released after the commit is visible, so the next
// writer's first read sees it.
func (postgresEngine) beginWrite(ctx context.Context, c *keptConn) error {
	if err := c.exec(ctx, "BEGIN"); err != nil {
		return err
	}
	if _, err := c.db.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", appendLock); err != nil {
		_ = c.exec(ctx, "ROLLBACK")
		return err
	}
	return nil
}

// checkTip reads the log's last position under the append lock.
// When another server has appended, the stream versions t knew are forgotten.
func (postgresEngine) checkTip(ctx context.Context, db DBTX, t *logTip) error {
	p, err := queriesOf(db).LastPosition(ctx)
	if err != nil {
		return err
	}
	if p != t.last {
		t.forget()
		t.last = p
	}
	return nil
}

// beginRead begins a REPEATABLE READ transaction, whose statements all see
// the snapshot its first one took.
func (postgresEngine) beginRead(c *keptConn) error {
	return c.exec(context.Background(), "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY")
}

func (postgresEngine) wrap(db DBTX) DBTX { return postgresDB{db} }

// postgresDB marks a connection or transaction of a log on PostgreSQL.
type postgresDB struct{ DBTX }

func (postgresDB) PostgreSQL() {}

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

// DatabaseName is how the database db is named in messages and logs.
// An SQLite path stays as it is, and a URL loses its password and parameters.
func DatabaseName(db string) string {
	if !IsPostgres(db) {
		return db
	}
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

// postgresQueries runs the eventspg queries with the types of the eventsdb
// ones. The struct conversions compile only while the two query files
// agree on every parameter and column.
type postgresQueries struct{ db DBTX }

var _ eventsdb.Querier = postgresQueries{}

func (q postgresQueries) pg() *eventspg.Queries { return eventspg.New(q.db) }

func pgEvents(rows []eventspg.Event, err error) ([]eventsdb.Event, error) {
	out := make([]eventsdb.Event, len(rows))
	for i, r := range rows {
		out[i] = eventsdb.Event(r)
	}
	return out, err
}

func (q postgresQueries) CountEvents(ctx context.Context) (int64, error) {
	return q.pg().CountEvents(ctx)
}

func (q postgresQueries) EventsAfter(ctx context.Context, arg eventsdb.EventsAfterParams) ([]eventsdb.Event, error) {
	return pgEvents(q.pg().EventsAfter(ctx, eventspg.EventsAfterParams(arg)))
}

func (q postgresQueries) InsertEvent(ctx context.Context, arg eventsdb.InsertEventParams) error {
	return q.pg().InsertEvent(ctx, eventspg.InsertEventParams(arg))
}

func (q postgresQueries) LastPosition(ctx context.Context) (int64, error) {
	return q.pg().LastPosition(ctx)
}

func (q postgresQueries) StreamBounds(ctx context.Context, arg eventsdb.StreamBoundsParams) (eventsdb.StreamBoundsRow, error) {
	r, err := q.pg().StreamBounds(ctx, eventspg.StreamBoundsParams(arg))
	return eventsdb.StreamBoundsRow(r), err
}

func (q postgresQueries) StreamBranchChangeFrom(ctx context.Context, arg eventsdb.StreamBranchChangeFromParams) (int64, error) {
	return q.pg().StreamBranchChangeFrom(ctx, eventspg.StreamBranchChangeFromParams(arg))
}

func (q postgresQueries) StreamEventsAfter(ctx context.Context, arg eventsdb.StreamEventsAfterParams) ([]eventsdb.Event, error) {
	return pgEvents(q.pg().StreamEventsAfter(ctx, eventspg.StreamEventsAfterParams(arg)))
}

func (q postgresQueries) StreamLifecycleEventsAfter(ctx context.Context, arg eventsdb.StreamLifecycleEventsAfterParams) ([]eventsdb.Event, error) {
	return pgEvents(q.pg().StreamLifecycleEventsAfter(ctx, eventspg.StreamLifecycleEventsAfterParams(arg)))
}

func (q postgresQueries) StreamVersion(ctx context.Context, stream string) (int64, error) {
	return q.pg().StreamVersion(ctx, stream)
}

func (q postgresQueries) TaskEventsWithoutNotesAfter(ctx context.Context, arg eventsdb.TaskEventsWithoutNotesAfterParams) ([]eventsdb.Event, error) {
	return pgEvents(q.pg().TaskEventsWithoutNotesAfter(ctx, eventspg.TaskEventsWithoutNotesAfterParams(arg)))
}

func (q postgresQueries) StreamNotesAfter(ctx context.Context, arg eventsdb.StreamNotesAfterParams) ([]eventsdb.Event, error) {
	return pgEvents(q.pg().StreamNotesAfter(ctx, eventspg.StreamNotesAfterParams(arg)))
}

func (q postgresQueries) TaskEventsAfter(ctx context.Context, arg eventsdb.TaskEventsAfterParams) ([]eventsdb.Event, error) {
	return pgEvents(q.pg().TaskEventsAfter(ctx, eventspg.TaskEventsAfterParams(arg)))
}

func (q postgresQueries) NoteEventsAfter(ctx context.Context, arg eventsdb.NoteEventsAfterParams) ([]eventsdb.Event, error) {
	return pgEvents(q.pg().NoteEventsAfter(ctx, eventspg.NoteEventsAfterParams(arg)))
}

func (q postgresQueries) StreamCallsBefore(ctx context.Context, arg eventsdb.StreamCallsBeforeParams) ([]eventsdb.Event, error) {
	return pgEvents(q.pg().StreamCallsBefore(ctx, eventspg.StreamCallsBeforeParams(arg)))
}
