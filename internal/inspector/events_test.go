package inspector_test

import (
	"fmt"
	"strings"
	"testing"
)

// TestEventsPage: the log paged by position, filtered by stream, type
// and range, each payload pretty-printed, each event linking to the
// state as of it.
func TestEventsPage(t *testing.T) {
	s := newUIServer(t)
	cc := fallbackScenario(t, s.svc)
	other := attach(t, s.svc, "/sessions/other.jsonl")
	c := s.loggedIn(t)
	s.svc.StopAudit() // the audit records of the scenario's calls are in the log: its end is now fixed
	last := lastPosition(t, s.svc)

	doc := s.page(t, c, "/ui/events")
	rows := byClass(doc, "event")
	if int64(len(rows)) != last || attr(rows[0], "data-position") != "1" {
		t.Fatalf("%d events listed, log has %d", len(rows), last)
	}
	if byID(doc, "events-next") != nil {
		t.Error("a next page after the whole log")
	}
	if p := text(byClass(rows[0], "payload")[0]); !strings.Contains(p, "\"task_id\": \""+cc.TaskID+"\"") {
		t.Errorf("payload not pretty-printed: %q", p)
	}
	if h := attr(byClass(rows[2], "as-of")[0], "href"); h != "/ui?at=3" {
		t.Errorf("as-of link %q", h)
	}

	doc = s.page(t, c, "/ui/events?type=lifecycle.usage_reported")
	if rows := byClass(doc, "event"); len(rows) != 4 {
		t.Errorf("%d usage events", len(rows))
	}
	doc = s.page(t, c, "/ui/events?stream="+other.TaskID+"/root")
	for _, r := range byClass(doc, "event") {
		if !strings.Contains(text(r), other.TaskID+"/root") {
			t.Errorf("stream filter shows %q", text(r))
		}
	}
	if n := len(byClass(doc, "event")); n != 2 {
		t.Errorf("%d events of the other stream", n)
	}
	doc = s.page(t, c, "/ui/events?after=3&until=6")
	var got []string
	for _, r := range byClass(doc, "event") {
		got = append(got, attr(r, "data-position"))
	}
	if fmt.Sprint(got) != "[4 5 6]" {
		t.Errorf("range 3..6: %v", got)
	}
	// As of a position, the log ends there.
	doc = s.page(t, c, "/ui/events?at=5")
	if n := len(byClass(doc, "event")); n != 5 {
		t.Errorf("as of 5: %d events", n)
	}
	if resp, _ := s.get(t, c, "/ui/events?after=x"); resp.StatusCode != 400 {
		t.Errorf("after=x: %d", resp.StatusCode)
	}
}

// TestEventsPaging: 100 events a page; the next page starts after the
// last one shown and keeps the filters; the last page has no next link.
func TestEventsPaging(t *testing.T) {
	s := newUIServer(t)
	cc := attach(t, s.svc, "/sessions/paging.jsonl")
	for i := range 130 {
		tool(t, s.svc, cc, fmt.Sprint("c", i), "notes_append_to_file", `{"path":"log.md","text":"x\n"}`)
	}
	c := s.loggedIn(t)
	doc := s.page(t, c, "/ui/events?type=note.appended")
	rows := byClass(doc, "event")
	next := byID(doc, "events-next")
	if len(rows) != 100 || next == nil {
		t.Fatalf("first page: %d events, next %v", len(rows), next != nil)
	}
	lastShown := attr(rows[99], "data-position")
	href := attr(next, "href")
	if !strings.Contains(href, "after="+lastShown) || !strings.Contains(href, "type=note.appended") {
		t.Errorf("next link %q", href)
	}
	doc = s.page(t, c, href)
	rows = byClass(doc, "event")
	if len(rows) != 30 || byID(doc, "events-next") != nil {
		t.Errorf("second page: %d events, next %v", len(rows), byID(doc, "events-next") != nil)
	}
	for _, r := range rows {
		if attr(r, "data-type") != "note.appended" {
			t.Errorf("a %s on the filtered page", attr(r, "data-type"))
		}
	}
}
