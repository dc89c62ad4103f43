package projections

import (
	"context"
	"database/sql"
	"net/url"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/migrations"
)

// TestEntryRawAfterDroppingTheColumn: a database made before migration
// 00013 keeps its history_entries rows when the raw column goes, and an
// entry's raw JSON is then read from its event, byte for byte.
func TestEntryRawAfterDroppingTheColumn(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", eventlog.FileURI(path, url.Values{"_pragma": {"journal_mode(WAL)"}}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := migrations.NewProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 12); err != nil {
		t.Fatal(err)
	}
	const entry = `{"type":"message","id":"e1", "message":{"role":"user","content":"hé\u00e9"}}`
	for _, q := range []string{
		`INSERT INTO events (position, id, stream, stream_version, task_id, type, schema, recorded_at, data, request_id)
			VALUES (1, 'ev1', 't1/root', 1, 't1', 'history.entry_recorded', 1, '2025-01-01T00:00:00Z',
			'{"task_id":"t1","agent":"/root","entry_id":"e1","entry":` + entry + `}', 'r')`,
		`INSERT INTO history_entries (task_id, agent, entry_id, item, role, raw_role, n_chars, images, calls_only, tool_call_id,
			tool_name, compaction, control, marked_window, position, text_chunk, text_offset, text_bytes, calls, breaks, raw)
			VALUES ('t1', '/root', 'e1', 1, 'user', 'user', 3, 0, 0, '', '', 0, 0, '', 1, 0, 0, 0, '[]', '[]', '` + entry + `')`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	store, err := Open(ctx, eventlog.ParseLocation(path), eventlog.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	var role string
	var pos int64
	if err := store.Reader().QueryRowContext(ctx, "SELECT role, position FROM history_entries WHERE entry_id = 'e1'").Scan(&role, &pos); err != nil || role != "user" || pos != 1 {
		t.Fatalf("the row after the migration: %q %d %v", role, pos, err)
	}
	got, err := NewReader(store.Reader()).EntryRaw(ctx, "t1", "/root", "e1")
	if err != nil || string(got) != entry {
		t.Fatalf("EntryRaw = %s, %v; want %s", got, err, entry)
	}
	if _, err := NewReader(store.Reader()).EntryRaw(ctx, "t1", "/root", "none"); err != ErrNotFound {
		t.Fatalf("EntryRaw of no entry: %v", err)
	}
}
