package inspector_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"golang.org/x/net/html"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
)

// TestTimelineListsTheLastCallsWithEarlierLinks: after many note appends
// (each audited on the agent's stream), the timeline lists the last 500
// calls and links to the earlier ones; following the links lists every
// call once. On another agent, notes events added after a rollover leave
// the steps, phase and window as they were: they do not change the fence,
// and the timeline no longer reads them.
func TestTimelineListsTheLastCallsWithEarlierLinks(t *testing.T) {
	s := newUIServer(t)
	const appends = 520
	many := attach(t, s.svc, "/sessions/many.jsonl")
	for i := range appends {
		tool(t, s.svc, many, fmt.Sprint("a", i), "notes_append_to_file", `{"path":"log.md","text":"x\n"}`)
	}
	cc := fallbackScenario(t, s.svc) // and flushes the audit of the appends above
	c := s.loggedIn(t)
	path := "/ui/tasks/" + cc.TaskID + "/agents/root"
	stepsOf := func(path string) []string {
		var steps []string
		for _, tr := range byClass(s.page(t, c, path), "step") {
			steps = append(steps, attr(tr, "data-type")+" "+attr(tr, "data-position"))
		}
		return steps
	}
	doc := s.page(t, c, path)
	steps, phase, window := stepsOf(path), text(byID(doc, "phase")), text(byID(doc, "current-window"))
	// Notes events on the stream (the audit is stopped: no call is added).
	for i := range 20 {
		tool(t, s.svc, cc, fmt.Sprint("n", i), "notes_append_to_file", `{"path":"log.md","text":"x\n"}`)
	}
	doc = s.page(t, c, path)
	if got := stepsOf(path); !slices.Equal(got, steps) {
		t.Errorf("steps after the appends:\n%q\nwant\n%q", got, steps)
	}
	if p, w := text(byID(doc, "phase")), text(byID(doc, "current-window")); p != phase || w != window {
		t.Errorf("phase %q window %q after the appends, want %q %q", p, w, phase, window)
	}
	if byID(doc, "earlier") != nil {
		t.Error("an earlier link with 2 calls")
	}

	path = "/ui/tasks/" + many.TaskID + "/agents/root"
	doc = s.page(t, c, path)
	seen := map[string]bool{}
	for pages := 0; ; pages++ {
		if pages > 3 {
			t.Fatal("the earlier links do not end")
		}
		calls := byClass(doc, "call")
		if len(calls) == 0 || len(calls) > 500 {
			t.Fatalf("page %d lists %d calls", pages, len(calls))
		}
		for _, tr := range calls {
			seen[text(tr)] = true
		}
		earlier := byID(doc, "earlier")
		if earlier == nil {
			break
		}
		doc = s.page(t, c, attr(earlier, "href"))
	}
	if want := appends; len(seen) != want {
		t.Errorf("%d calls listed over the pages, want %d", len(seen), want)
	}
	if resp, _ := s.get(t, c, path+"?before=x"); resp.StatusCode != 400 {
		t.Errorf("before=x: %d, want 400", resp.StatusCode)
	}
}

// TestTimelineListsWholeAuditEvents: an audit event holds many calls, and
// the timeline lists whole events, as many as hold at most 500 calls:
// with three events of 200 calls each, the last two on the first page
// and the first behind the earlier link, each call once and in order.
func TestTimelineListsWholeAuditEvents(t *testing.T) {
	s := newUIServer(t)
	cc := attach(t, s.svc, "/sessions/batches.jsonl")
	ctx := context.Background()
	var want []string
	for e := range 3 {
		batch := events.ToolCalled{AgentRef: events.AgentRef{TaskID: cc.TaskID, Agent: cc.Agent}}
		for i := range 200 {
			id := fmt.Sprintf("e%d-c%03d", e, i)
			want = append(want, id)
			batch.Calls = append(batch.Calls, events.CallRecord{CallID: id, Tool: "notes_read_file",
				Arguments: json.RawMessage(`{"path":"a.md"}`), ReadPosition: 1, Outcome: "not_found", ResultDigest: "d"})
		}
		err := s.svc.Store().Update(ctx, "", func(tx *eventlog.Tx) error {
			_, err := tx.Append(ctx, events.Stream(cc.TaskID, cc.Agent), eventlog.AnyVersion, events.NewPending(batch))
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	c := s.loggedIn(t)
	callIDs := func(doc *html.Node) []string {
		var ids []string
		for _, tr := range byClass(doc, "call") {
			ids = append(ids, text(byTag(tr, "code")[0]))
		}
		return ids
	}
	doc := s.page(t, c, "/ui/tasks/"+cc.TaskID+"/agents/root")
	if got := callIDs(doc); !slices.Equal(got, want[200:]) {
		t.Fatalf("first page lists %d calls (%q … ), want the last two events' 400", len(got), got[:min(len(got), 3)])
	}
	earlier := byID(doc, "earlier")
	if earlier == nil {
		t.Fatal("no earlier link")
	}
	doc = s.page(t, c, attr(earlier, "href"))
	if got := callIDs(doc); !slices.Equal(got, want[:200]) {
		t.Errorf("earlier page lists %d calls, want the first event's 200", len(got))
	}
	if byID(doc, "earlier") != nil {
		t.Error("an earlier link on the page of the first event")
	}
}
