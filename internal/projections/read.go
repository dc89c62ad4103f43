package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// ErrNotFound: no such row in the projection.
var ErrNotFound = errors.New("not found")

// Reader answers queries over the projections, through the reader pool or
// inside a write transaction.
type Reader struct {
	q  *projectionsdb.Queries
	tx *txState // the write transaction's state (TxReader), or nil
	// readPosition is the log position this reader's snapshot reads at,
	// learnt by AgentWithState (-1 until then).
	readPosition int64
	// noteAhead is the note the caller said it will read (WillReadNote);
	// AgentWithState fetches it with the caller's row, into fetched.
	noteAhead *noteKey
	fetched   *fetchedNote
	// writeAhead is the note write the caller announced (WillWriteNote);
	// AgentWithState learns its NoteWriteState with the caller's row,
	// into writeState.
	writeAhead *noteWriteKey
	writeState *fetchedWriteState
	// filters, when set, finds a search's candidate chunks (UseChunkFilters).
	filters *ChunkFilters
	// noteCache, when set, answers the note fetched ahead (UseNoteCache)
	// for stamp; fromCache says it did.
	noteCache *NoteCache
	stamp     eventlog.CommitStamp
	fromCache bool
}

// fetchedNote is a note fetched ahead of Note.
type fetchedNote struct {
	key   noteKey
	note  Note
	found bool
}

// WillReadNote tells the reader that its caller will read the note
// (taskID, agent, path) after AgentWithState: that query then fetches the
// note too, and Note returns it without a query of its own. A note read
// is one statement instead of two. For read transactions only: in a write
// transaction the note could change between the two calls.
func (r *Reader) WillReadNote(taskID, agent, path string) {
	r.noteAhead = &noteKey{taskID, agent, path}
}

// noteWriteKey is what a note write's NoteWriteState depends on besides
// the caller: the note and the call_id.
type noteWriteKey struct {
	note   noteKey
	callID string
}

// fetchedWriteState is a NoteWriteState fetched ahead of NoteWriteState,
// for the caller of row.
type fetchedWriteState struct {
	key noteWriteKey
	row projectionsdb.GetAgentWithStateAndNoteWriteRow
}

// WillWriteNote tells the reader that its caller will ask NoteWriteState
// for the note (taskID, noteAgent, path) and callID right after
// AgentWithState: that query then learns it too, and NoteWriteState
// returns it without a query of its own. The caller must write nothing
// in between (the state is the one AgentWithState's snapshot saw).
func (r *Reader) WillWriteNote(taskID, noteAgent, path, callID string) {
	r.writeAhead = &noteWriteKey{noteKey{taskID, noteAgent, path}, callID}
}

// NewReader returns a Reader over db, an *sql.DB or *sql.Tx.
func NewReader(db projectionsdb.DBTX) *Reader {
	return &Reader{q: projectionsdb.New(db), readPosition: -1}
}

// UseChunkFilters makes SearchTexts find its candidate chunks through f,
// which must serve the database the reader reads. For read transactions
// only: f learns what the reader sees, and a write transaction may seal a
// chunk it then rolls back.
func (r *Reader) UseChunkFilters(f *ChunkFilters) { r.filters = f }

// ReadPosition returns the log position the reader's queries read at, if
// a query already learnt it (AgentWithState does, at no extra cost). Only
// meaningful when the reader is over one transaction.
func (r *Reader) ReadPosition() (int64, bool) { return r.readPosition, r.readPosition >= 0 }

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

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
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

// Note is one note file with its content.
type Note struct {
	NoteInfo
	Content  string
	Revision int64
}

// NoteInfo is a note file's metadata.
type NoteInfo struct {
	Path            string // relative to the owner's notes root
	Bytes           int64
	CreatedAt       string
	UpdatedAt       string
	CreatedPosition int64
	UpdatedPosition int64
}

// Note returns one note file, or ErrNotFound.
func (r *Reader) Note(ctx context.Context, taskID, agent, path string) (Note, error) {
	if f := r.fetched; f != nil && f.key == (noteKey{taskID, agent, path}) {
		r.fetched = nil
		if !f.found {
			return Note{}, ErrNotFound
		}
		return f.note, nil
	}
	parts, err := r.q.NoteWithParts(ctx, projectionsdb.NoteWithPartsParams{TaskID: taskID, Agent: agent, Path: path})
	if err != nil {
		return Note{}, err
	}
	if len(parts) == 0 {
		return Note{}, ErrNotFound
	}
	n := parts[0]
	info := NoteInfo{Path: n.Path, Bytes: n.Bytes, CreatedAt: n.CreatedAt, UpdatedAt: n.UpdatedAt,
		CreatedPosition: n.CreatedPosition, UpdatedPosition: n.UpdatedPosition}
	return noteOf(info, n.Revision, len(parts), func(i int) string { return parts[i].Text }), nil
}

