package forensics

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memoryd/memoryd/internal/claudecode"
	"github.com/memoryd/memoryd/internal/memory"
)

// ImportedClaudeCodeSession is what importing a Claude Code session did:
// the session, and each of its sub-agents as a child agent.
type ImportedClaudeCodeSession struct {
	ImportedSession
	SessionKey string            `json:"session_key"`
	SubAgents  []ImportedSession `json:"sub_agents"`
	// Skipped counts the lines that are not JSON objects, left out as the
	// hooks leave them out; SkippedAt names them.
	Skipped   int        `json:"skipped_lines"`
	SkippedAt []FileLine `json:"skipped_at"`
}

// FileLine is a line of a file, counted from 1.
type FileLine struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

// ImportClaudeCodeSession imports the Claude Code transcript at path as
// the task of its session, under the session key the hooks use
// (claude-code/<session id>), so that a session imported before memoryd
// was set up continues in the same task. Its sub-agents' transcripts
// (<session>/subagents/agent-<id>.jsonl) become child agents.
func ImportClaudeCodeSession(ctx context.Context, svc *memory.Service, path string, progress func(int64)) (ImportedClaudeCodeSession, error) {
	sid := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	if sid == "" || sid == filepath.Base(path) {
		return ImportedClaudeCodeSession{}, fmt.Errorf("%s: a Claude Code transcript is named <session id>.jsonl", path)
	}
	key := "claude-code/" + sid
	root, skipped, err := importTranscript(ctx, svc, path, memory.AttachRequest{SessionKey: key, SessionID: sid, SessionFile: path}, progress)
	if err != nil {
		return ImportedClaudeCodeSession{}, err
	}
	out := ImportedClaudeCodeSession{ImportedSession: root, SessionKey: key, SubAgents: []ImportedSession{}, SkippedAt: []FileLine{}}
	out.skip(path, skipped)
	subs, _ := filepath.Glob(filepath.Join(strings.TrimSuffix(path, ".jsonl"), "subagents", "agent-*.jsonl"))
	sort.Strings(subs)
	for _, sub := range subs {
		id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(sub), "agent-"), ".jsonl")
		res, n, err := importTranscript(ctx, svc, sub, memory.AttachRequest{SessionKey: key + "/" + id, SessionID: sid,
			SessionFile: sub, Task: &memory.TaskRef{TaskID: root.TaskID}}, nil)
		if err != nil {
			return ImportedClaudeCodeSession{}, err
		}
		out.SubAgents = append(out.SubAgents, res)
		out.skip(sub, n)
	}
	return out, nil
}

// skip adds the lines of file left out.
func (s *ImportedClaudeCodeSession) skip(file string, lines []int) {
	for _, l := range lines {
		s.SkippedAt = append(s.SkippedAt, FileLine{File: file, Line: l})
	}
	s.Skipped += len(lines)
}

// importTranscript imports one transcript file as the agent req attaches.
// It returns the lines it left out, which are not JSON objects.
func importTranscript(ctx context.Context, svc *memory.Service, path string, req memory.AttachRequest, progress func(int64)) (ImportedSession, []int, error) {
	f, err := os.Open(path)
	if err != nil {
		return ImportedSession{}, nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return ImportedSession{}, nil, err
	}
	b, err := claudecode.Read(f, fi.Size(), claudecode.Cursor{})
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
		return ImportedSession{}, nil, fmt.Errorf("%s: %w", path, err)
	}
	return ImportedSession{TaskID: res.TaskID, Agent: res.Agent, Resumed: res.Resumed, RegisteredAgents: res.RegisteredAgents,
		AttachedWindowID: res.AttachResult.WindowID, Entries: len(b.Entries), Stored: res.Stored,
		Branch: len(b.Branch), Revision: res.Revision, WindowID: res.WindowID}, b.SkippedLines, nil
}
