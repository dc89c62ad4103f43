// Package memory is memoryd's domain core. It resolves who is calling
// (tasks, agents, addresses), decides which events a command records, and
// answers the 11 tools from the projections. Commands run as "load, decide,
// append" inside one write transaction of the event store; reads go to the
// reader pool. It knows nothing of HTTP.
package memory

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections"
)

// Service runs memoryd's commands and tools over an event store.
type Service struct {
	store *eventlog.Store
	owned bool     // Close closes store (Open opened it)
	audit *auditor // nil: the read audit is off
	// filters finds the history chunks a search must read (its
	// candidates), from memory.
	filters *projections.ChunkFilters
	// notes answers note reads from memory while nothing was committed
	// since (projections.NoteCache); nil: every read queries SQLite.
	notes *projections.NoteCache
	// Test hooks (see Options).
	afterCachedRead, syncToWriter func()
}

// New returns a Service over store, which must apply events through
// projections.Projector.
func New(store *eventlog.Store) *Service {
	return &Service{store: store, filters: projections.NewChunkFilters(projections.DefaultChunkFiltersLimit),
		notes: projections.NewNoteCache(projections.DefaultNoteCacheBytes)}
}

// NoteCacheStats returns how many note reads the note cache answered and
// how many went to SQLite (see projections.NoteCache).
func (s *Service) NoteCacheStats() (hits, misses uint64) {
	if s.notes == nil {
		return 0, 0
	}
	return s.notes.Stats()
}

// Store returns the service's event store, for the offline work on the
// log and its projections (internal/forensics: replay, verify, import,
// export) and for tests that check what is stored; the API and the server
// command go through the Service's methods. A Service from Open still
// owns the store: Close closes it.
func (s *Service) Store() *eventlog.Store { return s.store }

// LastPosition returns the position of the newest event of the log (0
// when it is empty).
func (s *Service) LastPosition(ctx context.Context) (int64, error) {
	return s.store.LastPosition(ctx)
}

// Events returns one page of the log in position order: at most limit
// events after position after, of one task's streams (taskID) or of all
// (""). Errors are ErrUnavailable or internal.
func (s *Service) Events(ctx context.Context, after int64, taskID string, limit int) ([]events.Event, error) {
	return s.store.Read(ctx, eventlog.Filter{After: after, TaskID: taskID, Limit: limit})
}

// CallContext identifies the caller of a tool or lifecycle call.
type CallContext struct {
	TaskID string `json:"task_id"`
	Agent  string `json:"agent"`
	CallID string `json:"call_id,omitempty"`
}

// BudgetInput is the optional budget configuration of an attach; nil
// fields take their defaults.
type BudgetInput struct {
	ContextWindow                  *int64   `json:"context_window"`
	ReminderRemainingPercent       *float64 `json:"reminder_remaining_percent"`
	ReminderRemainingFloorTokens   *int64   `json:"reminder_remaining_floor_tokens"`
	ReminderRemainingCeilingTokens *int64   `json:"reminder_remaining_ceiling_tokens"`
	HardRolloverUsedTokens         *int64   `json:"hard_rollover_used_tokens"`
	MaxToolOutputChars             *int64   `json:"max_tool_output_chars"`
	NotesMaxFileBytes              *int64   `json:"notes_max_file_bytes"`
	HistoryItemPreviewChars        *int64   `json:"history_item_preview_chars"`
}

// Budget defaults (docs/behaviour.md §G).
const (
	DefaultReminderRemainingPercent       = 0.25
	DefaultReminderRemainingFloorTokens   = 21384
	DefaultReminderRemainingCeilingTokens = 60000
	DefaultMaxToolOutputChars             = 12000
	DefaultNotesMaxFileBytes              = MaxNotesMaxFileBytes
	DefaultHistoryItemPreviewChars        = 400
)

// MaxNotesMaxFileBytes is the ceiling of the per-file note cap (1,000,000
// UTF-8 bytes, docs/behaviour.md §G): a budget may lower the cap, never raise
// it. An attach asking for more is refused rather than clamped, so that a
// client relying on a larger cap learns it at once.
const MaxNotesMaxFileBytes = events.MaxNoteBytes

// notesCap is the per-file cap of the notes of an agent with budget b. A
// budget recorded before the ceiling was enforced may exceed it: the
// ceiling holds all the same.
func notesCap(b events.Budget) int64 {
	return min(b.NotesMaxFileBytes, MaxNotesMaxFileBytes)
}

