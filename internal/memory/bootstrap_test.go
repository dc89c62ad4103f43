package memory

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/tools"
)

// updateBootstrap rewrites the golden files of renderBootstrap:
//
//	go test ./internal/memory -run TestBootstrapGolden -update
var updateBootstrap = flag.Bool("update", false, "rewrite the bootstrap golden files in testdata/bootstrap")

// bootstrapGoldenDir holds the golden files (the repository's testdata).
const bootstrapGoldenDir = "../../testdata/bootstrap"

// bsNotes returns n notes n00.md… with updated positions in the order
// given by pos (a higher position is newer).
func bsNotes(n int, name func(i int) string) []projections.NoteInfo {
	out := make([]projections.NoteInfo, n)
	for i := range out {
		out[i] = projections.NoteInfo{
			Path:            name(i),
			Bytes:           int64(100 + i),
			CreatedAt:       "2026-12-02T10:00:00.000Z",
			UpdatedAt:       fmt.Sprintf("2026-12-02T10:%02d:%02d.000Z", i/60, i%60),
			CreatedPosition: int64(i + 1),
			UpdatedPosition: int64(i + 1),
		}
	}
	return out
}

func bsRequests(n int) []requestLine {
	out := make([]requestLine, n)
	for i := range out {
		out[i] = requestLine{WindowID: "w1", ItemID: fmt.Sprintf("e%d", i+1), Preview: fmt.Sprintf("request %d: fix the \"flaky\" test", i+1)}
	}
	return out
}

// bsBase is the input of a rollover from w1 to w2 of /root.
func bsBase() bootstrapInput {
	return bootstrapInput{agent: "/root", reason: "new_context", firstWindow: "w1", current: "w2", previous: "w1"}
}

// bsQuotedPaths are note paths a model may well write: quotes, newlines,
// backslashes, tabs and non-ASCII text.
var bsQuotedPaths = []string{
	`say "hi".md`,
	"two\nlines.md",
	`back\slash "and" quote`,
	"tab\there/ünïcode 😀.md",
}

// bsLongPath is a note path of 500 code points (the limit is 512).
func bsLongPath(i int) string {
	return fmt.Sprintf("long/%02d-", i) + strings.Repeat("ß", 500-len(fmt.Sprintf("long/%02d-", i))-3) + ".md"
}

func bootstrapGoldenCases() []struct {
	name string
	in   bootstrapInput
} {
	noNotes := bsBase()

	three := bsBase()
	three.agent, three.reason = "/root/reviewer", "fallback"
	three.current, three.previous = "w4", "w3"
	three.requests = bsRequests(2)
	// Given by path; the index orders them newest updated first.
	three.notes = []projections.NoteInfo{
		{Path: "a.md", Bytes: 12, UpdatedAt: "2026-12-02T10:00:03.000Z", UpdatedPosition: 30},
		{Path: "checkpoint.md", Bytes: 2048, UpdatedAt: "2026-12-02T10:00:09.000Z", UpdatedPosition: 90},
		{Path: "plans/next.md", Bytes: 0, UpdatedAt: "2026-12-02T10:00:01.000Z", UpdatedPosition: 10},
	}

	thirty := bsBase()
	thirty.reason = "hard_rollover"
	thirty.requests, thirty.olderRequests = bsRequests(25), 4
	thirty.notes = bsNotes(30, func(i int) string { return fmt.Sprintf("n%02d.md", i) })

	quoted := bsBase()
	quoted.notes = bsNotes(len(bsQuotedPaths), func(i int) string { return bsQuotedPaths[i] })

	long := bsBase()
	long.reason = "manual_compact"
	long.notes = bsNotes(25, bsLongPath)

	unavailable := bsBase()
	unavailable.reason, unavailable.current, unavailable.previous = "overflow", "w1", ""
	unavailable.notes = bsNotes(3, func(i int) string { return fmt.Sprintf("n%d.md", i) })
	unavailable.notesErr = errors.New("disk I/O error")

	return []struct {
		name string
		in   bootstrapInput
	}{
		{"no_notes", noNotes},
		{"three_notes", three},
		{"thirty_notes", thirty},
		{"quoted_paths", quoted},
		{"long_paths", long},
		{"index_unavailable", unavailable},
	}
}

