package main

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/memoryd/memoryd/internal/forensics"
)

// runExport is the export verb: the log (or one task's events, or those up
// to a position) as JSON lines on stdout.
func runExport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("export", stderr)
	db := fs.String("db", getenv("MEMORYD_DB"), "database file")
	task := fs.String("task", "", "only this task's events")
	until := fs.Int64("until", 0, "only events up to this position")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *db == "" || fs.NArg() > 0 {
		return &usageError{"usage: server export --db F [--task T] [--until P]"}
	}
	svc, err := openExistingService(ctx, *db, stderr)
	if err != nil {
		return err
	}
	defer svc.Close()
	w := bufio.NewWriterSize(stdout, 1<<16)
	report, done := progress(stderr, "export", -1)
	err = forensics.Export(ctx, svc, *task, *until, w, report)
	done()
	if err != nil {
		return err
	}
	return w.Flush()
}

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
		return &usageError{"usage: server import --db F FILE (FILE - reads stdin)"}
	}
	lr, closeLog, err := openLog(fs.Arg(0), stdin)
	if err != nil {
		return err
	}
	defer closeLog()
	fresh := newDatabase(*db)
	defer func() {
		if err != nil {
			fresh.remove() // after the store's Close, deferred below
		}
	}()
	svc, err := openService(ctx, *db, "", stderr)
	if err != nil {
		return err
	}
	defer svc.Close()
	report, done := progress(stderr, "import", -1)
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
