package forensics_test

import (
	"context"
	"database/sql"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/migrations"
)

// TestMigrationRebuildsProjections: a database made by an older schema
// (migrations up to 00003, projections in their old shape) whose log holds
// a whole session is migrated on open, its projections are rebuilt from
// the log, and they equal a fresh replay of the same log.
func TestMigrationRebuildsProjections(t *testing.T) {
	ctx := context.Background()
	const name = "long-session-images"
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sql.Open("sqlite", eventlog.FileURI(path, url.Values{"_pragma": {"journal_mode(WAL)"}}))
	if err != nil {
		t.Fatal(err)
	}
	p, err := migrations.NewProvider(db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.UpTo(ctx, 3); err != nil {
		t.Fatal(err)
	}
	// The old log, without its projections (the old code would have
	// written them; what matters is that they are rebuilt).
	lr, done := openScenarioLog(t, name)
	defer done()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int
	for {
		ev, ok, err := lr.Next()
		if err != nil {
			t.Fatal(lr.AtLine(err))
		}
		if !ok {
			break
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO events (position, id, stream, stream_version, task_id, type, schema, recorded_at, data, request_id)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, ev.Position, ev.ID, ev.Stream, ev.StreamVersion, ev.TaskID(), ev.Type, ev.Schema,
			ev.RecordedAt, string(ev.Data), ev.RequestID); err != nil {
			t.Fatal(err)
		}
		n++
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO history_entries (task_id, agent, entry_id, raw, digest, item, role, raw_role, text,
		breaks, n_chars, images, calls, calls_only, tool_call_id, tool_name, compaction, control, marked_window, position)
		VALUES ('t', '/root', 'stale', '{}', '', 1, 'user', 'user', 'stale text', '[]', 10, 0, '[]', 0, '', '', 0, 0, '', 1)`); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	// As memoryd makes a database: one others can read would add a
	// warning to the log (events.TestOpenWarnsOfExposedDatabase).
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}

	var logged []string
	store, err := forensics.OpenLogging(ctx, path, func(format string, args ...any) { logged = append(logged, format) })
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if len(logged) != 1 || !strings.Contains(logged[0], "rebuilding") {
		t.Fatalf("open logged %q, want one rebuild line", logged)
	}
	got, err := forensics.Summarize(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(logsDir, name+".digest"))
	if err != nil {
		t.Fatal(err)
	}
	if got.Events != int64(n) || got.Digest != strings.TrimSpace(string(want)) {
		t.Fatalf("after the migration: %d events, digest %s; want %d, %s", got.Events, got.Digest, n, want)
	}
	// Opening again rebuilds nothing.
	store.Close()
	logged = nil
	again, err := forensics.OpenLogging(ctx, path, func(format string, args ...any) { logged = append(logged, format) })
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	if len(logged) != 0 {
		t.Fatalf("second open logged %q", logged)
	}
}
