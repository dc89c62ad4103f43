// Package projections maintains memoryd's read models (tasks, agents and
// their fence state, note files, idempotent call results, history entries,
// branches, windows and their search filters) from the event log. Apply runs inside
// the transaction that appends each event; Rebuild replays the whole log
// from position 1; Digest fingerprints every projection so two databases
// can be compared. Appliers read only the event and the projection tables:
// no clock, no randomness.
package projections

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// Apply updates the projections for ev. It is the eventlog.Applier of the
// store.
func Apply(ctx context.Context, db eventlog.DBTX, ev events.Event) error {
	return apply(ctx, db, ev, noteFlush{})
}

// applier returns Apply with flush bounding the notes a deferring request
// holds.
func applier(flush noteFlush) eventlog.Applier {
	return func(ctx context.Context, db eventlog.DBTX, ev events.Event) error { return apply(ctx, db, ev, flush) }
}

func apply(ctx context.Context, db eventlog.DBTX, ev events.Event, flush noteFlush) error {
	if ev.Type == events.TypeToolCalled {
		return nil // the read audit changes no projection: no need to decode it
	}
	payload, err := events.Decode(ev)
	if err != nil {
		return err
	}
	q := projectionsdb.New(db)
	switch p := payload.(type) {
	case *events.TaskCreated:
		return q.InsertTask(ctx, projectionsdb.InsertTaskParams{
			TaskID: p.TaskID, RootSession: p.SessionKey, CreatedAt: ev.RecordedAt, Position: ev.Position,
		})
	case *events.AgentRegistered:
		budget, err := json.Marshal(p.Budget)
		if err != nil {
			return err
		}
		if err := q.InsertAgent(ctx, projectionsdb.InsertAgentParams{
			TaskID: p.TaskID, Agent: p.Agent, ParentAgent: p.ParentAgent, SessionKey: p.SessionKey,
			SessionID: p.SessionID, SessionFile: p.SessionFile, Budget: string(budget), Position: ev.Position,
		}); err != nil {
			return err
		}
		return putAgentState(ctx, q, p.TaskID, p.Agent, fence.Initial(), ev.Position)
	case *events.AgentReattached:
		budget, err := json.Marshal(p.Budget)
		if err != nil {
			return err
		}
		return q.UpdateAgentSession(ctx, projectionsdb.UpdateAgentSessionParams{
			SessionID: p.SessionID, SessionFile: p.SessionFile, Budget: string(budget), TaskID: p.TaskID, Agent: p.Agent,
		})
	case *events.NoteWritten:
		return applyNote(ctx, db, ev, noteChange{p.TaskID, p.Agent, p.Path, p.Text, p.By, p.CallID, p.RequestKey, false}, flush)
	case *events.NoteAppended:
		return applyNote(ctx, db, ev, noteChange{p.TaskID, p.Agent, p.Path, p.Text, p.By, p.CallID, p.RequestKey, true}, flush)
	case *events.HistoryEntryRecorded:
		return applyEntryRecorded(ctx, q, eventlog.TxMemo(db), ev, p)
	case *events.HistoryBranchChanged:
		return applyBranchChanged(ctx, q, ev, p)
	}
	if ref, ok := lifecycleRef(payload); ok {
		return applyLifecycle(ctx, q, ev, ref, payload)
	}
	return fmt.Errorf("projections: no applier for %s", ev.Type)
}

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

// WriteResult is the result of writing (or appending, appendMode) text to
// the note at fullPath, which held size bytes at revision before (revision
// 0: it did not exist). The tool answers it and the projection keeps it
// for retries: one function, so the two always agree.
func WriteResult(fullPath string, size, revision int64, text string, appendMode bool) NoteWriteResult {
	res := NoteWriteResult{Path: fullPath, Bytes: int64(len(text)), Created: revision == 0, Revision: revision + 1}
	if appendMode {
		res.Bytes += size
	}
	return res
}

// maxNoteParts is how many parts a note's text is kept in before an
// append merges them into one (see migrations/00005_note_parts.sql).
const maxNoteParts = 16

// noteKey names a note in a transaction's memo (eventlog.TxMemo).
type noteKey struct{ taskID, agent, path string }

// noteRow is what a transaction's memo holds of a note: its notes row
// (size, revision, parts), or that it has none.
type noteRow struct {
	exists bool
	row    projectionsdb.NoteSizeRow
}

// noteBefore returns the note's row as the transaction sees it: from the
// memo when the transaction has read or written it, else from its table.
func noteBefore(ctx context.Context, q *projectionsdb.Queries, memo map[any]any, mk noteKey) (noteRow, error) {
	if m, ok := memo[mk].(noteRow); ok {
		return m, nil
	}
	row, err := q.NoteSize(ctx, projectionsdb.NoteSizeParams{TaskID: mk.taskID, Agent: mk.agent, Path: mk.path})
	if errors.Is(err, sql.ErrNoRows) {
		return noteRow{}, nil
	}
	return noteRow{exists: err == nil, row: row}, err
}

// applyNote applies one note write or append: at once (its part and row
// written now, by the rule writePending keeps), or, in a request that
// defers, gathered with the transaction's other changes of the note.
func applyNote(ctx context.Context, db eventlog.DBTX, ev events.Event, c noteChange, flush noteFlush) error {
	q := projectionsdb.New(db)
	memo := eventlog.TxMemo(db)
	mk := noteKey{c.taskID, c.agent, c.path}
	if eventlog.TxDeferring(db) {
		return deferNote(ctx, db, q, memo, mk, ev, c, flush)
	}
	before, err := noteBefore(ctx, q, memo, mk)
	if err != nil {
		return err
	}
	p := &pendingNote{disk: before, now: before}
	old := p.change(ev, c)
	parts, err := writePending(ctx, q, mk, p)
	if err != nil {
		return err
	}
	if memo != nil {
		memo[mk] = p.written(parts)
	}
	return insertNoteCall(ctx, q, ev, c, old)
}

// insertNoteCall keeps the result of c for retries of its call (when it
// has a call_id); old is the note before c.
func insertNoteCall(ctx context.Context, q *projectionsdb.Queries, ev events.Event, c noteChange, old projectionsdb.NoteSizeRow) error {
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