// resolve validates b and fills in defaults.
func (b *BudgetInput) resolve() (events.Budget, error) {
	out := events.Budget{
		ReminderRemainingPercent:       DefaultReminderRemainingPercent,
		ReminderRemainingFloorTokens:   DefaultReminderRemainingFloorTokens,
		ReminderRemainingCeilingTokens: DefaultReminderRemainingCeilingTokens,
		MaxToolOutputChars:             DefaultMaxToolOutputChars,
		NotesMaxFileBytes:              DefaultNotesMaxFileBytes,
		HistoryItemPreviewChars:        DefaultHistoryItemPreviewChars,
	}
	if b == nil {
		return out, nil
	}
	positive := func(name string, v *int64, dst *int64) error {
		if v == nil {
			return nil
		}
		if *v < 1 {
			return invalidf("budget.%s must be at least 1", name)
		}
		*dst = *v
		return nil
	}
	if b.ContextWindow != nil {
		if *b.ContextWindow < 1 {
			return out, invalidf("budget.context_window must be at least 1")
		}
		out.ContextWindow = b.ContextWindow
	}
	if p := b.ReminderRemainingPercent; p != nil {
		if !(*p > 0 && *p < 1) {
			return out, invalidf("budget.reminder_remaining_percent must be strictly between 0 and 1")
		}
		out.ReminderRemainingPercent = *p
	}
	if v := b.HardRolloverUsedTokens; v != nil {
		if *v < 0 {
			return out, invalidf("budget.hard_rollover_used_tokens must be 0 (off) or more")
		}
		out.HardRolloverUsedTokens = *v
	}
	if v := b.NotesMaxFileBytes; v != nil && *v > MaxNotesMaxFileBytes {
		e := newError(ErrInvalidArgument, "budget.notes_max_file_bytes must be between 1 and %d (the ceiling of the per-file note cap): a budget may lower the cap, not raise it", MaxNotesMaxFileBytes)
		e.Details = map[string]any{"field": "budget.notes_max_file_bytes", "limit": int64(MaxNotesMaxFileBytes)}
		return out, e
	}
	for _, f := range []struct {
		name string
		v    *int64
		dst  *int64
	}{
		{"reminder_remaining_floor_tokens", b.ReminderRemainingFloorTokens, &out.ReminderRemainingFloorTokens},
		{"reminder_remaining_ceiling_tokens", b.ReminderRemainingCeilingTokens, &out.ReminderRemainingCeilingTokens},
		{"max_tool_output_chars", b.MaxToolOutputChars, &out.MaxToolOutputChars},
		{"notes_max_file_bytes", b.NotesMaxFileBytes, &out.NotesMaxFileBytes},
		{"history_item_preview_chars", b.HistoryItemPreviewChars, &out.HistoryItemPreviewChars},
	} {
		if err := positive(f.name, f.v, f.dst); err != nil {
			return out, err
		}
	}
	return out, nil
}

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

// AutoAgentName returns the automatic child name for a session key:
// agent_<first 12 hex digits of sha256(session_key)>.
func AutoAgentName(sessionKey string) string {
	sum := sha256.Sum256([]byte(sessionKey))
	return "agent_" + hex.EncodeToString(sum[:])[:12]
}

