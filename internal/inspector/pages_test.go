package inspector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// TestTimelineShowsTheFallbackAndTheRollover: the agent's timeline shows
// its two windows, the fallback rollover with its bootstrap text, the
// fence's steps in order with the phase each left, the audited calls,
// and the tokens plot with its three thresholds; its links go to events.
func TestTimelineShowsTheFallbackAndTheRollover(t *testing.T) {
	s := newUIServer(t)
	cc := fallbackScenario(t, s.svc)
	c := s.loggedIn(t)

	start := s.page(t, c, "/ui")
	agents := byClass(start, "agent")
	if len(agents) != 1 || attr(agents[0], "data-agent") != "/root" || !strings.Contains(text(agents[0]), "READY") || !strings.Contains(text(agents[0]), "w2") {
		t.Fatalf("start page agents: %q", text(byID(start, "tasks")))
	}
	href := attr(byClass(start, "agent-link")[0], "href")
	if href != "/ui/tasks/"+cc.TaskID+"/agents/root" {
		t.Fatalf("agent link %q", href)
	}
	doc := s.page(t, c, href)
	if got := text(byID(doc, "current-window")); got != "w2" {
		t.Errorf("current window %q", got)
	}
	var windows []string
	for _, li := range byClass(doc, "window-band") {
		windows = append(windows, attr(li, "data-window"))
	}
	if !slices.Equal(windows, []string{"w1", "w2"}) {
		t.Errorf("windows %v", windows)
	}
	rolls := byClass(doc, "rollover")
	if len(rolls) != 1 || attr(rolls[0], "data-reason") != "fallback" || attr(rolls[0], "data-window") != "w2" || len(byClass(rolls[0], "rollover-committed")) != 1 {
		t.Fatalf("rollovers: %q", text(byID(doc, "main")))
	}
	if boot := text(byClass(rolls[0], "bootstrap")[0]); !strings.Contains(boot, "context_window_reset") || !strings.Contains(boot, "checkpoint.md") {
		t.Errorf("bootstrap text %q", boot)
	}
	var steps []string
	for _, tr := range byClass(doc, "step") {
		steps = append(steps, attr(tr, "data-type")+" "+text(byClass(tr, "phase")[0]))
	}
	want := []string{
		"agent.registered READY",
		"lifecycle.usage_reported READY", // 88000 used: the fallback is due
		"lifecycle.control_delivered FALLBACK_QUEUED",
		"lifecycle.fence_armed FENCED",
		"lifecycle.claim_taken FENCED_CLAIMED",
		"lifecycle.checkpoint_saved CHECKPOINT_SAVED",
		"lifecycle.rollover_prepared ROLLING_OVER",
		"lifecycle.rollover_committed READY",
	}
	if !slices.Equal(steps, want) {
		t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(steps, "\n"), strings.Join(want, "\n"))
	}
	if calls := byClass(doc, "call"); len(calls) != 2 || attr(calls[0], "data-tool") != "notes_write_file" {
		t.Errorf("audited calls: %q", text(byID(doc, "calls")))
	}
	plot := byID(doc, "tokens-plot")
	if plot == nil || plot.Data != "svg" {
		t.Fatal("no tokens plot")
	}
	for class, tokens := range map[string]string{"thr-reminder": "75000", "thr-fallback": "87500", "thr-hard": "95000"} {
		if l := byClass(plot, class); len(l) != 1 || attr(l[0], "data-tokens") != tokens {
			t.Errorf("threshold %s: %v", class, l)
		}
	}
	if pts := byClass(plot, "usage-point"); len(pts) != 4 || attr(pts[2], "data-tokens") != "88000" {
		t.Errorf("%d usage points", len(pts))
	}
	if marks := byClass(plot, "mark-rollover"); len(marks) != 1 || attr(marks[0], "data-reason") != "fallback" {
		t.Errorf("rollover marks: %d", len(marks))
	}
	// Every step links to its event, and that event is on the page linked.
	for _, tr := range byClass(doc, "step") {
		a := byTag(tr, "a")[0]
		pos := attr(tr, "data-position")
		if h := attr(a, "href"); !strings.HasSuffix(h, "#p"+pos) {
			t.Fatalf("step @%s links to %q", pos, h)
		}
		ev := s.page(t, c, strings.SplitN(attr(a, "href"), "#", 2)[0])
		row := byID(ev, "p"+pos)
		if row == nil || attr(row, "data-type") != attr(tr, "data-type") {
			t.Errorf("the event page of @%s does not show it", pos)
		}
	}
}

