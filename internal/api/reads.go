package api

import (
	"log/slog"
	"net/http"
	"strconv"

	"github.com/memoryd/memoryd/internal/memory"
)

// handleEventsList handles "GET /v1/events?after=&limit=&task_id=".
func handleEventsList(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		after, err := queryInt(q.Get("after"), 0)
		if err != nil || after < 0 {
			writeError(w, r, log, httpErr(errBadRequest, "after must be a position (an integer of 0 or more)"))
			return
		}
		limit, err := queryInt(q.Get("limit"), 500)
		if err != nil || limit < 1 {
			writeError(w, r, log, httpErr(errBadRequest, "limit must be an integer of 1 or more"))
			return
		}
		limit = min(limit, 5000)
		evs, err := svc.Events(r.Context(), after, q.Get("task_id"), int(limit))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		next := after
		if len(evs) > 0 {
			next = evs[len(evs)-1].Position
		}
		encode(w, http.StatusOK, map[string]any{"events": evs, "next_after": next})
	}
}

// handleTasksList handles "GET /v1/tasks?before=&limit=". It pages the
// tasks and their agents by position, newest activity first.
func handleTasksList(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		before, err := queryInt(q.Get("before"), 0) // 0 for no bound
		if err != nil || (q.Get("before") != "" && before < 1) {
			writeError(w, r, log, httpErr(errBadRequest, "before must be a position (an integer of 1 or more)"))
			return
		}
		limit, err := queryInt(q.Get("limit"), memory.TasksDefaultLimit)
		if err != nil || limit < 1 {
			writeError(w, r, log, httpErr(errBadRequest, "limit must be an integer of 1 or more"))
			return
		}
		list, err := svc.Tasks(r.Context(), before, int(min(limit, memory.TasksMaxLimit)))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, list)
	}
}

// queryInt parses a query parameter, def when it is empty.
func queryInt(s string, def int64) (int64, error) {
	if s == "" {
		return def, nil
	}
	return strconv.ParseInt(s, 10, 64)
}
