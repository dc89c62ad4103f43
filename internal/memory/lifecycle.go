package memory

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/tools"
)

// StateView is an agent's lifecycle state as GET /v1/state shows it.
// Phase, RolloverDue, ThresholdDue and ManualInProgress are derived, not
// stored, and are the host's whole decision table.
type StateView struct {
	TaskID string `json:"task_id"`
	Agent  string `json:"agent"`
	Phase  string `json:"phase"`

	WindowID          string      `json:"window_id"`
	WindowNumber      int         `json:"window_number"`
	PreviousWindowID  string      `json:"previous_window_id,omitempty"`
	ReminderDue       bool        `json:"reminder_due"`
	FallbackDue       bool        `json:"fallback_due"`
	ReminderDelivered bool        `json:"reminder_delivered"`
	FallbackDelivered bool        `json:"fallback_delivered"`
	FenceActive       bool        `json:"fence_active"`
	FenceKind         string      `json:"fence_kind,omitempty"`
	FenceRequestID    string      `json:"fence_request_id,omitempty"`
	Claim             string      `json:"claim,omitempty"`
	CheckpointSaved   bool        `json:"checkpoint_saved"`
	CheckpointCallID  string      `json:"checkpoint_call_id,omitempty"`
	PendingNewContext bool        `json:"pending_new_context"`
	RolloverRequested bool        `json:"rollover_requested"`
	HardLatched       bool        `json:"hard_rollover_latched"`
	Manual            *ManualView `json:"manual,omitempty"`
	PendingWindowID   string      `json:"pending_window_id,omitempty"`
	PendingReason     string      `json:"pending_reason,omitempty"`
	PendingBootstrap  string      `json:"pending_bootstrap,omitempty"`
	TokensUsed        *int64      `json:"tokens_used"`
	ContextWindow     *int64      `json:"context_window"`

	// RolloverDue is the rollover the host prepares at its next settled
	// boundary, if one is due.
	RolloverDue string `json:"rollover_due,omitempty"`
	// ThresholdDue is the control message the host sends when it cancels
	// Pi's own threshold compaction. Empty means send nothing.
	ThresholdDue string `json:"threshold_due,omitempty"`
	// ManualInProgress is the request id of the manual checkpoint in
	// progress, if any.
	ManualInProgress string `json:"manual_in_progress,omitempty"`
}

// ManualView is the manual /compact checkpoint of a StateView.
type ManualView struct {
	RequestID string `json:"request_id"`
	WindowID  string `json:"window_id"`
	Phase     string `json:"phase"`
}

// view returns the API's view of an agent's state.
func view(c caller, s fence.State) StateView {
	v := StateView{TaskID: c.taskID, Agent: c.agent.Agent, Phase: s.Phase(),
		WindowID: s.WindowID, WindowNumber: s.WindowNumber, PreviousWindowID: s.PreviousWindowID,
		ReminderDue: s.ReminderDue, FallbackDue: s.FallbackDue,
		ReminderDelivered: s.ReminderDelivered, FallbackDelivered: s.FallbackDelivered,
		FenceActive: s.FenceActive, FenceKind: s.FenceKind, FenceRequestID: s.FenceRequestID, Claim: s.Claim,
		CheckpointSaved: s.CheckpointSaved, CheckpointCallID: s.CheckpointCallID,
		PendingNewContext: s.PendingNewContext, RolloverRequested: s.RolloverRequested, HardLatched: s.HardLatched,
		PendingWindowID: s.PendingWindowID, PendingReason: s.PendingReason, PendingBootstrap: s.PendingBootstrap,
		TokensUsed: s.TokensUsed, ContextWindow: s.ContextWindow,
		RolloverDue: s.DueRollover(), ThresholdDue: s.DueOnThreshold(), ManualInProgress: s.ManualInProgress()}
	if m := s.Manual; m != nil {
		v.Manual = &ManualView{RequestID: m.RequestID, WindowID: m.WindowID, Phase: m.Phase}
	}
	return v
}

