package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/api"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/memory"
)

// The committed scenario logs of internal/forensics (see their README).
const fxLogsDir = "../../internal/forensics/testdata/logs"

func fxLog(name string) string { return filepath.Join(fxLogsDir, name+".jsonl") }

// fxRun runs the program and returns its stdout, stderr and error.
func fxRun(t *testing.T, stdin io.Reader, args ...string) (string, string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, func(string) string { return "" }, stdin, &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// fxMust runs the program, which must succeed, and returns its stdout.
func fxMust(t *testing.T, args ...string) string {
	t.Helper()
	out, stderr, err := fxRun(t, nil, args...)
	if err != nil {
		t.Fatalf("memoryd %s: %v\nstdout %s\nstderr %s", strings.Join(args, " "), err, out, stderr)
	}
	return out
}

// fxJSON decodes a verb's JSON output.
func fxJSON(t *testing.T, out string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("output is not one JSON object: %v\n%s", err, out)
	}
	return m
}

// fxToolDetails runs the call verb, which must succeed, and returns the
// result's details.
func fxToolDetails(t *testing.T, args ...string) map[string]any {
	t.Helper()
	res := fxJSON(t, fxMust(t, append([]string{"call"}, args...)...))
	d, ok := res["details"].(map[string]any)
	if !ok {
		t.Fatalf("call %v: no details in %v", args, res)
	}
	return d
}

// fxEvents reads a log file.
func fxEvents(t *testing.T, path string) []events.Event {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []events.Event
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var ev events.Event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, ev)
	}
	return out
}

func fxDecode[T any](t *testing.T, ev events.Event) *T {
	t.Helper()
	p, err := events.Decode(ev)
	if err != nil {
		t.Fatal(err)
	}
	v, ok := p.(*T)
	if !ok {
		t.Fatalf("event %d is %T", ev.Position, p)
	}
	return v
}

// fxWriteLines writes log lines to a new file.
func fxWriteLines(t *testing.T, lines []string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "log.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func fxLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// fxExport exports a database's log.
func fxExport(t *testing.T, args ...string) []byte {
	t.Helper()
	return []byte(fxMust(t, append([]string{"export"}, args...)...))
}

// fxImport imports a log into a new database and returns its path.
func fxImport(t *testing.T, log string) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "memory.db")
	fxMust(t, "import", "--db", db, log)
	return db
}

