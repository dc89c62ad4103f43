package memory

import (
	"context"
	"path/filepath"
)

// ClaudeCodeHook is the part of a Claude Code hook's input memoryd reads
// (docs/claude-code.md, §3).
type ClaudeCodeHook struct {
	Event          string // hook_event_name
	SessionID      string // session_id
	TranscriptPath string // transcript_path
	ToolUseID      string // tool_use_id, on PreToolUse
	AgentID        string // agent_id, when a sub-agent made the call
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
// agent, a sub-agent's call to a child agent of the task. The other events
// are accepted and change nothing yet.
func (s *Service) HandleClaudeCodeHook(ctx context.Context, h ClaudeCodeHook, requestID string) error {
	if h.Event != "PreToolUse" {
		return nil
	}
	if h.SessionID == "" || h.ToolUseID == "" {
		return invalidf("a PreToolUse hook needs session_id and tool_use_id")
	}
	if h.TranscriptPath != "" && !filepath.IsAbs(h.TranscriptPath) {
		return invalidf("transcript_path must be an absolute path")
	}
	root, err := s.Attach(ctx, AttachRequest{SessionKey: claudeCodeKey(h.SessionID, ""), SessionID: h.SessionID,
		SessionFile: h.TranscriptPath}, requestID)
	if err != nil {
		return err
	}
	cc := CallContext{TaskID: root.TaskID, Agent: root.Agent}
	if h.AgentID != "" {
		child, err := s.Attach(ctx, AttachRequest{SessionKey: claudeCodeKey(h.SessionID, h.AgentID), SessionID: h.SessionID,
			SessionFile: h.TranscriptPath, Task: &TaskRef{TaskID: root.TaskID}}, requestID)
		if err != nil {
			return err
		}
		cc.Agent = child.Agent
	}
	return s.BindHostCall(h.ToolUseID, cc)
}
