package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/tools"
)

// The inspector shows an agent's history as of a past log position P. An
// item depends only on the entries before it on the branch, so when the
// branch as of P is a prefix of the current one (no branch change since P
// cut into it), the history tools' answers as of P are those of the live
// projections read up to the branch's length at P, with the agent's budget
// at P. Otherwise only a copy of the log up to P answers.

// ErrNeedsCopy says that a call as of a past position cannot be answered
// from the live projections: the caller's branch changed since into its
// entries as of then, or the call reads another agent's history. A copy of
// the log up to the position answers it.
var ErrNeedsCopy = errors.New("this history as of a past position needs a copy of the log up to it")

// PastBranch is an agent's branch as of a past log position that was, when
// PastBranchAt checked it, a prefix of the agent's current branch.
type PastBranch struct {
	TaskID, Agent string
	At            int64 // the position
	Length        int64 // the branch's length as of At
	budget        events.Budget
	checked       int64 // the position through which later changes kept Length entries
}

// PastBranchAt returns agent's branch as of log position at, and false when
// it is not known to be a prefix of the current one: a branch change since
// kept fewer entries than it had (a switch to another branch, perhaps back
// again), or the agent was not registered by then.
func (s *Service) PastBranchAt(ctx context.Context, taskID, agent string, at int64) (PastBranch, bool, error) {
	b := PastBranch{TaskID: taskID, Agent: agent, At: at}
	prefix := false
	err := s.read(ctx, func(r *projections.Reader) error {
		var err error
		b.budget, err = r.BudgetAt(ctx, taskID, agent, at)
		if errors.Is(err, projections.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		last, length, err := r.LastBranchChange(ctx, taskID, agent)
		if err != nil {
			return err
		}
		if last <= at { // no change since: the branch is today's
			b.Length, b.checked, prefix = length, at, true
			return nil
		}
		if b.Length, err = r.BranchLengthAt(ctx, taskID, agent, at); err != nil {
			return err
		}
		prefix, b.checked, err = r.BranchKeptAfter(ctx, taskID, agent, at, b.Length)
		return err
	})
	return b, prefix && err == nil, err
}

// apply makes c the caller as of b's position, after checking, in the
// call's snapshot, that no branch change since PastBranchAt cut into b.
func (b *PastBranch) apply(ctx context.Context, r *projections.Reader, c *caller) error {
	last, _, err := r.LastBranchChange(ctx, b.TaskID, b.Agent)
	if err != nil {
		return err
	}
	if last > b.checked {
		kept, _, err := r.BranchKeptAfter(ctx, b.TaskID, b.Agent, b.checked, b.Length)
		if err != nil {
			return err
		}
		if !kept {
			return ErrNeedsCopy
		}
	}
	c.branchEnd, c.agent.Budget = b.Length, b.budget
	return nil
}

// InspectToolAsOf is InspectTool as of b's position, for the history tools:
// they read the live projections of b's agent, bounded to the first
// b.Length entries of its current branch, with its budget as of then. It
// fails with ErrNeedsCopy when that prefix is no longer b's branch, or the
// call reads another agent's history.
func (s *Service) InspectToolAsOf(ctx context.Context, name string, b PastBranch, args json.RawMessage) (ToolResult, error) {
	switch name {
	case tools.HistoryListWindows, tools.HistoryListItems, tools.HistoryReadItem, tools.HistorySearchContents:
	default:
		return ToolResult{}, fmt.Errorf("%s as of a past position: %w", name, ErrNeedsCopy)
	}
	res, _, err := s.callTool(ctx, toolCall{name: name, cc: CallContext{TaskID: b.TaskID, Agent: b.Agent}, args: args, past: &b})
	return res, err
}
