package api

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memoryd/memoryd/internal/mcpserver"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/version"
)

// handleClaudeCodeHook handles "POST /v1/hooks/claude-code": a Claude Code
// hook's input, as its command or http hook sends it. Fields memoryd does
// not read are let through, since the host adds fields over time.
func handleClaudeCodeHook(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in map[string]any
		if err := decode(r, &in); err != nil {
			writeError(w, r, log, err)
			return
		}
		var h memory.ClaudeCodeHook
		for _, f := range []struct {
			key string
			v   *string
		}{
			{"hook_event_name", &h.Event}, {"session_id", &h.SessionID}, {"transcript_path", &h.TranscriptPath},
			{"tool_use_id", &h.ToolUseID}, {"agent_id", &h.AgentID}, {"source", &h.Source},
		} {
			switch v := in[f.key].(type) {
			case nil:
			case string:
				*f.v = v
			default:
				writeError(w, r, log, httpErr(errBadRequest, "field "+f.key+" must be a string"))
				return
			}
		}
		answer, err := svc.HandleClaudeCodeHook(r.Context(), h, requestID(r.Context()))
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		// The answer is the hook's output as Claude Code reads it.
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
