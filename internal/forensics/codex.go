package forensics

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memoryd/memoryd/internal/codex"
	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/projections"
)

// ErrNotARollout means a file given as a Codex rollout does not start
// with a session_meta record.
var ErrNotARollout = errors.New("not a Codex rollout")

// ErrSessionNotImported means a sub-agent's rollout whose session is not
// imported yet, and whose session's own rollout was not found.
var ErrSessionNotImported = errors.New("its session is not imported")

// ImportedCodexSession is what importing a Codex rollout did.
type ImportedCodexSession struct {
	ImportedSession
	SessionFile string `json:"session_file"`
	SessionKey  string `json:"session_key"`
	SessionID   string `json:"session_id"`
	ThreadID    string `json:"thread_id"`
	// ParentThreadID is the thread that spawned a sub-agent, "" for a
	// session's own thread.
	ParentThreadID string `json:"parent_thread_id,omitempty"`
	// Session is the import of the session's own rollout, which a
	// sub-agent's import does first when the session was not imported.
	Session *ImportedCodexSession `json:"session,omitempty"`
	// Skipped counts the lines that are not rollout records, left out as
	// the hooks leave them out; SkippedAt names them.
	Skipped   int        `json:"skipped_lines"`
	SkippedAt []FileLine `json:"skipped_at"`
}

