package memory

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/memoryd/memoryd/internal/claudecode"
	"github.com/memoryd/memoryd/internal/projections"
)

// ClaudeCodeHook is the part of a Claude Code hook's input memoryd reads
// (docs/claude-code.md, §3).
type ClaudeCodeHook struct {
	Event          string // hook_event_name
	SessionID      string // session_id
	TranscriptPath string // transcript_path
	ToolUseID      string // tool_use_id, on PreToolUse
	AgentID        string // agent_id, when a sub-agent made the call
	Source         string // source, on SessionStart: startup, resume, clear or compact
}

// ClaudeCodeAnswer is what memoryd answers a Claude Code hook.
type ClaudeCodeAnswer struct {
	// AdditionalContext is text for the model, on SessionStart.
	AdditionalContext string
}

// claudeCodeKey is the session key of a Claude Code session, and of one of
// its sub-agents.
func claudeCodeKey(sessionID, agentID string) string {
	if agentID == "" {
		return "claude-code/" + sessionID
	}
	return "claude-code/" + sessionID + "/" + agentID
}

// HandleClaudeCodeHook handles one Claude Code hook. PreToolUse attaches the
// session as a task, or resumes it, and binds the announced call to its
// agent, a sub-agent's call to a child agent of the task. SessionStart
// after a compaction or a resume answers the bootstrap of the session's
// task. The other events are accepted and change nothing: the hook verb
// syncs the transcript before it passes any of them on.
func (s *Service) HandleClaudeCodeHook(ctx context.Context, h ClaudeCodeHook, requestID string) (ClaudeCodeAnswer, error) {
	switch h.Event {
	case "PreToolUse":
		if h.SessionID == "" || h.ToolUseID == "" {
			return ClaudeCodeAnswer{}, invalidf("a PreToolUse hook needs session_id and tool_use_id")
		}
	case "SessionStart":
		if h.SessionID == "" {
			return ClaudeCodeAnswer{}, invalidf("a SessionStart hook needs session_id")
		}
	default:
		return ClaudeCodeAnswer{}, nil
	}
	if strings.ContainsAny(h.AgentID, `/\`) || strings.Contains(h.AgentID, "..") {
		return ClaudeCodeAnswer{}, invalidf("agent_id must not contain a path separator or ..")
	}
	if h.TranscriptPath != "" && !filepath.IsAbs(h.TranscriptPath) {
		return ClaudeCodeAnswer{}, invalidf("transcript_path must be an absolute path")
	}
	root, err := s.Attach(ctx, AttachRequest{SessionKey: claudeCodeKey(h.SessionID, ""), SessionID: h.SessionID,
		SessionFile: h.TranscriptPath}, requestID)
	if err != nil {
		return ClaudeCodeAnswer{}, err
	}
	if h.Event == "SessionStart" {
		if h.Source != "compact" && h.Source != "resume" {
			return ClaudeCodeAnswer{}, nil // a new session has nothing to recover
		}
		text, err := s.claudeCodeBootstrap(ctx, CallContext{TaskID: root.TaskID, Agent: root.Agent}, h.Source)
		return ClaudeCodeAnswer{AdditionalContext: text}, err
	}
	cc := CallContext{TaskID: root.TaskID, Agent: root.Agent}
	if h.AgentID != "" {
		file := ""
		if h.TranscriptPath != "" {
			file = claudecode.SubagentTranscript(h.TranscriptPath, h.AgentID)
		}
		child, err := s.Attach(ctx, AttachRequest{SessionKey: claudeCodeKey(h.SessionID, h.AgentID), SessionID: h.SessionID,
			SessionFile: file, Task: &TaskRef{TaskID: root.TaskID}}, requestID)
		if err != nil {
			return ClaudeCodeAnswer{}, err
		}
		cc.Agent = child.Agent
	}
	return ClaudeCodeAnswer{}, s.BindHostCall(h.ToolUseID, cc)
}

// claudeCodeBootstrap is the text a Claude Code session's SessionStart
// hook adds to the context after a compaction or a resume: the windows of
// its history, its recent requests and its notes, as the bootstrap of a
// rollover lists them. A session with no history yet gets none.
func (s *Service) claudeCodeBootstrap(ctx context.Context, cc CallContext, source string) (string, error) {
	var text string
	err := s.read(ctx, func(r *projections.Reader) error {
		c, err := identify(ctx, r, cc)
		if err != nil {
			return err
		}
		wins, err := r.Windows(ctx, cc.TaskID, cc.Agent, projections.WholeBranch)
		if err != nil || len(wins) == 0 {
			return err
		}
		ids := make([]string, len(wins))
		for i, w := range wins {
			ids[i] = w.ID
		}
		switch {
		case source == "resume" && len(ids) == 1:
			return nil // a resumed session that was never compacted has its whole conversation
		case source == "compact":
			// Claude Code runs SessionStart before it writes the compaction's
			// boundary: if the branch does not end in a compaction yet, the
			// window it opens is the next one.
			compacted, err := endsInCompaction(ctx, r, cc)
			if err != nil {
				return err
			}
			if !compacted {
				ids = append(ids, "w"+strconv.Itoa(len(ids)+1))
			}
		}
		in := bootstrapInput{host: "claude-code", agent: c.agent.Agent, reason: "Claude Code " + source,
			firstWindow: ids[0], current: ids[len(ids)-1]}
		if len(ids) > 1 {
			in.previous = ids[len(ids)-2]
		}
		in.notes, in.notesErr = r.Notes(ctx, c.taskID, c.agent.Agent, "")
		in.requests, in.olderRequests = userRequests(ctx, r, c)
		text = renderBootstrap(in)
		return nil
	})
	return text, err
}

// endsInCompaction reports whether the newest item of the caller's branch
// is a compaction or its summary.
func endsInCompaction(ctx context.Context, r *projections.Reader, cc CallContext) (bool, error) {
	compacted := false
	err := r.EachItem(ctx, cc.TaskID, cc.Agent, projections.WholeBranch, true, func(it projections.Item) (bool, error) {
		compacted = it.RawRole == "compaction" || it.RawRole == "compactionSummary"
		return false, nil
	})
	return compacted, err
}
