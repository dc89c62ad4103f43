package main

import (
	"bytes"
	"encoding/json"
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

// TestImportSessionClaudeCode: import-session --format claude-code imports
// a Claude Code transcript under the hooks' session key, its compaction as
// a second window and its sub-agent's transcript as a child agent; a
// second import stores nothing new.
func TestImportSessionClaudeCode(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	src := filepath.Join("..", "..", "testdata", "claude-code", "transcripts")
	copyFile := func(from, to string) {
		t.Helper()
		b, err := os.ReadFile(from)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(to, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	compacted := filepath.Join(dir, "f48df3d1-3211-4b79-8999-9dd300c9cd8c.jsonl")
	copyFile(filepath.Join(src, "compacted.jsonl"), compacted)
	withSub := filepath.Join(dir, "0d4eecf6-23f6-4ef1-b0a1-05fda90e0bbf.jsonl")
	copyFile(filepath.Join(src, "with-subagent", "session.jsonl"), withSub)
	copyFile(filepath.Join(src, "with-subagent", "subagents", "agent-a02dee9184452a481.jsonl"),
		filepath.Join(dir, "0d4eecf6-23f6-4ef1-b0a1-05fda90e0bbf", "subagents", "agent-a02dee9184452a481.jsonl"))
	type result struct {
		TaskID     string `json:"task_id"`
		SessionKey string `json:"session_key"`
		Stored     int    `json:"stored"`
		Branch     int    `json:"branch"`
		Window     string `json:"current_window_id"`
		SubAgents  []struct {
			Agent  string `json:"agent"`
			Stored int    `json:"stored"`
		} `json:"sub_agents"`
	}
	importIt := func(path string) result {
		t.Helper()
		out, stderr, err := fxRun(t, nil, "import-session", "--db", db, "--format", "claude-code", path)
		if err != nil {
			t.Fatalf("import-session %s: %v\n%s", path, err, stderr)
		}
		var r result
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		return r
	}
	r := importIt(compacted)
	if r.SessionKey != "claude-code/f48df3d1-3211-4b79-8999-9dd300c9cd8c" || r.Window != "w2" || r.Stored == 0 || r.Branch == 0 {
		t.Errorf("the compacted session: %+v", r)
	}
	if again := importIt(compacted); again.Stored != 0 || again.TaskID != r.TaskID {
		t.Errorf("imported again: %+v, first %+v", again, r)
	}
	s := importIt(withSub)
	if len(s.SubAgents) != 1 || s.SubAgents[0].Stored == 0 || !strings.HasPrefix(s.SubAgents[0].Agent, "/root/") || s.TaskID == r.TaskID {
		t.Errorf("the session with a sub-agent: %+v", s)
	}
	if _, _, err := fxRun(t, nil, "import-session", "--db", db, "--format", "opencode", withSub); err == nil {
		t.Error("an unknown format was accepted")
	}
}
