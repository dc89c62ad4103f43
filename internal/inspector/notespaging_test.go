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

// TestNotesListAndOneNotesRevisions: the file list gives each note's
// size, revision count and last write as the notes projection holds them
// (a whole write after appends resets the size), and a note's revisions
// are its own events only, not those of a note of the same path in
// another agent, nor of the agent's other notes written in between.
func TestNotesListAndOneNotesRevisions(t *testing.T) {
	s := newUIServer(t)
	root := attach(t, s.svc, "/sessions/notes.jsonl")
	child, err := s.svc.Attach(bg, childRequest(root.TaskID, "/sessions/child.jsonl", "helper"), "")
	if err != nil {
		t.Fatal(err)
	}
	helper := ccOf(child.TaskID, child.Agent)
	tool(t, s.svc, root, "r1", "notes_append_to_file", `{"path":"a.md","text":"one\n"}`)
	tool(t, s.svc, helper, "h1", "notes_write_file", `{"path":"a.md","text":"helper's\n"}`)
	tool(t, s.svc, root, "r2", "notes_append_to_file", `{"path":"b.md","text":"bee\n"}`)
	tool(t, s.svc, root, "r3", "notes_append_to_file", `{"path":"a.md","text":"two\n"}`)
	tool(t, s.svc, root, "r4", "notes_write_file", `{"path":"a.md","text":"fresh\n"}`)
	tool(t, s.svc, helper, "h2", "notes_append_to_file", `{"path":"a.md","text":"more\n"}`)

	c := s.loggedIn(t)
	base := "/ui/tasks/" + root.TaskID + "/notes?agent=/root"
	doc := s.page(t, c, base)
	var rows []string
	for _, f := range byClass(doc, "note-file") {
		var cells []string
		for _, td := range byTag(f, "td")[:3] { // the 4th links to the last write
			cells = append(cells, text(td))
		}
		rows = append(rows, strings.Join(cells, " "))
	}
	want := []string{
		"/root/notes/a.md 6 bytes 3 revisions",
		"/root/notes/b.md 4 bytes 1 revisions",
		"/root/helper/notes/a.md 14 bytes 2 revisions",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("file list:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}

	doc = s.page(t, c, base+"&file=/root/notes/a.md")
	var calls []string
	for _, r := range byClass(doc, "revision") {
		calls = append(calls, attr(r, "data-rev")+":"+text(byClass(r, "call-id")[0]))
	}
	if got := strings.Join(calls, " "); got != "3:r4 2:r3 1:r1" {
		t.Errorf("revisions of /root/notes/a.md: %s, want 3:r4 2:r3 1:r1", got)
	}
	if got := text(byID(doc, "note-content")); got != "fresh" {
		t.Errorf("content %q", got)
	}
	if got := text(byID(s.page(t, c, base+"&file=/root/notes/a.md&rev=2"), "note-content")); got != "one two" {
		t.Errorf("revision 2: %q", got)
	}
	doc = s.page(t, c, base+"&file=/root/helper/notes/a.md")
	if got := text(byID(doc, "note-content")); got != "helper's more" {
		t.Errorf("helper's a.md: %q", got)
	}
	if got := text(byID(doc, "rev-count")); got != "2" {
		t.Errorf("helper's a.md: %s revisions", got)
	}
}

// TestNotesFileListPaged: the file list shows the agent's own files first,
// then the others', filesPage at a time, with a link to the next ones.
func TestNotesFileListPaged(t *testing.T) {
	const filesPage = 200
	s := newUIServer(t)
	root := attach(t, s.svc, "/sessions/notes.jsonl")
	child, err := s.svc.Attach(bg, childRequest(root.TaskID, "/sessions/child.jsonl", "helper"), "")
	if err != nil {
		t.Fatal(err)
	}
	helper := ccOf(child.TaskID, child.Agent)
	for i := range 150 {
		tool(t, s.svc, root, fmt.Sprint("r", i), "notes_write_file", fmt.Sprintf(`{"path":"f%03d.md","text":"x"}`, i))
	}
	for i := range 60 {
		tool(t, s.svc, helper, fmt.Sprint("h", i), "notes_write_file", fmt.Sprintf(`{"path":"g%03d.md","text":"y"}`, i))
	}
	c := s.loggedIn(t)
	doc := s.page(t, c, "/ui/tasks/"+root.TaskID+"/notes?agent=/root")
	own, others := byClass(byID(doc, "own-notes"), "note-file"), byClass(byID(doc, "other-notes"), "note-file")
	if len(own) != 150 || len(others) != filesPage-150 || attr(others[0], "data-path") != "/root/helper/notes/g000.md" {
		t.Fatalf("first page: %d own, %d others", len(own), len(others))
	}
	more := byID(doc, "more-files")
	if more == nil {
		t.Fatal("no link to the next files")
	}
	doc = s.page(t, c, attr(more, "href"))
	own, others = byClass(byID(doc, "own-notes"), "note-file"), byClass(byID(doc, "other-notes"), "note-file")
	if len(own) != 0 || len(others) != 210-filesPage || attr(others[0], "data-path") != "/root/helper/notes/g050.md" {
		t.Fatalf("second page: %d own, %d others", len(own), len(others))
	}
	if byID(doc, "more-files") != nil || byID(doc, "no-own-notes") != nil {
		t.Error("the last page links further, or says the agent has no note")
	}
	if resp, _ := s.get(t, c, "/ui/tasks/"+root.TaskID+"/notes?agent=/root&files=-1"); resp.StatusCode != 400 {
		t.Errorf("files=-1: %d, want 400", resp.StatusCode)
	}
}
