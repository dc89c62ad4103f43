package inspector

import (
	"net/http"

	"github.com/memoryd/memoryd/internal/memory"
)

// source returns the request's ?at=P and the memory as of it; release
// must be called when the page is rendered.
func (in *Inspector) source(r *http.Request) (int64, *memory.Service, func(), error) {
	at, err := atOf(r)
	if err != nil {
		return 0, nil, nil, err
	}
	svc, release, err := in.states.at(r.Context(), at)
	if err != nil {
		return 0, nil, nil, err
	}
	return at, svc, release, nil
}

type tasksData struct {
	Tasks []memory.TaskView
	More  bool
}

// tasksPage is the start page: the tasks with the most recent activity,
// each with its agent tree, phases, windows and last activity.
func (in *Inspector) tasksPage(w http.ResponseWriter, r *http.Request) {
	at, svc, release, err := in.source(r)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	defer release()
	list, err := svc.Tasks(r.Context(), 0, memory.TasksMaxLimit)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	in.renderAt(w, r, "tasks", "Tasks", at, tasksData{Tasks: list.Tasks, More: list.NextBefore != nil})
}
