package projections

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"slices"
	"strings"

	"github.com/memoryd/memoryd/internal/atrest"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
)

// TableDigest is the fingerprint of one projection table.
type TableDigest struct {
	Table  string `json:"table"`
	Rows   int64  `json:"rows"`
	SHA256 string `json:"sha256"`
}

// Digest fingerprints every projection table of store with its row count
// and a SHA-256 over the rows in key order. Two databases built from the
// same log have equal digests, encrypted at rest or not, compressed or
// not: sealed texts are opened, compressed ones decompressed, and a
// chunk's Bloom filter, keyed when sealed, is taken as the plain filter of
// its text.
func Digest(ctx context.Context, store *eventlog.Store) ([]TableDigest, error) {
	return digest(ctx, sourceOf(store))
}

func digest(ctx context.Context, db source) ([]TableDigest, error) {
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

func hashTable(ctx context.Context, db source, t table, h hash.Hash) (int64, error) {
	var n int64
	enc := json.NewEncoder(h)
	err := eachRow(ctx, db, t, func(vals []any) error {
		n++
		return enc.Encode(vals)
	})
	return n, err
}

// eachRow calls fn with every row of t in key order, joined as joinLast
// says. BLOBs are passed as strings.
func eachRow(ctx context.Context, db source, t table, fn func([]any) error) error {
	if t.joinLast {
		return joinRows(ctx, db, t, fn)
	}
	if t.omitEmptyLast {
		return scanRows(ctx, db, t, func(vals []any) error {
			if n := len(vals) - 1; n >= 0 && vals[n] == "" {
				vals = vals[:n]
			}
			return fn(vals)
		})
	}
	return scanRows(ctx, db, t, fn)
}

// joinRows is eachRow for a table whose rows are joined on their last
// column.
func joinRows(ctx context.Context, db source, t table, fn func([]any) error) error {
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

// source is the database Digest, Diff and TaskDigest read, and the sealer
// of its texts if it is encrypted at rest.
type source struct {
	db eventlog.DBTX
	s  *atrest.Sealer
}

func sourceOf(store *eventlog.Store) source { return source{store.Reader(), store.Sealer()} }

// scanRows calls fn with every row of t in key order, its sealed texts
// opened. BLOBs are passed as strings. fn must not keep vals.
func scanRows(ctx context.Context, db source, t table, fn func([]any) error) error {
	what := t.columns
	if what == "" {
		what = "*"
	}
	from := t.name
	if t.entryLast { // each row and the payload of its event, last
		if what != "*" {
			what += ", entry_data, entry_packed"
		}
		from = "(SELECT h.*, e.data AS entry_data, e.packed AS entry_packed FROM " + t.name + " h LEFT JOIN events e ON e.position = h.position) AS " + t.name
	}
	query := "SELECT " + what + " FROM " + from
	if t.where != "" {
		query += " WHERE " + t.where
	}
	rows, err := db.db.QueryContext(ctx, query+" ORDER BY "+t.orderBy, t.args...)
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
	sealed := make([]string, len(cols)) // the tag of a sealed column
	bloomCol := slices.Index(cols, "bloom")
	packedCol := -1 // compressed: hashed decompressed, as a plain database holds it
	if t.name+".data" == tagChunkData {
		packedCol = slices.Index(cols, "data")
	}
	for i := range vals {
		ptrs[i] = &vals[i]
		if tag := t.name + "." + cols[i]; db.s != nil {
			if _, ok := sealedColumns[tag]; ok {
				sealed[i] = tag
			}
		}
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				vals[i] = string(b)
			}
			if vals[i] == nil || (sealed[i] == "" && i != packedCol) {
				continue
			}
			plain := []byte(vals[i].(string))
			var err error
			if sealed[i] != "" && sealedColumns[sealed[i]] {
				plain, err = db.s.OpenString(sealed[i], vals[i].(string))
			} else if sealed[i] != "" {
				plain, err = db.s.Open(sealed[i], plain)
			}
			if err != nil {
				return fmt.Errorf("%s: %w", sealed[i], err)
			}
			if i == packedCol {
				if plain, err = unpackChunk(plain); err != nil {
					return err
				}
			}
			vals[i] = string(plain)
			if sealed[i] == tagChunkData && bloomCol >= 0 {
				vals[bloomCol] = string(trigramBloom(trigramBit, plain))
			}
		}
		row := vals
		if t.entryLast {
			n := len(vals) - 2
			entry, err := eventEntry(db.db, vals[n], vals[n+1])
			if err != nil {
				return err
			}
			row = append(vals[:n:n], entry)
		}
		if err := fn(row); err != nil {
			return err
		}
	}
	return rows.Err()
}

