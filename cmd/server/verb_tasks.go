package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/memoryd/memoryd/internal/memory"
)

var tasksVerb = verb{
	name:     "tasks",
	synopsis: "tasks [--db F] [--limit N] [--before P]",
	summary:  "list the tasks and their agents, newest activity first (as GET /v1/tasks)",
	about: `
Prints the tasks of the database --db and their agents (session key, current window, fence phase,
last activity), newest activity first by log position, as the same JSON as GET /v1/tasks. A page
holds --limit tasks; its next_before is the --before of the next page (null on the last page).`,
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", "", "database `F` to read, which must exist (env MEMORYD_DB; default the one serve uses)")
		limit := fs.Int("limit", memory.TasksDefaultLimit, fmt.Sprintf("at most `N` tasks (1 or more; above %d: %d)", memory.TasksMaxLimit, memory.TasksMaxLimit))
		before := fs.Int64("before", 0, "only tasks whose last activity is before position `P` (a page's next_before; 0: no bound)")
		return func(ctx context.Context, in *invocation) error {
			switch {
			case *limit < 1:
				return &usageError{fmt.Sprintf("--limit must be 1 or more, not %d", *limit)}
			case *before < 0:
				return &usageError{fmt.Sprintf("--before must be a position (0 or more), not %d", *before)}
			}
			path, err := databaseToRead(in.getenv, *db, in.stderr)
			if err != nil {
				return err
			}
			svc, err := openExistingService(ctx, in.getenv, path, in.stderr)
			if err != nil {
				return err
			}
			defer svc.Close()
			list, err := svc.Tasks(ctx, *before, min(*limit, memory.TasksMaxLimit))
			if err != nil {
				return err
			}
			return writeJSON(in.stdout, list)
		}
	},
}
