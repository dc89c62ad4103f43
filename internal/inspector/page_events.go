package inspector

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/memoryd/memoryd/internal/events"
)

// eventsPerPage, eventsScanned and eventsRead size a page of the log.
const (
	eventsPerPage = 100
	// eventsScanned bounds how many events one page reads while
	// filtering by type. Past it, the page ends early and links on.
	eventsScanned = 20000
	eventsRead    = 500
)

// eventsData is what the events page shows.
type eventsData struct {
	Task, Stream, Type string
	After, Until       int64
	Events             []shownEvent
	Next               int64 // the after of the next page, or 0
}

// shownEvent is an event with its payload pretty-printed.
type shownEvent struct {
	events.Event
	Payload string
}

// eventsPage shows the log by position, filtered by task, stream, type
// and a position range.
func (in *Inspector) eventsPage(w http.ResponseWriter, r *http.Request) {
	at, err := atOf(r)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	// The log up to at is read from the live log, not a copy.
	svc := in.cfg.Service
	q := r.URL.Query()
	d := eventsData{Task: q.Get("task"), Stream: q.Get("stream"), Type: q.Get("type")}
	if d.After, err = positionParam(q.Get("after"), "after"); err != nil {
		in.fail(w, r, err)
		return
	}
	if d.Until, err = positionParam(q.Get("until"), "until"); err != nil {
		in.fail(w, r, err)
		return
	}
	until := d.Until
	if at > 0 && (until == 0 || until > at) {
		until = at
	}
	after, scanned, done := d.After, 0, false
	for !done && len(d.Events) < eventsPerPage && scanned < eventsScanned {
		var page []events.Event
		if d.Stream != "" {
			page, err = svc.StreamEvents(r.Context(), "", d.Stream, after, eventsRead)
		} else {
			page, err = svc.Events(r.Context(), after, d.Task, eventsRead)
		}
		if err != nil {
			in.fail(w, r, err)
			return
		}
		done = len(page) < eventsRead
		for _, ev := range page {
			if until > 0 && ev.Position > until {
				done = true
				break
			}
			after, scanned = ev.Position, scanned+1
			if d.Type == "" || ev.Type == d.Type {
				d.Events = append(d.Events, shownEvent{Event: ev, Payload: pretty(ev.Data)})
				if len(d.Events) == eventsPerPage {
					break
				}
			}
		}
	}
	if !done || (len(d.Events) == eventsPerPage && after > d.After) {
		d.Next = after // more may follow
	}
	in.renderAt(w, r, "events", "Events", at, d)
}

// positionParam reads a log position, 0 when s is empty.
func positionParam(s, name string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, errBadParam(name, "a log position (0 or more)")
	}
	return n, nil
}

// pretty returns raw JSON indented, or as it is when it is not JSON.
func pretty(raw []byte) string {
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		return string(raw)
	}
	return b.String()
}
