package projections

import (
	"context"
	"encoding/json"

	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// Mark is a log position and the time its event was recorded.
type Mark struct {
	Position int64
	At       string
}

// TaskActivity is a task, its agents, and the latest event of each.
type TaskActivity struct {
	TaskID  string
	Created Mark // task.created
	Last    Mark // the task's latest event
	Agents  []AgentActivity
}

// AgentActivity is an agent of a task as a task listing shows it.
type AgentActivity struct {
	Agent       string
	ParentAgent string // "" for /root
	SessionKey  string
	SessionID   string
	SessionFile string
	Registered  Mark // agent.registered
	Last        Mark // the latest event of the agent's stream
	State       fence.State
	// FirstRequestEntry is the first item of its current branch that the
	// user typed, or empty for none yet, recorded at FirstRequestPosition.
	FirstRequestEntry    string
	FirstRequestPosition int64
}

// TasksByActivity returns up to limit tasks whose latest event is before
// the position before, newest position first, with their agents in
// registration order. more reports that older tasks remain.
func (r *Reader) TasksByActivity(ctx context.Context, before int64, limit int) (tasks []TaskActivity, more bool, err error) {
	rows, err := r.q.TasksByActivity(ctx, projectionsdb.TasksByActivityParams{Before: before, MaxTasks: int64(limit) + 1})
	if err != nil {
		return nil, false, err
	}
	if len(rows) > limit {
		rows, more = rows[:limit], true
	}
	tasks = make([]TaskActivity, len(rows))
	if len(rows) == 0 {
		return tasks, more, nil
	}
	ids := make([]string, len(rows))
	at := make(map[string]int, len(rows))
	for i, t := range rows {
		tasks[i] = TaskActivity{TaskID: t.TaskID, Created: Mark{t.CreatedPosition, t.CreatedAt},
			Last: Mark{t.LastPosition, t.LastAt}, Agents: []AgentActivity{}}
		ids[i] = t.TaskID
		at[t.TaskID] = i
	}
	idsJSON, err := json.Marshal(ids)
	if err != nil {
		return nil, false, err
	}
	agents, err := r.q.AgentsOfTasks(ctx, string(idsJSON))
	if err != nil {
		return nil, false, err
	}
	for _, a := range agents {
		st := fence.Initial()
		if a.State != "" {
			if st, err = states.decode(a.State); err != nil {
				return nil, false, err
			}
		}
		t := &tasks[at[a.TaskID]]
		t.Agents = append(t.Agents, AgentActivity{Agent: a.Agent, ParentAgent: a.ParentAgent, SessionKey: a.SessionKey,
			SessionID: a.SessionID, SessionFile: a.SessionFile, Registered: Mark{a.RegisteredPosition, a.RegisteredAt},
			Last: Mark{a.LastPosition, a.LastAt}, State: st,
			FirstRequestEntry: a.FirstRequestEntry, FirstRequestPosition: a.FirstRequestPosition})
	}
	return tasks, more, nil
}
