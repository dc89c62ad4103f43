package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/memoryd/memoryd/internal/claudecode"
	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/memory"
)

// Bounds of one sync request the hook sends: the service takes at most
// memory.MaxSyncEntries entries, and bodies of 8 MiB by default.
const (
	syncChunkEntries = memory.MaxSyncEntries
	syncChunkBytes   = 4 << 20
)

// apiClient calls the /v1 routes of a memoryd that proved it holds token.
type apiClient struct {
	addr, token string
	http        *http.Client
}

// apiError is a refusal by the service, with its error envelope's fields.
type apiError struct {
	status  int
	code    string
	message string
	reason  string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.status, e.code, e.message)
}

// post sends body as JSON to route and decodes a 200 answer into out.
func (c apiClient) post(ctx context.Context, route string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+c.addr+route, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var env struct {
			Error struct {
				Code    string         `json:"code"`
				Message string         `json:"message"`
				Details map[string]any `json:"details"`
			} `json:"error"`
		}
		_ = json.Unmarshal(answer, &env)
		reason, _ := env.Error.Details["reason"].(string)
		return &apiError{status: resp.StatusCode, code: env.Error.Code, message: env.Error.Message, reason: reason}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(answer, out)
}

// transcriptSync is one session file of a coding agent (a Claude Code
// transcript, a Codex rollout) synced into one agent.
type transcriptSync struct {
	client     apiClient
	cursorDir  string // the hook's cursors, 0700
	attach     memory.AttachRequest
	transcript string
	format     transcriptFormat
	// contextWindow is the context, in tokens, the session's usage fills,
	// unless the file names its own.
	contextWindow int64
}

// transcriptFormat reads a host's session file past a cursor, which it
// keeps as JSON of its own shape ("" for the file's start). It returns
// errRewound for a file that no longer holds what the cursor read.
type transcriptFormat func(r io.ReaderAt, size int64, cursor json.RawMessage) (syncBatch, error)

// syncBatch is what one read of a session file adds, in any format.
type syncBatch struct {
	entries []history.Entry
	// branch is the whole branch after the read; its first keep ids are
	// the branch before it.
	branch []string
	keep   int
	cursor json.RawMessage
	// usage is the context the session fills after the read, 0 if no
	// usage was read yet; window is the context window the file names,
	// 0 if none.
	usage, window int64
}

// errRewound reports a session file to read again from its start.
var errRewound = errors.New("the session file no longer holds what was read before")

// claudeCodeFormat reads Claude Code transcripts (internal/claudecode).
func claudeCodeFormat(r io.ReaderAt, size int64, cursor json.RawMessage) (syncBatch, error) {
	var cur claudecode.Cursor
	if len(cursor) > 0 && json.Unmarshal(cursor, &cur) != nil {
		return syncBatch{}, errRewound
	}
	b, err := claudecode.Read(r, size, cur)
	if errors.Is(err, claudecode.ErrRewound) {
		return syncBatch{}, errRewound
	}
	if err != nil {
		return syncBatch{}, err
	}
	out := syncBatch{entries: b.Entries, branch: b.Branch, keep: b.Keep}
	if b.Cursor.Usage != nil {
		out.usage = b.Cursor.Usage.ContextTokens()
	}
	out.cursor, err = json.Marshal(b.Cursor)
	return out, err
}

// Claude Code's context window and when it compacts (docs/claude-code.md
// §5): the window is
// CLAUDE_CODE_AUTO_COMPACT_WINDOW, raised to at least 100,000 and at most
// 1,000,000, else 200,000 (its models other than the 1M-token ones); it
// compacts once a request's context reaches the window less the output
// it reserves (CLAUDE_CODE_MAX_OUTPUT_TOKENS, at most 20,000) less a
// 13,000-token buffer.
const (
	defaultClaudeContextWindow = 200_000
	minClaudeContextWindow     = 100_000
	maxClaudeContextWindow     = 1_000_000
	claudeOutputReserve        = 20_000
	claudeCompactBuffer        = 13_000
)

// claudeContextWindow is the context a Claude Code session can fill
// before Claude Code compacts it, which the hooks report usage against:
// get_context_remaining then counts the tokens left before the
// compaction, and the reminder comes before it.
func claudeContextWindow(getenv func(string) string) int64 {
	window := int64(defaultClaudeContextWindow)
	if n, err := strconv.ParseInt(getenv("CLAUDE_CODE_AUTO_COMPACT_WINDOW"), 10, 64); err == nil && n > 0 {
		window = min(max(n, minClaudeContextWindow), maxClaudeContextWindow)
	}
	reserve := int64(claudeOutputReserve)
	if n, err := strconv.ParseInt(getenv("CLAUDE_CODE_MAX_OUTPUT_TOKENS"), 10, 64); err == nil && n > 0 {
		reserve = min(n, reserve)
	}
	return window - reserve - claudeCompactBuffer
}

