package projections

import (
	"context"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
)

// Projector is the projections' eventlog.Projector. A store opened with it
// applies and checks every event through the projections.
type Projector struct {
	flush noteFlush // bounds a deferring transaction's notes; zero for the defaults
}

// Begin returns the state of a write transaction that begins.
func (p Projector) Begin() eventlog.TxProjection { return &txState{flush: p.flush} }

// txState is what the projections keep with one write transaction, so that
// the transaction need not read again what it has read or written, nor
// render again what a sync rendered before it took the writer.
type txState struct {
	// notes are the notes rows the transaction has read or written, by note.
	notes map[noteKey]noteRow
	// pending are the note changes deferred and not written yet, or nil.
	pending *pendingNotes
	// deferring gathers note changes in pending until Flush.
	deferring bool
	// rendered are history entries that WillRecordEntry rendered ahead of
	// the writer, taken by the entry's projection.
	rendered map[renderedKey]RenderedEntry
	// caps are the note caps of registered agents as an import's checks
	// found them.
	caps map[noteCapKey]int64
	// flush is the projector's bound on pending notes.
	flush noteFlush
}

// Apply updates the projections for ev.
func (s *txState) Apply(ctx context.Context, db eventlog.DBTX, ev events.Event) error {
	return apply(ctx, db, s, ev)
}

// CheckImport checks an imported event against the projections.
func (s *txState) CheckImport(ctx context.Context, db eventlog.DBTX, ev events.Event) error {
	return checkImported(ctx, db, s, ev)
}

// Defer gathers the transaction's note changes until Flush.
func (s *txState) Defer() { s.deferring = true }

// Flush writes out the deferred note changes and ends the deferral.
func (s *txState) Flush(ctx context.Context, db eventlog.DBTX) error {
	s.deferring = false
	return s.flushNotes(ctx, db)
}

// Rollback forgets everything, the deferral included. The writer calls it
// when some of the transaction's writes are rolled back.
func (s *txState) Rollback() { *s = txState{flush: s.flush} }

// forget drops what s remembers of the projection rows, for a rebuild that
// has just deleted them. The deferral stands.
func (s *txState) forget() { *s = txState{deferring: s.deferring, flush: s.flush} }

// note returns what the transaction remembers of a note's row.
func (s *txState) note(mk noteKey) (noteRow, bool) {
	n, ok := s.notes[mk]
	return n, ok
}

// rememberNote keeps a note's row as the transaction now sees it.
func (s *txState) rememberNote(mk noteKey, n noteRow) {
	if s.notes == nil {
		s.notes = map[noteKey]noteRow{}
	}
	s.notes[mk] = n
}

// stateOf returns the projections' state of the write transaction tx, or
// nil when its store applies through another projector.
func stateOf(tx *eventlog.Tx) *txState {
	s, _ := tx.Projection().(*txState)
	return s
}

// TxReader returns a Reader inside the write transaction tx that shares
// the transaction's state. A note whose write state it reads is not read
// again when the write is applied.
func TxReader(tx *eventlog.Tx) *Reader {
	r := NewReader(tx.DB())
	r.tx = stateOf(tx)
	return r
}
