package projections

import (
	"database/sql/driver"

	"modernc.org/sqlite"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// init registers SQLite's queries, and bloomHas with the driver as the SQL
// function memoryd_bloom_has, for CandidateChunks on every connection.
func init() {
	dialects[eventlog.SQLite] = func(db projectionsdb.DBTX) projectionsdb.Querier { return projectionsdb.New(db) }
	sqlite.MustRegisterDeterministicScalarFunction("memoryd_bloom_has", 2,
		func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			filter, _ := args[0].([]byte)
			probes, _ := args[1].([]byte)
			if bloomHas(filter, probes) {
				return int64(1), nil
			}
			return int64(0), nil
		})
}
