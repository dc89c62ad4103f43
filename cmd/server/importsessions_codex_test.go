package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/pgtest"
)

// The threads of the captured rollouts (testdata/codex/rollouts).
const (
	run03Thread   = "01a24ed0-1a83-7450-adb3-cb0ea260fb91"
	run19Session  = "01a24edd-4fc3-7022-9ba0-afb29b641f47"
	run19SubAgent = "01a24edd-6186-7fb1-bec6-46ae9610f858"
)

// putRollout writes a captured rollout, its text changed by edit (nil
// for none), into the day folder of sessions as Codex names it,
// rollout-<time>-<thread id>.jsonl, and returns its path.
func putRollout(t *testing.T, sessions, day, name string, edit func(string) string) string {
	t.Helper()
	text := readText(t, filepath.Join("..", "..", "testdata", "codex", "rollouts", name))
	if edit != nil {
		text = edit(text)
	}
	first, _, _ := strings.Cut(text, "\n")
	var meta struct {
		Payload struct {
			ID string `json:"id"`
		} `json:"payload"`
	}
	if err := json.Unmarshal([]byte(first), &meta); err != nil || meta.Payload.ID == "" {
		t.Fatalf("%s: no session_meta: %v", name, err)
	}
	path := filepath.Join(sessions, filepath.FromSlash(day), "rollout-2026-12-07T04-45-00-"+meta.Payload.ID+".jsonl")
	writeText(t, path, text)
	return path
}

// taskAgent is an agent as the tasks verb lists it.
type taskAgent struct {
	TaskID      string
	Agent       string `json:"agent"`
	SessionKey  string `json:"session_key"`
	SessionID   string `json:"session_id"`
	SessionFile string `json:"session_file"`
}

// agentsByKey lists the agents of every task of db by session key.
func agentsByKey(t *testing.T, db string) map[string]taskAgent {
	t.Helper()
	var out struct {
		Tasks []struct {
			TaskID string      `json:"task_id"`
			Agents []taskAgent `json:"agents"`
		} `json:"tasks"`
	}
	if err := json.Unmarshal([]byte(fxMust(t, "tasks", "--db", db)), &out); err != nil {
		t.Fatal(err)
	}
	agents := map[string]taskAgent{}
	for _, task := range out.Tasks {
		for _, a := range task.Agents {
			a.TaskID = task.TaskID
			agents[a.SessionKey] = a
		}
	}
	return agents
}

// failingRollout is run03's rollout as another thread, whose tool call's
// arguments (line 14) have a key twice, which the service refuses.
func failingRollout(text string) string {
	text = strings.ReplaceAll(text, run03Thread, "01a24ed0-aaaa-7450-adb3-cb0ea260fb91")
	return strings.Replace(text, `"arguments":"{\"text\":\"remember X\"}"`, `"arguments":"{\"text\":\"remember X\",\"text\":\"Y\"}"`, 1)
}

// orphanSubAgent is run19's sub-agent as the sub-agent of a session whose
// rollout is nowhere.
func orphanSubAgent(text string) string {
	text = strings.ReplaceAll(text, run19Session, "01a24edd-bbbb-7022-9ba0-afb29b641f47")
	return strings.ReplaceAll(text, run19SubAgent, "01a24edd-cccc-7fb1-bec6-46ae9610f858")
}

