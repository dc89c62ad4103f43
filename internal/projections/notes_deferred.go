package projections

import (
	"bytes"
	"context"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// In a request that defers its projection writes, such as an import, a
// replay segment or a rebuild, a note's changes are gathered in
// txState.pending and written by Flush once per note. That is one notes row
// and one part for all the appends in between, instead of a row update and
// a part per append. The note's text is the same either way, though its
// parts are not, and Digest and Diff compare the text. Nothing but the
// applier reads the notes before Flush.

// pendingNotes are the note changes of a transaction not written yet, in
// the order the notes were first changed.
type pendingNotes struct {
	order []noteKey
	notes map[noteKey]*pendingNote
	held  int // bytes of text held, to bound the memory
}

// noteFlush bounds a transaction's pending notes by bytes of text and by
// notes. Past either, they are written out, so that an import of a large
// log does not keep its notes in memory. A zero field takes its default.
type noteFlush struct {
	bytes, notes int
}

// The default noteFlush bounds.
const (
	defaultFlushNoteBytes = 8 << 20
	defaultFlushNotes     = 1 << 16
)

// withDefaults returns f with its zero fields set to their defaults.
func (f noteFlush) withDefaults() noteFlush {
	if f.bytes <= 0 {
		f.bytes = defaultFlushNoteBytes
	}
	if f.notes <= 0 {
		f.notes = defaultFlushNotes
	}
	return f
}

// pendingNote is a note's changes not written yet, either one change that
// applyNote applies at once or all of a deferring transaction's.
type pendingNote struct {
	disk noteRow // the note as its tables hold it
	now  noteRow // the note after the pending changes; now.row.Parts is unused
	// replace tells that text replaces the disk's parts, for an overwrite
	// or a new note. Otherwise text is appended to them.
	replace         bool
	text            []byte
	createdAt       string
	createdPosition int64
	updatedAt       string
	updatedPosition int64
}

// deferNote records c in the transaction's pending notes. It writes only
// the call's result to note_calls, which does not depend on the parts.
func deferNote(ctx context.Context, db eventlog.DBTX, q projectionsdb.Querier, st *txState, mk noteKey, ev events.Event, c noteChange) error {
	pn := st.pending
	if pn == nil {
		pn = &pendingNotes{notes: map[noteKey]*pendingNote{}}
		st.pending = pn
	}
	p := pn.notes[mk]
	if p == nil {
		disk, err := noteBefore(ctx, q, st, mk)
		if err != nil {
			return err
		}
		p = &pendingNote{disk: disk, now: disk}
		pn.notes[mk] = p
		pn.order = append(pn.order, mk)
	}
	old := p.change(ev, c)
	pn.held += len(c.text)
	if err := insertNoteCall(ctx, q, ev, c, old); err != nil {
		return err
	}
	if f := st.flush.withDefaults(); pn.held > f.bytes || len(pn.order) > f.notes {
		return st.flushNotes(ctx, db)
	}
	return nil
}

// flushNotes writes out the note changes deferred in the transaction.
// It still defers the later ones, since Flush ends the deferral.
func (st *txState) flushNotes(ctx context.Context, db eventlog.DBTX) error {
	pn := st.pending
	if pn == nil {
		return nil
	}
	st.pending = nil
	q := queriesOf(db)
	for _, mk := range pn.order {
		p := pn.notes[mk]
		parts, err := writePending(ctx, q, mk, p)
		if err != nil {
			return err
		}
		st.rememberNote(mk, p.written(parts))
	}
	return nil
}

// change records c in p and returns the note as it was before c.
func (p *pendingNote) change(ev events.Event, c noteChange) projectionsdb.NoteSizeRow {
	old := p.now.row
	size := int64(len(c.text))
	switch {
	case !p.now.exists:
		p.replace, p.text = true, append(p.text[:0], c.text...)
		p.createdAt, p.createdPosition = ev.RecordedAt, ev.Position
	case c.append:
		p.text = append(p.text, c.text...)
		size += old.Bytes
	default:
		p.replace, p.text = true, append(p.text[:0], c.text...)
	}
	p.updatedAt, p.updatedPosition = ev.RecordedAt, ev.Position
	p.now = noteRow{exists: true, row: projectionsdb.NoteSizeRow{Bytes: size, Revision: old.Revision + 1}}
	return old
}

// written is the note's row that the transaction's state keeps once
// writePending has written p, leaving parts parts.
func (p *pendingNote) written(parts int64) noteRow {
	return noteRow{exists: true, row: projectionsdb.NoteSizeRow{Bytes: p.now.row.Bytes, Revision: p.now.row.Revision, Parts: parts}}
}

// writePending writes one note's pending change and returns its number of
// parts. Its text replaces the parts, is one more part, or at maxNoteParts
// is merged with them into one.
func writePending(ctx context.Context, q projectionsdb.Querier, mk noteKey, p *pendingNote) (int64, error) {
	where := projectionsdb.DeleteNotePartsParams{TaskID: mk.taskID, Agent: mk.agent, Path: mk.path}
	parts := p.disk.row.Parts
	switch {
	case p.replace || (len(p.text) > 0 && parts >= maxNoteParts):
		text := p.text
		if !p.replace { // merge the parts with the appended text
			all, err := q.NoteParts(ctx, projectionsdb.NotePartsParams(where))
			if err != nil {
				return 0, err
			}
			text = append(bytes.Join(all, nil), p.text...)
		}
		if p.disk.exists {
			if err := q.DeleteNoteParts(ctx, where); err != nil {
				return 0, err
			}
		}
		if text == nil {
			text = []byte{} // an empty part, not NULL
		}
		if err := q.InsertNotePart(ctx, projectionsdb.InsertNotePartParams{TaskID: mk.taskID, Agent: mk.agent, Path: mk.path, Part: 0, Text: text}); err != nil {
			return 0, err
		}
		parts = 1
	case len(p.text) > 0: // empty appends change only the revision
		if err := q.InsertNotePart(ctx, projectionsdb.InsertNotePartParams{TaskID: mk.taskID, Agent: mk.agent, Path: mk.path, Part: parts, Text: p.text}); err != nil {
			return 0, err
		}
		parts++
	}
	var err error
	now := p.now.row
	if !p.disk.exists {
		err = q.InsertNote(ctx, projectionsdb.InsertNoteParams{
			TaskID: mk.taskID, Agent: mk.agent, Path: mk.path, Bytes: now.Bytes, Revision: now.Revision, Parts: parts,
			CreatedAt: p.createdAt, UpdatedAt: p.updatedAt, CreatedPosition: p.createdPosition, UpdatedPosition: p.updatedPosition,
		})
	} else {
		err = q.UpdateNote(ctx, projectionsdb.UpdateNoteParams{Bytes: now.Bytes, Revision: now.Revision, Parts: parts,
			UpdatedAt: p.updatedAt, UpdatedPosition: p.updatedPosition, TaskID: mk.taskID, Agent: mk.agent, Path: mk.path})
	}
	return parts, err
}
