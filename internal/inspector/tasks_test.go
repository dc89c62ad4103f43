package inspector_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// TestTasksPageNamesWhatAUserRecognises: the tasks page shows each task
// by its first request and its session's folder and file, each sub-agent
// by its own first request, and, as of a position, a request only once
// the branch holding it was recorded. GET /v1/tasks' first_request is cut
// to FirstRequestMaxChars characters.
func TestTasksPageNamesWhatAUserRecognises(t *testing.T) {
	s := newUIServer(t)
	const file = "/home/dev/.pi/agent/sessions/--home-dev-billing--/2026-12-06T10-00-00-000Z_abc.jsonl"
	res, err := s.svc.Attach(bg, memory.AttachRequest{SessionKey: file, SessionFile: file}, "")
	if err != nil {
		t.Fatal(err)
	}
	root := memory.CallContext{TaskID: res.TaskID, Agent: res.Agent}
	sync := func(cc memory.CallContext, b *sessiongen.Builder) {
		t.Helper()
		sess := b.Session()
		if _, err := s.svc.Sync(bg, memory.SyncRequest{Context: cc, Entries: sess.Entries, Branch: &sess.Branch}, ""); err != nil {
			t.Fatal(err)
		}
	}
	b := sessiongen.NewBuilder(1)
	b.Assistant(sessiongen.Text("Hello, what shall we do?"))
	b.UserText("Fix the rounding\n   in invoice totals.")
	b.UserText("And then the tax lines.")
	sync(root, b)
	sub, err := s.svc.Attach(bg, childRequest(root.TaskID, "/sessions/reviewer.jsonl", "reviewer"), "")
	if err != nil {
		t.Fatal(err)
	}
	b = sessiongen.NewBuilder(2)
	b.UserText("Review the invoice tests. " + strings.Repeat("x", 300))
	sync(memory.CallContext{TaskID: sub.TaskID, Agent: sub.Agent}, b)
	quiet := attach(t, s.svc, "/sessions/quiet.jsonl")

	c := s.loggedIn(t)
	doc := s.page(t, c, "/ui")
	row := byID(doc, "task-"+root.TaskID)
	if row == nil {
		t.Fatalf("no row for task %s", root.TaskID)
	}
	if got := firstText(row, "request"); got != "Fix the rounding in invoice totals." {
		t.Errorf("the task's request: %q, want its first user message on one line", got)
	}
	if got := firstText(row, "where"); got != "--home-dev-billing--/2026-12-06T10-00-00-000Z_abc.jsonl" {
		t.Errorf("the task's session: %q", got)
	}
	var reviewer string
	for _, li := range byClass(row, "agent") {
		if attr(li, "data-agent") == sub.Agent {
			reviewer = firstText(li, "request")
		}
	}
	if !strings.HasPrefix(reviewer, "Review the invoice tests. xxx") || !strings.HasSuffix(reviewer, "…") || len([]rune(reviewer)) != 80 {
		t.Errorf("the sub-agent's request: %q, want its first 79 characters and an ellipsis", reviewer)
	}
	if got := firstText(byID(doc, "task-"+quiet.TaskID), "request"); got != "no request yet" {
		t.Errorf("a task without history: %q", got)
	}

	// As of the position before the root's branch change, its entries are
	// recorded but on no branch yet.
	placed := eventPosition(t, s, events.TypeHistoryBranchChanged, root.TaskID+root.Agent)
	for at, want := range map[int64]string{placed - 1: "no request yet", placed: "Fix the rounding in invoice totals."} {
		doc := s.page(t, c, fmt.Sprintf("/ui?at=%d", at))
		if got := firstText(byID(doc, "task-"+root.TaskID), "request"); got != want {
			t.Errorf("as of %d the task's request is %q, want %q", at, got, want)
		}
	}

	list, err := s.svc.Tasks(bg, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range list.Tasks {
		for _, a := range task.Agents {
			if a.Agent != sub.Agent {
				continue
			}
			raw, _ := json.Marshal(a.FirstRequest)
			if fr := a.FirstRequest; fr == nil || !fr.Cut || len([]rune(fr.Text)) != memory.FirstRequestMaxChars || fr.EntryID == "" {
				t.Errorf("the sub-agent's first_request: %s, want its first %d characters, cut", raw, memory.FirstRequestMaxChars)
			}
		}
	}
}

// eventPosition is the position of the first event of type typ in stream.
func eventPosition(t *testing.T, s *uiServer, typ, stream string) int64 {
	t.Helper()
	page, err := s.svc.Events(bg, 0, "", 10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range page {
		if ev.Type == typ && ev.Stream == stream {
			return ev.Position
		}
	}
	t.Fatalf("no %s event in stream %s", typ, stream)
	return 0
}

// firstText is the text of n's first element of class class ("": none).
func firstText(n *html.Node, class string) string {
	if n == nil {
		return ""
	}
	if found := byClass(n, class); len(found) > 0 {
		return text(found[0])
	}
	return ""
}