// LifecycleResult is the response of a lifecycle call, with the outcome
// fields that apply to it and the agent's new state.
type LifecycleResult struct {
	Stale            *bool      `json:"stale,omitempty"`
	Ignored          *bool      `json:"ignored,omitempty"`
	Allow            *bool      `json:"allow,omitempty"`
	Terminate        *bool      `json:"terminate,omitempty"`
	Reason           *string    `json:"reason,omitempty"`
	WindowID         string     `json:"window_id,omitempty"`
	PreviousWindowID string     `json:"previous_window_id,omitempty"`
	Bootstrap        *string    `json:"bootstrap,omitempty"`
	State            *StateView `json:"state"`
}

// lifecycle runs one lifecycle decision for the caller in a write
// transaction and returns its outcome and the new state.
func (s *Service) lifecycle(ctx context.Context, cc CallContext, requestID string,
	decide func(r *projections.Reader, c caller, st fence.State) (fence.Decision, error)) (fence.Outcome, StateView, error) {
	var out fence.Outcome
	var sv StateView
	err := s.store.Update(ctx, requestIDOr(requestID, cc.CallID), func(tx *eventlog.Tx) error {
		var err error
		out, sv, err = lifecycleTx(ctx, tx, cc, decide)
		return err
	})
	return out, sv, err
}

// lifecycleTx runs one lifecycle decision for the caller in tx.
func lifecycleTx(ctx context.Context, tx *eventlog.Tx, cc CallContext,
	decide func(r *projections.Reader, c caller, st fence.State) (fence.Decision, error)) (fence.Outcome, StateView, error) {
	r := projections.TxReader(tx)
	c, err := identify(ctx, r, cc)
	if err != nil {
		return fence.Outcome{}, StateView{}, err
	}
	st := c.state
	d, err := decide(r, c, st)
	if err != nil {
		return fence.Outcome{}, StateView{}, illegalError(err)
	}
	if err := appendOwn(ctx, tx, c, d.Events); err != nil {
		return fence.Outcome{}, StateView{}, err
	}
	if st, err = r.AgentState(ctx, c.taskID, c.agent.Agent); err != nil {
		return fence.Outcome{}, StateView{}, err
	}
	return d.Outcome, view(c, st), nil
}

// illegalError turns a fence refusal into a conflict naming the state.
func illegalError(err error) error {
	if errors.Is(err, fence.ErrIllegal) {
		return conflictf("%s", strings.TrimPrefix(err.Error(), fence.ErrIllegal.Error()+": "))
	}
	return err
}

// appendOwn appends events to the caller's own stream.
func appendOwn(ctx context.Context, tx *eventlog.Tx, c caller, evs []events.Pending) error {
	if len(evs) == 0 {
		return nil
	}
	stream := events.Stream(c.taskID, c.agent.Agent)
	version, err := tx.StreamVersion(ctx, stream)
	if err != nil {
		return err
	}
	_, err = tx.Append(ctx, stream, version, evs...)
	return err
}

// ref returns the caller's agent reference.
func ref(c caller) events.AgentRef { return events.AgentRef{TaskID: c.taskID, Agent: c.agent.Agent} }

// ptr returns a pointer to a copy of v.
func ptr[T any](v T) *T { return &v }

// State returns an agent's lifecycle state for GET /v1/state.
func (s *Service) State(ctx context.Context, cc CallContext) (StateView, error) {
	var sv StateView
	err := s.read(ctx, func(r *projections.Reader) error {
		c, err := identify(ctx, r, cc)
		if err != nil {
			return err
		}
		sv = view(c, c.state)
		return nil
	})
	return sv, err
}

// UsageResult is the response of a usage report, with the threshold first
// crossed now, if any, and the new state.
type UsageResult struct {
	Due   *string    `json:"due"`
	State *StateView `json:"state"`
}

// ReportUsage records token usage for POST /v1/lifecycle/usage and says
// which threshold it made due.
func (s *Service) ReportUsage(ctx context.Context, cc CallContext, tokensUsed, contextWindow *int64, requestID string) (UsageResult, error) {
	return s.usageDecision(ctx, cc, tokensUsed, contextWindow, requestID, func(c caller, st fence.State) fence.Decision {
		return fence.Usage(ref(c), st, c.agent.Budget, tokensUsed, contextWindow)
	})
}

