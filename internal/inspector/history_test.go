package inspector_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// TestHistorySearchMarksAndWritesNothing: the history page lists the
// windows and items, shows an item's text and its image as a data: URL,
// and its search answers by history_search_contents with the matches in
// <mark>, recording nothing (the log does not grow, though the audit is
// on), even while the agent is fenced.
func TestHistorySearchMarksAndWritesNothing(t *testing.T) {
	s := newUIServer(t)
	cc := attach(t, s.svc, "/sessions/history.jsonl")
	b := sessiongen.NewBuilder(3)
	b.UserText("please look at the flux capacitor wiring")
	img := b.User(sessiongen.Text("a screenshot"), sessiongen.Image("iVBORw0KGgo=", "image/png"))
	b.Assistant(sessiongen.Text("the capacitor is fine"))
	sess := b.Session()
	if _, err := s.svc.Sync(bg, memory.SyncRequest{Context: cc, Entries: sess.Entries, Branch: &sess.Branch}, ""); err != nil {
		t.Fatal(err)
	}
	c := s.loggedIn(t)
	before := lastPosition(t, s.svc) // no tool call so far: nothing waits in the audit
	base := "/ui/tasks/" + cc.TaskID + "/history?agent=/root"

	doc := s.page(t, c, base)
	if w := byClass(doc, "history-window"); len(w) != 1 || attr(w[0], "data-window") != "w1" {
		t.Fatalf("windows: %q", text(byID(doc, "history-windows")))
	}
	if items := byClass(doc, "item"); len(items) != 3 || attr(items[2], "data-role") != "assistant" {
		t.Fatalf("items: %q", text(byID(doc, "items")))
	}

	doc = s.page(t, c, base+"&q="+url.QueryEscape("capacitor"))
	hits := byClass(doc, "hit")
	if len(hits) != 2 {
		t.Fatalf("%d hits: %q", len(hits), text(byID(doc, "search-results")))
	}
	for _, h := range hits {
		marks := byTag(h, "mark")
		if len(marks) != 1 || text(marks[0]) != "capacitor" {
			t.Errorf("hit %s marks %d: %q", attr(h, "data-item"), len(marks), text(h))
		}
	}
	if !strings.Contains(text(byClass(hits[0], "region")[0]), "flux capacitor wiring") {
		t.Errorf("region %q", text(hits[0]))
	}

	doc = s.page(t, c, base+"&window=w1&item="+img)
	if got := text(byID(doc, "item-text")); !strings.Contains(got, "a screenshot") {
		t.Errorf("item text %q", got)
	}
	imgs := byClass(doc, "item-image")
	if len(imgs) != 1 || attr(imgs[0], "src") != "data:image/png;base64,iVBORw0KGgo=" {
		t.Errorf("images %v", imgs)
	}

	// Fenced: the agent's own search would be refused; the page is not.
	// (The audit is flushed and stopped at the end: what the pages above
	// would have recorded is then in the log.)
	w := int64(100000)
	used := int64(95000)
	if _, err := s.svc.ReportUsage(bg, cc, &used, &w, ""); err != nil {
		t.Fatal(err)
	}
	for _, step := range []func() error{
		func() error { _, err := s.svc.Delivered(bg, cc, "fallback", "w1", "r", ""); return err },
		func() error { _, err := s.svc.Arm(bg, cc, "fallback", "w1", "r", ""); return err },
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	fenced := lastPosition(t, s.svc)
	doc = s.page(t, c, base+"&q=capacitor")
	if len(byClass(doc, "hit")) != 2 {
		t.Errorf("fenced: %q", text(byID(doc, "main")))
	}
	s.svc.StopAudit()
	if after := lastPosition(t, s.svc); after != fenced || fenced != before+3 {
		t.Errorf("the history pages grew the log: %d events before, %d after the 3 fence events, %d at the end", before, fenced, after)
	}
}
