package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
)

// TaskRef asks an attach to join an existing task as a child agent.
type TaskRef struct {
	TaskID      string `json:"task_id"`
	ParentAgent string `json:"parent_agent"`
	AgentName   string `json:"agent_name"`
}

// AttachRequest is the body of POST /v1/sessions/attach.
type AttachRequest struct {
	SessionKey  string       `json:"session_key"`
	SessionID   string       `json:"session_id"`
	SessionFile string       `json:"session_file"`
	Task        *TaskRef     `json:"task"`
	Budget      *BudgetInput `json:"budget"`
}

// AttachResult is the response of an attach.
type AttachResult struct {
	TaskID           string   `json:"task_id"`
	Agent            string   `json:"agent"`
	Resumed          bool     `json:"resumed"`
	WindowID         string   `json:"window_id"`
	RegisteredAgents []string `json:"registered_agents"`
}

// AutoAgentName returns the automatic child name for a session key, made
// of the first hex digits of its SHA-256.
func AutoAgentName(sessionKey string) string {
	sum := sha256.Sum256([]byte(sessionKey))
	return "agent_" + hex.EncodeToString(sum[:])[:12]
}

// Attach registers or resumes a session. A known session that comes back
// with a changed session id, file or budget is recorded as re-attached.
func (s *Service) Attach(ctx context.Context, req AttachRequest, requestID string) (AttachResult, error) {
	if strings.TrimSpace(req.SessionKey) == "" {
		return AttachResult{}, invalidf("attach requires session_key")
	}
	for _, f := range []struct{ name, v string }{{"session_key", req.SessionKey}, {"session_id", req.SessionID}, {"session_file", req.SessionFile}} {
		if strings.ContainsRune(f.v, 0) { // refused on both engines, as PostgreSQL's text cannot hold it
			return AttachResult{}, invalidf("%s contains U+0000", f.name)
		}
	}
	budget, err := req.Budget.resolve()
	if err != nil {
		return AttachResult{}, err
	}
	// A session that comes back unchanged, as a host's hooks do before
	// every call, is answered from a snapshot, without the writer.
	res, unchanged, err := s.attachUnchanged(ctx, req, budget)
	if err != nil || unchanged {
		return res, err
	}
	err = s.store.Update(ctx, requestID, func(tx *eventlog.Tx) error {
		var err error
		res, err = s.attachIn(ctx, tx, req, budget)
		return err
	})
	if err != nil {
		return AttachResult{}, err
	}
	return res, nil
}

