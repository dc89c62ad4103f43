package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/memoryd/memoryd/internal/forensics"
)

var importSessionVerb = verb{
	name:     "import-session",
	synopsis: "import-session --db F SESSION.jsonl",
	summary:  "attach a Pi session file as a task, its entries and branch synced",
	about: `
Reads a Pi session file and stores it in the database --db (created if missing) as a new task whose
session key is the file's absolute path: attaches it, syncs every entry and the branch from its last
entry to the root, all in one transaction. A refused entry stores nothing and names its line. Prints
the attach and sync result as JSON.`,
	args: []arg{{name: "SESSION.jsonl", about: "a Pi session file (its first line is the session header)"}},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", getenv("MEMORYD_DB"), "database `F` to create or add to (env MEMORYD_DB)")
		return func(ctx context.Context, in *invocation) error {
			if *db == "" {
				return &usageError{"import-session needs --db F (or MEMORYD_DB): the database to import into"}
			}
			return runImportSession(ctx, *db, in.args[0], in)
		}
	},
}

// runImportSession attaches a Pi session file as a task and syncs its
// entries and branch, all or nothing.
func runImportSession(ctx context.Context, db, file string, in *invocation) (err error) {
	stdout, stderr := in.stdout, in.stderr
	path, err := filepath.Abs(file)
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
	svc, closeDB, err := openAllOrNothing(ctx, db, stderr)
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
