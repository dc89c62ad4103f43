package api

import (
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/memoryd/memoryd/internal/memory"
)

// usageRequest is the body of POST /v1/lifecycle/usage.
type usageRequest struct {
	Context       memory.CallContext `json:"context"`
	TokensUsed    *int64             `json:"tokens_used"`
	ContextWindow *int64             `json:"context_window"`
}

// branchRequest is the body of POST /v1/lifecycle/branch.
type branchRequest struct {
	Context       memory.CallContext `json:"context"`
	TokensUsed    *int64             `json:"tokens_used"`
	ContextWindow *int64             `json:"context_window"`
	FenceInBranch bool               `json:"fence_in_branch"`
}

// controlRequest is the body of POST /v1/lifecycle/delivered and arm.
type controlRequest struct {
	Context   memory.CallContext `json:"context"`
	Kind      string             `json:"kind"`
	WindowID  string             `json:"window_id"`
	RequestID string             `json:"request_id"`
}

// admitRequest is the body of POST /v1/lifecycle/admit.
type admitRequest struct {
	Context   memory.CallContext `json:"context"`
	CallID    string             `json:"call_id"`
	ToolName  string             `json:"tool_name"`
	Arguments json.RawMessage    `json:"arguments"`
}

// toolResultRequest is the body of POST /v1/lifecycle/tool-result.
type toolResultRequest struct {
	Context memory.CallContext `json:"context"`
	CallID  string             `json:"call_id"`
	IsError bool               `json:"is_error"`
}

// contextOnlyRequest is a body that holds only the call context.
type contextOnlyRequest struct {
	Context memory.CallContext `json:"context"`
}

// prepareRequest is the body of POST /v1/lifecycle/rollover/prepare.
type prepareRequest struct {
	Context memory.CallContext `json:"context"`
	Reason  string             `json:"reason"`
}

// commitRequest is the body of POST /v1/lifecycle/rollover/commit.
type commitRequest struct {
	Context           memory.CallContext `json:"context"`
	WindowID          string             `json:"window_id"`
	CompactionEntryID string             `json:"compaction_entry_id"`
}

// failRequest is the body of POST /v1/lifecycle/rollover/fail.
type failRequest struct {
	Context memory.CallContext `json:"context"`
	Aborted bool               `json:"aborted"`
	Error   string             `json:"error"`
}

// manualRequest is the body of POST /v1/lifecycle/manual.
type manualRequest struct {
	Context   memory.CallContext `json:"context"`
	Action    string             `json:"action"`
	RequestID string             `json:"request_id"`
}

// handleLifecycleUsage handles "POST /v1/lifecycle/usage".
func handleLifecycleUsage(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, q usageRequest, id string) (memory.UsageResult, error) {
		return svc.ReportUsage(r.Context(), q.Context, q.TokensUsed, q.ContextWindow, id)
	})
}

// handleLifecycleBranch handles "POST /v1/lifecycle/branch".
func handleLifecycleBranch(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, q branchRequest, id string) (memory.UsageResult, error) {
		return svc.BranchChanged(r.Context(), q.Context, q.TokensUsed, q.ContextWindow, q.FenceInBranch, id)
	})
}

// handleLifecycleDelivered handles "POST /v1/lifecycle/delivered".
func handleLifecycleDelivered(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, q controlRequest, id string) (memory.LifecycleResult, error) {
		return svc.Delivered(r.Context(), q.Context, q.Kind, q.WindowID, q.RequestID, id)
	})
}

// handleLifecycleArm handles "POST /v1/lifecycle/arm".
func handleLifecycleArm(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, q controlRequest, id string) (memory.LifecycleResult, error) {
		return svc.Arm(r.Context(), q.Context, q.Kind, q.WindowID, q.RequestID, id)
	})
}

// handleLifecycleAdmit handles "POST /v1/lifecycle/admit".
func handleLifecycleAdmit(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, q admitRequest, id string) (memory.LifecycleResult, error) {
		return svc.Admit(r.Context(), q.Context, q.CallID, q.ToolName, q.Arguments, id)
	})
}

// handleLifecycleToolResult handles "POST /v1/lifecycle/tool-result".
func handleLifecycleToolResult(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, q toolResultRequest, id string) (memory.LifecycleResult, error) {
		return svc.ToolResult(r.Context(), q.Context, q.CallID, q.IsError, id)
	})
}

// handleLifecycleUserInput handles "POST /v1/lifecycle/user-input".
func handleLifecycleUserInput(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, q contextOnlyRequest, id string) (memory.LifecycleResult, error) {
		return svc.UserInput(r.Context(), q.Context, id)
	})
}

// handleLifecycleRolloverPrepare handles "POST /v1/lifecycle/rollover/prepare".
func handleLifecycleRolloverPrepare(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, q prepareRequest, id string) (memory.LifecycleResult, error) {
		return svc.PrepareRollover(r.Context(), q.Context, q.Reason, id)
	})
}

// handleLifecycleRolloverCommit handles "POST /v1/lifecycle/rollover/commit".
func handleLifecycleRolloverCommit(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, q commitRequest, id string) (memory.LifecycleResult, error) {
		return svc.CommitRollover(r.Context(), q.Context, q.WindowID, q.CompactionEntryID, id)
	})
}

// handleLifecycleRolloverFail handles "POST /v1/lifecycle/rollover/fail".
func handleLifecycleRolloverFail(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, q failRequest, id string) (memory.LifecycleResult, error) {
		return svc.FailRollover(r.Context(), q.Context, q.Aborted, q.Error, id)
	})
}

// handleLifecycleManual handles "POST /v1/lifecycle/manual".
func handleLifecycleManual(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return jsonHandler(log, func(r *http.Request, q manualRequest, id string) (memory.LifecycleResult, error) {
		return svc.Manual(r.Context(), q.Context, q.Action, q.RequestID, id)
	})
}

// handleState handles "GET /v1/state?task_id=&agent=".
func handleState(log *slog.Logger, svc *memory.Service) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		sv, err := svc.State(r.Context(), memory.CallContext{TaskID: q.Get("task_id"), Agent: q.Get("agent")})
		if err != nil {
			writeError(w, r, log, err)
			return
		}
		encode(w, http.StatusOK, sv)
	}
}
