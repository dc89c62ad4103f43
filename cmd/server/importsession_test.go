package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestImportSessionRefusals: import-session is all or nothing. A refused
// entry (the last of 12,000, whose id is 300 bytes) stores nothing and is
// named by its line in the file (line 1 is the header); a file that is
// not a Pi session file, an exported event log for one, is refused. A
// database the verb created is removed; one that existed is left as it
// was.
func TestImportSessionRefusals(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, lines []string) string {
		t.Helper()
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	long := []string{fxSession[0]}
	parent := "null"
	for i := range 12_000 {
		id := fmt.Sprintf("e%05d", i)
		if i == 11_999 {
			id = strings.Repeat("L", 300)
		}
		long = append(long, fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-12-02T09:00:01.000Z","message":{"role":"user","content":"step %d"}}`, id, parent, i))
		parent = fmt.Sprintf("%q", id)
	}
	headless := fxSession[1:]
	for _, tc := range []struct {
		name, file, want string
	}{
		{"a long id in the last of 12,000 entries", write("long.jsonl", long), "line 12001: the entry has an id that is not short valid UTF-8"},
		{"an exported event log", fxLog("idempotent-retries"), `not a Pi session file: line 1 is not a session header ({"type":"session",...})`},
		{"entries without a header", write("headless.jsonl", headless), "not a Pi session file: line 1 is not a session header"},
		{"an empty file", write("empty.jsonl", nil), "not a Pi session file: it has no session header"},
		{"a duplicate key", write("dup.jsonl", []string{fxSession[0], fxSession[1], strings.Replace(fxSession[2], `"stopReason":"stop"`, `"stopReason":"stop","stopReason":"error"`, 1)}),
			`line 3: the entry has the key "stopReason" twice in one object`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := t.TempDir()
			_, _, err := fxRun(t, nil, "import-session", "--db", filepath.Join(out, "new", "memory.db"), tc.file)
			if err == nil || fxExit(err) != 1 || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("import-session: %v (exit %d); want exit 1 naming %q", err, fxExit(err), tc.want)
			}
			fxNothingLeft(t, "the refused import-session", out)
		})
	}

	// Into a database that exists: a changed entry refuses the whole file
	// and names its line; the database is kept, as it was.
	db := filepath.Join(t.TempDir(), "memory.db")
	file := write("ci.jsonl", fxSession)
	fxMust(t, "import-session", "--db", db, file)
	before := fxExport(t, "--db", db)
	changed := slices.Clone(fxSession)
	changed[3] = strings.Replace(changed[3], "Use GitHub Actions.", "Use Jenkins.", 1)
	changed = append(changed, `{"type":"message","id":"s13","parentId":"s12","timestamp":"2026-12-02T09:00:13.000Z","message":{"role":"user","content":"More.","timestamp":1795597213000}}`)
	write("ci.jsonl", changed)
	_, _, err := fxRun(t, nil, "import-session", "--db", db, file)
	if err == nil || fxExit(err) != 1 || !strings.Contains(err.Error(), `line 4: entry "s03" was already synced with different content`) {
		t.Fatalf("import-session of a changed file: %v (exit %d)", err, fxExit(err))
	}
	if after := fxExport(t, "--db", db); !bytes.Equal(after, before) {
		t.Errorf("the refused import-session changed the database:\n%s", after[min(len(before), len(after)):])
	}
}
