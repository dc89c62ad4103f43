package inspector

import (
	"html/template"
	"net/http"
	"sort"
	"strconv"

	"github.com/go-chi/chi/v5"
)

// timelineData is what the timeline page shows.
type timelineData struct {
	*timeline
	Thresholds thresholds
	Plot       template.HTML
	Phase      string
	// Earlier is the cursor of the steps and calls before those listed,
	// or 0. The page lists the last listCap of each.
	Earlier int64
	Cap     int
}

// listCap is how many steps, and how many calls, the timeline lists at once.
const listCap = 500

// lastBefore returns the last n items of s at positions before before, and
// the position of the first one listed when earlier ones are left out.
func lastBefore[T any](s []T, pos func(T) int64, before int64, n int) ([]T, int64) {
	end := len(s)
	if before > 0 { // 0 means all
		end = sort.Search(len(s), func(i int) bool { return pos(s[i]) >= before })
	}
	start := max(end-n, 0)
	if start == 0 {
		return s[:end], 0
	}
	return s[start:end], pos(s[start])
}

// timelinePage shows an agent's timeline with its windows, rollovers,
// fence steps, audited calls and tokens plot.
func (in *Inspector) timelinePage(w http.ResponseWriter, r *http.Request) {
	at, err := atOf(r)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	svc := in.cfg.Service // the log up to at, not a copy
	task, agent := chi.URLParam(r, "task"), "/"+chi.URLParam(r, "*")
	tl, err := readTimeline(r.Context(), svc, task, agent, at)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	var window int64
	if tl.State.ContextWindow != nil {
		window = *tl.State.ContextWindow
	} else if tl.Budget.ContextWindow != nil {
		window = *tl.Budget.ContextWindow
	}
	var before int64
	if v := r.URL.Query().Get("before"); v != "" {
		if before, err = strconv.ParseInt(v, 10, 64); err != nil || before < 1 {
			in.fail(w, r, errBadParam("before", "a position"))
			return
		}
	}
	th := thresholdsOf(window, tl.Budget)
	d := timelineData{timeline: tl, Thresholds: th, Plot: plotSVG(tl, th, at), Phase: tl.State.Phase(), Cap: listCap}
	var e1, e2 int64
	tl.Steps, e1 = lastBefore(tl.Steps, func(s step) int64 { return s.Position }, before, listCap)
	if tl.Calls, e2, err = tl.readCalls(r.Context(), svc, before, listCap); err != nil {
		in.fail(w, r, err)
		return
	}
	d.Earlier = max(e1, e2)
	in.renderAt(w, r, "timeline", agent+" · timeline", at, d)
}
