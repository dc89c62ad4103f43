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
	// ReadAt is the log position of the snapshot the row was read in.
	ReadAt int64
}

// AgentWithState returns a registered agent of a task and its lifecycle
// state in one query, or ErrNotFound.
func (r *Reader) AgentWithState(ctx context.Context, taskID, agent string) (AgentState, error) {
	row, err := r.q.GetAgentWithState(ctx, projectionsdb.GetAgentWithStateParams{TaskID: taskID, Agent: agent})
	if err != nil {
		return AgentState{}, notFound(err)
	}
	return stateOfRow(row)
}

// AgentWithNote returns the calling agent and the note of its task that it
// reads, in one query. found is false when there is no such note, and
// ErrNotFound means the caller is not a registered agent of the task.
func (r *Reader) AgentWithNote(ctx context.Context, taskID, agent string, note address.NotePath) (a AgentState, n Note, found bool, err error) {
	ck := noteReadKey{taskID: taskID, agent: agent, note: noteKey{taskID, note.Agent, note.Path}}
	var row projectionsdb.GetAgentWithStateRow
	var f fetchedNote
	// With a note cache, the answer comes from it when nothing was
	// committed since it was kept.
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
	a, err = stateOfRow(row)
	return a, f.note, f.found, err
}

// AgentWithNoteWrite returns the calling agent and what a note write needs
// to know, in one query. That is the size and revision of the note it
// writes and what an earlier write with callID returned. ErrNotFound means
// the caller is not a registered agent of the task.
func (r *Reader) AgentWithNoteWrite(ctx context.Context, taskID, agent string, note address.NotePath, callID string) (AgentState, NoteWriteState, error) {
	row, err := r.q.GetAgentWithStateAndNoteWrite(ctx, projectionsdb.GetAgentWithStateAndNoteWriteParams{
		NoteAgent: note.Agent, NotePath: note.Path, CallID: callID, TaskID: taskID, Agent: agent})
	if err != nil {
		return AgentState{}, NoteWriteState{}, notFound(err)
	}
	a, err := stateOfRow(projectionsdb.GetAgentWithStateRow{Agent: row.Agent, State: row.State, ReadPosition: row.ReadPosition})
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

// stateOfRow decodes the caller's row, its state and the log position it
// was read at.
func stateOfRow(row projectionsdb.GetAgentWithStateRow) (AgentState, error) {
	a, err := agentFrom(row.Agent)
	if err != nil {
		return AgentState{}, err
	}
	if row.State == "" {
		return AgentState{Agent: a, State: fence.Initial(), ReadAt: row.ReadPosition}, nil
	}
	s, err := states.decode(row.State)
	return AgentState{Agent: a, State: s, ReadAt: row.ReadPosition}, err
}

// fetchNote builds the note from the rows of GetAgentWithStateAndNote,
// one per part.
func fetchNote(rows []projectionsdb.GetAgentWithStateAndNoteRow) fetchedNote {
	n := rows[0]
	if n.NotePath == nil { // NULL note columns mean no note
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

// AgentState returns an agent's lifecycle state, or the initial state if
// it has none yet.
func (r *Reader) AgentState(ctx context.Context, taskID, agent string) (fence.State, error) {
	return agentState(ctx, r.q, taskID, agent)
}

// fetchedNote is the note AgentWithNote read, if found.
type fetchedNote struct {
	note  Note
	found bool
}
