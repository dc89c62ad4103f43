package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/memory"
)

// importSessions runs import-sessions with env as the environment and
// returns its summary, its stderr and its error.
func importSessions(t *testing.T, env map[string]string, args ...string) (importSessionsSummary, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"import-sessions"}, args...), func(k string) string { return env[k] }, nil, &stdout, &stderr)
	var sum importSessionsSummary
	if stdout.Len() > 0 {
		if jerr := json.Unmarshal(stdout.Bytes(), &sum); jerr != nil {
			t.Fatalf("import-sessions printed %q: %v", stdout.String(), jerr)
		}
	}
	return sum, stderr.String(), err
}

// copyFile copies testdata file src to dst, making dst's folder.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// taskCount returns how many tasks the database db holds.
func taskCount(t *testing.T, db string) int {
	t.Helper()
	var out struct {
		Tasks []json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(fxMust(t, "tasks", "--db", db)), &out); err != nil {
		t.Fatal(err)
	}
	return len(out.Tasks)
}

// TestImportSessionsPi: import-sessions --from pi finds the session files
// in Pi's folder (PI_CODING_AGENT_DIR), imports each as its own task,
// names a corrupt line by file and line and imports nothing of that file,
// skips what is not a session with the reason; a second run imports
// nothing, and a grown file adds only its new entry.
func TestImportSessionsPi(t *testing.T) {
	dir := t.TempDir()
	agentDir := filepath.Join(dir, "pi-agent")
	sessions := filepath.Join(agentDir, "sessions", "--home-dev-parser--")
	a, b := filepath.Join(sessions, "a.jsonl"), filepath.Join(sessions, "b.jsonl")
	copyFile(t, filepath.Join("..", "..", "testdata", "sessions", "tools.jsonl"), a)
	copyFile(t, filepath.Join("..", "..", "testdata", "sessions", "compaction.jsonl"), b)
	head, _, _ := strings.Cut(readText(t, a), "\n")
	corrupt := filepath.Join(sessions, "corrupt.jsonl")
	writeText(t, corrupt, head+"\n"+`{"type":"message","id":"x1","parentId":null,"message":{"role":"user","content":"hi"}}`+"\n{not json\n")
	writeText(t, filepath.Join(sessions, "log.jsonl"), `{"position":1}`+"\n")
	writeText(t, filepath.Join(sessions, "notes.txt"), "hello\n")
	outside := filepath.Join(dir, "outside.jsonl")
	copyFile(t, a, outside)
	if err := os.Symlink(outside, filepath.Join(sessions, "link.jsonl")); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "m.db")
	env := map[string]string{"PI_CODING_AGENT_DIR": agentDir}

	sum, stderr, err := importSessions(t, env, "--from", "pi", "--db", db)
	if err == nil || !strings.Contains(err.Error(), "1 session file failed") {
		t.Fatalf("a corrupt file: err %v, want one failed", err)
	}
	if sum.Files != 3 || len(sum.Imported) != 2 || len(sum.Grown) != 0 || sum.Unchanged != 0 || len(sum.Failed) != 1 {
		t.Fatalf("first run: %+v", sum)
	}
	if f := sum.Failed[0]; f.File != corrupt || !strings.Contains(f.Why, "line 3") {
		t.Errorf("failed %+v: want %s at line 3", f, corrupt)
	}
	why := map[string]string{}
	for _, s := range sum.Skipped {
		why[filepath.Base(s.File)] = s.Why
	}
	for file, want := range map[string]string{"log.jsonl": "not a Pi session file", "notes.txt": "not a .jsonl file", "link.jsonl": "symbolic link"} {
		if !strings.Contains(why[file], want) {
			t.Errorf("%s skipped for %q, want %q", file, why[file], want)
		}
	}
	if len(sum.Skipped) != 3 {
		t.Errorf("skipped %+v, want 3", sum.Skipped)
	}
	if sum.Imported[0].File != a || sum.Imported[0].Stored != sum.Imported[0].Entries || sum.Imported[0].Entries == 0 {
		t.Errorf("imported %+v", sum.Imported[0])
	}
	if !strings.Contains(stderr, "2 imported, 0 grown, 0 unchanged, 1 failed") {
		t.Errorf("stderr %q", stderr)
	}
	if n := taskCount(t, db); n != 2 {
		t.Fatalf("%d tasks after the first run, want 2 (the corrupt file imports nothing)", n)
	}

	if err := os.Remove(corrupt); err != nil {
		t.Fatal(err)
	}
	sum, _, err = importSessions(t, env, "--from", "pi", "--db", db)
	if err != nil || len(sum.Imported) != 0 || len(sum.Grown) != 0 || sum.Unchanged != 2 {
		t.Fatalf("second run: %v %+v, want 2 unchanged", err, sum)
	}
	exported := fxMust(t, "export", "--db", db)

	// a grows by one entry, after its last.
	lines := strings.Split(strings.TrimSpace(readText(t, a)), "\n")
	var last struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
		t.Fatal(err)
	}
	grown := `{"type":"message","id":"grown1","parentId":"` + last.ID + `","timestamp":"2026-12-02T10:00:00.000Z","message":{"role":"user","content":"one more"}}`
	writeText(t, a, readText(t, a)+grown+"\n")
	sum, _, err = importSessions(t, env, "--from", "pi", "--db", db, sessions)
	if err != nil || len(sum.Grown) != 1 || sum.Grown[0].File != a || sum.Grown[0].Stored != 1 || sum.Unchanged != 1 {
		t.Fatalf("after a grew: %v %+v, want a grown by 1", err, sum)
	}
	if after := fxMust(t, "export", "--db", db); !strings.HasPrefix(after, exported) || !strings.Contains(after[len(exported):], "grown1") {
		t.Errorf("the grown file did not append its new entry to the log alone")
	}

	sum, _, err = importSessions(t, env, "--from", "pi", "--db", db, "--since", "2999-01-01")
	if err != nil || sum.Files != 0 || len(sum.Skipped) != 5 || !strings.Contains(sum.Skipped[0].Why, "before --since") {
		t.Errorf("--since in the future: %v %+v, want every file skipped", err, sum)
	}
}