func TestCallUntilNoteOverwrite(t *testing.T) {
	log := fxLog("cross-agent-notes")
	var writes []events.Event
	for _, ev := range fxEvents(t, log) {
		if ev.Type == events.TypeNoteWritten {
			if p := fxDecode[events.NoteWritten](t, ev); p.Agent == "/root" && p.Path == "plan.md" {
				writes = append(writes, ev)
			}
		}
	}
	if len(writes) != 2 {
		t.Fatalf("%d writes of /root/notes/plan.md in the log, want the first and its overwrite", len(writes))
	}
	first, over := fxDecode[events.NoteWritten](t, writes[0]), fxDecode[events.NoteWritten](t, writes[1])
	task := first.TaskID
	if first.Text == over.Text {
		t.Fatal("the overwrite did not change the note")
	}
	before, after := fmt.Sprint(writes[1].Position-1), fmt.Sprint(writes[1].Position)
	db := fxImport(t, log)
	for _, tc := range []struct {
		src                      []string
		until, agent, path, want string
	}{
		{[]string{"--log", log}, before, "/root", "plan.md", first.Text},
		{[]string{"--log", log}, after, "/root", "plan.md", over.Text},
		{[]string{"--log", log}, before, "/root/reviewer", "/root/notes/plan.md", first.Text},
		{[]string{"--log", log}, after, "/root/tester", "/root/notes/plan.md", over.Text},
		{[]string{"--db", db}, before, "/root", "plan.md", first.Text},
		{[]string{"--db", db}, after, "/root/reviewer", "/root/notes/plan.md", over.Text},
		{[]string{"--db", db}, "", "/root", "plan.md", over.Text},
	} {
		args := append(slices.Clone(tc.src), "--task", task, "--agent", tc.agent, "notes_read_file", `{"path":"`+tc.path+`"}`)
		if tc.until != "" {
			args = append([]string{"--until", tc.until}, args...)
		}
		d := fxToolDetails(t, args...)
		if d["text"] != tc.want || d["path"] != "/root/notes/plan.md" {
			t.Errorf("call %v: text %q, want %q", args, d["text"], tc.want)
		}
	}
	// Before the first write the note does not exist: the error envelope, exit 1.
	out, _, err := fxRun(t, nil, "call", "--log", log, "--until", fmt.Sprint(writes[0].Position-1),
		"--task", task, "--agent", "/root", "notes_read_file", `{"path":"plan.md"}`)
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("read before the note existed: %v (exit %d)", err, exitCode(err))
	}
	if e, _ := fxJSON(t, out)["error"].(map[string]any); e["code"] != "not_found" {
		t.Errorf("read before the note existed: %s", out)
	}
	// call --db reads and leaves the database as it was.
	exported := fxExport(t, "--db", db)
	if !bytes.Equal(exported, mustRead(t, log)) {
		t.Error("call --db changed the database")
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// fxBranches reconstructs an agent's branch after every branch change of
// a log: the position of the change and the branch it made.
func fxBranches(t *testing.T, evs []events.Event, agent string) ([]int64, [][]string) {
	t.Helper()
	var positions []int64
	var branches [][]string
	var cur []string
	for _, ev := range evs {
		if ev.Type != events.TypeHistoryBranchChanged {
			continue
		}
		p := fxDecode[events.HistoryBranchChanged](t, ev)
		if p.Agent != agent {
			continue
		}
		cur = append(slices.Clone(cur[:p.Keep]), p.Append...)
		positions = append(positions, ev.Position)
		branches = append(branches, cur)
	}
	return positions, branches
}

func fxItemIDs(t *testing.T, d map[string]any, list string) []string {
	t.Helper()
	var ids []string
	recs, _ := d[list].([]any)
	for _, r := range recs {
		ids = append(ids, r.(map[string]any)["item_id"].(string))
	}
	return ids
}

func TestCallUntilBranchSwitch(t *testing.T) {
	log := fxLog("branch-switch-compaction")
	evs := fxEvents(t, log)
	task := fxDecode[events.TaskCreated](t, evs[0]).TaskID
	positions, branches := fxBranches(t, evs, "/root")
	sw := -1
	for i := 1; i < len(branches); i++ {
		if len(branches[i]) <= len(branches[i-1]) || !slices.Equal(branches[i][:len(branches[i-1])], branches[i-1]) {
			sw = i
			break
		}
	}
	if sw < 0 {
		t.Fatal("the log has no branch switch")
	}
	a, b := branches[sw-1], branches[sw]
	onlyA := func(id string) bool { return slices.Contains(a, id) && !slices.Contains(b, id) }
	onlyB := func(id string) bool { return slices.Contains(b, id) && !slices.Contains(a, id) }
	search := func(until int64, query string) []string {
		t.Helper()
		d := fxToolDetails(t, "--log", log, "--until", fmt.Sprint(until), "--task", task, "--agent", "/root",
			"history_search_contents", `{"query":"`+query+`"}`)
		return fxItemIDs(t, d, "results")
	}
	for _, query := range []string{"approach", "faster"} {
		old, cur := search(positions[sw]-1, query), search(positions[sw], query)
		if len(old) == 0 || len(cur) == 0 {
			t.Fatalf("search %q: %v before the switch, %v after", query, old, cur)
		}
		if !slices.ContainsFunc(old, onlyA) || slices.ContainsFunc(old, onlyB) {
			t.Errorf("search %q before the switch (at %d) = %v; branch A %v, B %v", query, positions[sw]-1, old, a, b)
		}
		for _, id := range old {
			if !slices.Contains(a, id) {
				t.Errorf("search %q before the switch found %s, not on branch A", query, id)
			}
		}
		if !slices.ContainsFunc(cur, onlyB) || slices.ContainsFunc(cur, onlyA) {
			t.Errorf("search %q after the switch (at %d) = %v; branch A %v, B %v", query, positions[sw], cur, a, b)
		}
		for _, id := range cur {
			if !slices.Contains(b, id) {
				t.Errorf("search %q after the switch found %s, not on branch B", query, id)
			}
		}
	}
	// An A-only item reads before the switch and is not_found after it.
	aLeaf := a[len(a)-1]
	d := fxToolDetails(t, "--log", log, "--until", fmt.Sprint(positions[sw]-1), "--task", task, "--agent", "/root",
		"history_read_item", `{"window_id":"w2","item_id":"`+aLeaf+`"}`)
	if d["item_id"] != aLeaf {
		t.Errorf("read_item %s before the switch: %v", aLeaf, d)
	}
	out, _, err := fxRun(t, nil, "call", "--log", log, "--until", fmt.Sprint(positions[sw]), "--task", task, "--agent", "/root",
		"history_read_item", `{"window_id":"w2","item_id":"`+aLeaf+`"}`)
	if e, _ := fxJSON(t, out)["error"].(map[string]any); err == nil || e["code"] != "not_found" {
		t.Errorf("read_item %s after the switch: %v %s", aLeaf, err, out)
	}
}

func TestReplayCheckReads(t *testing.T) {
	// internal/forensics checks every log; here the verb, on two of them.
	for _, name := range []string{"manual-compact-reuse", "idempotent-retries"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rep := fxJSON(t, fxMust(t, "replay", fxLog(name), "--check-reads"))
			want := strings.TrimSpace(string(mustRead(t, filepath.Join(fxLogsDir, name+".digest"))))
			if rep["digest"] != want {
				t.Errorf("digest %v, committed %s", rep["digest"], want)
			}
			cr, _ := rep["check_reads"].(map[string]any)
			if cr == nil || cr["checked"].(float64) == 0 || len(cr["mismatches"].([]any)) != 0 {
				t.Errorf("check_reads %v", cr)
			}
		})
	}
}

