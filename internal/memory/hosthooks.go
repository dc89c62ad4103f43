package memory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/memoryd/memoryd/internal/claudecode"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections"
)

// HostHook is the part of a coding agent's hook input memoryd reads. Claude
// Code (docs/claude-code.md, §3) and Codex (docs/codex.md, §3) send the
// same fields.
type HostHook struct {
	// Host is the agent: KindClaudeCode or KindCodex.
	Host           string
	Event          string // hook_event_name
	SessionID      string // session_id
	TranscriptPath string // transcript_path
	ToolUseID      string // tool_use_id, on PreToolUse
	AgentID        string // agent_id, when a sub-agent made the call
	Source         string // source, on SessionStart: startup, resume, clear or compact
	// Task, when set, is the task a new session joins as a new agent
	// instead of becoming its own: a hand-off (memoryd handoff).
	Task *TaskRef
}

// HostHookAnswer is what memoryd answers a hook.
type HostHookAnswer struct {
	// AdditionalContext is text for the model, on SessionStart.
	AdditionalContext string
}

// HostSessionKey is the session key of a coding agent's session, and of
// one of its sub-agents: host/session id[/agent id].
func HostSessionKey(host, sessionID, agentID string) string {
	if agentID == "" {
		return host + "/" + sessionID
	}
	return host + "/" + sessionID + "/" + agentID
}

// HandleHostHook handles one hook of Claude Code or Codex. PreToolUse
// attaches the session as a task, or resumes it, and binds the announced
// call to its agent, a sub-agent's call to a child agent of the task.
// SessionStart after a compaction or a resume answers the bootstrap of the
// session's task, and a hand-off's SessionStart the bootstrap of the task
// it joins. The other events are accepted and change nothing: the hook
// verb syncs the transcript before it passes any of them on.
func (s *Service) HandleHostHook(ctx context.Context, h HostHook, requestID string) (HostHookAnswer, error) {
	if h.Host != KindClaudeCode && h.Host != KindCodex {
		return HostHookAnswer{}, invalidf("unknown host %q: memoryd knows claude-code and codex", h.Host)
	}
	switch h.Event {
	case "PreToolUse":
		if h.SessionID == "" || h.ToolUseID == "" {
			return HostHookAnswer{}, invalidf("a PreToolUse hook needs session_id and tool_use_id")
		}
	case "SessionStart":
		if h.SessionID == "" {
			return HostHookAnswer{}, invalidf("a SessionStart hook needs session_id")
		}
	case "PostToolUse", "UserPromptSubmit":
		if h.Host != KindClaudeCode || h.SessionID == "" || !validAgentID(h.AgentID) {
			return HostHookAnswer{}, nil
		}
		text, err := s.hostReminder(ctx, HostSessionKey(h.Host, h.SessionID, h.AgentID), requestID)
		return HostHookAnswer{AdditionalContext: text}, err
	default:
		return HostHookAnswer{}, nil
	}
	if !validAgentID(h.AgentID) {
		return HostHookAnswer{}, invalidf("agent_id must not contain a path separator or ..")
	}
	if h.TranscriptPath != "" && !filepath.IsAbs(h.TranscriptPath) {
		return HostHookAnswer{}, invalidf("transcript_path must be an absolute path")
	}
	root, err := s.attachHostRoot(ctx, h, requestID)
	if err != nil {
		return HostHookAnswer{}, err
	}
	cc := CallContext{TaskID: root.TaskID, Agent: root.Agent}
	if h.Event == "SessionStart" {
		var text string
		switch {
		// Codex keeps a SessionStart's context in the rollout until the next
		// compaction and replays it on resume (docs/codex.md §3), so only
		// Claude Code's resume needs the bootstrap again.
		case h.Source == "compact" || h.Source == "resume" && h.Host == KindClaudeCode:
			text, err = s.hostBootstrap(ctx, h.Host, cc, h.Source)
		case h.Task != nil && h.AgentID == "":
			text, err = s.handoffBootstrap(ctx, h.Host, cc)
		}
		return HostHookAnswer{AdditionalContext: text}, err // a new session has nothing to recover
	}
	if h.AgentID != "" {
		file := h.TranscriptPath // Codex names the sub-agent's own rollout
		if h.Host == KindClaudeCode && file != "" {
			file = claudecode.SubagentTranscript(h.TranscriptPath, h.AgentID)
		}
		child, err := s.Attach(ctx, AttachRequest{SessionKey: HostSessionKey(h.Host, h.SessionID, h.AgentID), SessionID: h.SessionID,
			SessionFile: file, Task: &TaskRef{TaskID: root.TaskID}}, requestID)
		if err != nil {
			return HostHookAnswer{}, err
		}
		cc.Agent = child.Agent
	}
	return HostHookAnswer{}, s.BindHostCall(h.ToolUseID, cc)
}

