package main

import (
	"context"
	"fmt"
	"io"

	"github.com/memoryd/memoryd/internal/forensics"
)

// importUsage is the import verb's line of the usage text.
const importUsage = "server import --db F FILE"

// runImport is the import verb: an exported log appended into an empty
// database, ids and positions kept, all or nothing: a database it created
// is removed when it fails.
func runImport(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) (err error) {
	fs := newFlags("import", stderr)
	db := fs.String("db", getenv("MEMORYD_DB"), "database file (created if missing; must hold no events)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *db == "" || fs.NArg() != 1 {
		return &usageError{"usage: " + importUsage + " (FILE - reads stdin)"}
	}
	lr, closeLog, err := openLog(fs.Arg(0), stdin)
	if err != nil {
		return err
	}
	defer closeLog()
	svc, closeDB, err := openAllOrNothing(ctx, *db, stderr)
	if err != nil {
		return err
	}
	defer func() { closeDB(err != nil) }()
	report, done := progress(stderr, "import", "events", -1)
	n, err := forensics.Import(ctx, svc, forensics.Counted(lr.Next, report))
	done()
	if err != nil {
		if lr.Line() == 0 { // refused before any line was read: a non-empty database
			return err
		}
		return lr.AtLine(err)
	}
	fmt.Fprintf(stdout, "imported %d events\n", n)
	return svc.Close()
}
