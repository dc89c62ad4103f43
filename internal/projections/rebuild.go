package projections

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"slices"
	"strings"

	"github.com/memoryd/memoryd/internal/eventlog"
)

// table is one projection table and the key that orders its rows.
type table struct {
	name    string
	orderBy string
	// columns are what Digest and Diff compare ("" for every column).
	columns string
	// joinLast: consecutive rows that agree on every column but the last
	// are compared as one row, their last columns concatenated. A note's
	// text is compared, not how it is cut into parts (a deferred write,
	// notes_deferred.go, cuts it differently from one append at a time).
	joinLast bool
}

// tables lists every projection table. Rebuild truncates them; Digest
// fingerprints them.
var tables = []table{
	{name: "tasks", orderBy: "task_id"},
	{name: "agents", orderBy: "task_id, agent"},
	{name: "notes", orderBy: "task_id, agent, path", // not parts: how the text is cut
		columns: "task_id, agent, path, bytes, revision, created_at, updated_at, created_position, updated_position"},
	{name: "note_parts", orderBy: "task_id, agent, path, part", columns: "task_id, agent, path, text", joinLast: true},
	{name: "note_calls", orderBy: "task_id, agent, call_id"},
	{name: "history_entries", orderBy: "task_id, agent, entry_id"},
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

// Open opens the event log at path with the projections as its projector
// (opts.Projector is set).
// When a migration changed a projection's shape and marked the
// projections for a rebuild, it rebuilds them from the log before
// returning, in one transaction, and logs why through logf (and the
// open's warnings, unless opts.Warnf is set).
func Open(ctx context.Context, path string, opts eventlog.Options, logf func(format string, args ...any)) (*eventlog.Store, error) {
	return open(ctx, path, opts, logf, noteFlush{})
}

// open is Open with flush bounding the notes a deferring request holds.
func open(ctx context.Context, path string, opts eventlog.Options, logf func(format string, args ...any), flush noteFlush) (*eventlog.Store, error) {
	opts.Projector = Projector{flush: flush}
	if opts.Warnf == nil {
		opts.Warnf = logf
	}
	store, err := eventlog.Open(ctx, path, opts)
	if err != nil {
		return nil, err
	}
	// The common case reads one empty table on the reader pool: opening a
	// database (export, call) takes no write lock just to look.
	var marks int
	if err := store.Reader().QueryRowContext(ctx, "SELECT count(*) FROM projection_rebuilds").Scan(&marks); err != nil || marks == 0 {
		if err != nil {
			store.Close()
			return nil, fmt.Errorf("open %s: %w", path, err)
		}
		return store, nil
	}
	err = store.Update(ctx, "", func(tx *eventlog.Tx) error {
		var reasons []string
		rows, err := tx.DB().QueryContext(ctx, "SELECT reason FROM projection_rebuilds")
		if err != nil {
			return err
		}
		for rows.Next() {
			var r string
			if err := rows.Scan(&r); err != nil {
				rows.Close()
				return err
			}
			reasons = append(reasons, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil || len(reasons) == 0 {
			return err
		}
		if logf != nil {
			logf("rebuilding the projections from the log: %s", strings.Join(reasons, "; "))
		}
		if err := rebuild(ctx, tx); err != nil {
			return err
		}
		_, err = tx.DB().ExecContext(ctx, "DELETE FROM projection_rebuilds")
		return err
	})
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("rebuild the projections of %s: %w", path, err)
	}
	return store, nil
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

// TableDigest is the fingerprint of one projection table.
type TableDigest struct {
	Table  string `json:"table"`
	Rows   int64  `json:"rows"`
	SHA256 string `json:"sha256"`
}

// Digest fingerprints every projection table of db: row counts and a
// SHA-256 over the rows in key order. Two databases built from the same
// log have equal digests.
func Digest(ctx context.Context, db *sql.DB) ([]TableDigest, error) {
	out := make([]TableDigest, 0, len(tables))
	for _, t := range tables {
		h := sha256.New()
		n, err := hashTable(ctx, db, t, h)
		if err != nil {
			return nil, err
		}
		out = append(out, TableDigest{Table: t.name, Rows: n, SHA256: hex.EncodeToString(h.Sum(nil))})
	}
	return out, nil
}

// Combined returns one digest over all table digests.
func Combined(ds []TableDigest) string {
	h := sha256.New()
	for _, d := range ds {
		fmt.Fprintf(h, "%s %d %s\n", d.Table, d.Rows, d.SHA256)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func hashTable(ctx context.Context, db *sql.DB, t table, h hash.Hash) (int64, error) {
	var n int64
	enc := json.NewEncoder(h)
	err := eachRow(ctx, db, t, func(vals []any) error {
		n++
		return enc.Encode(vals)
	})
	return n, err
}

// eachRow calls fn with every row of t in key order (its columns, rows
// joined as joinLast says); BLOBs are passed as strings.
func eachRow(ctx context.Context, db *sql.DB, t table, fn func([]any) error) error {
	if t.joinLast {
		return joinRows(ctx, db, t, fn)
	}
	return scanRows(ctx, db, t, fn)
}

// joinRows is eachRow for a table whose rows are joined on their last
// column.
func joinRows(ctx context.Context, db *sql.DB, t table, fn func([]any) error) error {
	var held []any // the row being joined; its last column a string
	var last strings.Builder
	emit := func() error {
		if held == nil {
			return nil
		}
		held[len(held)-1] = last.String()
		return fn(held)
	}
	err := scanRows(ctx, db, t, func(vals []any) error {
		n := len(vals) - 1
		text, _ := vals[n].(string) // NULL joins as ""
		if held != nil && slices.Equal(held[:n], vals[:n]) {
			last.WriteString(text)
			return nil
		}
		if err := emit(); err != nil {
			return err
		}
		held = slices.Clone(vals)
		last.Reset()
		last.WriteString(text)
		return nil
	})
	if err != nil {
		return err
	}
	return emit()
}

// scanRows calls fn with every row of t in key order; BLOBs are passed as
// strings. fn must not keep vals.
func scanRows(ctx context.Context, db *sql.DB, t table, fn func([]any) error) error {
	what := t.columns
	if what == "" {
		what = "*"
	}
	rows, err := db.QueryContext(ctx, "SELECT "+what+" FROM "+t.name+" ORDER BY "+t.orderBy)
	if err != nil {
		return err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
		}
		if err := fn(vals); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Counts are the sizes of the main projections.
type Counts struct {
	Tasks   int64 `json:"tasks"`
	Agents  int64 `json:"agents"`
	Windows int64 `json:"windows"`
	Notes   int64 `json:"notes"`
}

// Count returns the projection counts of db.
func Count(ctx context.Context, db *sql.DB) (Counts, error) {
	var c Counts
	err := db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM tasks),
		(SELECT count(*) FROM agents),
		(SELECT count(*) FROM (SELECT DISTINCT task_id, agent, window_ordinal FROM history_items)),
		(SELECT count(*) FROM notes)`).Scan(&c.Tasks, &c.Agents, &c.Windows, &c.Notes)
	return c, err
}

// TableDiff is how one projection table differs between two databases:
// rows only in the first (live) and only in the second (rebuilt).
type TableDiff struct {
	Table         string   `json:"table"`
	OnlyLive      int      `json:"only_live"`
	OnlyRebuilt   int      `json:"only_rebuilt"`
	SampleLive    []string `json:"sample_live,omitempty"`
	SampleRebuilt []string `json:"sample_rebuilt,omitempty"`
}

// Diff compares every projection table of live and rebuilt row by row and
// returns the tables that differ, each with up to samples rows of each side.
func Diff(ctx context.Context, live, rebuilt *sql.DB, samples int) ([]TableDiff, error) {
	out := []TableDiff{}
	for _, t := range tables {
		a, err := tableRows(ctx, live, t)
		if err != nil {
			return nil, err
		}
		b, err := tableRows(ctx, rebuilt, t)
		if err != nil {
			return nil, err
		}
		d := TableDiff{Table: t.name}
		for row, n := range a {
			if extra := n - b[row]; extra > 0 {
				d.OnlyLive += extra
				if len(d.SampleLive) < samples {
					d.SampleLive = append(d.SampleLive, row)
				}
			}
		}
		for row, n := range b {
			if extra := n - a[row]; extra > 0 {
				d.OnlyRebuilt += extra
				if len(d.SampleRebuilt) < samples {
					d.SampleRebuilt = append(d.SampleRebuilt, row)
				}
			}
		}
		if d.OnlyLive > 0 || d.OnlyRebuilt > 0 {
			slices.Sort(d.SampleLive)
			slices.Sort(d.SampleRebuilt)
			out = append(out, d)
		}
	}
	return out, nil
}

// tableRows returns a table's rows as JSON arrays, with their multiplicity.
func tableRows(ctx context.Context, db *sql.DB, t table) (map[string]int, error) {
	out := map[string]int{}
	err := eachRow(ctx, db, t, func(vals []any) error {
		b, err := json.Marshal(vals)
		if err != nil {
			return err
		}
		out[string(b)]++
		return nil
	})
	return out, err
}