func TestBootstrapGolden(t *testing.T) {
	for _, c := range bootstrapGoldenCases() {
		t.Run(c.name, func(t *testing.T) {
			got := renderBootstrap(c.in)
			if again := renderBootstrap(c.in); again != got {
				t.Fatal("renderBootstrap is not deterministic")
			}
			path := filepath.Join(bootstrapGoldenDir, c.name+".txt")
			if *updateBootstrap {
				if err := os.MkdirAll(bootstrapGoldenDir, 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("renderBootstrap differs from %s (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
			}
		})
	}
}

// bsIndex returns the lines of the notes index of a bootstrap text.
func bsIndex(tb testing.TB, text, agent string) []string {
	tb.Helper()
	head := "Existing notes for " + agent + " at this context-window reset"
	i := strings.Index(text, head)
	if i < 0 {
		tb.Fatalf("no notes index in\n%s", text)
	}
	lines := strings.Split(strings.TrimSuffix(text[i:], "\n"), "\n")
	return lines[1:]
}

type bsLine struct {
	Path      string `json:"path"`
	Bytes     int64  `json:"bytes"`
	UpdatedAt string `json:"updated_at"`
}

func bsDecode(tb testing.TB, line string) bsLine {
	tb.Helper()
	var l bsLine
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		tb.Fatalf("index line %q is not a whole {path,bytes,updated_at} record: %v", line, err)
	}
	return l
}

func TestBootstrapNotesIndexContent(t *testing.T) {
	cases := map[string]bootstrapInput{}
	for _, c := range bootstrapGoldenCases() {
		cases[c.name] = c.in
	}

	t.Run("no notes", func(t *testing.T) {
		in := cases["no_notes"]
		text := renderBootstrap(in)
		if lines := bsIndex(t, text, "/root"); len(lines) != 1 || lines[0] != "There are no note files for this agent yet." {
			t.Errorf("index %q", lines)
		}
		for _, want := range []string{"<context_window_reset/>\n", "NOT a conversation summary", "First context window id: w1\n",
			"Current context window id: w2\n", "Previous context window id: w1\n", "There are no user requests",
			"Take incremental notes while you work so you do not miss important info."} {
			if !strings.Contains(text, want) {
				t.Errorf("bootstrap lacks %q", want)
			}
		}
		if !strings.HasPrefix(text, "<context_window_reset/>") {
			t.Error("bootstrap does not start with the marker")
		}
	})
	t.Run("three notes newest first, full paths of the agent", func(t *testing.T) {
		lines := bsIndex(t, renderBootstrap(cases["three_notes"]), "/root/reviewer")
		want := []string{"/root/reviewer/notes/checkpoint.md", "/root/reviewer/notes/a.md", "/root/reviewer/notes/plans/next.md"}
		if len(lines) != len(want) {
			t.Fatalf("index %q", lines)
		}
		for i, l := range lines {
			if got := bsDecode(t, l).Path; got != want[i] {
				t.Errorf("line %d path %q, want %q", i, got, want[i])
			}
		}
	})
	t.Run("thirty notes: 25 shown, 5 omitted", func(t *testing.T) {
		text := renderBootstrap(cases["thirty_notes"])
		lines := bsIndex(t, text, "/root")
		if len(lines) != 26 {
			t.Fatalf("%d lines:\n%s", len(lines), strings.Join(lines, "\n"))
		}
		for i, l := range lines[:25] {
			if got, want := bsDecode(t, l).Path, fmt.Sprintf("/root/notes/n%02d.md", 29-i); got != want {
				t.Errorf("line %d path %q, want %q", i, got, want)
			}
		}
		var om struct {
			Omitted int    `json:"omitted"`
			Hint    string `json:"hint"`
		}
		if err := json.Unmarshal([]byte(lines[25]), &om); err != nil || om.Omitted != 5 || !strings.Contains(om.Hint, "notes_list_files_by_prefix") {
			t.Errorf("omission line %q", lines[25])
		}
		if !strings.Contains(text, "(4 older user request(s) not shown") {
			t.Error("older user requests not pointed to")
		}
	})
	t.Run("quoted paths are escaped and round-trip", func(t *testing.T) {
		lines := bsIndex(t, renderBootstrap(cases["quoted_paths"]), "/root")
		if len(lines) != len(bsQuotedPaths) {
			t.Fatalf("index %q", lines)
		}
		got := map[string]bool{}
		for _, l := range lines {
			if strings.ContainsAny(l, "\n\t") {
				t.Errorf("line %q has a raw control character", l)
			}
			got[bsDecode(t, l).Path] = true
		}
		for _, p := range bsQuotedPaths {
			if !got["/root/notes/"+p] {
				t.Errorf("path %q not found exactly in the index", p)
			}
		}
	})
	t.Run("long paths stop at 6000 code points on a whole line", func(t *testing.T) {
		lines := bsIndex(t, renderBootstrap(cases["long_paths"]), "/root")
		total := 0
		for _, l := range lines {
			total += chars(l) + 1
		}
		if total-1 > bootstrapNotesChars {
			t.Errorf("index is %d code points, over %d", total-1, bootstrapNotesChars)
		}
		kept := len(lines) - 1
		if kept < 1 || kept >= 25 {
			t.Fatalf("kept %d of 25 long lines", kept)
		}
		for _, l := range lines[:kept] {
			bsDecode(t, l)
		}
		// One more line would not have fitted beside the omission line.
		n := cases["long_paths"].notes[24-kept] // newest first: 24, 23, …
		next := compactJSON(notesLine{Path: "/root/notes/" + n.Path, Bytes: n.Bytes, UpdatedAt: n.UpdatedAt})
		if total+chars(next)+1-1 <= bootstrapNotesChars {
			t.Errorf("stopped early: %d + %d fits in %d", total, chars(next)+1, bootstrapNotesChars)
		}
		if !strings.Contains(lines[kept], fmt.Sprintf(`"omitted":%d`, 25-kept)) || !strings.Contains(lines[kept], "notes_list_files_by_prefix") {
			t.Errorf("omission line %q", lines[kept])
		}
	})
	t.Run("index unavailable still renders", func(t *testing.T) {
		text := renderBootstrap(cases["index_unavailable"])
		lines := bsIndex(t, text, "/root")
		if len(lines) != 1 || !strings.Contains(lines[0], "unavailable") || !strings.Contains(lines[0], "notes_list_files_by_prefix") {
			t.Errorf("index %q", lines)
		}
		if strings.Contains(text, "disk I/O error") {
			t.Error("the internal error text leaked into the bootstrap")
		}
		if strings.Contains(text, "Previous context window id") {
			t.Error("a first window has no previous window")
		}
	})
}

// TestBootstrapQuotedPathsOpen: the quoted paths of the golden file, as
// the model reads them, open the notes through notes_read_file.
func TestBootstrapQuotedPathsOpen(t *testing.T) {
	s := mustOpenService(t)
	cc := mustAttach(t, s, "/s/bootstrap-quoted.jsonl")
	for i, p := range bsQuotedPaths {
		args, _ := json.Marshal(map[string]string{"path": p, "text": fmt.Sprintf("body %d", i)})
		mustCall(t, s, cc, tools.NotesWriteFile, string(args))
	}
	golden, err := os.ReadFile(filepath.Join(bootstrapGoldenDir, "quoted_paths.txt"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bsIndex(t, string(golden), "/root")
	if len(lines) != len(bsQuotedPaths) {
		t.Fatalf("golden index %q", lines)
	}
	for _, l := range lines {
		path := bsDecode(t, l).Path
		args, _ := json.Marshal(map[string]string{"path": path})
		d := detailsMap(t, mustCall(t, s, cc, tools.NotesReadFile, string(args)))
		if d["path"] != path || !strings.HasPrefix(d["text"].(string), "body ") {
			t.Errorf("notes_read_file %q: %v", path, d)
		}
	}
	// And the bootstrap the service builds lists them the same way.
	mustCall(t, s, cc, tools.NewContext, `{}`)
	res, err := s.PrepareRollover(fcCtx, cc, "new_context", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range bsIndex(t, *res.Bootstrap, "/root") {
		found := false
		for _, p := range bsQuotedPaths {
			found = found || bsDecode(t, l).Path == "/root/notes/"+p
		}
		if !found {
			t.Errorf("service bootstrap line %q names no written note", l)
		}
	}
}
