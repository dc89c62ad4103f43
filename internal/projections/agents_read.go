package projections

import (
	"context"
	"database/sql"
	"errors"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// Agent is a registered agent.
type Agent struct {
	TaskID      string
	Agent       string
	ParentAgent string
	SessionKey  string
	SessionID   string
	SessionFile string
	Budget      events.Budget
	Position    int64
}

func agentFrom(a projectionsdb.Agent) (Agent, error) {
	out := Agent{TaskID: a.TaskID, Agent: a.Agent, ParentAgent: a.ParentAgent, SessionKey: a.SessionKey,
		SessionID: a.SessionID, SessionFile: a.SessionFile, Position: a.Position}
	var err error
	out.Budget, err = budgets.decode(a.Budget)
	return out, err
}

// TaskExists reports whether the task exists.
func (r *Reader) TaskExists(ctx context.Context, taskID string) (bool, error) {
	_, err := r.q.GetTask(ctx, taskID)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// Agent returns a registered agent of a task, or ErrNotFound.
func (r *Reader) Agent(ctx context.Context, taskID, agent string) (Agent, error) {
	a, err := r.q.GetAgent(ctx, projectionsdb.GetAgentParams{TaskID: taskID, Agent: agent})
	if err != nil {
		return Agent{}, notFound(err)
	}
	return agentFrom(a)
}

// AgentBySessionKey returns the agent a session key is attached as, or
// ErrNotFound.
func (r *Reader) AgentBySessionKey(ctx context.Context, key string) (Agent, error) {
	a, err := r.q.AgentBySessionKey(ctx, key)
	if err != nil {
		return Agent{}, notFound(err)
	}
	return agentFrom(a)
}

// AgentRegisteredAnywhere reports whether some task has an agent at addr.
func (r *Reader) AgentRegisteredAnywhere(ctx context.Context, addr string) (bool, error) {
	n, err := r.q.AgentInAnyTask(ctx, addr)
	return n > 0, err
}

// TaskAgents returns the addresses registered to a task, in registration order.
func (r *Reader) TaskAgents(ctx context.Context, taskID string) ([]string, error) {
	return r.q.TaskAgents(ctx, taskID)
}
