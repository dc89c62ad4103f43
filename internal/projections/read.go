package projections

import (
	"context"
	"database/sql"
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
	// learnt by AgentWithState and its combined forms (-1 until then).
	readPosition int64
	// filters, when set, finds a search's candidate chunks (UseChunkFilters).
	filters *ChunkFilters
	// noteCache, when set, answers AgentWithNote (UseNoteCache) for
	// stamp; fromCache says it did.
	noteCache *NoteCache
	stamp     eventlog.CommitStamp
	fromCache bool
}

// fetchedNote is the note AgentWithNote read (found false: there is none).
type fetchedNote struct {
	note  Note
	found bool
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
// a query already learnt it (AgentWithState and its combined forms do, at
// no extra cost). Only meaningful when the reader is over one transaction.
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
