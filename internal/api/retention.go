package api

import (
	"log/slog"
	"net/http"

	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/retention"
)

// retentionRequest is the body of PUT /v1/tasks/{task_id}/retention.
type retentionRequest struct {
	// Retain is a period such as 30d (h, d or w), forever, or default.
	Retain string `json:"retain"`
}

// handleTaskRetention handles "PUT /v1/tasks/{task_id}/retention": it
// gives the task its own retention policy (memory.Service.SetTaskRetention,
// the event task.retention_set) and answers {task_id, retain, changed,
// position}.
func handleTaskRetention(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req retentionRequest
		if err := decode(r, &req); err != nil {
			writeError(w, r, log, err)
			return
		}
		task := r.PathValue("task_id")
		res, err := svc.SetTaskRetention(r.Context(), task, req.Retain, requestID(r.Context()))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		if res.Changed {
			log.Info("retention: task policy set", "request_id", requestID(r.Context()), "task_id", task, "retain", res.Retain, "position", res.Position)
		}
		encode(w, http.StatusOK, res)
	}
}

// handleRetentionPlan handles "GET /v1/retention": the dry run of the
// server's policy and the tasks' own, what they erase now, erasing
// nothing.
func handleRetentionPlan(log *slog.Logger, svc *memory.Service, global retention.Policy) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		plan, err := svc.PlanRetention(r.Context(), global)
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, plan)
	}
}