// usageDecision checks a usage report's counts, runs decide on them and
// answers with the control message it makes due.
func (s *Service) usageDecision(ctx context.Context, cc CallContext, tokensUsed, contextWindow *int64, requestID string,
	decide func(c caller, st fence.State) fence.Decision) (UsageResult, error) {
	if err := checkUsage(tokensUsed, contextWindow); err != nil {
		return UsageResult{}, err
	}
	out, sv, err := s.lifecycle(ctx, cc, requestID, func(_ *projections.Reader, c caller, st fence.State) (fence.Decision, error) {
		return decide(c, st), nil
	})
	if err != nil {
		return UsageResult{}, err
	}
	return usageResult(out, sv), nil
}

// checkUsage refuses a usage report's counts out of range.
func checkUsage(tokensUsed, contextWindow *int64) error {
	if tokensUsed != nil && *tokensUsed < 0 {
		return invalidf("tokens_used must be 0 or more, or null when unknown")
	}
	if contextWindow != nil && *contextWindow < 1 {
		return invalidf("context_window must be at least 1")
	}
	return nil
}

// usageResult is the answer of a usage decision.
func usageResult(out fence.Outcome, sv StateView) UsageResult {
	res := UsageResult{State: &sv}
	if out.Due != "" {
		res.Due = &out.Due
	}
	return res
}

// BranchChanged reports for POST /v1/lifecycle/branch that the host moved
// to another branch of the session. The answer's due is "fallback" when
// the host must send the fallback message again.
func (s *Service) BranchChanged(ctx context.Context, cc CallContext, tokensUsed, contextWindow *int64, fenceInBranch bool, requestID string) (UsageResult, error) {
	return s.usageDecision(ctx, cc, tokensUsed, contextWindow, requestID, func(c caller, st fence.State) fence.Decision {
		return fence.BranchChanged(ref(c), st, c.agent.Budget, tokensUsed, contextWindow, fenceInBranch)
	})
}

// checkKind refuses a kind that is not one of allowed.
func checkKind(kind string, allowed ...string) error {
	if !slices.Contains(allowed, kind) {
		return invalidf("kind must be one of %s", strings.Join(allowed, ", "))
	}
	return nil
}

// Delivered records a control message queued for the model, for
// POST /v1/lifecycle/delivered.
func (s *Service) Delivered(ctx context.Context, cc CallContext, kind, windowID, requestID, reqID string) (LifecycleResult, error) {
	return s.controlMessage(ctx, cc, reqID, fence.Deliver, kind, windowID, requestID,
		fence.KindReminder, fence.KindFallback, fence.KindManualCheckpoint)
}

// Arm records a fallback or manual checkpoint request entering the branch,
// which makes the fence active. It serves POST /v1/lifecycle/arm.
func (s *Service) Arm(ctx context.Context, cc CallContext, kind, windowID, requestID, reqID string) (LifecycleResult, error) {
	return s.controlMessage(ctx, cc, reqID, fence.Arm, kind, windowID, requestID,
		fence.KindFallback, fence.KindManualCheckpoint)
}

// controlMessage runs a step of a control message's life. It checks the
// kind and window, lets decide give the events, and says whether the step
// was stale.
func (s *Service) controlMessage(ctx context.Context, cc CallContext, reqID string,
	decide func(ref events.AgentRef, st fence.State, kind, windowID, requestID string) (fence.Decision, error),
	kind, windowID, requestID string, kinds ...string) (LifecycleResult, error) {
	if err := checkKind(kind, kinds...); err != nil {
		return LifecycleResult{}, err
	}
	if windowID == "" {
		return LifecycleResult{}, invalidf("window_id is required")
	}
	out, sv, err := s.lifecycle(ctx, cc, reqID, func(_ *projections.Reader, c caller, st fence.State) (fence.Decision, error) {
		return decide(ref(c), st, kind, windowID, requestID)
	})
	if err != nil {
		return LifecycleResult{}, err
	}
	return LifecycleResult{State: &sv, Stale: ptr(out.Stale)}, nil
}

