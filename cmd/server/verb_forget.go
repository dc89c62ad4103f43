package main

import (
	"context"
	"flag"
	"fmt"
	"time"

	"github.com/memoryd/memoryd/internal/memory"
)

var forgetVerb = verb{
	name:     "forget",
	synopsis: "forget TASK [--db F] [--vacuum] [--wait D]",
	summary:  "erase a task: its content made unrecoverable from the database, the erasure itself an event",
	about: `
Erases the task TASK from the database --db, in one write transaction: each of its events becomes a
tombstone (event.erased: its position, id, stream, stream version and time kept; its type, payload
and request id gone), the erasure is appended as task.erased, and every projection row of the task
(notes, history, agents, fence state) is deleted. Positions stay gapless, and every other task's
events and projections are unchanged. On SQLite what the transaction frees is overwritten with
zeros, then every free page, and the WAL is checkpointed and truncated, so that neither the file nor
its WAL holds the task's content (a file an older memoryd wrote is rebuilt once, as --vacuum does);
backups and exports made afterwards hold none. On PostgreSQL the
log and the projection tables are rewritten (VACUUM FULL); what PostgreSQL keeps in its own WAL,
archives, replicas and backups, memoryd cannot erase. Prints what was erased: {task_id, position,
events, agents, rows, scrub}. An unknown task, or one erased already: exit 1.

Copies made before (backups, exports, a host's own session files) keep the task: see
docs/forgetting.md, which also says why a serving memoryd should do it (POST
/v1/tasks/TASK/forget): this verb cannot empty the caches of a memoryd serving the same database.
memoryd verify --erased TASK checks the result.`,
	args: []arg{{name: "TASK", about: "the id of the task to erase (memoryd tasks lists them)"}},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", "", "database `F` to erase the task from, which must exist (env MEMORYD_DB; default the one serve uses)")
		vacuum := fs.Bool("vacuum", false, "SQLite: rebuild the database file afterwards (VACUUM), which also clears what deletes freed before memoryd overwrote freed space; holds the write lock while it runs")
		wait := fs.Duration("wait", 10*time.Second, "SQLite: how long to wait for readers to let the WAL be truncated")
		return func(ctx context.Context, in *invocation) error {
			if *wait <= 0 {
				return &usageError{fmt.Sprintf("--wait must be positive, not %s", *wait)}
			}
			path := *db
			if path == "" {
				var err error
				if path, err = defaultDBPath(in.getenv); err != nil {
					return err
				}
				fmt.Fprintf(in.stderr, "memoryd: erasing from %s, the database serve uses (--db F for another)\n", path)
			}
			svc, err := openExistingService(ctx, in.getenv, path, in.stderr)
			if err != nil {
				return err
			}
			defer svc.Close()
			task := in.args[0]
			res, err := svc.EraseTask(ctx, task, "", memory.EraseOptions{Vacuum: *vacuum, Wait: *wait})
			if err != nil && res.Position == 0 {
				return err
			}
			if werr := writeJSON(in.stdout, res); werr != nil {
				return werr
			}
			if err != nil {
				return err // erased, but the scrub failed
			}
			fmt.Fprintf(in.stderr, "forget: task %s erased at position %d: %d event(s) now tombstones, %d projection row(s) deleted\n",
				task, res.Position, res.Events, sum(res.Rows))
			for _, left := range res.Scrub.Left {
				fmt.Fprintf(in.stderr, "forget: note: %s\n", left)
			}
			return nil
		}
	},
}

// sum adds up counts.
func sum(counts map[string]int64) int64 {
	var n int64
	for _, c := range counts {
		n += c
	}
	return n
}
