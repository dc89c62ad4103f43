package projections

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

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

// noteOf is the note of info at revision whose text is its n parts joined
// in order.
func noteOf(info NoteInfo, revision int64, n int, part func(i int) string) Note {
	if n == 1 { // the common case, one part, not copied
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

// TaskNote is one note of a task, without its text.
type TaskNote struct {
	Agent, Path     string // Path relative to the owner's notes root
	Bytes, Revision int64
	CreatedPosition int64
	UpdatedPosition int64
}

// TaskNotes lists every note of a task, by owner and path.
func (r *Reader) TaskNotes(ctx context.Context, taskID string) ([]TaskNote, error) {
	rows, err := r.q.TaskNotes(ctx, taskID)
	if err != nil {
		return nil, err
	}
	out := make([]TaskNote, len(rows))
	for i, n := range rows {
		out[i] = TaskNote(n)
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

// SearchNotes returns by path an agent's notes under prefix whose content
// contains query as a case-sensitive literal.
func (r *Reader) SearchNotes(ctx context.Context, taskID, agent, prefix, query string) ([]NoteMatch, error) {
	rows, err := r.q.NotePartsUnder(ctx, projectionsdb.NotePartsUnderParams{
		TaskID: taskID, Agent: agent, Prefix: prefix, PrefixChars: int64(utf8.RuneCountInString(prefix)),
	})
	if err != nil {
		return nil, err
	}
	// The parts of each note come together in order. Join them before
	// matching, since a needle may span two parts.
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
	Size, Revision int64 // the note's; zeros when it does not exist
	// Called reports whether the caller's call_id was used before, by a
	// write of RequestKey that returned Result.
	Called     bool
	RequestKey string
	Result     NoteWriteResult
}
