package api

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memoryd/memoryd/internal/mcpserver"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/version"
)

// handleHostHook handles "POST /v1/hooks/{host}": a Claude Code or Codex
// hook's input, as its command (or Claude Code's http) hook sends it.
// Fields memoryd does not read are let through, since the hosts add fields
// over time. memoryd_task, memoryd's own, names the task a hand-off's new
// session joins (memoryd hook reads it from MEMORYD_TASK).
func handleHostHook(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		host := r.PathValue("host")
		if host != memory.KindClaudeCode && host != memory.KindCodex {
			writeError(w, r, log, httpErr(errNoRoute, "unknown host "+strconv.Quote(host)+"; memoryd takes the hooks of claude-code and codex"))
			return
		}
		var in map[string]json.RawMessage
		if err := decode(r, &in); err != nil {
			writeError(w, r, log, err)
			return
		}
		h := memory.HostHook{Host: host}
		for _, f := range []struct {
			key string
			v   *string
		}{
			{"hook_event_name", &h.Event}, {"session_id", &h.SessionID}, {"transcript_path", &h.TranscriptPath},
			{"tool_use_id", &h.ToolUseID}, {"agent_id", &h.AgentID}, {"source", &h.Source},
		} {
			raw, ok := in[f.key]
			if !ok || string(raw) == "null" {
				continue
			}
			if json.Unmarshal(raw, f.v) != nil {
				writeError(w, r, log, httpErr(errBadRequest, "field "+f.key+" must be a string"))
				return
			}
		}
		if raw, ok := in["memoryd_task"]; ok && string(raw) != "null" {
			var t memory.TaskRef
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&t); err != nil || t.TaskID == "" {
				writeError(w, r, log, httpErr(errBadRequest, `field memoryd_task must be {"task_id":…,"parent_agent":…,"agent_name":…} with a task_id`))
				return
			}
			h.Task = &t
		}
		answer, err := svc.HandleHostHook(r.Context(), h, requestID(r.Context()))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		// The answer is the hook's output as the host reads it.
		out := map[string]any{}
		if answer.AdditionalContext != "" {
			out["hookSpecificOutput"] = map[string]any{"hookEventName": h.Event, "additionalContext": answer.AdditionalContext}
		}
		encode(w, http.StatusOK, out)
	}
}

// handleMCP serves memoryd's tools over MCP's streamable HTTP transport
// at /v1/mcp, stateless, behind the same token and Host checks as every
// /v1 route. A call runs as the agent its host's hook bound it to.
func handleMCP(svc *memory.Service) http.Handler {
	server := mcpserver.New(func(ctx context.Context, call mcpserver.Call) (memory.ToolResult, error) {
		cc, err := svc.HostCall(call.HostCallID)
		if err != nil {
			return memory.ToolResult{}, err
		}
		return svc.CallTool(ctx, call.Tool, cc, call.Args, cc.CallID)
	}, mcpserver.Options{Version: version.Get().Version, ErrorBody: func(err error) any {
		_, body := ErrorEnvelope(err)
		return body
	}})
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}
