package eventlog

import (
	"context"
	"database/sql"
	"strings"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/memoryd/memoryd/internal/eventlog/eventsdb"
)

// engine is what the log does differently on SQLite and on PostgreSQL.
// It covers how a write transaction begins and learns of other commits, how
// a read transaction takes its snapshot, and the dialect of the queries.
// The single writer, group commit, savepoints and the projector are shared.
type engine interface {
	// beginWrite begins the writer's transaction on c and holds the log's
	// write lock until it ends, so positions are given in commit order.
	beginWrite(ctx context.Context, c *keptConn) error
	// checkTip forgets what t knows of the log's end if another connection
	// or server has committed since the last check. db is the writer's
	// transaction, begun by beginWrite.
	checkTip(ctx context.Context, db DBTX, t *logTip) error
	// beginRead begins a read-only transaction on c that sees one
	// snapshot of the log and the projections.
	beginRead(c *keptConn) error
	// wrap marks a connection or transaction of this engine, so that
	// queriesOf picks its dialect, here and in the projections.
	wrap(db DBTX) DBTX
}

// IsPostgres reports whether a --db is a postgres:// or postgresql:// URL
// rather than an SQLite file.
func IsPostgres(db string) bool {
	return strings.HasPrefix(db, "postgres://") || strings.HasPrefix(db, "postgresql://")
}

// PostgresDB is implemented by the connections and transactions of a log
// on PostgreSQL, such as Tx.DB and ReadTx.DB. The projections run their
// PostgreSQL queries on those.
type PostgresDB interface {
	DBTX
	PostgreSQL()
}

// OnPostgres reports whether db is a connection, transaction or pool of a
// log on PostgreSQL. That is a PostgresDB, or a reader pool of pgx's driver.
// It is the one place that tells the engines apart.
func OnPostgres(db DBTX) bool {
	switch db := db.(type) {
	case PostgresDB:
		return true
	case *sql.DB:
		_, ok := db.Driver().(*stdlib.Driver)
		return ok
	}
	return false
}

// queriesOf returns the log's queries on db in db's dialect.
func queriesOf(db DBTX) eventsdb.Querier {
	if OnPostgres(db) {
		return postgresQueries{db}
	}
	return eventsdb.New(db)
}

// sqliteEngine is SQLite's engine, one file in WAL mode.
type sqliteEngine struct{}

// beginWrite takes SQLite's write lock at BEGIN IMMEDIATE, so that a
// transaction never has to upgrade a read lock and fail as busy.
func (sqliteEngine) beginWrite(ctx context.Context, c *keptConn) error {
	return c.exec(ctx, "BEGIN IMMEDIATE")
}

// checkTip compares SQLite's data_version, which changes when another
// connection commits but never for the connection's own commits.
func (sqliteEngine) checkTip(ctx context.Context, db DBTX, t *logTip) error {
	var v int64
	if err := db.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
		return err
	}
	if v != t.dataVersion {
		t.forget()
		t.dataVersion = v
	}
	return nil
}

// beginRead begins a deferred transaction, whose snapshot starts at the
// first read. It takes no context, which would cost a goroutine in the driver.
func (sqliteEngine) beginRead(c *keptConn) error {
	return c.exec(context.Background(), "BEGIN")
}

func (sqliteEngine) wrap(db DBTX) DBTX { return db }