// TestNotesRevisionsAndTimeTravel: a note written twice and appended to
// by a child shows its revisions (who wrote each, call id), the content
// at each, a diff between two; as of the position between the writes,
// the page shows the old content, and as of before the first write, no
// note.
func TestNotesRevisionsAndTimeTravel(t *testing.T) {
	s := newUIServer(t)
	root := attach(t, s.svc, "/sessions/notes.jsonl")
	tool(t, s.svc, root, "w1", "notes_write_file", `{"path":"plan.md","text":"alpha\nbeta\n"}`)
	between := callPosition(t, s.svc, "note.written", "w1")
	tool(t, s.svc, root, "w2", "notes_write_file", `{"path":"plan.md","text":"alpha\ngamma\n"}`)
	child, err := s.svc.Attach(bg, childRequest(root.TaskID, "/sessions/child.jsonl", "helper"), "")
	if err != nil {
		t.Fatal(err)
	}
	tool(t, s.svc, ccOf(child.TaskID, child.Agent), "a1", "notes_append_to_file", `{"path":"/root/notes/plan.md","text":"delta\n"}`)
	c := s.loggedIn(t)
	base := "/ui/tasks/" + root.TaskID + "/notes?agent=/root"

	// The start page shows the agent tree: the child under the root.
	var tree []string
	for _, a := range byClass(s.page(t, c, "/ui"), "agent") {
		tree = append(tree, attr(a, "data-agent")+" "+attr(a, "class"))
	}
	if want := []string{"/root agent depth-0", "/root/helper agent depth-1"}; !slices.Equal(tree, want) {
		t.Errorf("agent tree %q, want %q", tree, want)
	}

	doc := s.page(t, c, base)
	if files := byClass(byID(doc, "own-notes"), "note-file"); len(files) != 1 || attr(files[0], "data-path") != "/root/notes/plan.md" {
		t.Fatalf("own notes: %q", text(byID(doc, "main")))
	}
	file := base + "&file=/root/notes/plan.md"
	doc = s.page(t, c, file)
	if got := text(byID(doc, "note-content")); got != "alpha gamma delta" {
		t.Errorf("content %q", got)
	}
	revs := byClass(doc, "revision")
	if len(revs) != 3 {
		t.Fatalf("%d revisions", len(revs))
	}
	// Newest first.
	for i, want := range []struct{ by, call string }{{"/root/helper", "a1"}, {"/root", "w2"}, {"/root", "w1"}} {
		if by, call := text(byClass(revs[i], "by")[0]), text(byClass(revs[i], "call-id")[0]); by != want.by || call != want.call {
			t.Errorf("revision %d by %q call %q, want %v", 3-i, by, call, want)
		}
	}
	if got := text(byID(s.page(t, c, file+"&rev=1"), "note-content")); got != "alpha beta" {
		t.Errorf("revision 1: %q", got)
	}
	doc = s.page(t, c, file+"&from=1&to=3")
	var diff []string
	for _, l := range byClass(byID(doc, "diff"), "diff-line") {
		diff = append(diff, text(l))
	}
	if want := []string{"= alpha", "- beta", "+ gamma", "+ delta"}; !slices.Equal(diff, want) {
		t.Errorf("diff %q, want %q", diff, want)
	}
	if resp, doc := s.get(t, c, file+"&rev=9"); resp.StatusCode != 400 || !strings.Contains(text(byID(doc, "error-message")), "rev") {
		t.Errorf("rev 9: %d", resp.StatusCode)
	}

	// Time travel: between the writes, the old content and one revision.
	doc = s.page(t, c, fmt.Sprintf("%s&at=%d", file, between))
	if got := text(byID(doc, "note-content")); got != "alpha beta" {
		t.Errorf("as of %d: %q, want the first write", between, got)
	}
	if n := len(byClass(doc, "revision")); n != 1 {
		t.Errorf("as of %d: %d revisions", between, n)
	}
	if got := attr(byID(doc, "at-shown"), "data-at"); got != fmt.Sprint(between) {
		t.Errorf("the position control shows %q", got)
	}
	// "now" leaves the position and keeps the page's other parameters.
	if got, want := attr(byID(doc, "at-now"), "href"), "/ui/tasks/"+root.TaskID+"/notes?agent=%2Froot&file=%2Froot%2Fnotes%2Fplan.md"; got != want {
		t.Errorf("the now link is %q, want %q", got, want)
	}
	// Links on a page at P keep P.
	for _, a := range byClass(doc, "show-rev") {
		if !strings.Contains(attr(a, "href"), fmt.Sprintf("at=%d", between)) {
			t.Errorf("link %q drops the position", attr(a, "href"))
		}
	}
	if resp, _ := s.get(t, c, fmt.Sprintf("%s&at=%d", file, between-1)); resp.StatusCode != 404 {
		t.Errorf("before the first write: %d, want 404", resp.StatusCode)
	}
	// The copy at P is kept: a second page at P reads it again.
	doc = s.page(t, c, fmt.Sprintf("%s&at=%d", base, between))
	if files := byClass(doc, "note-file"); len(files) != 1 {
		t.Errorf("notes as of %d: %d files", between, len(files))
	}
}

