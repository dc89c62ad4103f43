package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/memoryd/memoryd/internal/codex"
	"github.com/memoryd/memoryd/internal/memory"
)

// defaultCodexContextWindow is the window Codex assumes for a model it has
// no metadata for; a rollout's token counts name the model's own.
const defaultCodexContextWindow = 258_400

// codexFormat reads Codex rollouts (internal/codex).
func codexFormat(r io.ReaderAt, size int64, cursor json.RawMessage) (syncBatch, error) {
	var cur codex.Cursor
	if len(cursor) > 0 && json.Unmarshal(cursor, &cur) != nil {
		return syncBatch{}, errRewound
	}
	b, err := codex.Read(r, size, cur)
	if errors.Is(err, codex.ErrRewound) {
		return syncBatch{}, errRewound
	}
	if err != nil {
		return syncBatch{}, err
	}
	out := syncBatch{entries: b.Entries, branch: b.Branch, keep: b.Keep}
	if u := b.Cursor.Usage; u != nil {
		out.usage, out.window = u.ContextTokens(), u.ContextWindow
	}
	out.cursor, err = json.Marshal(b.Cursor)
	return out, err
}

// findRollout returns the rollout of thread under sessions
// (YYYY/MM/DD/rollout-<time>-<thread>.jsonl), or "" if there is none.
func findRollout(sessions, thread string) string {
	if thread == "" || strings.ContainsAny(thread, `/\*?[`) {
		return ""
	}
	found, _ := filepath.Glob(filepath.Join(sessions, "*", "*", "*", "rollout-*-"+thread+".jsonl"))
	if len(found) == 0 {
		return ""
	}
	return found[len(found)-1]
}

// syncCodex syncs the rollouts a Codex hook names before the hook itself
// is passed on: the session's, and a sub-agent's as a child agent of the
// session's task. A sub-agent's hooks carry the session's id with the
// sub-agent's own rollout (SubagentStop: the session's, and the sub-agent's
// as agent_transcript_path), so the session's is found by its id.
func syncCodex(ctx context.Context, c apiClient, cursorDir, sessions string, in hookInput, task *memory.TaskRef) error {
	if in.SessionID == "" || in.TranscriptPath == "" {
		return nil
	}
	if in.AgentID != "" && strings.ContainsAny(in.AgentID, `/\`) {
		return fmt.Errorf("agent_id %q is not a thread id: not read", in.AgentID)
	}
	rootPath, subPath := in.TranscriptPath, ""
	if in.AgentID != "" {
		if in.AgentTranscriptPath != "" {
			subPath = in.AgentTranscriptPath
		} else {
			subPath, rootPath = in.TranscriptPath, findRollout(sessions, in.SessionID)
			if rootPath == "" {
				return fmt.Errorf("the rollout of session %s is not under %s: its sub-agent %s is not synced", in.SessionID, sessions, in.AgentID)
			}
		}
	}
	if ok, err := checkTranscript(sessions, rootPath); !ok {
		return err // nil for a session that has written nothing yet
	}
	root := transcriptSync{client: c, cursorDir: cursorDir, transcript: rootPath, format: codexFormat, contextWindow: defaultCodexContextWindow,
		attach: memory.AttachRequest{SessionKey: memory.HostSessionKey(memory.KindCodex, in.SessionID, ""), SessionID: in.SessionID,
			SessionFile: rootPath, Task: task}}
	cc, err := root.run(ctx)
	if err != nil || subPath == "" {
		return err
	}
	if ok, err := checkTranscript(sessions, subPath); !ok {
		return err
	}
	sub := transcriptSync{client: c, cursorDir: cursorDir, transcript: subPath, format: codexFormat, contextWindow: defaultCodexContextWindow,
		attach: memory.AttachRequest{SessionKey: memory.HostSessionKey(memory.KindCodex, in.SessionID, in.AgentID), SessionID: in.SessionID,
			SessionFile: subPath, Task: &memory.TaskRef{TaskID: cc.TaskID}}}
	_, err = sub.run(ctx)
	return err
}

// codexSessions is the folder Codex keeps its rollouts in.
func codexSessions(getenv func(string) string) string {
	home, err := codexHome(getenv)
	if err != nil {
		return ""
	}
	return filepath.Join(home, "sessions")
}