// TestReplayPiSDKRolloverLog replays the committed log of a real Pi SDK
// session (clients/pi-extension/test/rollover.test.mjs writes it with
// UPDATE_LOGS=1) with --check-reads: every audited read gives the same
// result again. The file is part of the repository; its absence fails.
func TestReplayPiSDKRolloverLog(t *testing.T) {
	const log = "../../testdata/logs/pi-sdk-rollover.jsonl"
	lines := fxLines(t, log)
	out, stderr, err := fxRun(t, nil, "replay", log, "--check-reads")
	if err != nil { // exit 0
		t.Fatalf("replay --check-reads %s: %v (exit %d)\nstdout %s\nstderr %s", log, err, exitCode(err), out, stderr)
	}
	rep := fxJSON(t, out)
	if rep["events"] != float64(len(lines)) || rep["last_position"] != float64(len(lines)) || rep["windows"] != float64(2) {
		t.Errorf("replay summary %v, want %d events and the two windows of the rollover", rep, len(lines))
	}
	cr, _ := rep["check_reads"].(map[string]any)
	if cr == nil {
		t.Fatalf("no check_reads in %s", out)
	}
	if ms, ok := cr["mismatches"].([]any); !ok || len(ms) != 0 {
		t.Errorf("mismatches %v, want none", cr["mismatches"])
	}
	if n, _ := cr["checked"].(float64); n == 0 {
		t.Errorf("check_reads %v checked no read: the log should hold the session's audited history reads", cr)
	}
}

