package projections

import (
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
	"github.com/memoryd/memoryd/internal/projections/projectionspg"
)

// The projections run on SQLite or PostgreSQL, and what differs is which
// generated queries run on a connection. Each query exists in queries.sql
// and queries_pg.sql with the same Go types, and the generated pgqueries.go
// makes the PostgreSQL ones a projectionsdb.Querier. The rest of the
// package's SQL runs on both as it is.

//go:generate go run pgqueries_gen.go

// queriesOf returns the projections' queries over db in its engine's
// dialect.
func queriesOf(db projectionsdb.DBTX) projectionsdb.Querier {
	if eventlog.OnPostgres(db) {
		return pgQueries{projectionspg.New(db)}
	}
	return projectionsdb.New(db)
}