// TestImportSessionsClaudeCode: import-sessions --from claude-code finds
// the transcripts in CLAUDE_CONFIG_DIR/projects, imports each with its
// sub-agents, and names the lines it left out by file and line.
func TestImportSessionsClaudeCode(t *testing.T) {
	dir := t.TempDir()
	config := filepath.Join(dir, "claude")
	project := filepath.Join(config, "projects", "-home-dev-parser")
	src := filepath.Join("..", "..", "testdata", "claude-code", "transcripts")
	sid := "11111111-2222-3333-4444-555555555555"
	copyFile(t, filepath.Join(src, "with-subagent", "session.jsonl"), filepath.Join(project, sid+".jsonl"))
	copyFile(t, filepath.Join(src, "with-subagent", "subagents", "agent-a02dee9184452a481.jsonl"), filepath.Join(project, sid, "subagents", "agent-a02dee9184452a481.jsonl"))
	compacted := filepath.Join(project, "66666666-2222-3333-4444-555555555555.jsonl")
	copyFile(t, filepath.Join(src, "compacted.jsonl"), compacted)
	writeText(t, compacted, "{cut off\n"+readText(t, compacted))
	writeText(t, filepath.Join(project, "memory", "notes.jsonl"), "{}\n")
	db := filepath.Join(dir, "m.db")
	env := map[string]string{"CLAUDE_CONFIG_DIR": config}

	sum, _, err := importSessions(t, env, "--from", "claude-code", "--db", db)
	if err != nil || sum.Files != 2 || len(sum.Imported) != 2 || len(sum.Failed) != 0 {
		t.Fatalf("first run: %v %+v", err, sum)
	}
	if len(sum.Skipped) != 1 || !strings.Contains(sum.Skipped[0].Why, "not a transcript") {
		t.Errorf("skipped %+v, want memory/notes.jsonl as not a transcript", sum.Skipped)
	}
	var withSub, cut importedFile
	for _, f := range sum.Imported {
		if strings.HasSuffix(f.File, sid+".jsonl") {
			withSub = f
		} else {
			cut = f
		}
	}
	sub := readText(t, filepath.Join(project, sid, "subagents", "agent-a02dee9184452a481.jsonl"))
	if subLines := strings.Count(sub, "\n"); withSub.Entries <= subLines {
		t.Errorf("the session with a sub-agent imported %d entries, not more than the sub-agent's %d lines alone", withSub.Entries, subLines)
	}
	if len(cut.SkippedAt) != 1 || cut.SkippedAt[0].File != compacted || cut.SkippedAt[0].Line != 1 {
		t.Errorf("skipped lines %+v, want %s line 1", cut.SkippedAt, compacted)
	}
	if n := taskCount(t, db); n != 2 {
		t.Errorf("%d tasks, want 2 (a sub-agent joins its session's task)", n)
	}
	sum, _, err = importSessions(t, env, "--from", "claude-code", "--db", db)
	if err != nil || len(sum.Imported)+len(sum.Grown) != 0 || sum.Unchanged != 2 {
		t.Errorf("second run: %v %+v, want 2 unchanged", err, sum)
	}
}

// TestImportSessionsRefusals: bad flags and folders are refused with what to do.
func TestImportSessionsRefusals(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--db", db}, `--from "": give --from pi, claude-code or codex, a comma list of them, or all`},
		{[]string{"--db", db, "--from", "pi,vim"}, `--from "pi,vim"`},
		{[]string{"--db", db, "--from", "vim"}, `--from "vim"`},
		{[]string{"--db", db, "--from", "pi", "--since", "yesterday"}, `--since "yesterday": give a date`},
		{[]string{"--db", db, "--from", "pi", filepath.Join(dir, "none")}, "not a folder of pi sessions"},
	} {
		_, _, err := importSessions(t, nil, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("import-sessions %v: %v, want %q", c.args, err, c.want)
		}
	}
	if _, err := os.Stat(db); err == nil {
		t.Error("a refused import-sessions created the database")
	}
}

