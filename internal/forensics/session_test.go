package forensics_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/memory"
)

// sessionFile is a Pi session file: its header and n entries, a chain,
// with last as the last entry's id (when not empty).
func sessionFile(n int, last string) string {
	lines := []string{`{"type":"session","version":3,"id":"5e551011-0000-4000-8000-000000000001","timestamp":"2026-12-02T09:00:00.000Z","cwd":"/w"}`}
	parent := "null"
	for i := range n {
		id := fmt.Sprintf("e%05d", i)
		if i == n-1 && last != "" {
			id = last
		}
		lines = append(lines, fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-12-02T09:00:01.000Z","message":{"role":"user","content":"step %d"}}`, id, parent, i))
		parent = fmt.Sprintf("%q", id)
	}
	return strings.Join(lines, "\n") + "\n"
}

// TestImportSessionIsAllOrNothing: a session whose entry is refused
// stores nothing, even past the entries one sync carries, and the error
// names the entry's line in the file (line 1 is the header); an entry
// already synced with other content refuses a resumed import whole.
func TestImportSessionIsAllOrNothing(t *testing.T) {
	ctx := context.Background()
	svc, err := forensics.Open(ctx, filepath.Join(t.TempDir(), "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	read := func(text string) history.Session {
		t.Helper()
		sess, err := history.ReadSession(strings.NewReader(text))
		if err != nil {
			t.Fatal(err)
		}
		return sess
	}
	events := func() int64 {
		t.Helper()
		p, err := svc.LastPosition(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		name, file string
		kind       error
		want       string
	}{
		{"an id of 300 bytes, last of 12,000 entries", sessionFile(12_000, strings.Repeat("L", 300)), memory.ErrInvalidArgument,
			"line 12001: the entry has an id that is not short valid UTF-8"},
		{"a duplicate key", strings.Replace(sessionFile(5, ""), `"content":"step 2"`, `"content":"step 2","content":"other"`, 1), memory.ErrInvalidArgument,
			`line 4: the entry has the key "content" twice in one object`},
		{"invalid UTF-8", strings.Replace(sessionFile(5, ""), "step 3", "step \xff", 1), memory.ErrInvalidArgument,
			"line 5: the entry is not valid UTF-8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := forensics.ImportSession(ctx, svc, "/s/"+tc.name+".jsonl", read(tc.file), nil)
			if !errors.Is(err, tc.kind) || err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("ImportSession: %v; want %v naming %q", err, tc.kind, tc.want)
			}
			if n := events(); n != 0 {
				t.Fatalf("the refused import stored %d events", n)
			}
		})
	}

	// Resumed: the file changed an entry already stored and grew past
	// what one sync carries. None of the new entries is stored.
	file := sessionFile(3, "")
	if _, err := forensics.ImportSession(ctx, svc, "/s/grown.jsonl", read(file), nil); err != nil {
		t.Fatal(err)
	}
	before := events()
	grown := strings.Replace(sessionFile(12_000, ""), `"content":"step 2"`, `"content":"step two"`, 1)
	_, err = forensics.ImportSession(ctx, svc, "/s/grown.jsonl", read(grown), nil)
	if !errors.Is(err, memory.ErrConflict) || !strings.Contains(err.Error(), `line 4: entry "e00002" was already synced with different content`) {
		t.Fatalf("resumed ImportSession of a changed entry: %v", err)
	}
	if n := events(); n != before {
		t.Fatalf("the refused resumed import stored %d more events", n-before)
	}
}
