package projections

import (
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
	"github.com/memoryd/memoryd/internal/projections/projectionspg"
)

// Each query exists in queries.sql and queries_pg.sql with the same Go
// types, and the generated pgqueries.go makes the PostgreSQL ones a
// projectionsdb.Querier.

//go:generate go run ../pgadapter -pkg projections -sqlite projectionsdb -pg projectionspg

func init() {
	dialects[eventlog.Postgres] = func(db projectionsdb.DBTX) projectionsdb.Querier {
		return pgQueries{projectionspg.New(db)}
	}
}
