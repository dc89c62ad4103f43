package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maxHookInput bounds a hook's input, which names a session and a call.
const maxHookInput = 1 << 20

var hookVerb = verb{
	name:     "hook",
	synopsis: "hook HOST [--addr HOST:PORT] [--db F]",
	summary:  "pass a coding agent's hook input (stdin) to the memoryd on --addr",
	about: `
Reads the input a coding agent gives a command hook on stdin and passes it to the memoryd that
listens on --addr, which answers on stdout. HOST is the agent: claude-code, whose PreToolUse hook
names each MCP call before it runs, so that memoryd runs the call as that session's agent
(docs/claude-code.md). The memoryd must first prove that it holds this user's token (GET /v1/proof),
as memoryd stop does; the token is MEMORYD_TOKEN, else the file token beside --db. A memoryd that
refuses the input, or none listening, is an error (exit 1): the host shows it and goes on.`,
	args: []arg{{name: "HOST", about: "the coding agent whose hook this is: claude-code"}},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		addr := fs.String("addr", envOr(getenv, "MEMORYD_ADDR", "127.0.0.1:7411"), "the address of the memoryd, `HOST:PORT` (env MEMORYD_ADDR)")
		db := fs.String("db", "", "the database whose token to use, `F` (env MEMORYD_DB; default the one serve uses)")
		return func(ctx context.Context, in *invocation) error {
			if in.args[0] != "claude-code" {
				return &usageError{fmt.Sprintf("hook: unknown host %q; the one memoryd knows is claude-code", in.args[0])}
			}
			a, err := listenAddress(*addr)
			if err != nil {
				return err
			}
			return passHook(ctx, in, dialable(a), *db)
		}
	},
}

// passHook posts the hook input on stdin to memoryd's hook route and
// copies the answer to stdout.
func passHook(ctx context.Context, in *invocation, addr, db string) error {
	body, err := io.ReadAll(io.LimitReader(in.stdin, maxHookInput+1))
	if err != nil {
		return fmt.Errorf("read the hook's input: %w", err)
	}
	if len(body) > maxHookInput {
		return fmt.Errorf("the hook's input is over %d bytes", maxHookInput)
	}
	token, err := agentToken(ctx, in, addr, db, "sending it the hook")
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/hooks/claude-code", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: probeTimeout}).Do(req)
	if err != nil {
		return fmt.Errorf("pass the hook to the memoryd on %s: %w", addr, err)
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, maxHookInput))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the memoryd on %s refused the hook: %d %s", addr, resp.StatusCode, strings.TrimSpace(string(answer)))
	}
	_, err = in.stdout.Write(answer)
	return err
}

// agentToken returns the token for the memoryd on addr, once that memoryd
// proved it holds it. A coding agent's hook and MCP server use it; doing
// names what is not done otherwise.
func agentToken(ctx context.Context, in *invocation, addr, db, doing string) (string, error) {
	h := probe(ctx, addr)
	if !h.memoryd {
		return "", fmt.Errorf("no memoryd answers on %s: start it (memoryd serve) before the agent", addr)
	}
	token, err := existingToken(in.getenv, db)
	if err != nil {
		return "", err
	}
	if err := checkProof(ctx, addr, token); err != nil {
		return "", fmt.Errorf("%s is held by %s, which %v: not %s", addr, h.describe(addr), err, doing)
	}
	return token, nil
}
