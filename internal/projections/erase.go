package projections

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
)

// applyTaskErased deletes every projection row of an erased task, so that
// the live projections after an erasure are what a rebuild of the log,
// where the task's events are tombstones that project nothing, gives. The
// note changes a deferring transaction holds are written first, so that
// none of the task's comes back after the deletes, and what the
// transaction's state remembers of the rows is forgotten.
func applyTaskErased(ctx context.Context, db eventlog.DBTX, st *txState, p *events.TaskErased) error {
	if err := st.flushNotes(ctx, db); err != nil {
		return err
	}
	if _, err := DeleteTask(ctx, db, p.TaskID); err != nil {
		return err
	}
	st.forget()
	return nil
}

// DeleteTask deletes a task's rows from every projection table and returns
// how many it deleted from each table that held some.
func DeleteTask(ctx context.Context, db eventlog.DBTX, taskID string) (map[string]int64, error) {
	deleted := map[string]int64{}
	for _, t := range tables {
		res, err := db.ExecContext(ctx, "DELETE FROM "+t.name+" WHERE task_id = $1", taskID)
		if err != nil {
			return nil, fmt.Errorf("erase task %s from %s: %w", taskID, t.name, err)
		}
		if n, err := res.RowsAffected(); err == nil && n > 0 {
			deleted[t.name] = n
		}
	}
	return deleted, nil
}

// Tables names every projection table, each of which has a task_id column.
func Tables() []string {
	out := make([]string, len(tables))
	for i, t := range tables {
		out[i] = t.name
	}
	return out
}

// TaskRows counts a task's rows in every projection table, by table, and
// leaves out the tables that hold none.
func TaskRows(ctx context.Context, db eventlog.DBTX, taskID string) (map[string]int64, error) {
	out := map[string]int64{}
	for _, t := range tables {
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+t.name+" WHERE task_id = $1", taskID).Scan(&n); err != nil {
			return nil, err
		}
		if n > 0 {
			out[t.name] = n
		}
	}
	return out, nil
}

// TaskDigest fingerprints the rows of one task in every projection table,
// as Digest fingerprints whole tables: two databases whose projections
// hold the same rows of the task have equal digests, whatever else they
// hold. An erasure of another task leaves it unchanged.
func TaskDigest(ctx context.Context, store *eventlog.Store, taskID string) ([]TableDigest, error) {
	db := sourceOf(store)
	out := make([]TableDigest, 0, len(tables))
	for _, t := range tables {
		h := sha256.New()
		enc := json.NewEncoder(h)
		var n int64
		t.where, t.args = "task_id = $1", []any{taskID}
		err := eachRow(ctx, db, t, func(vals []any) error {
			n++
			return enc.Encode(vals)
		})
		if err != nil {
			return nil, err
		}
		out = append(out, TableDigest{Table: t.name, Rows: n, SHA256: hex.EncodeToString(h.Sum(nil))})
	}
	return out, nil
}
