package inspector

import (
	"html/template"
	"net/http"

	"github.com/go-chi/chi/v5"
)

type timelineData struct {
	*timeline
	Thresholds thresholds
	Plot       template.HTML
	Phase      string
}

// timelinePage is an agent's timeline: its windows as bands along the
// log, its rollovers with their bootstrap text, the fence's steps, the
// audited calls and the tokens plot.
func (in *Inspector) timelinePage(w http.ResponseWriter, r *http.Request) {
	at, svc, release, err := in.source(r)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	defer release()
	task, agent := chi.URLParam(r, "task"), "/"+chi.URLParam(r, "*")
	tl, err := readTimeline(r.Context(), svc, task, agent)
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
	th := thresholdsOf(window, tl.Budget)
	in.renderAt(w, r, "timeline", agent+" · timeline", at, timelineData{timeline: tl, Thresholds: th, Plot: plotSVG(tl, th, at), Phase: tl.State.Phase()})
}
