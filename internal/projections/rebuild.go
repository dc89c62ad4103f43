package projections

import (
	"context"
	"fmt"

	"github.com/memoryd/memoryd/internal/eventlog"
)

// table is one projection table and the key that orders its rows.
type table struct {
	name    string
	orderBy string
	// columns are what Digest and Diff compare, or empty for every column.
	columns string
	// joinLast compares consecutive rows that agree on every column but the
	// last as one row, their last columns concatenated. A note's text is
	// compared, not how a deferred write or an append cut it into parts.
	joinLast bool
	// omitEmptyLast leaves the last column out of a row where it is "": a
	// column added later (tasks.retain) changes no digest of a log that
	// never sets it.
	omitEmptyLast bool
	// entryLast adds a last column to each row: the raw JSON of the entry
	// recorded by the event at the row's position, where a digest has
	// always had it, so that digests keep their shape.
	entryLast bool
	// where and args, when set, select the rows read (TaskDigest).
	where string
	args  []any
}

// tables lists every projection table, which Rebuild truncates and Digest
// fingerprints.
var tables = []table{
	{name: "tasks", orderBy: "task_id", columns: "task_id, root_session, created_at, position, retain", omitEmptyLast: true},
	{name: "agents", orderBy: "task_id, agent"},
	{name: "notes", orderBy: "task_id, agent, path", // not parts, which say how the text is cut
		columns: "task_id, agent, path, bytes, revision, created_at, updated_at, created_position, updated_position"},
	{name: "note_parts", orderBy: "task_id, agent, path, part", columns: "task_id, agent, path, text", joinLast: true},
	{name: "note_calls", orderBy: "task_id, agent, call_id"},
	{name: "history_entries", orderBy: "task_id, agent, entry_id", entryLast: true},
	{name: "history_open_texts", orderBy: "task_id, agent, text_offset"},
	{name: "history_chunks", orderBy: "task_id, agent, chunk_no"},
	{name: "history_branches", orderBy: "task_id, agent"},
	{name: "history_branch_entries", orderBy: "task_id, agent, branch_index"},
	{name: "history_items", orderBy: "task_id, agent, branch_index"},
	{name: "history_calls", orderBy: "task_id, agent, branch_index, call_id"},
	{name: "agent_states", orderBy: "task_id, agent"},
}

// Rebuild empties every projection and re-applies the whole log from
// position 1, in one transaction.
func Rebuild(ctx context.Context, store *eventlog.Store) error {
	return store.Update(ctx, "", func(tx *eventlog.Tx) error { return rebuild(ctx, tx) })
}

func rebuild(ctx context.Context, tx *eventlog.Tx) error {
	for _, t := range tables {
		if _, err := tx.DB().ExecContext(ctx, "DELETE FROM "+t.name); err != nil {
			return err
		}
	}
	if st := stateOf(tx); st != nil {
		st.forget() // it remembers rows the deletes just removed
	}
	tx.DeferProjections() // nothing reads the projections before the rebuild ends
	f := eventlog.Filter{Limit: 1000}
	for {
		page, err := tx.Read(ctx, f)
		if err != nil {
			return err
		}
		for _, ev := range page {
			if err := tx.Reapply(ctx, ev); err != nil {
				return fmt.Errorf("rebuild at position %d: %w", ev.Position, err)
			}
		}
		if len(page) < f.Limit {
			return tx.FlushProjections(ctx)
		}
		f.After = page[len(page)-1].Position
	}
}
