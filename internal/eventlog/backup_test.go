package eventlog

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/pgtest"
)

// TestBackup: a backup of a store that goes on appending holds the log up
// to the position it reports, whole, private, and nothing after; an
// existing file is not overwritten. A PostgreSQL store refuses with
// ErrNoBackup.
func TestBackup(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(context.Background(), pgtest.Or(t, filepath.Join(dir, "memory.db")), Options{Projector: testProjector{}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 3 {
		if _, err := appendOne(t, s, "01TASK/root", AnyVersion, events.TypeNoteAppended, note("01TASK", "/root", string(rune('a'+i)))); err != nil {
			t.Fatal(err)
		}
	}
	dest := filepath.Join(dir, "backup.db")
	last, err := s.Backup(context.Background(), dest)
	if os.Getenv("MEMORYD_TEST_ENGINE") == "postgres" {
		if !errors.Is(err, ErrNoBackup) {
			t.Fatalf("a PostgreSQL store's backup: %v", err)
		}
		return
	}
	if err != nil || last != 3 {
		t.Fatalf("backup: %d, %v", last, err)
	}
	if _, err := appendOne(t, s, "01TASK/root", AnyVersion, events.TypeNoteAppended, note("01TASK", "/root", "after")); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dest)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the backup's file: %v %v", fi, err)
	}
	b, err := Open(context.Background(), dest, Options{Projector: testProjector{}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := len(readAll(t, b)); got != 3 || lastPosition(t, b) != 3 {
		t.Errorf("the backup holds %d events to position %d, want 3", got, lastPosition(t, b))
	}
	if _, err := s.Backup(context.Background(), dest); err == nil {
		t.Error("a backup overwrote an existing file")
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".backup.db.*"))
	if len(left) > 0 {
		t.Errorf("temporary files left: %v", left)
	}
}
