package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/memoryd/memoryd/internal/forensics"
)

// verifyUsage is the verify verb's line of the usage text.
const verifyUsage = "server verify --db F"

// runVerify is the verify verb: rebuild the projections from the log
// beside the live ones and report every difference (exit 1).
func runVerify(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("verify", stderr)
	db := fs.String("db", getenv("MEMORYD_DB"), "database file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *db == "" || fs.NArg() > 0 {
		return &usageError{"usage: " + verifyUsage}
	}
	live, err := openExistingService(ctx, *db, stderr)
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
	if report != nil { // a terminal: say what the rest of the time goes to
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