// readText returns a file's text.
func readText(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeText writes a file's text, making its folder.
func writeText(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestSearchAcrossTasks: search finds a literal in the history of every
// task and agent, Pi's and Claude Code's alike, case-sensitively; keeps
// one agent kind with --agent-kind; says more past --limit; writes nothing.
func TestSearchAcrossTasks(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	pi := filepath.Join(dir, "pi")
	for i, name := range []string{"tools.jsonl", "compaction.jsonl"} {
		file := filepath.Join(pi, "--p--", name)
		copyFile(t, filepath.Join("..", "..", "testdata", "sessions", name), file)
		lines := strings.Split(strings.TrimSpace(readText(t, file)), "\n")
		var last struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &last); err != nil {
			t.Fatal(err)
		}
		writeText(t, file, readText(t, file)+`{"type":"message","id":"needle`+string(rune('0'+i))+`","parentId":"`+last.ID+
			`","timestamp":"2026-12-02T10:00:00.000Z","message":{"role":"user","content":"look for ZQ-NEEDLE-7 here"}}`+"\n")
	}
	claude := filepath.Join(dir, "claude")
	cc := filepath.Join(claude, "-p", "22222222-2222-3333-4444-555555555555.jsonl")
	copyFile(t, filepath.Join("..", "..", "testdata", "claude-code", "transcripts", "every-type.jsonl"), cc)
	writeText(t, cc, readText(t, cc)+`{"parentUuid":"u9","type":"user","uuid":"u10","timestamp":"2026-12-07T00:00:09.000Z","message":{"role":"user","content":"and ZQ-NEEDLE-7 in claude"}}`+"\n")
	for _, c := range [][]string{{"--from", "pi", pi}, {"--from", "claude-code", claude}} {
		if _, _, err := importSessions(t, nil, append(c, "--db", db)...); err != nil {
			t.Fatal(err)
		}
	}
	exported := fxMust(t, "export", "--db", db)
	search := func(args ...string) memory.SearchAllResult {
		t.Helper()
		var res memory.SearchAllResult
		if err := json.Unmarshal([]byte(fxMust(t, append([]string{"search", "--db", db}, args...)...)), &res); err != nil {
			t.Fatal(err)
		}
		return res
	}
	res := search("ZQ-NEEDLE-7")
	kinds := map[string]int{}
	tasks := map[string]bool{}
	for _, m := range res.Matches {
		kinds[m.Kind]++
		tasks[m.TaskID] = true
		if m.ItemID == "" || m.WindowID == "" || len(m.Regions) == 0 || !strings.Contains(m.Regions[0].Preview, "ZQ-NEEDLE-7") {
			t.Errorf("match %+v: want its item, window and a region holding the text", m)
		}
	}
	if len(res.Matches) != 3 || kinds["pi"] != 2 || kinds["claude-code"] != 1 || len(tasks) != 3 || res.More || res.TasksSearched != 3 {
		t.Errorf("search: %+v, want 3 matches in 3 tasks (2 Pi, 1 Claude Code)", res)
	}
	if res := search("--agent-kind", "claude-code", "ZQ-NEEDLE-7"); len(res.Matches) != 1 || res.Matches[0].Kind != "claude-code" ||
		!strings.HasPrefix(res.Matches[0].SessionKey, "claude-code/") {
		t.Errorf("--agent-kind claude-code: %+v", res)
	}
	if res := search("--limit", "2", "ZQ-NEEDLE-7"); len(res.Matches) != 2 || !res.More {
		t.Errorf("--limit 2: %d matches, more %v; want 2 and more", len(res.Matches), res.More)
	}
	if res := search("zq-needle-7"); len(res.Matches) != 0 {
		t.Errorf("the search is case-sensitive, but the lower case found %d", len(res.Matches))
	}
	if res := search("--since", "2999-01-01", "ZQ-NEEDLE-7"); len(res.Matches) != 0 || res.TasksSearched != 0 {
		t.Errorf("--since in the future: %+v", res)
	}
	if after := fxMust(t, "export", "--db", db); after != exported {
		t.Error("search changed the log")
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"search", "--db", db, ""}, "search needs a TEXT that is not empty"},
		{[]string{"search", "--db", db, "--agent-kind", "vim", "x"}, `--agent-kind "vim"`},
		{[]string{"search", "--db", db, "--limit", "0", "x"}, "--limit must be 1 to 500"},
	} {
		if _, _, err := fxRun(t, nil, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}