// ownNotesWrite reports whether a tool call is a notes write whose target
// is not another agent.
func ownNotesWrite(c caller, tool string, args json.RawMessage) bool {
	// An invalid path counts as the caller's own. It is admitted and then
	// fails, releasing the claim.
	if tool != tools.NotesWriteFile && tool != tools.NotesAppendToFile {
		return false
	}
	var a struct {
		Path string `json:"path"`
	}
	if json.Unmarshal(args, &a) != nil {
		return true
	}
	np, err := address.ParseNotePath(c.agent.Agent, a.Path)
	return err != nil || np.Agent == c.agent.Agent
}

// Admit decides whether the host may run a tool call while the fence may
// be active. It serves POST /v1/lifecycle/admit.
func (s *Service) Admit(ctx context.Context, cc CallContext, callID, tool string, args json.RawMessage, reqID string) (LifecycleResult, error) {
	callID, err := checkAdmit(cc, callID, tool)
	if err != nil {
		return LifecycleResult{}, err
	}
	out, sv, err := s.lifecycle(ctx, cc, reqID, admitDecision(callID, tool, args))
	if err != nil {
		return LifecycleResult{}, err
	}
	return admitResult(out, sv), nil
}

// checkAdmit checks an admit's tool and call id, and returns the call id
// (the context's when the request names none).
func checkAdmit(cc CallContext, callID, tool string) (string, error) {
	if tool == "" {
		return "", invalidf("tool_name is required")
	}
	if callID == "" {
		callID = cc.CallID
	}
	if callID == "" {
		// The claim is held by a call id, and without one a second write
		// would be admitted too.
		return "", invalidf("call_id is required")
	}
	return callID, checkCallID(CallContext{CallID: callID})
}

// admitDecision is the fence's decision on a tool call.
func admitDecision(callID, tool string, args json.RawMessage) func(*projections.Reader, caller, fence.State) (fence.Decision, error) {
	return func(_ *projections.Reader, c caller, st fence.State) (fence.Decision, error) {
		return fence.Admit(ref(c), st, callID, tool, ownNotesWrite(c, tool, args)), nil
	}
}

// admitResult is the answer of an admit.
func admitResult(out fence.Outcome, sv StateView) LifecycleResult {
	return LifecycleResult{State: &sv, Allow: ptr(out.Allow), Terminate: ptr(out.Terminate), Reason: ptr(out.Reason)}
}

// ToolResult reports the result of a host tool call. A claimed call that
// failed releases the claim. It serves POST /v1/lifecycle/tool-result.
func (s *Service) ToolResult(ctx context.Context, cc CallContext, callID string, isError bool, reqID string) (LifecycleResult, error) {
	if callID == "" {
		callID = cc.CallID
	}
	if callID == "" {
		return LifecycleResult{}, invalidf("call_id is required")
	}
	if err := checkCallID(CallContext{CallID: callID}); err != nil {
		return LifecycleResult{}, err
	}
	_, sv, err := s.lifecycle(ctx, cc, reqID, func(_ *projections.Reader, c caller, st fence.State) (fence.Decision, error) {
		return fence.ToolResult(ref(c), st, callID, isError), nil
	})
	return LifecycleResult{State: &sv}, err
}

// UserInput records an ordinary user message for POST /v1/lifecycle/user-input.
func (s *Service) UserInput(ctx context.Context, cc CallContext, reqID string) (LifecycleResult, error) {
	out, sv, err := s.lifecycle(ctx, cc, reqID, func(_ *projections.Reader, c caller, st fence.State) (fence.Decision, error) {
		return fence.UserInput(ref(c), st), nil
	})
	return LifecycleResult{State: &sv, Ignored: ptr(out.Ignored)}, err
}

// rolloverReasons are the reasons a rollover may be prepared for.
var rolloverReasons = []string{fence.ReasonNewContext, fence.ReasonFallback, fence.ReasonHardRollover, fence.ReasonManual, fence.ReasonOverflow}