// TestTimelineAsOfAPosition: as of the position before the rollover was
// committed, the timeline shows w1 current and the rollover open; its
// links keep the position.
func TestTimelineAsOfAPosition(t *testing.T) {
	s := newUIServer(t)
	cc := fallbackScenario(t, s.svc)
	c := s.loggedIn(t)
	doc := s.page(t, c, "/ui/tasks/"+cc.TaskID+"/agents/root")
	var committed string
	for _, tr := range byClass(doc, "step") {
		if attr(tr, "data-type") == "lifecycle.rollover_committed" {
			committed = attr(tr, "data-position")
		}
	}
	var p int
	fmt.Sscan(committed, &p)
	doc = s.page(t, c, fmt.Sprintf("/ui/tasks/%s/agents/root?at=%d", cc.TaskID, p-1))
	if got := text(byID(doc, "current-window")); got != "w1" {
		t.Errorf("as of %d the window is %q, want w1", p-1, got)
	}
	if got := text(byID(doc, "phase")); got != "ROLLING_OVER" {
		t.Errorf("as of %d the phase is %q", p-1, got)
	}
	if r := byClass(doc, "rollover"); len(r) != 1 || len(byClass(r[0], "rollover-open")) != 1 {
		t.Errorf("as of %d the rollover is not open", p-1)
	}
	for _, a := range byTag(byID(doc, "steps"), "a") {
		if !strings.Contains(attr(a, "href"), fmt.Sprintf("at=%d", p-1)) {
			t.Errorf("link %q drops the position", attr(a, "href"))
		}
	}
	// The start page at that position shows the same phase.
	doc = s.page(t, c, fmt.Sprintf("/ui?at=%d", p-1))
	if a := byClass(doc, "agent"); len(a) != 1 || !strings.Contains(text(a[0]), "ROLLING_OVER") {
		t.Errorf("start page as of %d: %q", p-1, text(byID(doc, "tasks")))
	}
}

