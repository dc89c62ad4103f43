package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/retention"
)

// TaskRetention is a task's own retention policy, as PUT
// /v1/tasks/{task_id}/retention and memoryd retain TASK answer.
type TaskRetention struct {
	TaskID string `json:"task_id"`
	// Retain is the task's policy: a period (30d), forever, or default.
	Retain string `json:"retain"`
	// Changed is false when the task had this policy already, and nothing
	// was recorded.
	Changed bool `json:"changed"`
	// Position is the task.retention_set recorded, 0 when unchanged.
	Position int64 `json:"position"`
}

// SetTaskRetention gives a task its own retention policy, retain: a period
// such as 30d (h, d or w), forever, or default to follow the server's
// policy again. It records task.retention_set on the task's root stream,
// unless the task has that policy already. An unknown task, or one erased,
// is ErrNotFound.
func (s *Service) SetTaskRetention(ctx context.Context, taskID, retain, requestID string) (TaskRetention, error) {
	if err := checkTaskID(taskID); err != nil {
		return TaskRetention{}, err
	}
	text, _, err := retention.ParseTask(strings.ToLower(retain))
	if err != nil {
		return TaskRetention{}, invalidf("retain must be a period (a whole number and h, d or w, such as 30d), forever or default; %q is not", retain)
	}
	res := TaskRetention{TaskID: taskID, Retain: text}
	if text == "" {
		res.Retain = retention.Default
	}
	err = s.store.Update(ctx, requestID, func(tx *eventlog.Tx) error {
		t, ok, err := projections.TxReader(tx).TaskForRetention(ctx, taskID)
		if err != nil {
			return err
		}
		if !ok {
			return s.unknownTask(ctx, tx, taskID)
		}
		if t.Retain == text {
			return nil
		}
		evs, err := tx.Append(ctx, events.Stream(taskID, address.Root), eventlog.AnyVersion,
			events.NewPending(events.TaskRetentionSet{TaskID: taskID, Retain: res.Retain}))
		if err != nil {
			return err
		}
		res.Changed, res.Position = true, evs[0].Position
		return nil
	})
	if err != nil {
		return TaskRetention{}, err
	}
	return res, nil
}

// checkTaskID refuses what cannot be a task id.
func checkTaskID(taskID string) error {
	if taskID == "" || len(taskID) > maxTaskIDBytes || !utf8.ValidString(taskID) || strings.ContainsAny(taskID, "/\x00") {
		return invalidf("task_id must be a task id: 1 to %d bytes of UTF-8 without / or U+0000", maxTaskIDBytes)
	}
	return nil
}

// RetentionDue is a task a retention policy erases now: its last activity
// (its latest event, of any type) is at least the policy's period ago.
type RetentionDue struct {
	TaskID string `json:"task_id"`
	// LastActivity is the recorded_at of the task's latest event, at
	// LastPosition.
	LastActivity string `json:"last_activity"`
	LastPosition int64  `json:"last_position"`
	// Retain is the policy that applies, a period, and Source where it
	// comes from: global (the server's --retain) or task (its own).
	Retain string `json:"retain"`
	Source string `json:"source"`
	// DueAt is when the policy made it due: LastActivity and the period.
	DueAt string `json:"due_at"`
}

// RetentionPlan is what a retention policy erases now, without erasing:
// the dry run.
type RetentionPlan struct {
	// Now is the time the plan was made at, by the service's clock.
	Now string `json:"now"`
	// Policy is the global policy weighed ("off" for none: then only the
	// tasks with a period of their own are due).
	Policy string `json:"policy"`
	// Tasks is how many tasks were weighed, and Due those due, least
	// recently active first.
	Tasks int              `json:"tasks"`
	Due   []RetentionDue   `json:"due"`
	now   time.Time        // Now, parsed
	rules retention.Policy // the global policy
}

// RetentionCheck makes EraseTask a retention erasure: in its transaction
// it checks that the task is still due under Global and its own policy (an
// activity or a policy recorded since the plan keeps it), and records why
// in the erasure (task.erased's retention).
type RetentionCheck struct {
	Global retention.Policy
}

// errNotDue is a retention erasure refused because the task is not due,
// an ErrConflict.
type errNotDue struct{ err *Error }

func (e errNotDue) Error() string { return e.err.Error() }

// Unwrap returns the *Error, of kind ErrConflict.
func (e errNotDue) Unwrap() error { return e.err }

// retentionNow is the service's clock reading to weigh a policy at,
// to the millisecond as recorded_at keeps it.
func (s *Service) retentionNow() time.Time {
	return s.store.Now().UTC().Truncate(time.Millisecond)
}

// PlanRetention lists the tasks that global and their own policies erase
// now, by the service's clock, least recently active first. It erases
// nothing.
func (s *Service) PlanRetention(ctx context.Context, global retention.Policy) (RetentionPlan, error) {
	now := s.retentionNow()
	plan := RetentionPlan{Now: now.Format(events.TimeFormat), Policy: global.String(), Due: []RetentionDue{}, now: now, rules: global}
	err := s.read(ctx, func(r *projections.Reader) error {
		tasks, err := r.TasksForRetention(ctx)
		if err != nil {
			return err
		}
		plan.Tasks = len(tasks)
		for _, t := range tasks {
			due, ok, err := dueOf(t, global, now)
			if err != nil {
				return err
			}
			if ok {
				plan.Due = append(plan.Due, due)
			}
		}
		return nil
	})
	if err != nil {
		return RetentionPlan{}, err
	}
	return plan, nil
}