func TestReplayCheckReadsTampered(t *testing.T) {
	log := fxLog("fenced-checkpoint-retry")
	lines := fxLines(t, log)
	evs := fxEvents(t, log)
	at, rec := fxFirstAuditedRead(t, log)
	forged := strings.Repeat("0", 64)
	lines[at] = strings.Replace(lines[at], `"result_digest":"`+rec.ResultDigest+`"`, `"result_digest":"`+forged+`"`, 1)
	if lines[at] == fxLines(t, log)[at] {
		t.Fatal("the edit changed nothing")
	}
	bad := fxWriteLines(t, lines)
	out, _, err := fxRun(t, nil, "replay", bad, "--check-reads")
	if err == nil || exitCode(err) != 1 {
		t.Fatalf("replay --check-reads of a tampered log: %v (exit %d)", err, exitCode(err))
	}
	cr, _ := fxJSON(t, out)["check_reads"].(map[string]any)
	ms, _ := cr["mismatches"].([]any)
	if len(ms) != 1 {
		t.Fatalf("mismatches %v, want the tampered one", cr)
	}
	m := ms[0].(map[string]any)
	if m["position"] != float64(evs[at].Position) || m["want_digest"] != forged || m["got_digest"] != rec.ResultDigest ||
		m["tool"] != "notes_read_file" || m["read_position"] != float64(rec.ReadPosition) {
		t.Errorf("mismatch %v, want position %d read at %d", m, evs[at].Position, rec.ReadPosition)
	}
	// Without --check-reads the same log replays fine.
	fxMust(t, "replay", bad)
	// With --until before the tampered record it is not checked.
	fxMust(t, "replay", bad, "--check-reads", "--until", fmt.Sprint(evs[at].Position-1))
}

func TestVerifyAlteredProjection(t *testing.T) {
	db := fxImport(t, fxLog("manual-compact-reuse"))
	rep := fxJSON(t, fxMust(t, "verify", "--db", db))
	if rep["clean"] != true {
		t.Fatalf("verify of an imported log: %v", rep)
	}
	raw, err := sql.Open("sqlite", eventlog.FileURI(db, nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`UPDATE note_parts SET text = CAST('tampered' AS BLOB) WHERE path = 'checkpoint.md' AND part = 0`,
		`DELETE FROM history_items WHERE branch_index = 0`,
	} {
		res, err := raw.Exec(stmt)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("%s changed %d rows", stmt, n)
		}
	}
	raw.Close()
	out, _, err := fxRun(t, nil, "verify", "--db", db)
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "2 projection table(s)") {
		t.Fatalf("verify of an altered database: %v (exit %d)", err, exitCode(err))
	}
	rep = fxJSON(t, out)
	diffs, _ := rep["differences"].([]any)
	var tables []string
	for _, d := range diffs {
		d := d.(map[string]any)
		tables = append(tables, d["table"].(string))
		switch d["table"] {
		case "note_parts":
			if d["only_live"] != float64(1) || d["only_rebuilt"] != float64(1) || !strings.Contains(fmt.Sprint(d["sample_live"]), "tampered") {
				t.Errorf("note_parts difference %v", d)
			}
		case "history_items":
			if d["only_live"] != float64(0) || d["only_rebuilt"] != float64(1) {
				t.Errorf("history_items difference %v", d)
			}
		}
	}
	if rep["clean"] != false || !slices.Equal(tables, []string{"note_parts", "history_items"}) {
		t.Errorf("verify reported %v, want note_parts and history_items", rep)
	}
}

func TestImportRefusals(t *testing.T) {
	log := fxLog("idempotent-retries")
	lines := fxLines(t, log)

	db := fxImport(t, log)
	_, _, err := fxRun(t, nil, "import", "--db", db, log)
	if !errors.Is(err, eventlog.ErrNotEmpty) || exitCode(err) != 1 {
		t.Errorf("import into a non-empty database: %v (exit %d)", err, exitCode(err))
	}
	if again := fxExport(t, "--db", db); !bytes.Equal(again, mustRead(t, log)) {
		t.Error("the refused import changed the database")
	}

	for _, tc := range []struct {
		name string
		line int
		from string
		to   string
		want []string
	}{
		{"unknown type", 9, "", `"type":"note.deleted"`, []string{"line 9:", `"note.deleted"`, "unknown event type"}},
		{"newer schema", 12, `"schema":1`, `"schema":2`, []string{"line 12:", "schema 2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := slices.Clone(lines)
			if tc.from == "" {
				var ev events.Event
				if err := json.Unmarshal([]byte(bad[tc.line-1]), &ev); err != nil {
					t.Fatal(err)
				}
				tc.from = `"type":"` + ev.Type + `"`
			}
			bad[tc.line-1] = strings.Replace(bad[tc.line-1], tc.from, tc.to, 1)
			if bad[tc.line-1] == lines[tc.line-1] {
				t.Fatal("the edit changed nothing")
			}
			file := fxWriteLines(t, bad)
			dbC := filepath.Join(t.TempDir(), "memory.db")
			_, _, err := fxRun(t, nil, "import", "--db", dbC, file)
			if err == nil || exitCode(err) != 1 {
				t.Fatalf("import: %v (exit %d)", err, exitCode(err))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("import error %q does not name %s", err, w)
				}
			}
			if _, err := os.Stat(dbC); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the failed import left its database behind: %v", err)
			}
			// Replay refuses the same log, naming the same line.
			_, _, err = fxRun(t, nil, "replay", file)
			if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), tc.want[0]) {
				t.Errorf("replay: %v", err)
			}
		})
	}
}

