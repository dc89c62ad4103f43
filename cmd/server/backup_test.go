package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/memory"
)

// TestBackupRestore: memoryd backup copies a database that a memoryd
// serves and goes on writing to, and memoryd restore puts the copy in
// place after verify found it clean; a copy whose projections differ
// from its log, or an existing --db, is refused and nothing is written.
func TestBackupRestore(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "live.db")
	getenv := env(map[string]string{"HOME": dir})
	_, client := servedAPI(t, db, getenv)
	var att memory.AttachResult
	if err := client.post(context.Background(), "/v1/sessions/attach", map[string]any{"session_key": "k", "session_id": "s"}, &att); err != nil {
		t.Fatal(err)
	}
	write := func(text string) {
		t.Helper()
		cc := memory.CallContext{TaskID: att.TaskID, Agent: att.Agent, CallID: "c-" + text}
		if err := client.post(context.Background(), "/v1/tools/notes_write_file", map[string]any{"context": cc,
			"arguments": map[string]any{"path": "plan.md", "text": text}}, nil); err != nil {
			t.Fatal(err)
		}
	}
	write("before the backup")
	backup := filepath.Join(dir, "copy.db")
	var b struct {
		Position int64 `json:"position"`
	}
	if err := json.Unmarshal([]byte(fxMust(t, "backup", "--db", db, backup)), &b); err != nil || b.Position == 0 {
		t.Fatalf("backup: %+v %v", b, err)
	}
	write("after the backup")
	if _, _, err := fxRun(t, nil, "backup", "--db", db, backup); err == nil {
		t.Error("a backup overwrote its destination")
	}

	restored := filepath.Join(dir, "restored", "memory.db")
	fxMust(t, "restore", "--db", restored, backup)
	out := fxMust(t, "call", "--db", restored, "--task", att.TaskID, "notes_read_file", `{"path":"plan.md"}`)
	if !strings.Contains(out, "before the backup") {
		t.Errorf("the restored note: %s", out)
	}
	if fi, err := os.Stat(restored); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the restored file: %v %v", fi, err)
	}
	if _, _, err := fxRun(t, nil, "restore", "--db", restored, backup); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("restore over an existing database: %v", err)
	}

	// A copy whose notes projection lost a row is not clean: not restored.
	bad := filepath.Join(dir, "bad.db")
	fxMust(t, "backup", "--db", db, bad)
	raw, err := sql.Open("sqlite", eventlog.FileURI(bad, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`DELETE FROM notes`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	target := filepath.Join(dir, "never.db")
	if _, _, err := fxRun(t, nil, "restore", "--db", target, bad); err == nil || !strings.Contains(err.Error(), "not restored") {
		t.Errorf("restore of a copy that is not clean: %v", err)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("a refused restore wrote %s: %v", target, err)
	}
}