// TestPagesAsOfAPositionCopyOnlyForHistory: the timeline and the events
// page read only the log, the notes and tasks pages fold the log's note
// and fence events, so as of a past position P they read the live log up
// to P: no scratch copy is made, and they show nothing after P (what they
// show is a copy's: TestNotesAtIsACopysNotes, TestTasksAtIsACopysTasks).
// The history page needs the history's projections as of P: it reads the
// live ones cut to the agent's branch as of P when no branch switched
// since, and else copies the task's history.
func TestPagesAsOfAPositionCopyOnlyForHistory(t *testing.T) {
	dir := t.TempDir()
	forensics.SetScratchFolder(dir)
	t.Cleanup(func() { forensics.SetScratchFolder("") })
	s := newUIServer(t)
	cc := fallbackScenario(t, s.svc)
	c := s.loggedIn(t)
	last, err := s.svc.LastPosition(bg)
	if err != nil {
		t.Fatal(err)
	}
	at := last - 3
	doc := s.page(t, c, fmt.Sprintf("/ui/tasks/%s/agents/root?at=%d", cc.TaskID, at))
	for _, tr := range byClass(doc, "step") {
		var p int64
		fmt.Sscan(attr(tr, "data-position"), &p)
		if p > at {
			t.Errorf("the timeline as of %d lists a step at %d", at, p)
		}
	}
	doc = s.page(t, c, fmt.Sprintf("/ui/events?after=%d&at=%d", at-10, at))
	var shown []string
	for _, tr := range byClass(doc, "event") {
		shown = append(shown, attr(tr, "data-position"))
	}
	if len(shown) == 0 || shown[len(shown)-1] != fmt.Sprint(at) {
		t.Errorf("the events page as of %d lists %v, want them to end at %d", at, shown, at)
	}
	s.page(t, c, fmt.Sprintf("/ui/tasks/%s/notes?agent=/root&at=%d", cc.TaskID, at))
	s.page(t, c, fmt.Sprintf("/ui?at=%d", at))
	if copies, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(copies) != 0 {
		t.Errorf("the timeline, events, notes and tasks pages as of %d made scratch copies: %v", at, copies)
	}
	s.page(t, c, fmt.Sprintf("/ui/tasks/%s/history?agent=/root&at=%d", cc.TaskID, at))
	if copies, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(copies) != 0 {
		t.Errorf("the history page as of %d, no branch switched since, made scratch copies: %v", at, copies)
	}

	// A branch switched after P: the page as of P shows the branch then,
	// from a copy.
	b := sessiongen.NewBuilder(9)
	first := b.UserText("the first request")
	b.Assistant(sessiongen.Text("the abandoned answer"))
	sess := b.Session()
	if _, err := s.svc.Sync(bg, memory.SyncRequest{Context: cc, Entries: sess.Entries, Branch: &sess.Branch}, ""); err != nil {
		t.Fatal(err)
	}
	before := lastPosition(t, s.svc)
	b.Checkout(first)
	b.Assistant(sessiongen.Text("the other answer"))
	sess = b.Session()
	if _, err := s.svc.Sync(bg, memory.SyncRequest{Context: cc, Entries: sess.Entries, Branch: &sess.Branch}, ""); err != nil {
		t.Fatal(err)
	}
	doc = s.page(t, c, fmt.Sprintf("/ui/tasks/%s/history?agent=/root&at=%d", cc.TaskID, before))
	if items := text(byID(doc, "items")); !strings.Contains(items, "the abandoned answer") || strings.Contains(items, "the other answer") {
		t.Errorf("the history page as of %d lists %q", before, items)
	}
	if copies, _ := filepath.Glob(filepath.Join(dir, "*", "*")); len(copies) != 1 {
		t.Errorf("the history page as of %d, a branch switched since: %d scratch copies, want 1", before, len(copies))
	}
}

// TestPagesEscapeWhatTheLogHolds: text from the log (a note, a path, an
// agent's history, a search) is shown as text, never as markup.
func TestPagesEscapeWhatTheLogHolds(t *testing.T) {
	s := newUIServer(t)
	cc := attach(t, s.svc, "/sessions/<b>x</b>.jsonl")
	evil := `<script>alert(1)</script><img src=x onerror=alert(2)>"'`
	args, _ := json.Marshal(map[string]string{"path": "evil.md", "text": evil})
	tool(t, s.svc, cc, "c1", "notes_write_file", string(args))
	c := s.loggedIn(t)
	for _, p := range []string{
		"/ui",
		"/ui/tasks/" + cc.TaskID + "/notes?agent=/root&file=/root/notes/evil.md",
		"/ui/events",
		"/ui/tasks/" + cc.TaskID + "/history?agent=/root&q=" + url.QueryEscape(evil),
	} {
		resp, doc := s.get(t, c, p)
		if resp.StatusCode != 200 {
			t.Fatalf("GET %s: %d", p, resp.StatusCode)
		}
		if n := len(byTag(doc, "script")); n != 0 {
			t.Errorf("GET %s: %d script elements", p, n)
		}
		for _, img := range byTag(doc, "img") {
			t.Errorf("GET %s: an img %v", p, img.Attr)
		}
		body, _ := readAll(resp)
		if strings.Contains(body, "<script>") || strings.Contains(body, "<b>x</b>") {
			t.Errorf("GET %s: markup from the log unescaped", p)
		}
	}
	doc := s.page(t, c, "/ui/tasks/"+cc.TaskID+"/notes?agent=/root&file=/root/notes/evil.md")
	if got := byID(doc, "note-content").FirstChild.Data; got != evil {
		t.Errorf("note shown as %q", got)
	}
}