// syncedCursor is a transcript's cursor file: how far it was read, and
// into which agent at which branch revision.
type syncedCursor struct {
	TaskID   string          `json:"task_id"`
	Agent    string          `json:"agent"`
	Revision *int64          `json:"revision"`
	Usage    int64           `json:"usage_reported"`
	Cursor   json.RawMessage `json:"cursor"`
}

// run attaches the session, syncs what the transcript gained since the
// last run and reports the context it fills. It returns the agent.
func (s transcriptSync) run(ctx context.Context) (memory.CallContext, error) {
	var att memory.AttachResult
	if err := s.client.post(ctx, "/v1/sessions/attach", s.attach, &att); err != nil {
		return memory.CallContext{}, fmt.Errorf("attach %s: %w", s.attach.SessionKey, err)
	}
	cc := memory.CallContext{TaskID: att.TaskID, Agent: att.Agent}
	f, err := openCursor(s.cursorDir, s.attach.SessionKey+"\x00"+s.transcript)
	if err != nil {
		return cc, err
	}
	defer f.Close() // also unlocks
	var saved syncedCursor
	if b, err := io.ReadAll(f); err == nil && len(b) > 0 {
		if json.Unmarshal(b, &saved) != nil || saved.TaskID != att.TaskID || saved.Agent != att.Agent {
			saved = syncedCursor{} // another database, or a file not ours: start again
		}
	}
	next, err := s.sync(ctx, cc, saved)
	if err != nil {
		return cc, err
	}
	if used := next.batchUsage; used > 0 && used != saved.Usage {
		window := s.contextWindow
		if next.batchWindow > 0 {
			window = next.batchWindow
		}
		report := map[string]any{"context": cc, "tokens_used": used, "context_window": window}
		if err := s.client.post(ctx, "/v1/lifecycle/usage", report, nil); err != nil {
			return cc, fmt.Errorf("report the context used: %w", err)
		}
		next.Usage = used
	}
	b, err := json.Marshal(next.syncedCursor)
	if err != nil {
		return cc, err
	}
	if err := f.Truncate(0); err != nil {
		return cc, err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return cc, err
	}
	return cc, nil
}

// syncedRead is a sync's new cursor, with the usage its read found.
type syncedRead struct {
	syncedCursor
	batchUsage, batchWindow int64
}

// sync reads the transcript past the saved cursor and sends what is new,
// reading it whole again when it was rewound or memoryd's branch is not
// the one the cursor remembers.
func (s transcriptSync) sync(ctx context.Context, cc memory.CallContext, saved syncedCursor) (syncedRead, error) {
	f, err := os.Open(s.transcript)
	if err != nil {
		return syncedRead{}, fmt.Errorf("read the transcript: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return syncedRead{}, err
	}
	batch, err := s.format(f, st.Size(), saved.Cursor)
	if errors.Is(err, errRewound) {
		saved = syncedCursor{TaskID: saved.TaskID, Agent: saved.Agent}
		batch, err = s.format(f, st.Size(), nil)
	}
	if err != nil {
		return syncedRead{}, fmt.Errorf("read the transcript %s: %w", s.transcript, err)
	}
	rev, err := s.send(ctx, cc, batch, saved.Revision)
	var ae *apiError
	if errors.As(err, &ae) && ae.reason == memory.SyncReasonStaleBase {
		rev, err = s.send(ctx, cc, batch, nil)
	}
	if err != nil {
		return syncedRead{}, fmt.Errorf("sync the transcript %s: %w", s.transcript, err)
	}
	next := syncedCursor{TaskID: cc.TaskID, Agent: cc.Agent, Revision: rev, Usage: saved.Usage, Cursor: batch.cursor}
	return syncedRead{syncedCursor: next, batchUsage: batch.usage, batchWindow: batch.window}, nil
}

// send syncs a batch's entries in requests within the service's bounds,
// the branch with the last: as a delta from base, or whole without one.
func (s transcriptSync) send(ctx context.Context, cc memory.CallContext, b syncBatch, base *int64) (*int64, error) {
	if len(b.entries) == 0 && base != nil && b.keep == len(b.branch) {
		return base, nil
	}
	var chunks [][]json.RawMessage
	var cur []json.RawMessage
	size := 0
	for _, e := range b.entries {
		if len(cur) > 0 && (len(cur) == syncChunkEntries || size+len(e.Raw) > syncChunkBytes) {
			chunks, cur, size = append(chunks, cur), nil, 0
		}
		cur, size = append(cur, e.Raw), size+len(e.Raw)
	}
	chunks = append(chunks, cur)
	var res memory.SyncResult
	for i, entries := range chunks {
		req := map[string]any{"context": cc, "entries": nonNil(entries)}
		if i == len(chunks)-1 {
			if base != nil {
				keep := int64(b.keep)
				req["delta"] = map[string]any{"base_revision": *base, "keep": keep, "append": nonNil(b.branch[b.keep:])}
			} else {
				req["branch"] = nonNil(b.branch)
			}
		}
		if err := s.client.post(ctx, "/v1/history/sync", req, &res); err != nil {
			return nil, err
		}
	}
	return &res.Revision, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// openCursor opens, creating it if needed, the user's own cursor file for
// key in dir, and locks it against the host's other hooks.
func openCursor(dir, key string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the hook's folder: %w", err)
	}
	sum := sha256.Sum256([]byte(key))
	path := filepath.Join(dir, hex.EncodeToString(sum[:16])+".json")
	f, err := openPrivate(path)
	if err != nil {
		return nil, fmt.Errorf("open the transcript's cursor: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock the transcript's cursor: %w", err)
	}
	return f, nil
}

// hookInput is the part of a Claude Code or Codex hook's input the hook
// verb reads itself.
type hookInput struct {
	Event          string `json:"hook_event_name"`
	SessionID      string `json:"session_id"`
	TranscriptPath string `json:"transcript_path"`
	AgentID        string `json:"agent_id"`
	// AgentTranscriptPath is the sub-agent's rollout on Codex's
	// SubagentStop, whose transcript_path is the session's.
	AgentTranscriptPath string `json:"agent_transcript_path"`
}

// claudeCodeProjects is the folder Claude Code keeps its transcripts in:
// projects/ in CLAUDE_CONFIG_DIR, else in ~/.claude.
func claudeCodeProjects(getenv func(string) string) string {
	if d := getenv("CLAUDE_CONFIG_DIR"); d != "" {
		return filepath.Join(d, "projects")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".claude", "projects")
	}
	return ""
}

