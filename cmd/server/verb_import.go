package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/memoryd/memoryd/internal/forensics"
)

var importVerb = verb{
	name:     "import",
	synopsis: "import --db F FILE",
	summary:  "load an exported log into an empty database, ids and positions kept",
	about: `
Appends the events of an exported log (export's output) into the database --db, which is created
if missing and must hold no events, keeping every id and position. Every event is checked as
strictly as a request body and by the rules of the commands that record it; the first that breaks
one is refused with its line number, and nothing is kept (a database the import created is removed).`,
	args: []arg{{name: "FILE", about: "an exported log (JSON lines); - reads it from stdin"}},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", getenv("MEMORYD_DB"), "database `F` to create or fill, which must hold no events (env MEMORYD_DB)")
		return func(ctx context.Context, in *invocation) (err error) {
			if *db == "" {
				return &usageError{"import needs --db F (or MEMORYD_DB): the database to import into"}
			}
			lr, closeLog, err := openLog(in.args[0], in.stdin)
			if err != nil {
				return err
			}
			defer closeLog()
			svc, closeDB, err := openAllOrNothing(ctx, in.getenv, *db, in.stderr)
			if err != nil {
				return err
			}
			defer func() { closeDB(err != nil) }()
			report, done := progress(in.stderr, "import", "events", -1)
			n, err := forensics.Import(ctx, svc, forensics.Counted(lr.Next, report))
			done()
			if err != nil {
				if lr.Line() == 0 { // refused before any line was read, so a non-empty database
					return err
				}
				return lr.AtLine(err)
			}
			fmt.Fprintf(in.stdout, "imported %d events\n", n)
			reclaim(ctx, svc, in.stderr, "import")
			return svc.Close()
		}
	},
}
