package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/memoryd/memoryd/internal/forensics"
)

// importSessionUsage is the import-session verb's line of the usage text.
const importSessionUsage = "server import-session --db F SESSION.jsonl"

// runImportSession is the import-session verb: a Pi session file attached
// as a task, its entries and branch synced, all or nothing: a database it
// created is removed when it fails.
func runImportSession(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) (err error) {
	fs := newFlags("import-session", stderr)
	db := fs.String("db", getenv("MEMORYD_DB"), "database file (created if missing)")
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	if *db == "" || fs.NArg() != 1 {
		return &usageError{"usage: " + importSessionUsage}
	}
	path, err := filepath.Abs(fs.Arg(0))
	if err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	sess, err := forensics.ReadSession(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	svc, closeDB, err := openAllOrNothing(ctx, *db, stderr)
	if err != nil {
		return err
	}
	defer func() { closeDB(err != nil) }()
	report, done := progress(stderr, "import-session", "entries", int64(len(sess.Entries)))
	res, err := forensics.ImportSession(ctx, svc, path, sess, report)
	done()
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := svc.Close(); err != nil {
		return err
	}
	return writeJSON(stdout, res)
}