// TestImportSessionsCodex: import-sessions --from codex finds the rollouts
// in CODEX_HOME/sessions and imports each under the hooks' session key: a
// session's own thread as a task, a sub-agent's (on a day before its
// session's) as a child agent of that task; compactions open windows; a
// line that is not a record is named by file and line; a file the service
// refuses leaves no task; a sub-agent whose session is nowhere, or whose
// session's rollout failed, is skipped with why. A second run imports nothing and appends nothing; a grown
// rollout adds only its new lines. A sub-agent whose session is older
// than --since has its session imported first all the same.
func TestImportSessionsCodex(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "codex")
	sessions := filepath.Join(home, "sessions")
	day := "2026/12/07"
	paths := map[string]string{}
	for _, name := range []string{"rollout-exec-then-exec-resume-then-tui-resume.jsonl", "rollout-run07-autocompact.jsonl",
		"rollout-run19-parent.jsonl", "rollout-tui-manual-compact.jsonl"} {
		paths[name] = putRollout(t, sessions, day, name, nil)
	}
	sub := putRollout(t, sessions, "2026/12/06", "rollout-run19-subagent.jsonl", nil)
	run03 := putRollout(t, sessions, day, "rollout-run03-mcp-call.jsonl", func(text string) string {
		lines := strings.SplitAfter(text, "\n")
		return strings.Join(lines[:10], "") + "{cut off\n" + strings.Join(lines[10:], "")
	})
	failing := putRollout(t, sessions, day, "rollout-run03-mcp-call.jsonl", failingRollout)
	orphan := putRollout(t, sessions, day, "rollout-run19-subagent.jsonl", orphanSubAgent)
	// run19 as another session whose own rollout fails: its sub-agent is skipped.
	otherSession := func(text string) string {
		text = strings.ReplaceAll(text, run19Session, "01a24edd-eeee-7022-9ba0-afb29b641f47")
		return strings.ReplaceAll(text, run19SubAgent, "01a24edd-ffff-7fb1-bec6-46ae9610f858")
	}
	failingParent := putRollout(t, sessions, day, "rollout-run19-parent.jsonl", func(text string) string {
		return strings.Replace(otherSession(text), `"arguments":"{\"`, `"arguments":"{\"dup\":1,\"dup\":2,\"`, 1)
	})
	subOfFailing := putRollout(t, sessions, day, "rollout-run19-subagent.jsonl", otherSession)
	notRollout := filepath.Join(sessions, day, "rollout-2026-12-07T04-45-00-01a24edd-dddd-7022-9ba0-afb29b641f47.jsonl")
	writeText(t, notRollout, `{"type":"session","version":3,"id":"p"}`+"\n")
	writeText(t, filepath.Join(sessions, day, "notes.jsonl"), "{}\n")
	writeText(t, filepath.Join(sessions, "index.txt"), "x\n")
	db := filepath.Join(dir, "m.db")
	env := map[string]string{"CODEX_HOME": home}

	sum, stderr, err := importSessions(t, env, "--from", "codex", "--db", db)
	if err == nil || !strings.Contains(err.Error(), "2 session files failed") {
		t.Fatalf("first run: %v, want two failed", err)
	}
	if sum.From != "codex" || sum.Folder != sessions || sum.Files != 8 || len(sum.Imported) != 6 || len(sum.Grown) != 0 || sum.Unchanged != 0 {
		t.Fatalf("first run: %+v", sum)
	}
	failed := map[string]string{}
	for _, f := range sum.Failed {
		failed[f.File] = f.Kind + ": " + f.Why
	}
	if len(failed) != 2 || !strings.Contains(failed[failing], `codex: line 14: the entry has the key "text" twice`) ||
		!strings.Contains(failed[failingParent], `the key "dup" twice`) {
		t.Errorf("failed %+v: want %s at line 14 and %s", sum.Failed, failing, failingParent)
	}
	why := map[string]string{}
	for _, s := range sum.Skipped {
		why[s.File] = s.Why
	}
	for file, want := range map[string]string{
		orphan:       "its session is not imported: codex/01a24edd-bbbb-7022-9ba0-afb29b641f47",
		notRollout:   "not a Codex rollout: line 1 is not a session_meta record",
		subOfFailing: "its session's rollout " + failingParent + " did not import",
		filepath.Join(sessions, day, "notes.jsonl"): "not a rollout",
		filepath.Join(sessions, "index.txt"):        "not a .jsonl file",
	} {
		if !strings.Contains(why[file], want) {
			t.Errorf("%s skipped for %q, want %q", file, why[file], want)
		}
	}
	if len(sum.Skipped) != 5 {
		t.Errorf("skipped %+v, want 5", sum.Skipped)
	}
	imported := map[string]importedFile{}
	for _, f := range sum.Imported {
		imported[f.File] = f
	}
	if f := imported[run03]; f.Kind != "codex" || f.SessionKey != "codex/"+run03Thread || f.Stored != 25 || f.Entries != 25 ||
		len(f.SkippedAt) != 1 || f.SkippedAt[0].File != run03 || f.SkippedAt[0].Line != 11 {
		t.Errorf("run03 with a line cut off: %+v, want 25 entries and line 11 skipped", f)
	}
	if !strings.Contains(stderr, "8 codex session files in "+sessions+": 6 imported, 0 grown, 0 unchanged, 2 failed; 5 other files skipped") {
		t.Errorf("stderr %q", stderr)
	}
	agents := agentsByKey(t, db)
	root, child := agents["codex/"+run19Session], agents["codex/"+run19Session+"/"+run19SubAgent]
	if root.Agent != "/root" || root.SessionID != run19Session || root.SessionFile != paths["rollout-run19-parent.jsonl"] {
		t.Errorf("run19's session: %+v", root)
	}
	if child.TaskID != root.TaskID || child.Agent != "/root/"+memory.AutoAgentName(child.SessionKey) || child.SessionID != run19Session || child.SessionFile != sub {
		t.Errorf("run19's sub-agent: %+v, want a child agent of %s", child, root.TaskID)
	}
	for _, name := range []string{"rollout-run07-autocompact.jsonl", "rollout-tui-manual-compact.jsonl"} {
		a := agents["codex/"+forensics.CodexThreadID(filepath.Base(paths[name]))]
		var windows struct {
			Details struct {
				Windows []struct {
					WindowID string `json:"window_id"`
				} `json:"windows"`
			} `json:"details"`
		}
		if err := json.Unmarshal([]byte(fxMust(t, "call", "--db", db, "--task", a.TaskID, "history_list_windows")), &windows); err != nil {
			t.Fatal(err)
		}
		if w := windows.Details.Windows; len(w) != 2 || w[1].WindowID != "w2" {
			t.Errorf("%s: windows %+v, want its compaction to open w2", name, w)
		}
	}
	if n := taskCount(t, db); n != 5 || len(agents) != 6 {
		t.Fatalf("%d tasks, %d agents; want 5 tasks and 6 agents (the failed file leaves none)", n, len(agents))
	}

	exported := fxMust(t, "export", "--db", db)
	sum, _, err = importSessions(t, env, "--from", "codex", "--db", db)
	if err == nil || len(sum.Imported)+len(sum.Grown) != 0 || sum.Unchanged != 6 || len(sum.Failed) != 2 {
		t.Fatalf("second run: %v %+v, want 6 unchanged and the same failures", err, sum)
	}
	if after := fxMust(t, "export", "--db", db); after != exported {
		t.Error("the second run changed the log")
	}
	for _, p := range []string{failing, failingParent, subOfFailing} {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}

	// run03 grows by a turn, ordinals 25 and 26.
	writeText(t, run03, readText(t, run03)+
		`{"timestamp":"2026-12-07T05:00:00.000Z","ordinal":25,"type":"response_item","payload":{"type":"message","role":"user","content":[{"type":"input_text","text":"GROWN-QX one more"}]}}`+"\n"+
		`{"timestamp":"2026-12-07T05:00:01.000Z","ordinal":26,"type":"event_msg","payload":{"type":"task_complete"}}`+"\n")
	sum, _, err = importSessions(t, env, "--from", "codex", "--db", db, sessions)
	if err != nil || len(sum.Grown) != 1 || sum.Grown[0].File != run03 || sum.Grown[0].Stored != 2 || sum.Grown[0].Entries != 27 || sum.Unchanged != 5 {
		t.Fatalf("after run03 grew: %v %+v, want it grown by 2", err, sum)
	}
	if after := fxMust(t, "export", "--db", db); !strings.HasPrefix(after, exported) || !strings.Contains(after[len(exported):], "GROWN-QX") {
		t.Error("the grown rollout did not append its new lines to the log alone")
	}

	// A new database, the session's rollout older than --since: it is
	// imported before its sub-agent all the same.
	old := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, p := range []string{paths["rollout-run19-parent.jsonl"], paths["rollout-run07-autocompact.jsonl"]} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	db2 := filepath.Join(dir, "since.db")
	sum, _, err = importSessions(t, env, "--from", "codex", "--db", db2, "--since", "2026-06-01")
	if err != nil {
		t.Fatal(err)
	}
	imported = map[string]importedFile{}
	for _, f := range sum.Imported {
		imported[f.File] = f
	}
	if p := paths["rollout-run19-parent.jsonl"]; imported[p].Stored != 28 || imported[sub].Stored != 20 || imported[sub].TaskID != imported[p].TaskID {
		t.Errorf("--since after the session's rollout: %+v, want it imported with its sub-agent", sum.Imported)
	}
	if _, ok := imported[paths["rollout-run07-autocompact.jsonl"]]; ok {
		t.Error("a rollout older than --since was imported")
	}
}