// checkTranscript refuses a transcript path that is not a JSONL file of
// the user's under the host's folder of them (Claude Code's projects,
// Codex's sessions), so a hook input can point the sync nowhere else. A
// file not there yet is no error: exists says whether to read it.
func checkTranscript(projects, path string) (exists bool, err error) {
	clean := filepath.Clean(path)
	if projects == "" || !filepath.IsAbs(path) || !strings.HasPrefix(clean, filepath.Clean(projects)+string(filepath.Separator)) ||
		filepath.Ext(clean) != ".jsonl" {
		return false, fmt.Errorf("%s is not a transcript under %s: not read", path, projects)
	}
	fi, err := os.Lstat(clean)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() || !ownedByUser(fi) {
		return false, fmt.Errorf("%s is not a regular file of yours: not read", path)
	}
	return true, nil
}

// syncClaudeCode syncs the session's transcript and, for a sub-agent's
// hook, the sub-agent's own, before the hook itself is passed on.
func syncClaudeCode(ctx context.Context, c apiClient, cursorDir, projects string, window int64, in hookInput, task *memory.TaskRef) error {
	if in.SessionID == "" || in.TranscriptPath == "" {
		return nil
	}
	if ok, err := checkTranscript(projects, in.TranscriptPath); !ok {
		return err // nil for a session that has written nothing yet
	}
	root := transcriptSync{client: c, cursorDir: cursorDir, transcript: in.TranscriptPath, format: claudeCodeFormat, contextWindow: window,
		attach: memory.AttachRequest{SessionKey: memory.HostSessionKey(memory.KindClaudeCode, in.SessionID, ""), SessionID: in.SessionID,
			SessionFile: in.TranscriptPath, Task: task}}
	cc, err := root.run(ctx)
	if err != nil || in.AgentID == "" || strings.ContainsAny(in.AgentID, `/\`) {
		return err
	}
	// The path the service attaches the sub-agent with, on PreToolUse too,
	// which names no sub-agent transcript.
	path := claudecode.SubagentTranscript(in.TranscriptPath, in.AgentID)
	if ok, err := checkTranscript(projects, path); !ok {
		return err // nil for a sub-agent that has written nothing yet
	}
	sub := transcriptSync{client: c, cursorDir: cursorDir, transcript: path, format: claudeCodeFormat, contextWindow: window,
		attach: memory.AttachRequest{SessionKey: memory.HostSessionKey(memory.KindClaudeCode, in.SessionID, in.AgentID), SessionID: in.SessionID,
			SessionFile: path, Task: &memory.TaskRef{TaskID: cc.TaskID}}}
	_, err = sub.run(ctx)
	return err
}
