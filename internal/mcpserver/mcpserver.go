// Package mcpserver serves memoryd's tools over the Model Context
// Protocol. Its tools are those of GET /v1/tools, with their argument
// schemas as input schemas and their result schemas as output schemas,
// and each call goes to the same memory code path as POST
// /v1/tools/{name}: the caller given to New decides how.
package mcpserver

import (
	"context"
	"encoding/base64"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/tools"
)

// Caller runs one tool call. The in-process server finds the call's agent
// and calls memory.Service.CallTool; a stdio server started by a host
// would post to a running memoryd.
type Caller func(ctx context.Context, call Call) (memory.ToolResult, error)

// Call is one tools/call request.
type Call struct {
	Tool string
	Args json.RawMessage
	// HostCallID is the host's id of the call, from the request's _meta,
	// or "". Claude Code sends its tool_use id as claudecode/toolUseId,
	// Codex the model's call_id as callId; each is the tool_use_id of the
	// host's PreToolUse hook.
	HostCallID string
}

// hostCallIDKeys are the _meta keys under which the hosts send the id of
// the model's tool call: Claude Code's, and Codex's.
var hostCallIDKeys = []string{"claudecode/toolUseId", "callId"}

// Options configure New.
type Options struct {
	// Version is memoryd's version, as the MCP handshake names the server.
	Version string
	// ErrorBody is what a failed call answers the model with, as the HTTP
	// API answers the same error. api.ErrorEnvelope is the one memoryd
	// uses.
	ErrorBody func(err error) any
	// CodexNames serves the tools under their names in Codex's design
	// (tools.CodexName: history.list_windows, …). Codex offers a dotted
	// name to its model with "_" for ".", so the model sees the same
	// names either way (docs/codex.md §2).
	CodexNames bool
}

// New returns an MCP server with memoryd's tools, each answered by call.
func New(call Caller, opts Options) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "memoryd", Version: opts.Version}, nil)
	for _, spec := range tools.Specs() {
		name := spec.Name
		served := name
		if opts.CodexNames {
			served = tools.CodexName(name)
		}
		t := &mcp.Tool{
			Name:         served,
			Description:  spec.Description,
			InputSchema:  spec.Parameters,
			OutputSchema: spec.Result,
			Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: !tools.Writes(name)},
		}
		s.AddTool(t, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			c := Call{Tool: name, Args: req.Params.Arguments}
			for _, k := range hostCallIDKeys {
				if id, ok := req.Params.Meta[k].(string); ok && id != "" {
					c.HostCallID = id
					break
				}
			}
			res, err := call(ctx, c)
			if err != nil {
				return errorResult(err, opts.ErrorBody), nil
			}
			return toolResult(res)
		})
	}
	return s
}

// toolResult converts a memoryd tool result to MCP's: the same content
// blocks, and the details as the structured content.
func toolResult(res memory.ToolResult) (*mcp.CallToolResult, error) {
	out := &mcp.CallToolResult{Content: make([]mcp.Content, 0, len(res.Content)), StructuredContent: res.Details}
	for _, b := range res.Content {
		switch b.Type {
		case "image":
			data, err := base64.StdEncoding.DecodeString(b.Data)
			if err != nil {
				return nil, err
			}
			out.Content = append(out.Content, &mcp.ImageContent{Data: data, MIMEType: b.MimeType})
		default:
			out.Content = append(out.Content, &mcp.TextContent{Text: b.Text})
		}
	}
	if res.Terminate {
		// Pi ends the turn on it; an MCP host has no such notion, so it is
		// passed on for a host that looks.
		out.Meta = mcp.Meta{"memoryd/terminate": true}
	}
	return out, nil
}

// errorResult is a failed call as a tool error the model can read and act
// on: the error envelope of the HTTP API as compact JSON.
func errorResult(err error, body func(error) any) *mcp.CallToolResult {
	text := `{"error":{"code":"internal","message":"internal error","details":{}}}`
	if body != nil {
		if b, merr := json.Marshal(body(err)); merr == nil {
			text = string(b)
		}
	}
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