// TestImportSessionCodex: import-session --format codex imports one
// rollout all or nothing: a sub-agent's imports its session's rollout
// first, found in another day of the sessions folder; one whose session
// is nowhere, a refused entry and a file that is not a rollout leave no
// database; a changed line refuses the file and names its line.
func TestImportSessionCodex(t *testing.T) {
	dir := t.TempDir()
	sessions := filepath.Join(dir, "sessions")
	parent := putRollout(t, sessions, "2026/12/07", "rollout-run19-parent.jsonl", nil)
	sub := putRollout(t, sessions, "2026/12/08", "rollout-run19-subagent.jsonl", nil)
	db := filepath.Join(dir, "m.db")
	type result struct {
		TaskID     string  `json:"task_id"`
		Agent      string  `json:"agent"`
		SessionKey string  `json:"session_key"`
		Stored     int     `json:"stored"`
		Session    *result `json:"session"`
	}
	importIt := func(path string) result {
		t.Helper()
		var r result
		if err := json.Unmarshal([]byte(fxMust(t, "import-session", "--db", db, "--format", "codex", path)), &r); err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := importIt(sub)
	if r.Session == nil || r.Session.SessionKey != "codex/"+run19Session || r.Session.Stored != 28 || r.Session.TaskID != r.TaskID {
		t.Fatalf("the sub-agent's session, imported first: %+v", r.Session)
	}
	if r.SessionKey != "codex/"+run19Session+"/"+run19SubAgent || r.Agent != "/root/"+memory.AutoAgentName(r.SessionKey) || r.Stored != 20 {
		t.Errorf("the sub-agent: %+v", r)
	}
	if again := importIt(sub); again.Session != nil || again.Stored != 0 || again.TaskID != r.TaskID {
		t.Errorf("the sub-agent again: %+v", again)
	}
	if p := importIt(parent); p.Stored != 0 || p.Agent != "/root" || p.TaskID != r.TaskID {
		t.Errorf("the session again: %+v", p)
	}

	pi := filepath.Join(dir, "pi.jsonl")
	copyFile(t, filepath.Join("..", "..", "testdata", "sessions", "tools.jsonl"), pi)
	other := filepath.Join(dir, "other")
	for _, c := range []struct {
		name, file, want string
	}{
		{"a sub-agent whose session is nowhere", putRollout(t, other, "2026/12/07", "rollout-run19-subagent.jsonl", orphanSubAgent),
			"its session is not imported: codex/01a24edd-bbbb-7022-9ba0-afb29b641f47, and its rollout"},
		{"a refused entry", putRollout(t, other, "2026/12/07", "rollout-run03-mcp-call.jsonl", failingRollout), `line 14: the entry has the key "text" twice`},
		{"a Pi session file", pi, "not a Codex rollout: line 1 is not a session_meta record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := t.TempDir()
			_, _, err := fxRun(t, nil, "import-session", "--db", filepath.Join(out, "new", "m.db"), "--format", "codex", c.file)
			if err == nil || fxExit(err) != 1 || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("import-session: %v (exit %d), want exit 1 naming %q", err, fxExit(err), c.want)
			}
			fxNothingLeft(t, "the refused import-session", out)
		})
	}

	// A line changed since the import: the whole file is refused.
	before := fxExport(t, "--db", db)
	lines := strings.SplitAfter(readText(t, parent), "\n")
	lines[8] = strings.Replace(lines[8], "CALL_TOOL spawn_agent", "CALL_TOOL spawn_agents", 1)
	writeText(t, parent, strings.Join(lines, "")+`{"ordinal":28,"type":"event_msg","payload":{"type":"task_started"}}`+"\n")
	_, _, err := fxRun(t, nil, "import-session", "--db", db, "--format", "codex", parent)
	if err == nil || !strings.Contains(err.Error(), `line 9: entry "o8" was already synced with different content`) {
		t.Fatalf("a changed line: %v", err)
	}
	if after := fxExport(t, "--db", db); string(after) != string(before) {
		t.Error("the refused import changed the log")
	}
}