// TestUnknownTaskOrAgentIsNotFound: the notes page answers 404, as the
// timeline and history pages do, for a task memoryd does not know and
// for an agent not registered to the task; it does not show an empty
// list of notes.
func TestUnknownTaskOrAgentIsNotFound(t *testing.T) {
	s := newUIServer(t)
	cc := attach(t, s.svc, "/sessions/a.jsonl")
	c := s.loggedIn(t)
	for _, p := range []string{
		"/ui/tasks/" + cc.TaskID + "/notes?agent=/root", // known: 200
		"/ui/tasks/no-such-task/notes",
		"/ui/tasks/no-such-task/notes?agent=/root",
		"/ui/tasks/" + cc.TaskID + "/notes?agent=/root/nobody",
		"/ui/tasks/no-such-task/history?agent=/root",
		"/ui/tasks/" + cc.TaskID + "/history?agent=/root/nobody",
		"/ui/tasks/no-such-task/agents/root",
		"/ui/tasks/" + cc.TaskID + "/agents/root/nobody",
	} {
		want := http.StatusNotFound
		if strings.HasSuffix(p, cc.TaskID+"/notes?agent=/root") {
			want = http.StatusOK
		}
		if resp, doc := s.get(t, c, p); resp.StatusCode != want {
			t.Errorf("GET %s: %d (%s), want %d", p, resp.StatusCode, text(byID(doc, "error-message")), want)
		}
	}
}

// TestUIWithASlashIsTheStartPage: /ui/ is the start page, as /ui is
// (behind the same session check), not a 404.
func TestUIWithASlashIsTheStartPage(t *testing.T) {
	s := newUIServer(t)
	cc := attach(t, s.svc, "/sessions/a.jsonl")
	if resp, _ := s.get(t, s.client(t), "/ui/"); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/login" {
		t.Errorf("GET /ui/ without a session: %d to %q, want 303 to /ui/login", resp.StatusCode, resp.Header.Get("Location"))
	}
	doc := s.page(t, s.loggedIn(t), "/ui/")
	if !strings.Contains(text(doc), cc.TaskID) {
		t.Errorf("GET /ui/ does not list the task %s: %s", cc.TaskID, text(byID(doc, "main")))
	}
}

// TestErasedTaskIsNotFound: once a task is erased, its pages are not
// found, as of its last position before the erasure too (the log holds
// only its tombstones), the tasks page no longer lists it, and the events
// page shows its tombstones and nothing of what they were.
func TestErasedTaskIsNotFound(t *testing.T) {
	s := newUIServer(t)
	cc := attach(t, s.svc, "/sessions/erased.jsonl")
	keep := attach(t, s.svc, "/sessions/kept.jsonl")
	for _, c := range []memory.CallContext{cc, keep} {
		c.CallID = "w-" + c.TaskID
		if _, err := s.svc.CallTool(context.Background(), "notes_write_file", c, json.RawMessage(`{"path":"a.md","text":"ERASED-TEXT"}`), ""); err != nil {
			t.Fatal(err)
		}
	}
	before, _ := s.svc.LastPosition(context.Background())
	res, err := s.svc.EraseTask(context.Background(), cc.TaskID, "", memory.EraseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := s.loggedIn(t)
	for _, p := range []string{
		"/ui/tasks/" + cc.TaskID + "/agents/root",
		fmt.Sprintf("/ui/tasks/%s/agents/root?at=%d", cc.TaskID, before),
		"/ui/tasks/" + cc.TaskID + "/notes?agent=/root",
		fmt.Sprintf("/ui/tasks/%s/notes?agent=/root&at=%d", cc.TaskID, before),
		"/ui/tasks/" + cc.TaskID + "/history?agent=/root",
	} {
		if resp, doc := s.get(t, c, p); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d (%s), want 404", p, resp.StatusCode, text(byID(doc, "error-message")))
		}
	}
	for _, p := range []string{"/ui", fmt.Sprintf("/ui?at=%d", before)} {
		if doc := s.page(t, c, p); strings.Contains(text(doc), cc.TaskID) || !strings.Contains(text(doc), keep.TaskID) {
			t.Errorf("GET %s lists the erased task, or not the other", p)
		}
	}
	doc := s.page(t, c, "/ui/events?task="+cc.TaskID)
	if body := text(doc); strings.Contains(body, "ERASED-TEXT") || !strings.Contains(body, events.TypeEventErased) ||
		!strings.Contains(body, events.TypeTaskErased) || !strings.Contains(body, fmt.Sprint(res.Position)) {
		t.Errorf("the events page of the erased task: %.500s", body)
	}
}