func TestForensicsUsageErrors(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	log := fxLog("idempotent-retries")
	for _, args := range [][]string{
		{"replay"},
		{"replay", log, log},
		{"replay", log, "--until", "soon"},
		{"replay", log, "--bogus"},
		{"verify", "--db", db, "extra"},
		{"call", "--log", log, "notes_read_file", `{"path":"a.md"}`},               // no --task
		{"call", "--log", log, "--db", db, "--task", "T", "get_context_remaining"}, // both sources
		{"call", "--log", log, "--task", "T"},                                      // no tool
		{"call", "--log", log, "--task", "T", "notes_read_file", `{"path":`},       // bad JSON
		{"call", "--log", log, "--task", "T", "notes_read_file", "{}", "extra"},
		{"import-session", "--db", db},
		{"import-session", "--db", db, "a.jsonl", "b.jsonl"},
		{"import-session", "a.jsonl"},
	} {
		_, _, err := fxRun(t, nil, args...)
		var ue *usageError
		if !errors.As(err, &ue) || exitCode(err) != 2 {
			t.Errorf("memoryd %q: %v (exit %d), want a usage error (exit 2)", args, err, exitCode(err))
		}
	}
	if _, err := os.Stat(db); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a usage error created the database: %v", err)
	}
	// Failures of what was asked are exit 1.
	for _, args := range [][]string{
		{"replay", filepath.Join(dir, "missing.jsonl")},
		{"verify", "--db", filepath.Join(dir, "missing.db")},
		{"call", "--log", log, "--task", "T", "notes_read_file", `{"path":"a.md"}`},
		{"call", "--log", log, "--task", "T", "no_such_tool"},
		{"import-session", "--db", db, filepath.Join(dir, "missing.jsonl")},
	} {
		if _, _, err := fxRun(t, nil, args...); err == nil || exitCode(err) != 1 {
			t.Errorf("memoryd %q: %v (exit %d), want exit 1", args, err, exitCode(err))
		}
	}
}