// mixedFolder makes a folder of Pi, Claude Code and Codex session files,
// and a file of none, and returns it.
func mixedFolder(t *testing.T, dir string) string {
	t.Helper()
	mixed := filepath.Join(dir, "mixed")
	copyFile(t, filepath.Join("..", "..", "testdata", "sessions", "tools.jsonl"), filepath.Join(mixed, "pi", "--p--", "a.jsonl"))
	cc := filepath.Join("..", "..", "testdata", "claude-code", "transcripts", "with-subagent")
	sid := "11111111-2222-3333-4444-555555555555"
	copyFile(t, filepath.Join(cc, "session.jsonl"), filepath.Join(mixed, "claude", "-p", sid+".jsonl"))
	copyFile(t, filepath.Join(cc, "subagents", "agent-a02dee9184452a481.jsonl"), filepath.Join(mixed, "claude", "-p", sid, "subagents", "agent-a02dee9184452a481.jsonl"))
	for _, name := range []string{"rollout-run19-subagent.jsonl", "rollout-run19-parent.jsonl", "rollout-run07-autocompact.jsonl"} {
		putRollout(t, filepath.Join(mixed, "codex"), "2026/12/07", name, nil)
	}
	writeText(t, filepath.Join(mixed, "other.jsonl"), `{"hello":1}`+"\n")
	writeText(t, filepath.Join(mixed, "notes.txt"), "x\n")
	return mixed
}

