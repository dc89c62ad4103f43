package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

type noteChange struct {
	taskID, agent, path, text, by, callID, requestKey string
	append                                            bool
}

// NoteWriteResult is the result of a note write, as the tools return it and
// as it is kept for idempotent retries.
type NoteWriteResult struct {
	Path     string `json:"path"`
	Bytes    int64  `json:"bytes"`
	Created  bool   `json:"created"`
	Revision int64  `json:"revision"`
}

// WriteResult is the result of writing or appending text to the note at
// fullPath, which held size bytes at revision before. Both the tool and the
// projection use it, so the answer and the kept result always agree.
func WriteResult(fullPath string, size, revision int64, text string, appendMode bool) NoteWriteResult {
	res := NoteWriteResult{Path: fullPath, Bytes: int64(len(text)), Created: revision == 0, Revision: revision + 1} // revision 0 means no note
	if appendMode {
		res.Bytes += size
	}
	return res
}

// maxNoteParts is how many parts a note's text is kept in before an
// append merges them into one. See migrations/00005_note_parts.sql.
const maxNoteParts = 16

// noteKey names a note in txState.notes and pendingNotes.
type noteKey struct{ taskID, agent, path string }

// noteRow is what a transaction's state holds of a note, its notes row or
// that it has none.
type noteRow struct {
	exists bool
	row    projectionsdb.NoteSizeRow
}

// noteBefore returns the note's row as the transaction sees it, from its
// state when the transaction has read or written it, else from its table.
func noteBefore(ctx context.Context, q projectionsdb.Querier, st *txState, mk noteKey) (noteRow, error) {
	if m, ok := st.note(mk); ok {
		return m, nil
	}
	row, err := q.NoteSize(ctx, projectionsdb.NoteSizeParams{TaskID: mk.taskID, Agent: mk.agent, Path: mk.path})
	if errors.Is(err, sql.ErrNoRows) {
		return noteRow{}, nil
	}
	return noteRow{exists: err == nil, row: row}, err
}

// applyNote applies one note write or append at once, or gathers it with
// the transaction's other changes of the note in a request that defers.
func applyNote(ctx context.Context, db eventlog.DBTX, st *txState, ev events.Event, c noteChange) error {
	q := queriesOf(db)
	mk := noteKey{c.taskID, c.agent, c.path}
	if st.deferring {
		return deferNote(ctx, db, q, st, mk, ev, c)
	}
	before, err := noteBefore(ctx, q, st, mk)
	if err != nil {
		return err
	}
	p := &pendingNote{disk: before, now: before}
	old := p.change(ev, c)
	parts, err := writePending(ctx, q, mk, p)
	if err != nil {
		return err
	}
	st.rememberNote(mk, p.written(parts))
	return insertNoteCall(ctx, q, ev, c, old)
}

// insertNoteCall keeps the result of c for retries of its call, if it has
// a call_id. old is the note before c.
func insertNoteCall(ctx context.Context, q projectionsdb.Querier, ev events.Event, c noteChange, old projectionsdb.NoteSizeRow) error {
	if c.callID == "" {
		return nil
	}
	b, err := json.Marshal(WriteResult(address.Full(c.agent, c.path), old.Bytes, old.Revision, c.text, c.append))
	if err != nil {
		return err
	}
	return q.InsertNoteCall(ctx, projectionsdb.InsertNoteCallParams{
		TaskID: c.taskID, Agent: c.by, CallID: c.callID, RequestKey: c.requestKey, Result: string(b), Position: ev.Position,
	})
}