// PrepareRollover builds the next window's bootstrap for
// POST /v1/lifecycle/rollover/prepare.
func (s *Service) PrepareRollover(ctx context.Context, cc CallContext, reason, reqID string) (LifecycleResult, error) {
	if !slices.Contains(rolloverReasons, reason) {
		return LifecycleResult{}, invalidf("reason must be one of %s", strings.Join(rolloverReasons, ", "))
	}
	var prev string
	out, sv, err := s.lifecycle(ctx, cc, reqID, func(r *projections.Reader, c caller, st fence.State) (fence.Decision, error) {
		prev = st.WindowID
		if st.PendingWindowID != "" {
			return fence.Prepare(ref(c), st, reason, "")
		}
		text := buildBootstrap(ctx, r, c, st, reason)
		return fence.Prepare(ref(c), st, reason, text)
	})
	if err != nil {
		return LifecycleResult{}, err
	}
	return LifecycleResult{State: &sv, WindowID: out.WindowID, PreviousWindowID: prev, Bootstrap: ptr(out.Bootstrap)}, nil
}

// CommitRollover makes the prepared window live for
// POST /v1/lifecycle/rollover/commit.
func (s *Service) CommitRollover(ctx context.Context, cc CallContext, windowID, compactionEntryID, reqID string) (LifecycleResult, error) {
	if windowID == "" {
		return LifecycleResult{}, invalidf("window_id is required")
	}
	_, sv, err := s.lifecycle(ctx, cc, reqID, func(_ *projections.Reader, c caller, st fence.State) (fence.Decision, error) {
		return fence.Commit(ref(c), st, windowID, compactionEntryID)
	})
	if err != nil {
		return LifecycleResult{}, err
	}
	return LifecycleResult{State: &sv, WindowID: sv.WindowID, PreviousWindowID: sv.PreviousWindowID}, nil
}

// FailRollover records a failed compaction for POST /v1/lifecycle/rollover/fail.
func (s *Service) FailRollover(ctx context.Context, cc CallContext, aborted bool, msg, reqID string) (LifecycleResult, error) {
	out, sv, err := s.lifecycle(ctx, cc, reqID, func(_ *projections.Reader, c caller, st fence.State) (fence.Decision, error) {
		return fence.Fail(ref(c), st, aborted, truncate(msg, 2000)), nil
	})
	return LifecycleResult{State: &sv, Ignored: ptr(out.Ignored)}, err
}

// manualActions are the steps of a manual checkpoint.
var manualActions = []string{fence.ActionRequest, fence.ActionSaved, fence.ActionCompacting, fence.ActionCancel}

// Manual moves a manual /compact checkpoint through its phases for
// POST /v1/lifecycle/manual.
func (s *Service) Manual(ctx context.Context, cc CallContext, action, requestID, reqID string) (LifecycleResult, error) {
	if !slices.Contains(manualActions, action) {
		return LifecycleResult{}, invalidf("action must be one of %s", strings.Join(manualActions, ", "))
	}
	if action == fence.ActionRequest && requestID == "" {
		return LifecycleResult{}, invalidf("request_id is required to request a manual checkpoint")
	}
	_, sv, err := s.lifecycle(ctx, cc, reqID, func(_ *projections.Reader, c caller, st fence.State) (fence.Decision, error) {
		return fence.ManualAction(ref(c), st, action, requestID)
	})
	return LifecycleResult{State: &sv}, err
}

// truncate returns s cut to n characters.
func truncate(s string, n int) string {
	if chars(s) <= n {
		return s
	}
	return sliceChars(s, 0, n)
}

// fencedError is the error of a tool call the fence blocks.
func fencedError(tool, reason string) error {
	e := newError(ErrFenced, "%s is blocked: %s", tool, reason)
	e.Details = map[string]any{"reason": reason, "terminate": true}
	return e
}

// gateRead refuses a read-only tool while the caller's fence is active.
func gateRead(c caller, tool string) error {
	if v, reason := c.state.Gate(c.callID, false); v == fence.Blocked {
		return fencedError(tool, reason)
	}
	return nil
}