// CodexMeta reads the session_meta a rollout starts with: its first line
// that is not blank.
func CodexMeta(path string) (codex.SessionMeta, error) {
	f, err := os.Open(path)
	if err != nil {
		return codex.SessionMeta{}, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	for line := 1; ; line++ {
		raw, err := history.ReadLine(br)
		if len(bytes.TrimSpace(raw)) > 0 {
			if m, ok := codex.Meta(raw); ok {
				return m, nil
			}
			return codex.SessionMeta{}, fmt.Errorf("%w: line %d is not a session_meta record", ErrNotARollout, line)
		}
		if errors.Is(err, io.EOF) {
			return codex.SessionMeta{}, fmt.Errorf("%w: it has no session_meta record", ErrNotARollout)
		}
		if err != nil {
			return codex.SessionMeta{}, err
		}
	}
}

// CodexSessionKey is the session key of a Codex thread, as the hooks
// attach it: codex/<session id> for a session's own thread, and
// codex/<session id>/<thread id> for a sub-agent's. subAgent says which.
func CodexSessionKey(m codex.SessionMeta) (key, sessionID string, subAgent bool) {
	sessionID = m.SessionID
	subAgent = m.ParentThreadID != "" || m.ID != m.SessionID
	if subAgent && sessionID == m.ID {
		sessionID = m.ParentThreadID // a rollout that does not name its session
	}
	key = memory.KindCodex + "/" + sessionID
	if subAgent {
		key += "/" + m.ID
	}
	return key, sessionID, subAgent
}

// ImportCodexSession imports the Codex rollout at path, under the session
// key the hooks use, so that a session imported before memoryd was set up
// continues in the same task: a session's own thread is the task of
// codex/<session id>, and a sub-agent's thread a child agent of that task,
// codex/<session id>/<thread id>. A sub-agent whose session is not
// imported yet has its session's rollout imported first, found by find
// (nil finds none); without it, the error is ErrSessionNotImported. On an
// error, Session is still the session's import, if it was done.
// Entries are named by their line's ordinal, so importing the file again
// stores only what is new.
func ImportCodexSession(ctx context.Context, svc *memory.Service, path string, find func(threadID string) string, progress func(int64)) (ImportedCodexSession, error) {
	meta, err := CodexMeta(path)
	if err != nil {
		return ImportedCodexSession{}, fmt.Errorf("%s: %w", path, err)
	}
	for _, id := range []string{meta.ID, meta.SessionID, meta.ParentThreadID} {
		if strings.ContainsAny(id, `/\`) || strings.Contains(id, "..") || strings.ContainsRune(id, 0) {
			return ImportedCodexSession{}, fmt.Errorf("%s: the session_meta names a thread %q that is not a thread id", path, id)
		}
	}
	key, sid, sub := CodexSessionKey(meta)
	out := ImportedCodexSession{SessionFile: path, SessionKey: key, SessionID: sid, ThreadID: meta.ID,
		ParentThreadID: meta.ParentThreadID, SkippedAt: []FileLine{}}
	req := memory.AttachRequest{SessionKey: key, SessionID: sid, SessionFile: path}
	if sub {
		root := memory.KindCodex + "/" + sid
		task, err := attachedTask(ctx, svc, root)
		if err != nil {
			return ImportedCodexSession{}, fmt.Errorf("%s: %w", path, err)
		}
		if task == "" {
			file := ""
			if find != nil {
				file = find(sid)
			}
			if file == "" {
				return ImportedCodexSession{}, fmt.Errorf("%s: %w: %s, and its rollout (rollout-*-%s.jsonl) was not found",
					path, ErrSessionNotImported, root, sid)
			}
			s, err := ImportCodexSession(ctx, svc, file, nil, nil)
			if err != nil {
				return ImportedCodexSession{}, fmt.Errorf("%s: its session's rollout: %w", path, err)
			}
			if s.SessionKey != root {
				return ImportedCodexSession{}, fmt.Errorf("%s: %s is not the rollout of its session %s but of %s", path, file, root, s.SessionKey)
			}
			task, out.Session = s.TaskID, &s
		}
		req.Task = &memory.TaskRef{TaskID: task}
	}
	res, skipped, err := importRollout(ctx, svc, path, req, progress)
	if err != nil {
		return ImportedCodexSession{Session: out.Session}, err // the session's own import stays
	}
	out.ImportedSession = res
	for _, l := range skipped {
		out.SkippedAt = append(out.SkippedAt, FileLine{File: path, Line: l})
	}
	out.Skipped = len(skipped)
	return out, nil
}

// attachedTask returns the task of the session key, "" when it is not
// attached.
func attachedTask(ctx context.Context, svc *memory.Service, key string) (string, error) {
	a, err := projections.NewReader(svc.Store().Reader()).AgentBySessionKey(ctx, key)
	if errors.Is(err, projections.ErrNotFound) {
		return "", nil
	}
	return a.TaskID, err
}

// importRollout imports one rollout as the agent req attaches, all or
// nothing. It returns the lines it left out, which are not records.
func importRollout(ctx context.Context, svc *memory.Service, path string, req memory.AttachRequest, progress func(int64)) (ImportedSession, []int, error) {
	f, err := os.Open(path)
	if err != nil {
		return ImportedSession{}, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ImportedSession{}, nil, err
	}
	b, err := codex.Read(f, fi.Size(), codex.Cursor{})
	if err != nil {
		return ImportedSession{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	entries := make([]json.RawMessage, len(b.Entries))
	for i, e := range b.Entries {
		entries[i] = e.Raw
	}
	var synced func(int)
	if progress != nil {
		synced = func(n int) { progress(int64(n)) }
	}
	res, err := svc.ImportSession(ctx, req, entries, b.Branch, synced)
	if err != nil {
		var ee *memory.EntryError
		if errors.As(err, &ee) {
			if line := entryLine(f, fi.Size(), ee.Index); line > 0 {
				return ImportedSession{}, nil, fmt.Errorf("%s: line %d: %w", path, line, err)
			}
		}
		return ImportedSession{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	return ImportedSession{TaskID: res.TaskID, Agent: res.Agent, Resumed: res.Resumed, RegisteredAgents: res.RegisteredAgents,
		AttachedWindowID: res.AttachResult.WindowID, Entries: len(b.Entries), Stored: res.Stored,
		Branch: len(b.Branch), Revision: res.Revision, WindowID: res.WindowID}, b.SkippedLines, nil
}

// entryLine returns the line, from 1, that the rollout's entry at index
// was made of, or 0 when it cannot tell.
func entryLine(r io.ReaderAt, size int64, index int) int {
	var conv codex.Converter
	br := bufio.NewReader(io.NewSectionReader(r, 0, size))
	n := 0
	for {
		raw, err := history.ReadLine(br)
		if err != nil {
			return 0
		}
		entries, _, err := conv.Line(raw)
		if err != nil {
			continue
		}
		if n += len(entries); n > index {
			return int(conv.State.Lines)
		}
	}
}

// CodexThreadID returns the thread id a rollout's file name ends in
// (rollout-<time>-<thread id>.jsonl), or "".
func CodexThreadID(name string) string {
	rest, ok := strings.CutPrefix(name, "rollout-")
	if !ok {
		return ""
	}
	rest, ok = strings.CutSuffix(rest, ".jsonl")
	const uuidLen = 36
	if !ok || len(rest) <= uuidLen || rest[len(rest)-uuidLen-1] != '-' {
		return ""
	}
	return rest[len(rest)-uuidLen:]
}

// RolloutFinder finds the rollout of a thread near the rollout at path: in
// its folder and, when that is a day of Codex's sessions folder
// (sessions/YYYY/MM/DD), in every day of it. Symbolic links are not
// followed.
func RolloutFinder(path string) func(threadID string) string {
	dir := filepath.Dir(path)
	patterns := []string{dir}
	day, month, year := filepath.Base(dir), filepath.Base(filepath.Dir(dir)), filepath.Base(filepath.Dir(filepath.Dir(dir)))
	if digits(year, 4) && digits(month, 2) && digits(day, 2) {
		patterns = append(patterns, filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(dir))), "*", "*", "*"))
	}
	return func(threadID string) string {
		if threadID == "" || strings.ContainsAny(threadID, `*?[]\/`) {
			return ""
		}
		for _, p := range patterns {
			found, _ := filepath.Glob(filepath.Join(p, "rollout-*-"+threadID+".jsonl"))
			sort.Strings(found)
			for _, f := range found {
				if fi, err := os.Lstat(f); err == nil && fi.Mode().IsRegular() && f != path {
					return f
				}
			}
		}
		return ""
	}
}

// digits reports whether s is n decimal digits.
func digits(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
