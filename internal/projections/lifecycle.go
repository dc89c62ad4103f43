package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// applyLifecycle folds a lifecycle event into its agent's state.
func applyLifecycle(ctx context.Context, q *projectionsdb.Queries, ev events.Event, ref events.AgentRef, payload any) error {
	s, err := agentState(ctx, q, ref.TaskID, ref.Agent)
	if err != nil {
		return err
	}
	return putAgentState(ctx, q, ref.TaskID, ref.Agent, fence.Apply(s, payload), ev.Position)
}

func putAgentState(ctx context.Context, q *projectionsdb.Queries, taskID, agent string, s fence.State, position int64) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return q.UpsertAgentState(ctx, projectionsdb.UpsertAgentStateParams{TaskID: taskID, Agent: agent, State: string(b), Position: position})
}

func agentState(ctx context.Context, q *projectionsdb.Queries, taskID, agent string) (fence.State, error) {
	raw, err := q.GetAgentState(ctx, projectionsdb.GetAgentStateParams{TaskID: taskID, Agent: agent})
	if errors.Is(err, sql.ErrNoRows) {
		return fence.Initial(), nil
	}
	if err != nil {
		return fence.State{}, err
	}
	return states.decode(raw)
}

// AgentWithState returns a registered agent of a task and its lifecycle
// state in one query, or ErrNotFound.
func (r *Reader) AgentWithState(ctx context.Context, taskID, agent string) (Agent, fence.State, error) {
	var row projectionsdb.GetAgentWithStateRow
	if k := r.noteAhead; k != nil && k.taskID == taskID {
		r.noteAhead = nil
		ck := noteReadKey{taskID: taskID, agent: agent, note: *k}
		if e, ok := r.noteCache.get(ck, r.stamp); ok {
			row, r.fromCache = e.row, true
			f := e.note
			r.fetched = &f
		} else {
			rows, err := r.q.GetAgentWithStateAndNote(ctx, projectionsdb.GetAgentWithStateAndNoteParams{
				NoteAgent: k.agent, NotePath: k.path, TaskID: taskID, Agent: agent})
			if err != nil {
				return Agent{}, fence.State{}, err
			}
			if len(rows) == 0 {
				return Agent{}, fence.State{}, ErrNotFound
			}
			row = projectionsdb.GetAgentWithStateRow{Agent: rows[0].Agent, State: rows[0].State, ReadPosition: rows[0].ReadPosition}
			r.fetched = fetchNote(*k, rows)
			r.noteCache.put(ck, r.stamp, row, *r.fetched)
		}
	} else if k := r.writeAhead; k != nil && k.note.taskID == taskID {
		r.writeAhead, r.writeState = nil, nil
		w, err := r.q.GetAgentWithStateAndNoteWrite(ctx, projectionsdb.GetAgentWithStateAndNoteWriteParams{
			NoteAgent: k.note.agent, NotePath: k.note.path, CallID: k.callID, TaskID: taskID, Agent: agent})
		if err != nil {
			return Agent{}, fence.State{}, notFound(err)
		}
		row = projectionsdb.GetAgentWithStateRow{Agent: w.Agent, State: w.State, ReadPosition: w.ReadPosition}
		r.writeState = &fetchedWriteState{key: *k, row: w}
	} else {
		var err error
		if row, err = r.q.GetAgentWithState(ctx, projectionsdb.GetAgentWithStateParams{TaskID: taskID, Agent: agent}); err != nil {
			return Agent{}, fence.State{}, notFound(err)
		}
	}
	r.readPosition = row.ReadPosition
	a, err := agentFrom(row.Agent)
	if err != nil {
		return Agent{}, fence.State{}, err
	}
	if row.State == "" {
		return a, fence.Initial(), nil
	}
	s, err := states.decode(row.State)
	return a, s, err
}

// fetchNote builds the note of k from the rows of
// GetAgentWithStateAndNote (one per part; no note: NULL note columns).
func fetchNote(k noteKey, rows []projectionsdb.GetAgentWithStateAndNoteRow) *fetchedNote {
	f := &fetchedNote{key: k}
	n := rows[0]
	if n.NotePath == nil {
		return f
	}
	deref := func(p *int64) int64 {
		if p == nil {
			return 0
		}
		return *p
	}
	str := func(p *string) string {
		if p == nil {
			return ""
		}
		return *p
	}
	info := NoteInfo{Path: *n.NotePath, Bytes: deref(n.NoteBytes), CreatedAt: str(n.NoteCreatedAt), UpdatedAt: str(n.NoteUpdatedAt),
		CreatedPosition: deref(n.NoteCreatedPosition), UpdatedPosition: deref(n.NoteUpdatedPosition)}
	f.found = true
	f.note = noteOf(info, deref(n.NoteRevision), len(rows), func(i int) string { return rows[i].PartText })
	return f
}

// AgentState returns an agent's lifecycle state (the initial state if it
// has none yet).
func (r *Reader) AgentState(ctx context.Context, taskID, agent string) (fence.State, error) {
	return agentState(ctx, r.q, taskID, agent)
}

// lifecycleRef returns the agent a lifecycle payload belongs to.
func lifecycleRef(payload any) (events.AgentRef, bool) {
	switch p := payload.(type) {
	case *events.UsageReported:
		return p.AgentRef, true
	case *events.ControlDelivered:
		return p.AgentRef, true
	case *events.FenceArmed:
		return p.AgentRef, true
	case *events.ClaimTaken:
		return p.AgentRef, true
	case *events.ClaimReleased:
		return p.AgentRef, true
	case *events.CallBlocked:
		return p.AgentRef, true
	case *events.CheckpointSaved:
		return p.AgentRef, true
	case *events.NewContextRequested:
		return p.AgentRef, true
	case *events.UserInputReceived:
		return p.AgentRef, true
	case *events.RolloverPrepared:
		return p.AgentRef, true
	case *events.RolloverCommitted:
		return p.AgentRef, true
	case *events.RolloverFailed:
		return p.AgentRef, true
	case *events.ManualRequested:
		return p.AgentRef, true
	case *events.ManualPhaseChanged:
		return p.AgentRef, true
	case *events.ManualCancelled:
		return p.AgentRef, true
	}
	return events.AgentRef{}, false
}
