package inspector_test

import (
	"fmt"
	"strings"
	"testing"
)

// perPage is how many revisions the notes page lists at once.
const perPage = 50

// TestNotesRevisionsPaged: a note with more revisions than a page lists
// the newest perPage first, and the "older" links walk back to the
// first one; the file list and the count still cover every revision.
func TestNotesRevisionsPaged(t *testing.T) {
	s := newUIServer(t)
	root := attach(t, s.svc, "/sessions/notes.jsonl")
	const n = 2*perPage + 20
	tool(t, s.svc, root, "w0", "notes_write_file", `{"path":"log.md","text":"start\n"}`)
	for i := 2; i <= n; i++ {
		tool(t, s.svc, root, fmt.Sprint("a", i), "notes_append_to_file", `{"path":"log.md","text":"x\n"}`)
	}
	c := s.loggedIn(t)
	base := "/ui/tasks/" + root.TaskID + "/notes?agent=/root"
	doc := s.page(t, c, base)
	files := byClass(byID(doc, "own-notes"), "note-file")
	if len(files) != 1 || !strings.Contains(text(files[0]), fmt.Sprintf("%d revisions", n)) {
		t.Fatalf("file list: %q", text(byID(doc, "main")))
	}
	doc = s.page(t, c, base+"&file=/root/notes/log.md")
	if got := text(byID(doc, "rev-count")); got != fmt.Sprint(n) {
		t.Errorf("revision count %q, want %d", got, n)
	}
	var seen []string
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("the older links do not end")
		}
		revs := byClass(doc, "revision")
		if len(revs) == 0 || len(revs) > perPage {
			t.Fatalf("page %d lists %d revisions", pages, len(revs))
		}
		for _, r := range revs {
			seen = append(seen, attr(r, "data-rev"))
		}
		older := byID(doc, "older-revisions")
		if older == nil {
			break
		}
		doc = s.page(t, c, attr(older, "href"))
	}
	if len(seen) != n {
		t.Fatalf("%d revisions listed over the pages, want %d", len(seen), n)
	}
	for i, r := range seen {
		if r != fmt.Sprint(n-i) {
			t.Fatalf("revision %d listed as %s: want newest first, each once", n-i, r)
		}
	}
	if resp, _ := s.get(t, c, base+"&file=/root/notes/log.md&older=x"); resp.StatusCode != 400 {
		t.Errorf("older=x: %d, want 400", resp.StatusCode)
	}
}