// noteOf is the note of info at revision whose text is its n parts, part(0)
// to part(n-1), joined.
func noteOf(info NoteInfo, revision int64, n int, part func(i int) string) Note {
	if n == 1 { // the common case: the note is its one part, not copied
		return Note{NoteInfo: info, Content: part(0), Revision: revision}
	}
	var content strings.Builder
	content.Grow(int(info.Bytes))
	for i := range n {
		content.WriteString(part(i))
	}
	return Note{NoteInfo: info, Content: content.String(), Revision: revision}
}

// Notes lists an agent's notes whose path starts with prefix, by path.
func (r *Reader) Notes(ctx context.Context, taskID, agent, prefix string) ([]NoteInfo, error) {
	rows, err := r.q.ListNotes(ctx, projectionsdb.ListNotesParams{
		TaskID: taskID, Agent: agent, Prefix: prefix, PrefixChars: int64(utf8.RuneCountInString(prefix)),
	})
	if err != nil {
		return nil, err
	}
	out := make([]NoteInfo, len(rows))
	for i, n := range rows {
		out[i] = NoteInfo(n)
	}
	return out, nil
}

// NoteMatch is a note whose content contains a search query.
type NoteMatch struct {
	Path            string
	Content         string
	CreatedAt       string
	CreatedPosition int64
}

// SearchNotes returns an agent's notes under prefix whose content contains
// query (case-sensitive, literal), by path.
func (r *Reader) SearchNotes(ctx context.Context, taskID, agent, prefix, query string) ([]NoteMatch, error) {
	rows, err := r.q.NotePartsUnder(ctx, projectionsdb.NotePartsUnderParams{
		TaskID: taskID, Agent: agent, Prefix: prefix, PrefixChars: int64(utf8.RuneCountInString(prefix)),
	})
	if err != nil {
		return nil, err
	}
	// The parts of each note come together, in order: join them, then
	// match (a needle may span two parts).
	out := []NoteMatch{}
	var content strings.Builder
	for i, p := range rows {
		content.Write(p.Text)
		if i+1 < len(rows) && rows[i+1].Path == p.Path {
			continue
		}
		if text := content.String(); strings.Contains(text, query) {
			out = append(out, NoteMatch{Path: p.Path, Content: text, CreatedAt: p.CreatedAt, CreatedPosition: p.CreatedPosition})
		}
		content.Reset()
	}
	return out, nil
}

// NoteWriteState is what a note write needs to know before it writes.
type NoteWriteState struct {
	Size, Revision int64 // the note's (zeros when it does not exist)
	// Called reports whether the caller's call_id was used before, by a
	// write of RequestKey that returned Result.
	Called     bool
	RequestKey string
	Result     NoteWriteResult
}

// NoteWriteState returns, in one query (none after WillWriteNote), the
// size and revision of a note and what the caller's earlier write with
// callID (if any) returned; ErrNotFound when the caller is not a
// registered agent of the task.
func (r *Reader) NoteWriteState(ctx context.Context, taskID, noteAgent, path, caller, callID string) (NoteWriteState, error) {
	key := noteWriteKey{noteKey{taskID, noteAgent, path}, callID}
	var row projectionsdb.GetAgentWithStateAndNoteWriteRow
	if f := r.writeState; f != nil && f.key == key && f.row.Agent.Agent == caller {
		row = f.row
		r.writeState = nil
	} else {
		var err error
		if row, err = r.q.GetAgentWithStateAndNoteWrite(ctx, projectionsdb.GetAgentWithStateAndNoteWriteParams{
			NoteAgent: noteAgent, NotePath: path, CallID: callID, TaskID: taskID, Agent: caller}); err != nil {
			return NoteWriteState{}, notFound(err)
		}
	}
	if r.tx != nil { // the note write about to be applied need not read it again
		r.tx.rememberNote(key.note, noteRow{exists: row.NoteRevision > 0,
			row: projectionsdb.NoteSizeRow{Bytes: row.NoteBytes, Revision: row.NoteRevision, Parts: row.NoteParts}})
	}
	st := NoteWriteState{Size: row.NoteBytes, Revision: row.NoteRevision, Called: row.Called != 0 && callID != "", RequestKey: row.RequestKey}
	if st.Called {
		return st, json.Unmarshal([]byte(row.Result), &st.Result)
	}
	return st, nil
}
