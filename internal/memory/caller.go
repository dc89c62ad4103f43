package memory

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections"
)

// caller is a validated calling agent.
type caller struct {
	taskID string
	agent  projections.Agent
	callID string
	// state is the agent's lifecycle state when the call began, in the
	// call's transaction.
	state fence.State
	// readAt is the log position of the snapshot the state was read in.
	readAt int64
	// branchEnd bounds the history the tools read to the current branch's
	// entries below this index: projections.WholeBranch, but for the
	// inspector's calls as of a past position (InspectToolAsOf).
	branchEnd int64
}

// maxCallIDBytes bounds a call_id. It is stored with every event of the
// call, so a client may not make it large.
const maxCallIDBytes = 256

// checkCallID refuses a call_id that is not short valid UTF-8. U+0000 is
// refused on both engines, as PostgreSQL's text cannot hold it.
func checkCallID(cc CallContext) error {
	if len(cc.CallID) > maxCallIDBytes || !utf8.ValidString(cc.CallID) || strings.ContainsRune(cc.CallID, 0) {
		e := newError(ErrInvalidArgument, "context.call_id must be at most %d bytes of valid UTF-8 without U+0000 (the host's tool-call id)", maxCallIDBytes)
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

// identifyWith is identify with load as the query of the caller's row and
// state, which may also read what the call needs. load runs once the call
// context is valid.
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
	if err == nil { // the common case, one query
		return caller{taskID: cc.TaskID, agent: as.Agent, callID: cc.CallID, state: as.State, readAt: as.ReadAt,
			branchEnd: projections.WholeBranch}, nil
	}
	if !errors.Is(err, projections.ErrNotFound) {
		return caller{}, err
	}
	// load found no row, so say what is unknown.
	ok, err := r.TaskExists(ctx, cc.TaskID)
	if err != nil {
		return caller{}, err
	}
	if !ok {
		return caller{}, notFoundf("unknown task %q; attach first", cc.TaskID)
	}
	// The agent is not registered to the task. target says whether it
	// belongs to another task or to none.
	if _, err := target(ctx, r, cc.TaskID, cc.Agent); err != nil {
		return caller{}, err
	}
	return caller{}, notFoundf("agent %q is not registered to task %q", cc.Agent, cc.TaskID) // target agrees, in one snapshot
}

// target returns a registered agent of the task. An agent of another task
// is forbidden, and one of no task is not found.
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
