package projections

import (
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// The projections run on each engine of the log, and what differs is
// which generated queries run on a connection. Each engine's file,
// engine_<name>.go, registers its queries; the rest of the package's SQL
// runs on every engine as it is.

// dialects returns the projections' queries on a connection, by engine.
var dialects = map[eventlog.Engine]func(db projectionsdb.DBTX) projectionsdb.Querier{}

// queriesOf returns the projections' queries over db in its engine's
// dialect. They compress chunk data, then, on a database encrypted at
// rest, seal and open its texts.
func queriesOf(db projectionsdb.DBTX) projectionsdb.Querier {
	q := dialects[eventlog.EngineOf(db)](db)
	if s := eventlog.SealerOf(db); s != nil {
		q = sealedQueries{Querier: q, s: s}
	}
	return newPackedQueries(q)
}
