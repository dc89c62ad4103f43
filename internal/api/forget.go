package api

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/memoryd/memoryd/internal/memory"
)

// forgetRequest is the body of POST /v1/tasks/{task_id}/forget.
type forgetRequest struct {
	// Vacuum rebuilds an SQLite database file after the erasure.
	Vacuum bool `json:"vacuum"`
}

// forgetWait bounds how long a forget waits for readers to let the WAL
// be truncated.
const forgetWait = 10 * time.Second

// handleTaskForget handles "POST /v1/tasks/{task_id}/forget": it erases
// the task (memory.Service.EraseTask) and answers what was erased. The
// body is a JSON object, {} or {"vacuum": true}.
func handleTaskForget(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req forgetRequest
		if err := decode(r, &req); err != nil {
			writeError(w, r, log, err)
			return
		}
		task := r.PathValue("task_id")
		res, err := svc.EraseTask(r.Context(), task, requestID(r.Context()), memory.EraseOptions{Vacuum: req.Vacuum, Wait: forgetWait})
		if err != nil {
			if res.Position > 0 { // erased, but its scrub failed: logged, and said in the answer
				log.Error("forget: the erased task's scrub failed", "request_id", requestID(r.Context()), "task_id", task, "err", err.Error())
				res.Scrub.Left = append(res.Scrub.Left, "the scrub of the database's files after the erasure failed; see memoryd's log")
				encode(w, http.StatusOK, res)
				return
			}
			writeError(w, r, log, err)
			return
		}
		log.Info("forget: task erased", "request_id", requestID(r.Context()), "task_id", task, "position", res.Position, "events", res.Events)
		encode(w, http.StatusOK, res)
	}
}