// eventEntry returns the entry of a history.entry_recorded event's stored
// payload, as a string ("" for none).
func eventEntry(db eventlog.DBTX, stored, packed any) (string, error) {
	var data string
	switch v := stored.(type) {
	case nil:
		return "", nil
	case []byte:
		data = string(v)
	case string:
		data = v
	}
	var pk []byte
	switch v := packed.(type) {
	case []byte:
		pk = v
	case string:
		pk = []byte(v)
	}
	plain, err := eventlog.StoredData(db, data, pk)
	if err != nil {
		return "", fmt.Errorf("the event of a history entry: %w", err)
	}
	var p events.HistoryEntryRecorded
	if err := json.Unmarshal(plain, &p); err != nil {
		return "", fmt.Errorf("the event of a history entry: %w", err)
	}
	return string(p.Entry), nil
}

// Counts are the sizes of the main projections.
type Counts struct {
	Tasks   int64 `json:"tasks"`
	Agents  int64 `json:"agents"`
	Windows int64 `json:"windows"`
	Notes   int64 `json:"notes"`
}

// Count returns the projection counts of db. Its SQL runs on SQLite and
// PostgreSQL alike.
func Count(ctx context.Context, db eventlog.DBTX) (Counts, error) {
	var c Counts
	// PostgreSQL 15 wants the subquery's alias.
	err := db.QueryRowContext(ctx, `SELECT
		(SELECT count(*) FROM tasks),
		(SELECT count(*) FROM agents),
		(SELECT count(*) FROM (SELECT DISTINCT task_id, agent, window_ordinal FROM history_items) AS w),
		(SELECT count(*) FROM notes)`).Scan(&c.Tasks, &c.Agents, &c.Windows, &c.Notes)
	return c, err
}

// TableDiff is how one projection table differs between a live and a
// rebuilt database.
type TableDiff struct {
	Table         string   `json:"table"`
	OnlyLive      int      `json:"only_live"`
	OnlyRebuilt   int      `json:"only_rebuilt"`
	SampleLive    []string `json:"sample_live,omitempty"`
	SampleRebuilt []string `json:"sample_rebuilt,omitempty"`
}

// Diff compares every projection table of live and rebuilt row by row and
// returns the tables that differ, each with up to samples rows of each side.
// Sealed texts are compared opened, as Digest does.
func Diff(ctx context.Context, live, rebuilt *eventlog.Store, samples int) ([]TableDiff, error) {
	return diff(ctx, sourceOf(live), sourceOf(rebuilt), samples)
}

func diff(ctx context.Context, live, rebuilt source, samples int) ([]TableDiff, error) {
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
func tableRows(ctx context.Context, db source, t table) (map[string]int, error) {
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

// HiddenHolding counts, by table, the rows whose texts a search of the
// stored bytes cannot see and that, opened, hold one of texts (forensics'
// verify --erased). On a database encrypted at rest those are every event
// (counted as "events") and every sealed column; on a plain one, the
// compressed values: the entries' events stored packed, and the chunks'
// text (a chunk stored plain by an older memoryd is counted too).
func HiddenHolding(ctx context.Context, store *eventlog.Store, texts [][]byte) (map[string]int64, error) {
	out := map[string]int64{}
	src := sourceOf(store)
	holds := func(b []byte) bool {
		for _, t := range texts {
			if bytes.Contains(b, t) {
				return true
			}
		}
		return false
	}
	if src.s == nil {
		return out, compressedHolding(ctx, src, holds, out)
	}
	err := store.Each(ctx, eventlog.Filter{}, func(ev events.Event) error {
		if holds(ev.Data) {
			out["events"]++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, t := range tables {
		var cols []string
		for tag := range sealedColumns {
			if table, col, _ := strings.Cut(tag, "."); table == t.name {
				cols = append(cols, col)
			}
		}
		if len(cols) == 0 {
			continue
		}
		slices.Sort(cols)
		t.columns, t.joinLast = strings.Join(cols, ", "), false
		err := scanRows(ctx, src, t, func(vals []any) error {
			for _, v := range vals {
				if s, ok := v.(string); ok && holds([]byte(s)) {
					out[t.name]++
					break
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// compressedHolding is HiddenHolding on a plain database.
func compressedHolding(ctx context.Context, src source, holds func([]byte) bool, out map[string]int64) error {
	rows, err := src.db.QueryContext(ctx, "SELECT data, packed FROM events WHERE length(packed) > 0 ORDER BY position")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var data string
		var packed []byte
		if err := rows.Scan(&data, &packed); err != nil {
			return err
		}
		payload, err := eventlog.StoredData(src.db, data, packed)
		if err != nil {
			return err
		}
		if holds(payload) {
			out["events"]++
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	t := table{name: "history_chunks", columns: "data", orderBy: "task_id, agent, chunk_no"}
	return scanRows(ctx, src, t, func(vals []any) error {
		if s, ok := vals[0].(string); ok && holds([]byte(s)) {
			out[t.name]++
		}
		return nil
	})
}
