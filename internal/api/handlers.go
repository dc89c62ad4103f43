package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"strconv"

	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/tools"
	"github.com/memoryd/memoryd/internal/version"
)

// handleHealth handles "GET /healthz". "service" names memoryd, so that a
// client can tell it from another server holding the address; the
// version, commit and process id say which memoryd it is (a second
// memoryd that finds its address taken names it so).
func handleHealth(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	v := version.Get()
	pid := os.Getpid()
	return func(w http.ResponseWriter, r *http.Request) {
		p, err := svc.LastPosition(r.Context())
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, map[string]any{"status": "ok", "service": "memoryd", "position": p,
			"version": v.Version, "commit": v.Commit, "pid": pid})
	}
}

// handleShutdown handles "POST /v1/shutdown" (memoryd stop): it answers,
// then stops the server as SIGTERM does.
func handleShutdown(log *slog.Logger, shutdown func()) http.HandlerFunc {
	pid := os.Getpid()
	return func(w http.ResponseWriter, r *http.Request) {
		if shutdown == nil {
			writeError(w, r, log, httpErr(errNoRoute, "this memoryd cannot be stopped over HTTP: stop it with SIGTERM"))
			return
		}
		encode(w, http.StatusAccepted, map[string]any{"stopping": true, "pid": pid})
		shutdown()
	}
}

// handleSessionAttach handles "POST /v1/sessions/attach".
func handleSessionAttach(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, req memory.AttachRequest, id string) (memory.AttachResult, error) {
		return svc.Attach(r.Context(), req, id)
	})
}

// handleToolsList handles "GET /v1/tools".
func handleToolsList() http.HandlerFunc {
	body := map[string]any{"tools": tools.Specs()}
	return func(w http.ResponseWriter, r *http.Request) {
		encode(w, http.StatusOK, body)
	}
}

// toolCallRequest is the body of POST /v1/tools/{name}.
type toolCallRequest struct {
	Context   memory.CallContext `json:"context"`
	Arguments json.RawMessage    `json:"arguments"`
}

// handleToolCall handles "POST /v1/tools/{name}".
func handleToolCall(log *slog.Logger, svc *memory.Service, m *metrics) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if !tools.Known(name) {
			writeError(w, r, log, httpErr(errNoRoute, "unknown tool "+strconv.Quote(name)+"; GET /v1/tools lists the 11 tools"))
			return
		}
		var req toolCallRequest
		if err := decode(r, &req); err != nil {
			m.toolCalls.WithLabelValues(name, memory.CodeInvalidArgument).Inc()
			writeError(w, r, log, err)
			return
		}
		res, err := svc.CallTool(r.Context(), name, req.Context, req.Arguments, requestID(r.Context()))
		if err != nil {
			code, _ := failure(r, err)
			m.toolCalls.WithLabelValues(name, code).Inc()
			writeError(w, r, log, err)
			return
		}
		body, err := res.JSON() // already encoded when the read audit fingerprinted it
		if err != nil {
			m.toolCalls.WithLabelValues(name, memory.CodeInternal).Inc()
			writeError(w, r, log, err)
			return
		}
		m.toolCalls.WithLabelValues(name, "ok").Inc()
		writeJSON(w, http.StatusOK, body)
	}
}

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

// handleTasksList handles "GET /v1/tasks?before=&limit=": the tasks and
// their agents, newest activity first, paged by position like
// GET /v1/events (next_before is the next page's before, null at the end).
func handleTasksList(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		before, err := queryInt(q.Get("before"), 0) // 0: no bound
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

func queryInt(s string, def int64) (int64, error) {
	if s == "" {
		return def, nil
	}
	return strconv.ParseInt(s, 10, 64)
}
