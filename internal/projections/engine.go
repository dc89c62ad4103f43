package projections

import (
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
	"github.com/memoryd/memoryd/internal/projections/projectionspg"
)

// The projections run on SQLite or PostgreSQL. What differs between the
// engines is here: which generated queries run on a connection. Each
// query exists for both (queries.sql, queries_pg.sql) with the same Go
// types; pgqueries.go, generated from the two packages, makes the
// PostgreSQL ones a projectionsdb.Querier. The rest of the package's SQL
// (digest.go, open.go, rebuild.go) is written to run on both as it is.

//go:generate go run pgqueries_gen.go

// queriesOf returns the projections' queries over db, for its engine
// (eventlog.OnPostgres tells them apart).
func queriesOf(db projectionsdb.DBTX) projectionsdb.Querier {
	if eventlog.OnPostgres(db) {
		return pgQueries{projectionspg.New(db)}
	}
	return projectionsdb.New(db)
}
