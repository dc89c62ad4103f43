package api

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/tools"
)

// handleToolsList handles "GET /v1/tools".
func handleToolsList() http.HandlerFunc {
	body := map[string]any{"tools": tools.Specs()}
	return func(w http.ResponseWriter, r *http.Request) {
		encode(w, http.StatusOK, body)
	}
}

// toolCallRequest is the body of POST /v1/tools/{name}. HostCallID, an
// addition, names a call a host's hook announced, in place of a context.
type toolCallRequest struct {
	Context    memory.CallContext `json:"context"`
	Arguments  json.RawMessage    `json:"arguments"`
	HostCallID string             `json:"host_call_id"`
}

// handleToolCall handles "POST /v1/tools/{name}".
func handleToolCall(log *slog.Logger, svc *memory.Service, m *metrics) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		name := r.PathValue("name")
		if !tools.Known(name) {
			writeError(w, r, log, httpErr(errNoRoute, "unknown tool "+strconv.Quote(name)+"; GET /v1/tools lists the tools"))
			return
		}
		var req toolCallRequest
		if err := decode(r, &req); err != nil {
			m.toolCalls.WithLabelValues(name, memory.CodeInvalidArgument).Inc()
			writeError(w, r, log, err)
			return
		}
		cc, reqID := req.Context, requestID(r.Context())
		if req.HostCallID != "" {
			if cc != (memory.CallContext{}) {
				writeError(w, r, log, httpErr(errBadRequest, "give context or host_call_id, not both"))
				return
			}
			var err error
			if cc, err = svc.HostCall(req.HostCallID); err != nil {
				code, _ := failure(r, err)
				m.toolCalls.WithLabelValues(name, code).Inc()
				writeError(w, r, log, err)
				return
			}
		}
		res, err := svc.CallTool(r.Context(), name, cc, req.Arguments, reqID)
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
