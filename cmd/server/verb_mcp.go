package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memoryd/memoryd/internal/api"
	"github.com/memoryd/memoryd/internal/mcpserver"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/version"
)

var mcpVerb = verb{
	name:     "mcp",
	synopsis: "mcp [--addr HOST:PORT] [--db F] [--tool-names memoryd|codex]",
	summary:  "serve memoryd's tools over MCP on stdin and stdout, for a host that starts it",
	about: `
Serves memoryd's tools over MCP on stdin and stdout, for a coding agent that starts its MCP servers
itself. Each call goes to the memoryd that listens on --addr (POST /v1/tools/NAME) with the host's id
of the call, so it runs as the agent the host's hook bound it to (memoryd hook; docs/claude-code.md, docs/codex.md),
and answers what that route answers, byte for byte. The host's
configuration then holds no token: this process reads MEMORYD_TOKEN, else the file token beside --db,
and sends it only to a memoryd that proved it holds it (GET /v1/proof), as memoryd stop does. With
nothing on a loopback --addr, it starts memoryd there first, as the hook does (unless
MEMORYD_AUTOSTART=0). --tool-names codex serves the tools under their names in Codex's design
(history.list_windows, notes.write_file, …), as memoryd setup codex writes it; Codex shows them to its
model with "_" for ".", as the other names are (docs/codex.md §2).`,
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		addr := fs.String("addr", envOr(getenv, "MEMORYD_ADDR", "127.0.0.1:7411"), "the address of the memoryd, `HOST:PORT` (env MEMORYD_ADDR)")
		db := fs.String("db", "", "the database whose token to use, `F` (env MEMORYD_DB; default the one serve uses)")
		names := fs.String("tool-names", "memoryd", "the tools' names: `NAMES` memoryd (notes_write_file) or codex (notes.write_file)")
		return func(ctx context.Context, in *invocation) error {
			if *names != "memoryd" && *names != "codex" {
				return &usageError{fmt.Sprintf("--tool-names %q: give memoryd or codex", *names)}
			}
			a, err := listenAddress(*addr)
			if err != nil {
				return err
			}
			return serveMCP(ctx, in, dialable(a), *db, *names == "codex")
		}
	},
}

// serveMCP serves the tools of the memoryd on addr over MCP on the
// invocation's stdin and stdout until the host closes them.
func serveMCP(ctx context.Context, in *invocation, addr, db string, codexNames bool) error {
	token, err := agentToken(ctx, in, addr, db, "serving its tools")
	if err != nil {
		return err
	}
	client := &http.Client{Transport: bearerTransport{token: token, next: http.DefaultTransport}}
	call := func(ctx context.Context, c mcpserver.Call) (memory.ToolResult, error) {
		return callRemote(ctx, client, addr, c)
	}
	server := mcpserver.New(call, mcpserver.Options{Version: version.Get().Version, CodexNames: codexNames, ErrorBody: func(err error) any {
		var re *remoteError
		if errors.As(err, &re) {
			return re.envelope
		}
		_, body := api.ErrorEnvelope(err)
		return body
	}})
	return server.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(in.stdin), Writer: nopWriteCloser{in.stdout}})
}

// remoteError is a call the memoryd refused, with its error envelope.
type remoteError struct{ envelope json.RawMessage }

// Error returns the envelope.
func (e *remoteError) Error() string { return string(e.envelope) }

// callRemote runs a call at the memoryd on addr, as the agent the host's
// hook bound its id to, and returns its answer as memoryd gave it.
func callRemote(ctx context.Context, client *http.Client, addr string, c mcpserver.Call) (memory.ToolResult, error) {
	if c.HostCallID == "" {
		return memory.ToolResult{}, &memory.Error{Kind: memory.ErrForbidden, Message: "the host sent no id with this call, " +
			"so memoryd cannot tell whose it is (docs/claude-code.md, docs/codex.md)"}
	}
	body, err := json.Marshal(struct {
		HostCallID string          `json:"host_call_id"`
		Arguments  json.RawMessage `json:"arguments,omitempty"`
	}{c.HostCallID, c.Args})
	if err != nil {
		return memory.ToolResult{}, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/tools/"+c.Tool, bytes.NewReader(body))
	if err != nil {
		return memory.ToolResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return memory.ToolResult{}, &memory.Error{Kind: memory.ErrUnavailable, Message: "the memoryd on " + addr + " does not answer"}
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return memory.ToolResult{}, &memory.Error{Kind: memory.ErrUnavailable, Message: "the memoryd on " + addr + " broke off its answer"}
	}
	if resp.StatusCode != http.StatusOK {
		return memory.ToolResult{}, &remoteError{envelope: bytes.TrimSpace(answer)}
	}
	// The details stay the bytes memoryd sent, field order included.
	var res struct {
		Content   []memory.ContentBlock `json:"content"`
		Details   json.RawMessage       `json:"details"`
		Terminate bool                  `json:"terminate"`
	}
	if err := json.Unmarshal(answer, &res); err != nil {
		return memory.ToolResult{}, err
	}
	return memory.ToolResult{Content: res.Content, Details: res.Details, Terminate: res.Terminate}, nil
}

// bearerTransport sends the token with every request.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

// RoundTrip sends r with the token.
func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// nopWriteCloser is a writer whose Close does nothing: stdout stays open.
type nopWriteCloser struct{ io.Writer }

// Close does nothing.
func (nopWriteCloser) Close() error { return nil }
