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
	synopsis: "verify [--db F] [--erased TASK [--grep TEXT]...]",
	summary:  "rebuild beside a database's projections and report every difference",
	about: `
Rebuilds the projections of the database --db from its log into a scratch database, compares them
with the live ones, and checks every event against the rules an import enforces. Prints a JSON
report (events, clean, differences, violations); exits 1 when it is not clean. The database is
only read.

With --erased TASK it checks instead that memoryd forget erased the task: no event of the task is
left but its tombstones and its erasure (task.erased), no projection row is the task's, and no
event of another task names it. Each --grep TEXT (repeatable: what you know was pasted into the
task) must be in no row of any table and, on SQLite, in no byte of the database file or its WAL,
as UTF-8 or as the content of a JSON string. Without --grep it reports where the task id's own
bytes still are in the files: in the log's pages (its tombstones) they are allowed, anywhere else
(a projection, a free page, an old page image in the WAL) they are not. Prints a JSON report
(clean, events, rows, grep, task_id_places, problems); exits 1 when anything is found.`,
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", "", "database `F` to check, which must exist (env MEMORYD_DB; default the one serve uses)")
		erased := fs.String("erased", "", "check that task `TASK` is erased, instead of the projections")
		var grep stringList
		fs.Var(&grep, "grep", "with --erased: a `TEXT` that must be found nowhere in the database (repeatable)")
		return func(ctx context.Context, in *invocation) error {
			if len(grep) > 0 && *erased == "" {
				return &usageError{"--grep goes with --erased TASK"}
			}
			for _, g := range grep {
				if g == "" {
					return &usageError{"--grep needs a text that is not empty"}
				}
			}
			path, err := databaseToRead(in.getenv, *db, in.stderr)
			if err != nil {
				return err
			}
			if *erased != "" {
				return runVerifyErased(ctx, path, *erased, grep, in)
			}
			return runVerify(ctx, path, in)
		}
	},
}

// stringList is a flag that may be given several times.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// runVerifyErased checks that a task is erased and prints the report.
func runVerifyErased(ctx context.Context, db, task string, grep []string, in *invocation) error {
	svc, err := openExistingService(ctx, in.getenv, db, in.stderr)
	if err != nil {
		return err
	}
	defer svc.Close()
	rep, err := forensics.VerifyErased(ctx, svc, task, grep)
	if err != nil {
		return err
	}
	if err := writeJSON(in.stdout, rep); err != nil {
		return err
	}
	if !rep.Clean {
		return errors.New(strings.Join(rep.Problems, "; "))
	}
	return nil
}

// runVerify rebuilds the projections from the log beside the live ones
// and reports every difference.
func runVerify(ctx context.Context, db string, in *invocation) error {
	stdout, stderr := in.stdout, in.stderr
	live, err := openExistingService(ctx, in.getenv, db, stderr)
	if err != nil {
		return err
	}
	defer live.Close()
	scratch, cleanup, err := forensics.ScratchFor(ctx, live)
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
