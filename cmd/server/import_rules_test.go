package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
)

// fxEditEvent rewrites one line of an exported log: edit gets its envelope
// and its data, decoded.
func fxEditEvent(t *testing.T, line string, edit func(env, data map[string]any)) string {
	t.Helper()
	var env map[string]any
	dec := json.NewDecoder(strings.NewReader(line))
	dec.UseNumber()
	if err := dec.Decode(&env); err != nil {
		t.Fatal(err)
	}
	data := env["data"].(map[string]any)
	edit(env, data)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(env); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(buf.String(), "\n")
}

// fxExit is the exit code of a verb that returned err.
func fxExit(err error) int {
	if err == nil {
		return 0
	}
	return exitCode(err)
}

// fxNothingLeft fails unless dir is empty: a refused verb left no
// database, -wal, -shm, -journal or token file, and no folder, behind.
func fxNothingLeft(t *testing.T, what, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) > 0 {
		t.Errorf("%s left %v behind", what, names)
	}
}

// TestImportRefusesBrokenPayloads: each of these logs (issue 17) was
// imported with exit 0, and verify then said clean. Import, replay and
// replay --db refuse each with exit 1, naming its line (1-based) and the
// rule, and leave no file behind.
func TestImportRefusesBrokenPayloads(t *testing.T) {
	log := fxLog("cross-agent-notes")
	lines := fxLines(t, log)
	at := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, `"type":"note.appended"`) })
	if at < 0 {
		t.Fatal("the log has no note.appended")
	}
	task := fxEvents(t, log)[0].TaskID()
	set := func(key string, v any) func(env, data map[string]any) {
		return func(_, data map[string]any) { data[key] = v }
	}
	// asNext makes the note.appended one more event at the end of the log,
	// of a new stream, with f's changes.
	asNext := func(f func(env, data map[string]any)) func(env, data map[string]any) {
		return func(env, data map[string]any) {
			env["position"], env["stream_version"] = len(lines)+1, 1
			env["id"] = ulid.MustNew(ulid.Now(), ulid.DefaultEntropy()).String()
			delete(data, "call_id") // a call of its own
			f(env, data)
		}
	}
	for _, tc := range []struct {
		name string
		edit func(string) string
		last bool // the edited event is appended to the log instead of replacing its line
		want string
	}{
		{name: "a duplicate type key", edit: func(l string) string { return strings.TrimSuffix(l, "}") + `,"type":"note.written"}` },
			want: `invalid event: the event has the key "type" twice in one object`},
		{name: "a path out of the notes root", edit: func(l string) string { return fxEditEvent(t, l, set("path", "../../etc/passwd")) },
			want: `path: note path "../../etc/passwd" may not contain a ".." segment`},
		{name: "no path", edit: func(l string) string {
			return fxEditEvent(t, l, func(_, data map[string]any) { delete(data, "path") })
		}, want: "path: note path is empty"},
		{name: "a note of 2 MB", edit: func(l string) string { return fxEditEvent(t, l, set("text", strings.Repeat("x", 2_000_000))) },
			want: "text: 2000000 bytes; a note file holds at most 1000000 bytes"},
		{name: "a note of 60 MB", edit: func(l string) string {
			// Spliced in: encoding 60 MB with encoding/json is slow under -race.
			return strings.Replace(fxEditEvent(t, l, set("text", "@TEXT@")), "@TEXT@", strings.Repeat("x", 60_000_000), 1)
		}, want: "text: 60000000 bytes; a note file holds at most 1000000 bytes"},
		{name: "a raw 0xFF byte in a string", edit: func(l string) string { return strings.Replace(l, `"text":"`, "\"text\":\"\xff", 1) },
			want: "invalid event: the event is not valid UTF-8"},
		{name: "an agent never registered", last: true, edit: func(l string) string {
			return fxEditEvent(t, l, asNext(func(env, data map[string]any) {
				env["stream"], data["agent"] = task+"/root/ghost", "/root/ghost"
			}))
		}, want: "agent /root/ghost is not registered in task " + task},
		{name: "an unknown task", last: true, edit: func(l string) string {
			return fxEditEvent(t, l, asNext(func(env, data map[string]any) {
				env["stream"], data["task_id"], data["agent"], data["by"] = "01ZZZZZZZZZZZZZZZZZZZZZZZZ/root", "01ZZZZZZZZZZZZZZZZZZZZZZZZ", "/root", "/root"
			}))
		}, want: "task 01ZZZZZZZZZZZZZZZZZZZZZZZZ does not exist"},
		{name: "an unknown payload field", edit: func(l string) string { return fxEditEvent(t, l, set("colour", "red")) },
			want: `unknown field "colour"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := slices.Clone(lines)
			line := fmt.Sprintf("line %d: ", at+1)
			if tc.last {
				bad = append(bad, tc.edit(lines[at]))
				line = fmt.Sprintf("line %d: ", len(bad))
			} else {
				bad[at] = tc.edit(bad[at])
			}
			file := fxWriteLines(t, bad)
			dir := t.TempDir()
			_, _, err := fxRun(t, nil, "import", "--db", filepath.Join(dir, "new", "memory.db"), file)
			if err == nil || fxExit(err) != 1 || !strings.HasPrefix(err.Error(), line) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("import: %v (exit %d); want exit 1 naming %q and %q", err, fxExit(err), line, tc.want)
			}
			fxNothingLeft(t, "the refused import", dir)
			if tc.name == "a note of 60 MB" {
				return // replay reads the log as import does: not read 60 MB more times
			}
			for _, args := range [][]string{{"replay", file}, {"replay", file, "--db", filepath.Join(dir, "out", "replayed.db")}} {
				_, _, err := fxRun(t, nil, args...)
				if err == nil || fxExit(err) != 1 || !strings.HasPrefix(err.Error(), line) || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("%v: %v (exit %d); want exit 1 naming %q and %q", args[:len(args)-1], err, fxExit(err), line, tc.want)
				}
			}
			fxNothingLeft(t, "the refused replay --db", dir)
		})
	}
}

// TestVerifyReportsBrokenRules: verify reports the events of a database
// that an import would refuse (written by an older memoryd, or edited by
// hand), beside the differences, with exit 1.
func TestVerifyReportsBrokenRules(t *testing.T) {
	log := fxLog("cross-agent-notes")
	evs := fxEvents(t, log)
	var appended, written int64
	for _, ev := range evs {
		if ev.Type == "note.appended" && appended == 0 {
			appended = ev.Position
		}
		if ev.Type == "note.written" && ev.Position > appended && appended > 0 && written == 0 {
			written = ev.Position
		}
	}
	db := fxImport(t, log)
	edit := func(stmt string, args ...any) {
		t.Helper()
		raw, err := sql.Open("sqlite", db)
		if err != nil {
			t.Fatal(err)
		}
		defer raw.Close()
		res, err := raw.Exec(stmt, args...)
		if err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
		if n, _ := res.RowsAffected(); n != 1 {
			t.Fatalf("%s changed %d rows", stmt, n)
		}
	}
	verify := func() (map[string]any, error) {
		t.Helper()
		out, _, err := fxRun(t, nil, "verify", "--db", db)
		return fxJSON(t, out), err
	}

	// An unknown field changes no projection: a violation only.
	edit(`UPDATE events SET data = json_set(data, '$.colour', 'red') WHERE position = ?`, appended)
	rep, err := verify()
	want := fmt.Sprintf("1 event(s) break a rule that an import enforces (the first at position %d)", appended)
	if err == nil || fxExit(err) != 1 || err.Error() != want {
		t.Errorf("verify: %v (exit %d), want exit 1: %s", err, fxExit(err), want)
	}
	vs, _ := rep["violations"].([]any)
	if rep["clean"] != false || len(vs) != 1 || fmt.Sprint(rep["differences"]) != "[]" {
		t.Fatalf("verify reported %v", rep)
	}
	if v := vs[0].(map[string]any); v["position"] != float64(appended) || v["type"] != "note.appended" || v["rule"] != `unknown field "colour"` {
		t.Errorf("violation %v", v)
	}

	// A note path edited out of its root: a violation, and the rebuilt
	// note is where the log says (the live one is not).
	edit(`UPDATE events SET data = json_set(data, '$.path', '../escape.md') WHERE position = ?`, written)
	rep, err = verify()
	if err == nil || fxExit(err) != 1 || !strings.Contains(err.Error(), "projection table(s) differ") || !strings.Contains(err.Error(), "2 event(s) break a rule") {
		t.Errorf("verify: %v (exit %d)", err, fxExit(err))
	}
	vs, _ = rep["violations"].([]any)
	if len(vs) != 2 || vs[1].(map[string]any)["position"] != float64(written) || vs[1].(map[string]any)["rule"] != `path: note path "../escape.md" may not contain a ".." segment` {
		t.Errorf("violations %v", vs)
	}
	if ds, _ := rep["differences"].([]any); len(ds) == 0 {
		t.Errorf("no differences reported for a note whose path was edited: %v", rep)
	}

	// call --db reads the database's log as verify does: it runs, naming
	// the events an import would refuse.
	_, stderr, err := fxRun(t, nil, "call", "--db", db, "--task", evs[0].TaskID(), "--agent", "/root", "get_context_remaining", "{}")
	if err != nil || !strings.Contains(stderr, fmt.Sprintf(`warning: invalid event: note.appended at position %d: unknown field "colour"`, appended)) {
		t.Errorf("call --db: %v, stderr %q", err, stderr)
	}
}