// TestImportSessionsMixed: --from all with a folder of Pi, Claude Code
// and Codex session files imports each by what its first lines are, in
// one run, and names each file's kind; a second run imports nothing.
// --from with a comma list skips the kinds it does not name. On SQLite,
// and on PostgreSQL when MEMORYD_TEST_POSTGRES names a server.
func TestImportSessionsMixed(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "m.db")
			if engine == "postgres" {
				db = pgtest.NewDatabase(t)
			}
			mixed := mixedFolder(t, dir)
			// A database on a server has its redaction key in the data folder.
			sum, stderr, err := importSessions(t, map[string]string{"HOME": dir}, "--from", "all", "--db", db, mixed)
			if err != nil {
				t.Fatalf("%v\n%s", err, stderr)
			}
			kinds := map[string]int{}
			for _, f := range sum.Imported {
				kinds[f.Kind]++
			}
			if sum.From != "pi,claude-code,codex" || sum.Folder != mixed || sum.Files != 5 || len(sum.Imported) != 5 ||
				kinds["pi"] != 1 || kinds["claude-code"] != 1 || kinds["codex"] != 3 || len(sum.Failed) != 0 {
				t.Fatalf("--from all: %+v", sum)
			}
			if len(sum.Skipped) != 2 || !strings.Contains(sum.Skipped[0].Why+sum.Skipped[1].Why, "not a session file of Pi, Claude Code or Codex") {
				t.Errorf("skipped %+v, want other.jsonl and notes.txt", sum.Skipped)
			}
			if !strings.Contains(stderr, "5 session files (pi, claude-code, codex) in "+mixed+": 5 imported") {
				t.Errorf("stderr %q", stderr)
			}
			if n := taskCount(t, db); n != 4 {
				t.Errorf("%d tasks, want 4 (Pi, Claude Code, and two Codex sessions, one with its sub-agent)", n)
			}
			exported := fxMust(t, "export", "--db", db)
			sum, _, err = importSessions(t, map[string]string{"HOME": dir}, "--from", "all", "--db", db, mixed)
			if err != nil || len(sum.Imported)+len(sum.Grown) != 0 || sum.Unchanged != 5 {
				t.Errorf("second run: %v %+v, want 5 unchanged", err, sum)
			}
			sum, _, err = importSessions(t, map[string]string{"HOME": dir}, "--from", "pi, codex", "--db", db, mixed)
			if err != nil || sum.From != "pi,codex" || sum.Unchanged != 4 || len(sum.Skipped) != 4 ||
				!strings.Contains(sum.Skipped[1].Why, "a claude-code session file, not among --from's kinds") {
				t.Errorf("--from pi,codex: %v %+v, want 4 unchanged and the Claude Code transcripts skipped", err, sum)
			}
			if after := fxMust(t, "export", "--db", db); after != exported {
				t.Error("the runs after the first changed the log")
			}
		})
	}
}

// TestImportSessionsAllDefaults: --from all without a folder reads each
// kind's own, and skips a kind whose folder is missing.
func TestImportSessionsAllDefaults(t *testing.T) {
	dir := t.TempDir()
	mixed := mixedFolder(t, dir)
	env := map[string]string{"PI_CODING_AGENT_DIR": filepath.Join(dir, "no-pi"), "CLAUDE_CONFIG_DIR": filepath.Join(dir, "claude"),
		"CODEX_HOME": filepath.Join(dir, "codex")}
	for from, to := range map[string]string{"claude": filepath.Join(dir, "claude", "projects"), "codex": filepath.Join(dir, "codex", "sessions")} {
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(mixed, from), to); err != nil {
			t.Fatal(err)
		}
	}
	db := filepath.Join(dir, "m.db")
	sum, _, err := importSessions(t, env, "--from", "all", "--db", db)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Folder != "" || len(sum.Folders) != 3 || sum.Folders["codex"] != filepath.Join(dir, "codex", "sessions") || len(sum.Imported) != 4 {
		t.Errorf("--from all: %+v", sum)
	}
	if len(sum.Skipped) != 1 || sum.Skipped[0].Kind != "pi" || !strings.Contains(sum.Skipped[0].Why, "no pi sessions") {
		t.Errorf("skipped %+v, want Pi's missing folder", sum.Skipped)
	}
}