// Attach registers or resumes a session (API §3). It records task.created
// and agent.registered for a new session, agent.reattached when a known
// session comes back with a changed session id, file or budget, and
// nothing otherwise.
func (s *Service) Attach(ctx context.Context, req AttachRequest, requestID string) (AttachResult, error) {
	if strings.TrimSpace(req.SessionKey) == "" {
		return AttachResult{}, invalidf("attach requires session_key")
	}
	budget, err := req.Budget.resolve()
	if err != nil {
		return AttachResult{}, err
	}
	var res AttachResult
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
			_, err = tx.Append(ctx, events.Stream(known.TaskID, known.Agent), eventlog.AnyVersion, events.Pending{
				Type: events.TypeAgentReattached,
				Data: events.AgentReattached{TaskID: known.TaskID, Agent: known.Agent, SessionID: req.SessionID,
					SessionFile: req.SessionFile, Budget: budget},
			})
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

func (s *Service) register(ctx context.Context, tx *eventlog.Tx, r *projections.Reader, req AttachRequest, budget events.Budget) (AttachResult, error) {
	reg := events.AgentRegistered{SessionKey: req.SessionKey, SessionID: req.SessionID, SessionFile: req.SessionFile, Budget: budget}
	var pending []events.Pending
	if req.Task == nil {
		reg.TaskID = ulid.MustNew(ulid.Timestamp(s.store.Now()), ulid.DefaultEntropy()).String()
		reg.Agent = address.Root
		pending = append(pending, events.Pending{Type: events.TypeTaskCreated,
			Data: events.TaskCreated{TaskID: reg.TaskID, SessionKey: req.SessionKey}})
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
	pending = append(pending, events.Pending{Type: events.TypeAgentRegistered, Data: reg})
	if _, err := tx.Append(ctx, events.Stream(reg.TaskID, reg.Agent), 0, pending...); err != nil {
		return AttachResult{}, err
	}
	return AttachResult{TaskID: reg.TaskID, Agent: reg.Agent}, nil
}

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

// caller is a validated calling agent.
type caller struct {
	taskID string
	agent  projections.Agent
	callID string
	// state is the agent's lifecycle state when the call began (in the
	// call's transaction).
	state fence.State
}

// maxCallIDBytes bounds a call_id: it is stored with every event of the
// call (and its audit record), so a client may not make it large.
const maxCallIDBytes = 256

// checkCallID refuses a call_id that is not at most maxCallIDBytes of
// valid UTF-8.
func checkCallID(cc CallContext) error {
	if len(cc.CallID) > maxCallIDBytes || !utf8.ValidString(cc.CallID) {
		e := newError(ErrInvalidArgument, "context.call_id must be at most %d bytes of valid UTF-8 (the host's tool-call id)", maxCallIDBytes)
		e.Details = map[string]any{"field": "context.call_id", "limit": maxCallIDBytes}
		return e
	}
	return nil
}

// identify validates a call context against the projections.
func identify(ctx context.Context, r *projections.Reader, cc CallContext) (caller, error) {
	return identifyWith(ctx, r, cc, func() (projections.AgentState, error) {
		return r.AgentWithState(ctx, cc.TaskID, cc.Agent)
	})
}

// identifyWith is identify with load as the query of the caller's row
// and state (cc's task and agent): AgentWithState, or one of its combined
// forms that also reads what the call needs. load runs once the call
// context is valid; its ErrNotFound makes identify say what is unknown.
func identifyWith(ctx context.Context, r *projections.Reader, cc CallContext, load func() (projections.AgentState, error)) (caller, error) {
	if err := checkCallID(cc); err != nil {
		return caller{}, err
	}
	if cc.TaskID == "" {
		return caller{}, invalidf("context.task_id is required")
	}
	if cc.Agent == "" {
		return caller{}, invalidf("context.agent is required")
	}
	if _, err := address.ParseAgent(cc.Agent); err != nil {
		return caller{}, invalidf("context.agent: %s", addressMessage(err))
	}
	as, err := load()
	if err == nil { // the common case: one query
		return caller{taskID: cc.TaskID, agent: as.Agent, callID: cc.CallID, state: as.State}, nil
	}
	if !errors.Is(err, projections.ErrNotFound) {
		return caller{}, err
	}
	ok, err := r.TaskExists(ctx, cc.TaskID)
	if err != nil {
		return caller{}, err
	}
	if !ok {
		return caller{}, notFoundf("unknown task %q; attach first", cc.TaskID)
	}
	// The agent is not registered to the task: target says whether it
	// belongs to another (forbidden) or to none (not found).
	if _, err := target(ctx, r, cc.TaskID, cc.Agent); err != nil {
		return caller{}, err
	}
	return caller{}, notFoundf("agent %q is not registered to task %q", cc.Agent, cc.TaskID) // target agrees, in one snapshot
}

// target returns a registered agent of the task, or forbidden (it belongs
// to another task) or not_found (nowhere).
func target(ctx context.Context, r *projections.Reader, taskID, addr string) (projections.Agent, error) {
	a, err := r.Agent(ctx, taskID, addr)
	if err == nil {
		return a, nil
	}
	if !errors.Is(err, projections.ErrNotFound) {
		return a, err
	}
	elsewhere, err := r.AgentRegisteredAnywhere(ctx, addr)
	if err != nil {
		return a, err
	}
	if elsewhere {
		return a, forbiddenf("agent %s is not in this task", addr)
	}
	return a, notFoundf("no agent %s is registered in this task", addr)
}