// attachUnchanged answers an attach of a known session whose task, id,
// file and budget are those it has, which appends nothing.
func (s *Service) attachUnchanged(ctx context.Context, req AttachRequest, budget events.Budget) (res AttachResult, unchanged bool, err error) {
	err = s.read(ctx, func(r *projections.Reader) error {
		known, err := r.AgentBySessionKey(ctx, req.SessionKey)
		if errors.Is(err, projections.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		if (req.Task != nil && req.Task.TaskID != known.TaskID) || known.SessionID != req.SessionID ||
			known.SessionFile != req.SessionFile || !sameBudget(known.Budget, budget) {
			return nil // the writer decides: a conflict, or a re-attach
		}
		res = AttachResult{TaskID: known.TaskID, Agent: known.Agent, Resumed: true}
		if res.RegisteredAgents, err = r.TaskAgents(ctx, res.TaskID); err != nil {
			return err
		}
		st, err := r.AgentState(ctx, res.TaskID, res.Agent)
		res.WindowID, unchanged = st.WindowID, err == nil
		return err
	})
	return res, unchanged, err
}

// attachIn is Attach in tx, with req's budget resolved.
func (s *Service) attachIn(ctx context.Context, tx *eventlog.Tx, req AttachRequest, budget events.Budget) (AttachResult, error) {
	var res AttachResult
	r := projections.NewReader(tx.DB())
	known, err := r.AgentBySessionKey(ctx, req.SessionKey)
	switch {
	case err == nil:
		if req.Task != nil && req.Task.TaskID != known.TaskID {
			return res, conflictf("session_key is already attached to another task")
		}
		res = AttachResult{TaskID: known.TaskID, Agent: known.Agent, Resumed: true}
		if known.SessionID != req.SessionID || known.SessionFile != req.SessionFile || !sameBudget(known.Budget, budget) {
			_, err = tx.Append(ctx, events.Stream(known.TaskID, known.Agent), eventlog.AnyVersion, events.NewPending(
				events.AgentReattached{TaskID: known.TaskID, Agent: known.Agent, SessionID: req.SessionID,
					SessionFile: req.SessionFile, Budget: budget}))
		}
	case errors.Is(err, projections.ErrNotFound):
		res, err = s.register(ctx, tx, r, req, budget)
	}
	if err != nil {
		return res, err
	}
	if res.RegisteredAgents, err = r.TaskAgents(ctx, res.TaskID); err != nil {
		return res, err
	}
	st, err := r.AgentState(ctx, res.TaskID, res.Agent)
	res.WindowID = st.WindowID
	return res, err
}

// register records a new task and its root agent, or a child agent of an
// existing task.
func (s *Service) register(ctx context.Context, tx *eventlog.Tx, r *projections.Reader, req AttachRequest, budget events.Budget) (AttachResult, error) {
	reg := events.AgentRegistered{SessionKey: req.SessionKey, SessionID: req.SessionID, SessionFile: req.SessionFile, Budget: budget}
	var pending []events.Pending
	if req.Task == nil {
		reg.TaskID = ulid.MustNew(ulid.Timestamp(s.store.Now()), ulid.DefaultEntropy()).String()
		reg.Agent = address.Root
		pending = append(pending, events.NewPending(events.TaskCreated{TaskID: reg.TaskID, SessionKey: req.SessionKey}))
	} else {
		t := req.Task
		if t.TaskID == "" {
			return AttachResult{}, invalidf("attach task requires task_id")
		}
		ok, err := r.TaskExists(ctx, t.TaskID)
		if err != nil {
			return AttachResult{}, err
		}
		if !ok {
			return AttachResult{}, notFoundf("unknown task %q", t.TaskID)
		}
		parent := t.ParentAgent
		if parent == "" {
			parent = address.Root
		}
		if _, err := address.ParseAgent(parent); err != nil {
			return AttachResult{}, invalidf("task.parent_agent: %s", addressMessage(err))
		}
		if _, err := r.Agent(ctx, t.TaskID, parent); err != nil {
			if errors.Is(err, projections.ErrNotFound) {
				return AttachResult{}, notFoundf("parent agent %s is not registered in task %s", parent, t.TaskID)
			}
			return AttachResult{}, err
		}
		name := t.AgentName
		if name == "" {
			name = AutoAgentName(req.SessionKey)
			parent = address.Root
		}
		child, err := address.Child(parent, name)
		if err != nil {
			return AttachResult{}, invalidf("task.agent_name: %s", addressMessage(err))
		}
		if _, err := r.Agent(ctx, t.TaskID, child); err == nil {
			return AttachResult{}, conflictf("agent %s is already attached to another session in this task", child)
		} else if !errors.Is(err, projections.ErrNotFound) {
			return AttachResult{}, err
		}
		reg.TaskID, reg.Agent, reg.ParentAgent = t.TaskID, child, parent
	}
	pending = append(pending, events.NewPending(reg))
	if _, err := tx.Append(ctx, events.Stream(reg.TaskID, reg.Agent), 0, pending...); err != nil {
		return AttachResult{}, err
	}
	return AttachResult{TaskID: reg.TaskID, Agent: reg.Agent}, nil
}

// sameBudget reports whether two budgets are equal.
func sameBudget(a, b events.Budget) bool {
	if (a.ContextWindow == nil) != (b.ContextWindow == nil) {
		return false
	}
	if a.ContextWindow != nil && *a.ContextWindow != *b.ContextWindow {
		return false
	}
	a.ContextWindow, b.ContextWindow = nil, nil
	return a == b
}

// addressMessage strips the package prefix from an address error.
func addressMessage(err error) string {
	return strings.TrimPrefix(err.Error(), address.ErrInvalid.Error()+": ")
}