// validAgentID reports whether a hook's agent_id can name a sub-agent:
// it may not name a path.
func validAgentID(id string) bool {
	return !strings.ContainsAny(id, `/\`) && !strings.Contains(id, "..")
}

// hostReminder delivers the reminder to take notes when the session's
// context is past the reminder threshold and no reminder went out in its
// window yet (docs/contract-notes.md, Claude Code): the text for the
// hook's additionalContext, or "". Claude Code compacts on its own, so
// this reminder is all of the fence a host gets: nothing is blocked. A
// session memoryd does not know yet has nothing due.
func (s *Service) hostReminder(ctx context.Context, sessionKey, requestID string) (string, error) {
	var cc CallContext
	due := false
	err := s.read(ctx, func(r *projections.Reader) error {
		a, err := r.AgentBySessionKey(ctx, sessionKey)
		if errors.Is(err, projections.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		st, err := r.AgentState(ctx, a.TaskID, a.Agent)
		cc, due = CallContext{TaskID: a.TaskID, Agent: a.Agent}, st.ReminderDue && !st.ReminderDelivered
		return err
	})
	if err != nil || !due {
		return "", err
	}
	var text string
	_, _, err = s.lifecycle(ctx, cc, requestID, func(_ *projections.Reader, c caller, st fence.State) (fence.Decision, error) {
		if !st.ReminderDue {
			return fence.Decision{}, nil
		}
		d, err := fence.Deliver(ref(c), st, fence.KindReminder, st.WindowID, requestID)
		if len(d.Events) > 0 {
			text = hostReminderText(st)
		}
		return d, err
	})
	return text, err
}

// hostReminderText is the reminder a host's model reads.
func hostReminderText(st fence.State) string {
	left := ""
	if st.TokensUsed != nil && st.ContextWindow != nil {
		left = fmt.Sprintf(": about %d of its %d tokens are left", max(0, *st.ContextWindow-*st.TokensUsed), *st.ContextWindow)
	}
	return fmt.Sprintf(`<context_window_reminder window_id=%q/>
The context window %s is getting full%s. Claude Code will compact it soon, and a summary loses details. Take incremental notes now with memoryd's tools (mcp__memoryd__notes_append_to_file or mcp__memoryd__notes_write_file): goal, decisions, progress, next steps and the window/item ids of evidence you may need again. After the compaction memoryd lists your notes and recent requests, and mcp__memoryd__history_search_contents and mcp__memoryd__history_read_item recover what was said before it.`,
		st.WindowID, st.WindowID, left)
}

// attachHostRoot attaches the hook's session, or resumes it: a new session
// becomes its own task, or joins h.Task's. Codex gives a sub-agent's hook
// the sub-agent's rollout, not the session's, so such a hook resumes the
// session as it is known.
func (s *Service) attachHostRoot(ctx context.Context, h HostHook, requestID string) (AttachResult, error) {
	req := AttachRequest{SessionKey: HostSessionKey(h.Host, h.SessionID, ""), SessionID: h.SessionID,
		SessionFile: h.TranscriptPath, Task: h.Task}
	if h.Host == KindCodex && h.AgentID != "" {
		req.SessionFile = ""
		var known projections.Agent
		err := s.read(ctx, func(r *projections.Reader) error {
			var err error
			known, err = r.AgentBySessionKey(ctx, req.SessionKey)
			return err
		})
		switch {
		case err == nil:
			return AttachResult{TaskID: known.TaskID, Agent: known.Agent, Resumed: true}, nil
		case !errors.Is(err, projections.ErrNotFound):
			return AttachResult{}, err
		}
	}
	return s.Attach(ctx, req, requestID)
}

// hostBootstrap is the text a Claude Code or Codex session's SessionStart
// hook adds to the context after a compaction or a resume: the windows of
// its history, its recent requests and its notes, as the bootstrap of a
// rollover lists them. A session with no history yet gets none.
func (s *Service) hostBootstrap(ctx context.Context, host string, cc CallContext, source string) (string, error) {
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
			// boundary (Codex after): if the branch does not end in a
			// compaction yet, the window it opens is the next one.
			compacted, err := endsInCompaction(ctx, r, cc)
			if err != nil {
				return err
			}
			if !compacted {
				ids = append(ids, "w"+strconv.Itoa(len(ids)+1))
			}
		}
		in := bootstrapInput{host: host, agent: c.agent.Agent, reason: hostNames[host] + " " + source,
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

// hostNames are the hosts' names as the bootstrap writes them.
var hostNames = map[string]string{KindClaudeCode: "Claude Code", KindCodex: "Codex"}

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