// dueOf weighs one task at now: ok when its policy erases it.
func dueOf(t projections.TaskRetention, global retention.Policy, now time.Time) (due RetentionDue, ok bool, err error) {
	p, source, err := retention.Effective(t.Retain, global)
	if err != nil {
		return RetentionDue{}, false, fmt.Errorf("task %s has the retention policy %q: %w", t.TaskID, t.Retain, err)
	}
	last, err := time.Parse(events.TimeFormat, t.Last.At)
	if err != nil {
		return RetentionDue{}, false, fmt.Errorf("task %s: its latest event's time %q: %w", t.TaskID, t.Last.At, err)
	}
	if !retention.Due(p, last, now) {
		return RetentionDue{}, false, nil
	}
	return RetentionDue{TaskID: t.TaskID, LastActivity: t.Last.At, LastPosition: t.Last.Position, Retain: p.String(), Source: source,
		DueAt: last.Add(p.Period).Format(events.TimeFormat)}, true, nil
}

// check is RetentionCheck in the erasure's transaction: the task's
// retention record when it is due, an errNotDue when not.
func (c *RetentionCheck) check(ctx context.Context, r *projections.Reader, taskID string, now time.Time) (*events.ErasedByRetention, error) {
	t, ok, err := r.TaskForRetention(ctx, taskID)
	if err != nil || !ok {
		return nil, err // the caller found the task
	}
	due, ok, err := dueOf(t, c.Global, now)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, errNotDue{err: newError(ErrConflict, "task %s is not due for erasure: its last activity is %s, under the policy %s",
			taskID, t.Last.At, policyOf(t.Retain, c.Global))}
	}
	return &events.ErasedByRetention{Retain: due.Retain, Source: due.Source, LastActivity: due.LastActivity}, nil
}

// policyOf names the policy of a task whose own is own.
func policyOf(own string, global retention.Policy) string {
	if own == "" {
		return global.String() + " (global)"
	}
	return own + " (the task's own)"
}

// RetentionRun is what ApplyRetention did: its plan, then each due task
// erased, skipped (active again, its policy changed, or erased meanwhile),
// or failed.
type RetentionRun struct {
	RetentionPlan
	Erased  []RetentionErased  `json:"erased"`
	Skipped []RetentionSkipped `json:"skipped"`
	Failed  []RetentionSkipped `json:"failed"`
}

// RetentionErased is a task a retention pass erased: why, and the
// erasure.
type RetentionErased struct {
	RetentionDue
	Erasure Erasure `json:"erasure"`
}

// RetentionSkipped is a due task a pass did not erase, and why.
type RetentionSkipped struct {
	TaskID string `json:"task_id"`
	Why    string `json:"why"`
}

// ApplyOptions configure ApplyRetention.
type ApplyOptions struct {
	// Erase are the options of each erasure; its Retention is set.
	Erase EraseOptions
	// Progress, if set, is called before each erasure and after it with
	// the task, its erasure and the error, if any.
	Before func(due RetentionDue)
	After  func(due RetentionDue, res Erasure, err error)
}

// ApplyRetention erases every task that global and their own policies
// erase now, through EraseTask, each erasure checking in its own
// transaction that its task is still due and recording why
// (task.erased's retention). A task no longer due, or erased meanwhile, is
// skipped; a failed erasure is reported and the pass goes on. It stops
// when ctx ends.
func (s *Service) ApplyRetention(ctx context.Context, global retention.Policy, opts ApplyOptions) (RetentionRun, error) {
	plan, err := s.PlanRetention(ctx, global)
	if err != nil {
		return RetentionRun{}, err
	}
	run := RetentionRun{RetentionPlan: plan, Erased: []RetentionErased{}, Skipped: []RetentionSkipped{}, Failed: []RetentionSkipped{}}
	eo := opts.Erase
	eo.Retention = &RetentionCheck{Global: global}
	for _, due := range plan.Due {
		if err := ctx.Err(); err != nil {
			return run, err
		}
		if opts.Before != nil {
			opts.Before(due)
		}
		res, err := s.EraseTask(ctx, due.TaskID, "", eo)
		if opts.After != nil {
			opts.After(due, res, err)
		}
		var notDue errNotDue
		switch {
		case res.Position > 0: // erased, even if its scrub failed
			if err != nil {
				res.Scrub.Left = append(res.Scrub.Left, "the scrub of the database's files after the erasure failed: "+err.Error())
			}
			run.Erased = append(run.Erased, RetentionErased{RetentionDue: due, Erasure: res})
		case errors.As(err, &notDue), errors.Is(err, ErrNotFound):
			run.Skipped = append(run.Skipped, RetentionSkipped{TaskID: due.TaskID, Why: err.Error()})
		case ctx.Err() != nil:
			return run, ctx.Err()
		default:
			run.Failed = append(run.Failed, RetentionSkipped{TaskID: due.TaskID, Why: err.Error()})
		}
	}
	return run, nil
}
