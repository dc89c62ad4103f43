package inspector_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// TestSearchEveryHistory: the search page finds a literal in the history
// of every task, marks it, links each match to its item and writes
// nothing; kind keeps one kind of agent; a position is refused.
func TestSearchEveryHistory(t *testing.T) {
	s := newUIServer(t)
	for i, key := range []string{"/sessions/a.jsonl", "claude-code/6d1f1c9e-1111-2222-3333-444444444444"} {
		cc := attach(t, s.svc, key)
		b := sessiongen.NewBuilder(uint64(i + 1))
		b.UserText("where is the flux capacitor")
		b.Assistant(sessiongen.Text("nothing to see"))
		sess := b.Session()
		if _, err := s.svc.Sync(bg, memory.SyncRequest{Context: cc, Entries: sess.Entries, Branch: &sess.Branch}, ""); err != nil {
			t.Fatal(err)
		}
	}
	c := s.loggedIn(t)
	before := lastPosition(t, s.svc)

	doc := s.page(t, c, "/ui/search?q="+url.QueryEscape("flux capacitor"))
	hits := byClass(doc, "hit")
	if len(hits) != 2 {
		t.Fatalf("%d hits: %q", len(hits), text(byID(doc, "search-all-results")))
	}
	kinds := map[string]bool{}
	for _, h := range hits {
		kinds[attr(h, "data-kind")] = true
		if marks := byTag(h, "mark"); len(marks) != 1 || text(marks[0]) != "flux capacitor" {
			t.Errorf("hit %q: want the match marked", text(h))
		}
		href := attr(byTag(h, "a")[0], "href")
		if !strings.Contains(href, "/ui/tasks/"+attr(h, "data-task")+"/history?") || !strings.Contains(href, "item="+attr(h, "data-item")) {
			t.Errorf("hit links to %s, not its item", href)
		}
	}
	if !kinds["pi"] || !kinds["claude-code"] {
		t.Errorf("kinds %v, want pi and claude-code", kinds)
	}
	if hits := byClass(s.page(t, c, "/ui/search?kind=claude-code&q=flux"), "hit"); len(hits) != 1 || attr(hits[0], "data-kind") != "claude-code" {
		t.Errorf("kind=claude-code: %d hits", len(hits))
	}
	if byID(s.page(t, c, "/ui/search?q=Flux"), "no-hits") == nil {
		t.Error("the search is case-sensitive, but Flux matched")
	}
	if resp, _ := s.get(t, c, "/ui/search?q=flux&at=1"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("a search as of a position: %d, want 400", resp.StatusCode)
	}
	if after := lastPosition(t, s.svc); after != before {
		t.Errorf("the search page wrote events: position %d, then %d", before, after)
	}
}
