package main

import (
	"bufio"
	"context"
	"io"

	"github.com/memoryd/memoryd/internal/forensics"
)

// exportUsage is the export verb's line of the usage text.
const exportUsage = "server export --db F [--task T] [--until P]"

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
		return &usageError{"usage: " + exportUsage}
	}
	svc, err := openExistingService(ctx, *db, stderr)
	if err != nil {
		return err
	}
	defer svc.Close()
	w := bufio.NewWriterSize(stdout, 1<<16)
	report, done := progress(stderr, "export", "events", -1)
	err = forensics.Export(ctx, svc, *task, *until, w, report)
	done()
	if err != nil {
		return err
	}
	return w.Flush()
}