// fxSession is a Pi session file with two branches sharing a prefix and a
// compaction: entries s01–s08 are branch A (the compaction s06 opens w2),
// s09–s10 branch B from s03 (before the compaction), and s11–s12 continue
// A, so the last line is on A.
var fxSession = []string{
	`{"type":"session","version":3,"id":"5e551011-aaaa-4bbb-8ccc-0123456789ab","timestamp":"2026-12-02T09:00:00.000Z","cwd":"/home/dev/ci"}`,
	`{"type":"message","id":"s01","parentId":null,"timestamp":"2026-12-02T09:00:01.000Z","message":{"role":"user","content":"Set up CI for the repository.","timestamp":1795597201000}}`,
	`{"type":"message","id":"s02","parentId":"s01","timestamp":"2026-12-02T09:00:02.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"Which CI?"},{"type":"text","text":"Which CI system should I use?"}],"stopReason":"stop","timestamp":1795597202000}}`,
	`{"type":"message","id":"s03","parentId":"s02","timestamp":"2026-12-02T09:00:03.000Z","message":{"role":"user","content":"Use GitHub Actions.","timestamp":1795597203000}}`,
	`{"type":"message","id":"s04","parentId":"s03","timestamp":"2026-12-02T09:00:04.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"toolu_s1","name":"bash","arguments":{"command":"mkdir -p .github/workflows"}}],"stopReason":"toolUse","timestamp":1795597204000}}`,
	`{"type":"message","id":"s05","parentId":"s04","timestamp":"2026-12-02T09:00:05.000Z","message":{"role":"toolResult","toolCallId":"toolu_s1","toolName":"bash","content":[{"type":"text","text":"created .github/workflows"}],"isError":false,"timestamp":1795597205000}}`,
	`{"type":"compaction","id":"s06","parentId":"s05","timestamp":"2026-12-02T09:00:06.000Z","summary":"CI with GitHub Actions: the workflows folder exists.","firstKeptEntryId":"s05","tokensBefore":120000}`,
	`{"type":"message","id":"s07","parentId":"s06","timestamp":"2026-12-02T09:00:07.000Z","message":{"role":"user","content":"Add a lint job to the CI workflow.","timestamp":1795597207000}}`,
	`{"type":"message","id":"s08","parentId":"s07","timestamp":"2026-12-02T09:00:08.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Added a golangci-lint job to ci.yml."}],"stopReason":"stop","timestamp":1795597208000}}`,
	`{"type":"message","id":"s09","parentId":"s03","timestamp":"2026-12-02T09:00:09.000Z","message":{"role":"user","content":"Actually, use GitLab pipelines instead.","timestamp":1795597209000}}`,
	`{"type":"message","id":"s10","parentId":"s09","timestamp":"2026-12-02T09:00:10.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Wrote .gitlab-ci.yml with a lint stage."}],"stopReason":"stop","timestamp":1795597210000}}`,
	`{"type":"message","id":"s11","parentId":"s08","timestamp":"2026-12-02T09:00:11.000Z","message":{"role":"user","content":"Back to GitHub Actions: also cache the Go module download in CI.","timestamp":1795597211000}}`,
	`{"type":"message","id":"s12","parentId":"s11","timestamp":"2026-12-02T09:00:12.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Added actions/setup-go with cache: true to the lint job."}],"stopReason":"stop","timestamp":1795597212000}}`,
}

var fxSessionBranch = []string{"s01", "s02", "s03", "s04", "s05", "s06", "s07", "s08", "s11", "s12"}

