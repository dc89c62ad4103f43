package eventlog

import (
	"context"
	"database/sql"
	"strings"

	"github.com/memoryd/memoryd/internal/atrest"
	"github.com/memoryd/memoryd/internal/eventlog/eventsdb"
)

// Engine names a storage engine: SQLite or Postgres. Each engine's file,
// engine_<name>.go, registers what the log does differently on it.
type Engine string

// engine is what the log does differently on each engine. It covers how
// a write transaction begins and learns of other commits, and how a read
// transaction takes its snapshot. The single writer, group commit,
// savepoints and the projector are shared.
type engine interface {
	// beginWrite begins the writer's transaction on c and holds the log's
	// write lock until it ends, so positions are given in commit order.
	beginWrite(ctx context.Context, c *keptConn) error
	// checkTip forgets what t knows of the log's end if another connection
	// or server has committed since the last check. db is the writer's
	// transaction, begun by beginWrite.
	checkTip(ctx context.Context, db DBTX, t *logTip) error
	// savepoint begins a request of a batch of several in the write
	// transaction db (SAVEPOINT write_request), so that its failure rolls
	// back only its writes.
	savepoint(ctx context.Context, db DBTX) error
	// endRequest ends a request of the write transaction db once it has
	// run, with its error err, and releases its savepoint if it has one.
	// It returns the request's error, which fails the request, and an
	// error of the transaction, which fails the batch.
	endRequest(ctx context.Context, db DBTX, savepoint bool, err error) (reqErr, txErr error)
	// beginRead begins a read-only transaction on c that sees one
	// snapshot of the log and the projections.
	beginRead(c *keptConn) error
	// wrap marks a connection or transaction as this engine's, so that
	// EngineOf tells its dialect, here and in the projections.
	wrap(db DBTX) DBTX
	// beginErase makes the write transaction db overwrite what it frees
	// from now on, for an erasure; endErase, on the writer's connection
	// after the transaction, ends that.
	beginErase(ctx context.Context, db DBTX) error
	endErase(ctx context.Context, c *keptConn) error
	// zeroFreePages overwrites the database's free pages with zeros in
	// the write transaction db, so none holds what was deleted before, and
	// returns how many there were.
	zeroFreePages(ctx context.Context, db DBTX) (int64, error)
	// scrub takes out of the database's files, after an erasure's commit,
	// what may still hold the erased rows (Store.Scrub).
	scrub(ctx context.Context, s *Store, tables []string, opts ScrubOptions) (Scrub, error)
	// reclaim gives back the space the dead rows of tables hold after a
	// bulk write (Store.Reclaim).
	reclaim(ctx context.Context, s *Store, tables []string) error
}

// engineDef is what an engine's file registers.
type engineDef struct {
	// schemes are the prefixes of the URLs that name the engine's
	// databases. The default engine has none and takes every other --db
	// as a file path.
	schemes []string
	// file says that a database is a local file, its name the path.
	file bool
	// open opens the log in the database named, creating or migrating it.
	open func(ctx context.Context, name string, opts Options) (*Store, error)
	// display is how a database is named in messages and logs, without a
	// password.
	display func(name string) string
	// ownsPool reports whether a connection pool is of the engine's
	// driver. The default engine leaves it nil.
	ownsPool func(db *sql.DB) bool
	// queries returns the log's queries on db in the engine's dialect.
	queries func(db DBTX) eventsdb.Querier
	// classify maps the engine's errors to the store's vocabulary, and
	// reports whether err was one of them.
	classify func(err error) (error, bool)
}

var (
	engines       = map[Engine]engineDef{}
	defaultEngine Engine
)

// register adds an engine; the default one takes every --db that no
// other engine's scheme names.
func register(e Engine, d engineDef, isDefault bool) {
	engines[e] = d
	if isDefault {
		defaultEngine = e
	}
}

// Location is a --db value parsed once: the engine it names and the
// database's name on that engine, a file path or a URL.
type Location struct {
	Engine Engine
	Name   string
}

// ParseLocation returns the location that db names. A URL whose scheme an
// engine registered is that engine's; anything else is a file of the
// default engine.
func ParseLocation(db string) Location {
	for e, d := range engines {
		for _, s := range d.schemes {
			if strings.HasPrefix(db, s) {
				return Location{Engine: e, Name: db}
			}
		}
	}
	return Location{Engine: defaultEngine, Name: db}
}

// File returns the path of the database's file, or false when its engine
// keeps it elsewhere, such as on a server.
func (l Location) File() (string, bool) {
	if engines[l.Engine].file {
		return l.Name, true
	}
	return "", false
}

// String names the database in messages and logs, without a password.
func (l Location) String() string {
	if d := engines[l.Engine]; d.display != nil {
		return d.display(l.Name)
	}
	return l.Name
}

// openAt opens the log at loc with its engine.
func openAt(ctx context.Context, loc Location, opts Options) (*Store, error) {
	return engines[loc.Engine].open(ctx, loc.Name, opts)
}

// engineDB marks a connection or transaction with its engine.
type engineDB struct {
	DBTX
	engine Engine
	sealer *atrest.Sealer // set on a database encrypted at rest
}

// Engine returns the engine of the connection.
func (d engineDB) Engine() Engine { return d.engine }

// EngineOf returns the engine of a connection, transaction or pool of a
// log, such as Tx.DB, ReadTx.DB or Store.Reader. It is the one place that
// tells the engines apart.
func EngineOf(db DBTX) Engine {
	switch db := db.(type) {
	case interface{ Engine() Engine }:
		return db.Engine()
	case *sql.DB:
		for e, d := range engines {
			if d.ownsPool != nil && d.ownsPool(db) {
				return e
			}
		}
	}
	return defaultEngine
}

// queriesOf returns the log's queries on db in db's dialect. They
// compress the history entries' payloads, then, on a database encrypted
// at rest, seal and open the events' payloads.
func queriesOf(db DBTX) eventsdb.Querier {
	q := engines[EngineOf(db)].queries(db)
	if s := SealerOf(db); s != nil {
		q = sealedQueries{q, s}
	}
	return packedQueries{q}
}
