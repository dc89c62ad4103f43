package forensics

import (
	"context"
	"encoding/json"
	"errors"
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
// (<session>/subagents/agent-<id>.jsonl) become child agents. All of them
// are read first and imported in one transaction, whole or not at all.
func ImportClaudeCodeSession(ctx context.Context, svc *memory.Service, path string, progress func(int64)) (ImportedClaudeCodeSession, error) {
	sid := strings.TrimSuffix(filepath.Base(path), ".jsonl")
	if sid == "" || sid == filepath.Base(path) {
		return ImportedClaudeCodeSession{}, fmt.Errorf("%s: a Claude Code transcript is named <session id>.jsonl", path)
	}
	key := "claude-code/" + sid
	subs, _ := filepath.Glob(filepath.Join(strings.TrimSuffix(path, ".jsonl"), "subagents", "agent-*.jsonl"))
	sort.Strings(subs)
	paths := append([]string{path}, subs...)
	files := make([]memory.SessionFile, len(paths))
	read := make([]claudecode.Batch, len(paths))
	for i, p := range paths {
		req := memory.AttachRequest{SessionKey: key, SessionID: sid, SessionFile: p}
		if i > 0 { // a child agent of the session's task, which memory fills in
			id := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "agent-"), ".jsonl")
			req.SessionKey, req.Task = key+"/"+id, &memory.TaskRef{}
		}
		b, err := readTranscript(p)
		if err != nil {
			return ImportedClaudeCodeSession{}, err
		}
		entries := make([]json.RawMessage, len(b.Entries))
		for j, e := range b.Entries {
			entries[j] = e.Raw
		}
		files[i], read[i] = memory.SessionFile{Attach: req, Entries: entries, Branch: b.Branch}, b
	}
	var synced func(int)
	if progress != nil {
		synced = func(n int) { progress(int64(n)) }
	}
	res, err := svc.ImportSessions(ctx, files, synced)
	if err != nil {
		name := path
		var fe *memory.FileError
		if errors.As(err, &fe) && fe.File < len(paths) {
			name = paths[fe.File] // the file refused
		}
		return ImportedClaudeCodeSession{}, fmt.Errorf("%s: %w", name, err)
	}
	out := ImportedClaudeCodeSession{SessionKey: key, SubAgents: []ImportedSession{}, SkippedAt: []FileLine{}}
	for i, r := range res {
		b := read[i]
		imp := ImportedSession{TaskID: r.TaskID, Agent: r.Agent, Resumed: r.Resumed, RegisteredAgents: r.RegisteredAgents,
			AttachedWindowID: r.AttachResult.WindowID, Entries: len(b.Entries), Stored: r.Stored,
			Branch: len(b.Branch), Revision: r.Revision, WindowID: r.WindowID}
		if i == 0 {
			out.ImportedSession = imp
		} else {
			out.SubAgents = append(out.SubAgents, imp)
		}
		out.skip(paths[i], b.SkippedLines)
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

// readTranscript reads a whole transcript file as the hooks read it.
func readTranscript(path string) (claudecode.Batch, error) {
	f, err := os.Open(path)
	if err != nil {
		return claudecode.Batch{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return claudecode.Batch{}, err
	}
	b, err := claudecode.Read(f, fi.Size(), claudecode.Cursor{})
	if err != nil {
		return claudecode.Batch{}, fmt.Errorf("%s: %w", path, err)
	}
	return b, nil
}