func TestImportSession(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	file := filepath.Join(dir, "2026-12-02T09-00-00-000Z_ci.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(fxSession, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "imported", "memory.db")
	res := fxJSON(t, fxMust(t, "import-session", "--db", db, file))
	task, _ := res["task_id"].(string)
	if task == "" || res["agent"] != "/root" || res["resumed"] != false || res["entries"] != float64(12) ||
		res["stored"] != float64(12) || res["branch"] != float64(10) || res["current_window_id"] != "w2" {
		t.Fatalf("import-session printed %v", res)
	}
	exported := fxExport(t, "--db", db)

	// The reference: the same session synced as the extension would.
	svc, err := openService(ctx, os.Getenv, filepath.Join(dir, "ref", "memory.db"), "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	att, err := svc.Attach(ctx, memory.AttachRequest{SessionKey: file, SessionID: "5e551011-aaaa-4bbb-8ccc-0123456789ab", SessionFile: file}, "")
	if err != nil {
		t.Fatal(err)
	}
	cc := memory.CallContext{TaskID: att.TaskID, Agent: att.Agent}
	var entries []json.RawMessage
	for _, l := range fxSession[1:] {
		entries = append(entries, json.RawMessage(l))
	}
	branch := slices.Clone(fxSessionBranch)
	if _, err := svc.Sync(ctx, memory.SyncRequest{Context: cc, Entries: entries, Branch: &branch}, ""); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, args string }{
		{"history_list_windows", `{}`},
		{"history_list_items", `{}`},
		{"history_list_items", `{"window_id":"w1"}`},
		{"history_list_items", `{"window_id":"w2","role":"user"}`},
		{"history_search_contents", `{"query":"GitHub Actions"}`},
		{"history_search_contents", `{"query":"GitLab"}`},
		{"history_search_contents", `{"query":"lint"}`},
		{"history_read_item", `{"window_id":"w2","item_id":"s06"}`},
		{"history_read_item", `{"window_id":"w2","item_id":"s12","offset_chars":6,"limit_chars":10}`},
		{"history_read_item", `{"window_id":"w1","item_id":"s04"}`},
		{"history_read_item", `{"window_id":"w1","item_id":"s09"}`},
		{"get_context_remaining", `{}`},
	} {
		out, _, err := fxRun(t, nil, "call", "--db", db, "--task", task, "--agent", "/root", c.tool, c.args)
		want, werr := svc.CallTool(ctx, c.tool, cc, json.RawMessage(c.args), "")
		if (err != nil) != (werr != nil) {
			t.Errorf("%s %s: import-session gives %v, a synced session %v", c.tool, c.args, err, werr)
			continue
		}
		var got, exp any
		if err := json.Unmarshal([]byte(out), &got); err != nil {
			t.Fatal(err)
		}
		var b []byte
		if werr != nil {
			_, body := api.ErrorEnvelope(werr)
			b, _ = json.Marshal(body)
		} else {
			b, _ = json.Marshal(want)
		}
		if err := json.Unmarshal(b, &exp); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("%s %s:\nimport-session %s\nsynced         %s", c.tool, c.args, out, b)
		}
	}

	// Explicitly: two windows, the items of branch A only, B's stored but not listed.
	d := fxToolDetails(t, "--db", db, "--task", task, "history_list_windows", `{}`)
	if ws, _ := d["windows"].([]any); len(ws) != 2 {
		t.Errorf("windows %v", d)
	}
	d = fxToolDetails(t, "--db", db, "--task", task, "history_list_items", `{"limit":200}`)
	if ids := fxItemIDs(t, d, "results"); !slices.Equal(ids, fxSessionBranch) {
		t.Errorf("items %v, want the branch of the last entry %v", ids, fxSessionBranch)
	}
	d = fxToolDetails(t, "--db", db, "--task", task, "history_search_contents", `{"query":"GitLab"}`)
	if ids := fxItemIDs(t, d, "results"); len(ids) != 0 {
		t.Errorf("search GitLab found %v off the branch", ids)
	}
	d = fxToolDetails(t, "--db", db, "--task", task, "history_search_contents", `{"query":"cache"}`)
	if ids := fxItemIDs(t, d, "results"); !slices.Equal(ids, []string{"s11", "s12"}) {
		t.Errorf("search cache found %v", ids)
	}
	d = fxToolDetails(t, "--db", db, "--task", task, "history_read_item", `{"window_id":"w1","item_id":"s04"}`)
	if !strings.Contains(d["content"].(string), `[tool_call bash] {"command":"mkdir -p .github/workflows"}`) {
		t.Errorf("read_item s04: %v", d)
	}

	// Importing the same file again stores nothing new.
	res = fxJSON(t, fxMust(t, "import-session", "--db", db, file))
	if res["task_id"] != task || res["resumed"] != true || res["stored"] != float64(0) || res["revision"] != float64(1) {
		t.Errorf("second import-session printed %v", res)
	}
	if again := fxExport(t, "--db", db); !bytes.Equal(again, exported) {
		t.Errorf("the second import-session changed the log:\n%s", again[len(exported):])
	}

	// The session goes on, back on branch B: a new import stores the new
	// entry and switches to the branch of the (new) last entry.
	more := `{"type":"message","id":"s13","parentId":"s10","timestamp":"2026-12-02T09:00:13.000Z","message":{"role":"user","content":"Keep the GitLab pipeline after all.","timestamp":1795597213000}}`
	if err := os.WriteFile(file, []byte(strings.Join(append(slices.Clone(fxSession), more), "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res = fxJSON(t, fxMust(t, "import-session", "--db", db, file))
	if res["task_id"] != task || res["stored"] != float64(1) || res["branch"] != float64(6) || res["revision"] != float64(2) || res["current_window_id"] != "w1" {
		t.Errorf("import-session of the grown file printed %v", res)
	}
	d = fxToolDetails(t, "--db", db, "--task", task, "history_list_items", `{}`)
	if ids := fxItemIDs(t, d, "results"); !slices.Equal(ids, []string{"s01", "s02", "s03", "s09", "s10", "s13"}) {
		t.Errorf("items after the switch to B: %v", ids)
	}
	d = fxToolDetails(t, "--db", db, "--task", task, "history_search_contents", `{"query":"GitLab"}`)
	if ids := fxItemIDs(t, d, "results"); !slices.Equal(ids, []string{"s09", "s13"}) {
		t.Errorf("search GitLab on branch B found %v", ids)
	}
	// The imported log verifies.
	if rep := fxJSON(t, fxMust(t, "verify", "--db", db)); rep["clean"] != true {
		t.Errorf("verify after import-session: %v", rep)
	}
}

func TestReplayIntoNamedDatabase(t *testing.T) {
	log := fxLog("idempotent-retries")
	out := filepath.Join(t.TempDir(), "replayed.db")
	rep := fxJSON(t, fxMust(t, "replay", log, "--db", out))
	if want := strings.TrimSpace(string(mustRead(t, filepath.Join(fxLogsDir, "idempotent-retries.digest")))); rep["digest"] != want {
		t.Errorf("replay --db digest %v, committed %s", rep["digest"], want)
	}
	if got := fxExport(t, "--db", out); !bytes.Equal(got, mustRead(t, log)) {
		t.Error("the database replay --db wrote does not export the log")
	}
	// A second replay into it is refused, with or without --check-reads,
	// as import refuses it: naming no line of the log.
	for _, extra := range [][]string{nil, {"--check-reads"}} {
		_, _, err := fxRun(t, nil, append([]string{"replay", log, "--db", out}, extra...)...)
		if !errors.Is(err, eventlog.ErrNotEmpty) || exitCode(err) != 1 || strings.Contains(err.Error(), "line ") {
			t.Errorf("replay %v into a non-empty database: %v (exit %d), want ErrNotEmpty naming no line", extra, err, exitCode(err))
		}
	}
	// --until cuts the log: the summary counts the events up to it.
	rep = fxJSON(t, fxMust(t, "replay", log, "--until", "20", "--check-reads"))
	if rep["events"] != float64(20) || rep["last_position"] != float64(20) {
		t.Errorf("replay --until 20: %v", rep)
	}
}

// TestReplayStdin: replay reads the log from stdin ("-"), also with
// --check-reads, which reads the log twice.
func TestReplayStdin(t *testing.T) {
	name := "idempotent-retries"
	want := strings.TrimSpace(string(mustRead(t, filepath.Join(fxLogsDir, name+".digest"))))
	for _, extra := range [][]string{nil, {"--check-reads"}} {
		out, stderr, err := fxRun(t, bytes.NewReader(mustRead(t, fxLog(name))), append([]string{"replay", "-"}, extra...)...)
		if err != nil {
			t.Fatalf("replay - %v: %v\n%s\n%s", extra, err, stderr, out)
		}
		rep := fxJSON(t, out)
		if rep["digest"] != want || rep["events"] != float64(len(fxEvents(t, fxLog(name)))) {
			t.Errorf("replay - %v: %v events, digest %v; want %s", extra, rep["events"], rep["digest"], want)
		}
		if extra != nil {
			if cr, _ := rep["check_reads"].(map[string]any); cr == nil || cr["checked"].(float64) == 0 {
				t.Errorf("replay - --check-reads checked nothing: %v", cr)
			}
		}
	}
}

// fxFirstAuditedRead returns the line index and record of the first
// successful audited notes_read_file of the scenario log at path.
func fxFirstAuditedRead(t *testing.T, path string) (int, *events.CallRecord) {
	t.Helper()
	for i, ev := range fxEvents(t, path) {
		if ev.Type == events.TypeToolCalled {
			for _, r := range fxDecode[events.ToolCalled](t, ev).Calls {
				if r.Tool == "notes_read_file" && r.Outcome == "ok" {
					return i, &r
				}
			}
		}
	}
	t.Fatal("no audited notes_read_file in the log")
	return -1, nil
}
