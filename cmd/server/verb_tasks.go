package main

import (
	"context"
	"fmt"
	"io"

	"github.com/memoryd/memoryd/internal/memory"
)

// tasksUsage is the tasks verb's line of the usage text.
const tasksUsage = "server tasks --db F [--limit N] [--before P]"

// runTasks is the tasks verb: the tasks of a database and their agents,
// newest activity first, as the same JSON as GET /v1/tasks.
func runTasks(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("tasks", stderr)
	db := fs.String("db", getenv("MEMORYD_DB"), "database file (must exist)")
	limit := fs.Int("limit", memory.TasksDefaultLimit, fmt.Sprintf("at most this many tasks (1 or more; above %d: %d)", memory.TasksMaxLimit, memory.TasksMaxLimit))
	before := fs.Int64("before", 0, "only tasks whose last activity is before this position (the next_before of a page; 0: no bound)")
	if err := parseFlags(fs, interleaved(fs, args)); err != nil {
		return err
	}
	if *db == "" || fs.NArg() > 0 || *limit < 1 || *before < 0 {
		return &usageError{"usage: " + tasksUsage}
	}
	svc, err := openExistingService(ctx, *db, stderr)
	if err != nil {
		return err
	}
	defer svc.Close()
	list, err := svc.Tasks(ctx, *before, min(*limit, memory.TasksMaxLimit))
	if err != nil {
		return err
	}
	return writeJSON(stdout, list)
}
