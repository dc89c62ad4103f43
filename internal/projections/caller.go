package projections

import (
	"context"
	"encoding/json"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// AgentState is a registered agent with its lifecycle state, as a call
// reads them when it begins.
type AgentState struct {
	Agent
	State fence.State
}

// AgentWithState returns a registered agent of a task and its lifecycle
// state in one query, or ErrNotFound.
func (r *Reader) AgentWithState(ctx context.Context, taskID, agent string) (AgentState, error) {
	row, err := r.q.GetAgentWithState(ctx, projectionsdb.GetAgentWithStateParams{TaskID: taskID, Agent: agent})
	if err != nil {
		return AgentState{}, notFound(err)
	}
	return r.agentState(row)
}

// AgentWithNote is AgentWithState and Note in one query: the caller
// (agent) and the note of its task that it reads. found is false when
// there is no such note; ErrNotFound means the caller is not a registered
// agent of the task. With a note cache (UseNoteCache), the answer comes
// from the cache when nothing was committed since it was kept.
func (r *Reader) AgentWithNote(ctx context.Context, taskID, agent string, note address.NotePath) (a AgentState, n Note, found bool, err error) {
	ck := noteReadKey{taskID: taskID, agent: agent, note: noteKey{taskID, note.Agent, note.Path}}
	var row projectionsdb.GetAgentWithStateRow
	var f fetchedNote
	if e, ok := r.noteCache.get(ck, r.stamp); ok {
		row, f, r.fromCache = e.row, e.note, true
	} else {
		rows, err := r.q.GetAgentWithStateAndNote(ctx, projectionsdb.GetAgentWithStateAndNoteParams{
			NoteAgent: note.Agent, NotePath: note.Path, TaskID: taskID, Agent: agent})
		if err != nil {
			return AgentState{}, Note{}, false, err
		}
		if len(rows) == 0 {
			return AgentState{}, Note{}, false, ErrNotFound
		}
		row = projectionsdb.GetAgentWithStateRow{Agent: rows[0].Agent, State: rows[0].State, ReadPosition: rows[0].ReadPosition}
		f = fetchNote(rows)
		r.noteCache.put(ck, r.stamp, row, f)
	}
	a, err = r.agentState(row)
	return a, f.note, f.found, err
}

// AgentWithNoteWrite is AgentWithState and what a note write needs to know
// in one query: the caller (agent), the size and revision of the note of
// its task that it writes, and what the caller's earlier write with callID
// (if any) returned. ErrNotFound means the caller is not a registered agent
// of the task. For write transactions: the state is the one the write must
// decide on.
func (r *Reader) AgentWithNoteWrite(ctx context.Context, taskID, agent string, note address.NotePath, callID string) (AgentState, NoteWriteState, error) {
	row, err := r.q.GetAgentWithStateAndNoteWrite(ctx, projectionsdb.GetAgentWithStateAndNoteWriteParams{
		NoteAgent: note.Agent, NotePath: note.Path, CallID: callID, TaskID: taskID, Agent: agent})
	if err != nil {
		return AgentState{}, NoteWriteState{}, notFound(err)
	}
	a, err := r.agentState(projectionsdb.GetAgentWithStateRow{Agent: row.Agent, State: row.State, ReadPosition: row.ReadPosition})
	if err != nil {
		return AgentState{}, NoteWriteState{}, err
	}
	if r.tx != nil { // the note write about to be applied need not read it again
		r.tx.rememberNote(noteKey{taskID, note.Agent, note.Path}, noteRow{exists: row.NoteRevision > 0,
			row: projectionsdb.NoteSizeRow{Bytes: row.NoteBytes, Revision: row.NoteRevision, Parts: row.NoteParts}})
	}
	st := NoteWriteState{Size: row.NoteBytes, Revision: row.NoteRevision, Called: row.Called != 0 && callID != "", RequestKey: row.RequestKey}
	if st.Called {
		return a, st, json.Unmarshal([]byte(row.Result), &st.Result)
	}
	return a, st, nil
}

// agentState decodes the caller's row and state, and keeps the log
// position the row was read at.
func (r *Reader) agentState(row projectionsdb.GetAgentWithStateRow) (AgentState, error) {
	r.readPosition = row.ReadPosition
	a, err := agentFrom(row.Agent)
	if err != nil {
		return AgentState{}, err
	}
	if row.State == "" {
		return AgentState{Agent: a, State: fence.Initial()}, nil
	}
	s, err := states.decode(row.State)
	return AgentState{Agent: a, State: s}, err
}

// fetchNote builds the note from the rows of GetAgentWithStateAndNote (one
// per part; no note: NULL note columns).
func fetchNote(rows []projectionsdb.GetAgentWithStateAndNoteRow) fetchedNote {
	n := rows[0]
	if n.NotePath == nil {
		return fetchedNote{}
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
	return fetchedNote{found: true, note: noteOf(info, deref(n.NoteRevision), len(rows), func(i int) string { return rows[i].PartText })}
}

// AgentState returns an agent's lifecycle state (the initial state if it
// has none yet).
func (r *Reader) AgentState(ctx context.Context, taskID, agent string) (fence.State, error) {
	return agentState(ctx, r.q, taskID, agent)
}

// fetchedNote is the note AgentWithNote read (found false: there is none).
type fetchedNote struct {
	note  Note
	found bool
}
