package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/retention"
)

var retainVerb = verb{
	name:     "retain",
	synopsis: "retain TASK PERIOD|forever|default [--db F] | retain --dry-run|--apply [--retain PERIOD] [--db F] [--wait D]",
	summary:  "set a task's retention policy, or list (--dry-run) or erase (--apply) the tasks a retention policy erases now",
	about: `
Retention erases the tasks with no activity (no event of any kind, audited reads included) for a
period: the server's policy (memoryd serve --retain 90d, env MEMORYD_RETAIN), or a task's own. Each
erasure is the one forget makes, and its task.erased event says that retention made it, under which
policy and after which last activity. docs/forgetting.md, Retention.

retain TASK PERIOD gives the task TASK a policy of its own, recorded as the event task.retention_set:
a PERIOD (a whole number and h, d or w: 12h, 30d, 2w), forever (never erased by retention), or
default (the server's policy again). Prints {task_id, retain, changed, position}; the same policy
again records nothing (changed false). Recording it is an event of the task, so its last activity.

retain --dry-run lists the tasks the policy --retain (default MEMORYD_RETAIN, as serve) and the tasks'
own policies erase now, without erasing: {now, policy, tasks, due}, each due task with its
task_id, last_activity, last_position, retain, source (global or task) and due_at; a line each on
stderr. retain --apply erases them, as a serving memoryd's pass does, printing a line for each on
stderr and {now, policy, tasks, due, erased, skipped, failed} on stdout: a task active again or
whose policy changed since the list was made is skipped, not erased. Like forget, this verb opens
the database itself: a memoryd serving it keeps its caches of the erased tasks until it evicts them.

Exit 0 when done (a dry run lists and erases nothing, however many tasks are due), 1 for an unknown
task or an erasure that failed (the others are still erased), 2 for a usage error.`,
	args: []arg{
		{name: "TASK", about: "the id of the task whose policy to set (memoryd tasks lists them)", optional: true},
		{name: "PERIOD", about: "its policy: a period such as 30d (h, d or w), forever, or default", optional: true},
	},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		db := fs.String("db", "", "database `F`, which must exist (env MEMORYD_DB; default the one serve uses)")
		dryRun := fs.Bool("dry-run", false, "list the tasks the policies erase now; erase nothing")
		apply := fs.Bool("apply", false, "erase the tasks the policies erase now, printing each")
		global := fs.String("retain", getenv("MEMORYD_RETAIN"), "with --dry-run or --apply: the global policy, a `PERIOD` (12h, 90d, 2w) or off (env MEMORYD_RETAIN, as serve)")
		wait := fs.Duration("wait", 10*time.Second, "with --apply, SQLite: how long each erasure waits for readers to let the WAL be truncated")
		return func(ctx context.Context, in *invocation) error {
			policy, err := retention.ParseGlobal(*global)
			switch {
			case *dryRun && *apply:
				return &usageError{"retain takes --dry-run or --apply, not both"}
			case (*dryRun || *apply) && len(in.args) > 0:
				return &usageError{fmt.Sprintf("retain --dry-run or --apply takes no TASK; got %s", quoteAll(in.args))}
			case !*dryRun && !*apply && len(in.args) != 2:
				return &usageError{"retain needs TASK and PERIOD (30d, forever or default), or --dry-run or --apply"}
			case err != nil && (*dryRun || *apply):
				return &usageError{fmt.Sprintf("--retain (or MEMORYD_RETAIN): %v, or off", err)}
			case *wait <= 0:
				return &usageError{fmt.Sprintf("--wait must be positive, not %s", *wait)}
			}
			if len(in.args) == 2 {
				if _, _, err := retention.ParseTask(strings.ToLower(in.args[1])); err != nil {
					return &usageError{fmt.Sprintf("PERIOD: %v", err)}
				}
			}
			path := *db
			if path == "" {
				if path, err = defaultDBPath(in.getenv); err != nil {
					return err
				}
				fmt.Fprintf(in.stderr, "memoryd: using %s, the database serve uses (--db F for another)\n", path)
			}
			svc, err := openExistingService(ctx, in.getenv, path, in.stderr)
			if err != nil {
				return err
			}
			defer svc.Close()
			switch {
			case *dryRun:
				return retainDryRun(ctx, svc, policy, in)
			case *apply:
				return retainApply(ctx, svc, policy, *wait, in)
			}
			res, err := svc.SetTaskRetention(ctx, in.args[0], in.args[1], "")
			if err != nil {
				return err
			}
			if res.Changed {
				fmt.Fprintf(in.stderr, "retain: task %s now has the policy %s (task.retention_set at position %d)\n", res.TaskID, res.Retain, res.Position)
			} else {
				fmt.Fprintf(in.stderr, "retain: task %s has the policy %s already; nothing recorded\n", res.TaskID, res.Retain)
			}
			return writeJSON(in.stdout, res)
		}
	},
}

// retainDryRun prints what the policies erase now.
func retainDryRun(ctx context.Context, svc *memory.Service, policy retention.Policy, in *invocation) error {
	plan, err := svc.PlanRetention(ctx, policy)
	if err != nil {
		return err
	}
	for _, due := range plan.Due {
		fmt.Fprintf(in.stderr, "retain: would erase %s\n", describeDue(due))
	}
	fmt.Fprintf(in.stderr, "retain: dry run at %s, policy %s: %d of %s due; nothing erased\n", plan.Now, plan.Policy, len(plan.Due), plural(plan.Tasks, "task"))
	return writeJSON(in.stdout, plan)
}

// retainApply erases what the policies erase now, a line for each.
func retainApply(ctx context.Context, svc *memory.Service, policy retention.Policy, wait time.Duration, in *invocation) error {
	run, err := svc.ApplyRetention(ctx, policy, memory.ApplyOptions{
		Erase:  memory.EraseOptions{Wait: wait},
		Before: func(due memory.RetentionDue) { fmt.Fprintf(in.stderr, "retain: erasing %s\n", describeDue(due)) },
		After:  func(due memory.RetentionDue, res memory.Erasure, err error) { reportErased(in.stderr, due, res, err) },
	})
	if err != nil && run.Now == "" {
		return err
	}
	if werr := writeJSON(in.stdout, run); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(in.stderr, "retain: at %s, policy %s: %d of %s due, %d erased, %d kept, %d failed\n",
		run.Now, run.Policy, len(run.Due), plural(run.Tasks, "task"), len(run.Erased), len(run.Skipped), len(run.Failed))
	if len(run.Failed) > 0 {
		return fmt.Errorf("retain: %s could not be erased (see above)", plural(len(run.Failed), "task"))
	}
	return nil
}

// describeDue says which task is due and why.
func describeDue(due memory.RetentionDue) string {
	return fmt.Sprintf("task %s: last activity %s (position %d), policy %s (%s), due since %s",
		due.TaskID, due.LastActivity, due.LastPosition, due.Retain, due.Source, due.DueAt)
}

// reportErased says what became of one due task.
func reportErased(w io.Writer, due memory.RetentionDue, res memory.Erasure, err error) {
	switch {
	case res.Position > 0:
		fmt.Fprintf(w, "retain: erased task %s at position %d: %d event(s) now tombstones, %d projection row(s) deleted\n",
			due.TaskID, res.Position, res.Events, sum(res.Rows))
		if err != nil {
			fmt.Fprintf(w, "retain: note: %v\n", err)
		}
		for _, left := range res.Scrub.Left {
			fmt.Fprintf(w, "retain: note: %s\n", left)
		}
	default:
		fmt.Fprintf(w, "retain: not erased: %v\n", err)
	}
}
