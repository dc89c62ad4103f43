package projections

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
	"github.com/memoryd/memoryd/internal/retention"
)

// applyRetentionSet keeps a task's own retention policy in its tasks row,
// ” for default.
func applyRetentionSet(ctx context.Context, q projectionsdb.Querier, p *events.TaskRetentionSet) error {
	retain := p.Retain
	if retain == retention.Default {
		retain = ""
	}
	n, err := q.SetTaskRetain(ctx, projectionsdb.SetTaskRetainParams{Retain: retain, TaskID: p.TaskID})
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("projections: task.retention_set of task %s, which has no row", p.TaskID)
	}
	return nil
}

// TaskRetention is a task as a retention pass weighs it: its own policy
// ("" when it follows the global one) and its last activity, its latest
// event.
type TaskRetention struct {
	TaskID string
	Retain string
	Last   Mark
}

// TasksForRetention returns every task with its own policy and its last
// activity, least recent first.
func (r *Reader) TasksForRetention(ctx context.Context) ([]TaskRetention, error) {
	rows, err := r.q.TasksForRetention(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]TaskRetention, len(rows))
	for i, t := range rows {
		out[i] = TaskRetention{TaskID: t.TaskID, Retain: t.Retain, Last: Mark{t.LastPosition, t.LastAt}}
	}
	return out, nil
}

// TaskForRetention is TasksForRetention of one task; ok is false when
// there is no such task.
func (r *Reader) TaskForRetention(ctx context.Context, taskID string) (t TaskRetention, ok bool, err error) {
	row, err := r.q.TaskForRetention(ctx, taskID)
	if errors.Is(err, sql.ErrNoRows) {
		return TaskRetention{}, false, nil
	}
	if err != nil {
		return TaskRetention{}, false, err
	}
	return TaskRetention{TaskID: row.TaskID, Retain: row.Retain, Last: Mark{row.LastPosition, row.LastAt}}, true, nil
}
