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
	"path/filepath"
	"strings"
	"time"

	"github.com/memoryd/memoryd/internal/memory"
)

// maxHookInput bounds a hook's input, which names a session and a call.
const maxHookInput = 1 << 20

// hookSyncTimeout bounds each request of a transcript's sync, which may
// carry megabytes of a long session on its first run.
const hookSyncTimeout = 5 * time.Minute

var hookVerb = verb{
	name:     "hook",
	synopsis: "hook HOST [--addr HOST:PORT] [--db F]",
	summary:  "pass a coding agent's hook input (stdin) to the memoryd on --addr",
	about: `
Reads the input a coding agent gives a command hook on stdin. HOST is the agent: claude-code or
codex. The hook first syncs what the session's transcript (Codex: rollout), and a sub-agent's, gained
since its last run as the task's history, then passes the input to the memoryd that listens on
--addr and prints its answer: PreToolUse names each MCP call before it runs, so that memoryd runs the
call as that session's agent; SessionStart after a compaction answers memoryd's bootstrap
(docs/claude-code.md, docs/codex.md). With MEMORYD_TASK set (JSON {"task_id","parent_agent",
"agent_name"}, as memoryd handoff prints it), a new session joins that task as a new agent instead of
becoming its own, and its first SessionStart answers where the agent it continues stopped. The memoryd must
first prove that it holds this user's token (GET /v1/proof), as memoryd stop does; the token is
MEMORYD_TOKEN, else the file token beside --db. With nothing on a loopback --addr, the hook starts
memoryd there, as the Pi extension does (unless MEMORYD_AUTOSTART=0). A memoryd that refuses the
input, or none listening, is an error (exit 1): the host shows it and goes on.`,
	args: []arg{{name: "HOST", about: "the coding agent whose hook this is: claude-code or codex"}},
	flags: func(fs *flag.FlagSet, getenv func(string) string) runFunc {
		addr := fs.String("addr", envOr(getenv, "MEMORYD_ADDR", "127.0.0.1:7411"), "the address of the memoryd, `HOST:PORT` (env MEMORYD_ADDR)")
		db := fs.String("db", "", "the database whose token to use, `F` (env MEMORYD_DB; default the one serve uses)")
		return func(ctx context.Context, in *invocation) error {
			host := in.args[0]
			if host != memory.KindClaudeCode && host != memory.KindCodex {
				return &usageError{fmt.Sprintf("hook: unknown host %q; memoryd knows claude-code and codex", host)}
			}
			a, err := listenAddress(*addr)
			if err != nil {
				return err
			}
			return passHook(ctx, in, host, dialable(a), *db)
		}
	},
}

// passHook syncs the session's transcript named by the hook input on
// stdin, then posts the input to memoryd's hook route and copies the
// answer to stdout. A failed sync does not stop the hook: the call it
// announces still runs, and the next hook syncs what this one did not.
func passHook(ctx context.Context, in *invocation, host, addr, db string) error {
	body, err := io.ReadAll(io.LimitReader(in.stdin, maxHookInput+1))
	if err != nil {
		return fmt.Errorf("read the hook's input: %w", err)
	}
	if len(body) > maxHookInput {
		return fmt.Errorf("the hook's input is over %d bytes", maxHookInput)
	}
	var input hookInput
	if err := json.Unmarshal(body, &input); err != nil {
		return fmt.Errorf("the hook's input is not a JSON object: %w", err)
	}
	task, err := handoffTask(in.getenv)
	if err != nil {
		return err
	}
	token, err := agentToken(ctx, in, addr, db, "sending it the hook")
	if err != nil {
		return err
	}
	dir, err := databaseFolder(in.getenv, db)
	if err != nil {
		return err
	}
	client := apiClient{addr: addr, token: token, http: &http.Client{Timeout: hookSyncTimeout}}
	if task != nil {
		if task, err = joinHandoff(ctx, client, host, input, *task); err != nil {
			return err
		}
		// The hand-off's task goes with the hook, for the service's attach.
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(body, &fields); err != nil {
			return fmt.Errorf("the hook's input is not a JSON object: %w", err)
		}
		if fields["memoryd_task"], err = json.Marshal(task); err != nil {
			return err
		}
		if body, err = json.Marshal(fields); err != nil {
			return err
		}
	}
	var syncErr error
	if host == memory.KindCodex {
		syncErr = syncCodex(ctx, client, filepath.Join(dir, "codex"), codexSessions(in.getenv), input, task)
	} else {
		syncErr = syncClaudeCode(ctx, client, filepath.Join(dir, "claude-code"), claudeCodeProjects(in.getenv), claudeContextWindow(in.getenv), input, task)
	}
	var answer json.RawMessage
	if err := (apiClient{addr: addr, token: token, http: &http.Client{Timeout: probeTimeout}}).post(ctx, "/v1/hooks/"+host, json.RawMessage(body), &answer); err != nil {
		var ae *apiError
		if errors.As(err, &ae) {
			return fmt.Errorf("the memoryd on %s refused the hook: %w", addr, err)
		}
		return fmt.Errorf("pass the hook to the memoryd on %s: %w", addr, err)
	}
	// The hosts show a hook's output in places, so an empty answer
	// prints nothing.
	if !bytes.Equal(bytes.TrimSpace(answer), []byte("{}")) {
		if _, err := in.stdout.Write(append(answer, '\n')); err != nil {
			return err
		}
	}
	if syncErr != nil {
		return fmt.Errorf("the session's history is not up to date in memoryd: %w", syncErr)
	}
	return nil
}

