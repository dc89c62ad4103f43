package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/memoryd/memoryd/internal/forensics"
)

var verifyVerb = verb{
	name:     "verify",
	synopsis: "verify [--db F]",
	summary:  "rebuild beside a database's projections and report every difference",
	about: `
Rebuilds the projections of the database --db from its log into a scratch database, compares them
with the live ones, and checks every event against the rules an import enforces. Prints a JSON
report (events, clean, differences, violations); exits 1 when it is not clean. The database is
only read.`,
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", "", "database `F` to check, which must exist (env MEMORYD_DB; default the one serve uses)")
		return func(ctx context.Context, in *invocation) error {
			path, err := databaseToRead(in.getenv, *db, in.stderr)
			if err != nil {
				return err
			}
			return runVerify(ctx, path, in)
		}
	},
}

// runVerify rebuilds the projections from the log beside the live ones
// and reports every difference.
func runVerify(ctx context.Context, db string, in *invocation) error {
	stdout, stderr := in.stdout, in.stderr
	live, err := openExistingService(ctx, db, stderr)
	if err != nil {
		return err
	}
	defer live.Close()
	scratch, cleanup, err := forensics.Scratch(ctx)
	if err != nil {
		return err
	}
	defer cleanup()
	last, err := live.LastPosition(ctx)
	if err != nil {
		return err
	}
	total := last
	if total == 0 {
		total = -1 // a bar needs a total above 0
	}
	report, done := progress(stderr, "verify: rebuild", "events", total)
	var comparing func()
	if report != nil { // on a terminal, say what the rest of the time goes to
		comparing = func() { done(); fmt.Fprintln(stderr, "verify: comparing the projections with the rebuild") }
	}
	diffs, violations, err := forensics.VerifyProgress(ctx, live, scratch, 5, report, comparing)
	done()
	if err != nil {
		return err
	}
	clean := len(diffs) == 0 && len(violations) == 0
	if err := writeJSON(stdout, map[string]any{"events": last, "clean": clean, "differences": diffs, "violations": violations}); err != nil {
		return err
	}
	var problems []string
	if len(diffs) > 0 {
		problems = append(problems, fmt.Sprintf("%d projection table(s) differ from a rebuild of the log", len(diffs)))
	}
	if len(violations) > 0 {
		problems = append(problems, fmt.Sprintf("%d event(s) break a rule that an import enforces (the first at position %d)", len(violations), violations[0].Position))
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}