// agentToken returns the token for the memoryd on addr, once that memoryd
// proved it holds it. A coding agent's hook and MCP server use it; doing
// names what is not done otherwise.
func agentToken(ctx context.Context, in *invocation, addr, db, doing string) (string, error) {
	h := probe(ctx, addr)
	if !h.answered && autostart(in.getenv, addr) {
		if err := startShared(ctx, in.getenv, addr, db); err != nil {
			return "", err
		}
		h = probe(ctx, addr)
	}
	if !h.memoryd {
		if !h.answered {
			return "", fmt.Errorf("no memoryd answers on %s: start it (memoryd serve), or let the hook start it (MEMORYD_AUTOSTART is 0, or the address is not loopback)", addr)
		}
		return "", fmt.Errorf("%s is held by %s, not by a memoryd: not %s", addr, h.describe(addr), doing)
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

// handoffTask is the task MEMORYD_TASK names for a hand-off, or nil.
func handoffTask(getenv func(string) string) (*memory.TaskRef, error) {
	v := strings.TrimSpace(getenv("MEMORYD_TASK"))
	if v == "" {
		return nil, nil
	}
	var t memory.TaskRef
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&t); err != nil || t.TaskID == "" {
		return nil, errors.New(`MEMORYD_TASK must be JSON like {"task_id":"...","parent_agent":"/root","agent_name":"codex"} (memoryd handoff prints it)`)
	}
	return &t, nil
}

// handoffNames bounds the names a hand-off's session tries: its own, then
// with _2 … _9.
const handoffNames = 9

// joinHandoff attaches a new session of a hand-off to its task, under the
// agent name it asks for or, when another session holds that name (a second
// session started with the same MEMORYD_TASK, or after /clear), the next
// free one, and returns the task as attached. A known session resumes as
// it is; a sub-agent's hook leaves the session to its own hooks.
func joinHandoff(ctx context.Context, c apiClient, host string, in hookInput, task memory.TaskRef) (*memory.TaskRef, error) {
	if in.SessionID == "" || in.AgentID != "" {
		return &task, nil
	}
	base := task.AgentName
	req := memory.AttachRequest{SessionKey: memory.HostSessionKey(host, in.SessionID, ""), SessionID: in.SessionID,
		SessionFile: in.TranscriptPath, Task: &task}
	for n := 1; ; n++ {
		var att memory.AttachResult
		err := c.post(ctx, "/v1/sessions/attach", req, &att)
		var ae *apiError
		if err == nil || base == "" || n == handoffNames || !errors.As(err, &ae) || ae.code != memory.CodeConflict {
			if err != nil {
				return nil, fmt.Errorf("join task %s as %s: %w", task.TaskID, task.AgentName, err)
			}
			return &task, nil
		}
		task.AgentName = fmt.Sprintf("%s_%d", base, n+1)
	}
}
