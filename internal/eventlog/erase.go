package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/memoryd/memoryd/internal/eventlog/eventsdb"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/retention"
)

// Erased is what Tx.EraseTask did.
type Erased struct {
	Erasure    events.Event // the task.erased event appended
	Tombstoned int64        // the task's events made tombstones
	// FreePagesZeroed counts the free pages overwritten with zeros first
	// (SQLite).
	FreePagesZeroed int64
}

// EraseTask erases a task's events in this transaction, which
// Store.UpdateAlone runs: every event of task taskID becomes a tombstone
// (events.TypeEventErased) of the erasure that follows them, its position,
// id, stream, stream version and time kept, its type, payload and request
// id replaced; then the erasure, the event erasure returns for the number
// of events tombstoned, is appended to stream, the task's, at its next
// version. The projector applies the erasure, which deletes the task's
// projection rows; tombstones project nothing. On SQLite the free pages
// are first overwritten with zeros, and what the transaction frees is
// (secure_delete); Store.Scrub, after the commit, takes the old page
// images out of the WAL. docs/forgetting.md describes it.
func (t *Tx) EraseTask(ctx context.Context, taskID, stream string, erasure func(tombstoned int64) events.Pending) (Erased, error) {
	last, err := t.Position(ctx)
	if err != nil {
		return Erased{}, err
	}
	at := last + 1 // the erasure's position: nothing else is appended in between
	if err := t.s.engine.beginErase(ctx, t.db); err != nil {
		return Erased{}, classify(err)
	}
	t.s.erased = true // the writer ends the erasure's scrubbing after the batch
	t.s.tip.epoch++   // agents and rows a caller knew of may be gone
	var res Erased
	if res.FreePagesZeroed, err = t.s.engine.zeroFreePages(ctx, t.db); err != nil {
		return Erased{}, fmt.Errorf("overwrite the free pages: %w", classify(err))
	}
	if res.Tombstoned, err = t.q.EraseTaskEvents(ctx, eventsdb.EraseTaskEventsParams{Tombstone: string(events.Tombstone(at)), TaskID: taskID}); err != nil {
		return Erased{}, classify(err)
	}
	evs, err := t.Append(ctx, stream, AnyVersion, erasure(res.Tombstoned))
	if err != nil {
		return Erased{}, err
	}
	if len(evs) != 1 || evs[0].Position != at {
		return Erased{}, fmt.Errorf("eventlog: the erasure of task %s is not the one event at position %d", taskID, at)
	}
	res.Erasure = evs[0]
	return res, nil
}

// TaskErasures returns the erasures (task.erased events) of a task, in
// position order, none when it was never erased.
func (s *Store) TaskErasures(ctx context.Context, taskID string) ([]events.Event, error) {
	rows, err := queriesOf(s.queries()).TaskErasures(ctx, taskID)
	if err != nil {
		return nil, classify(err)
	}
	return toEvents(rows), nil
}

// TaskErasures is Store.TaskErasures in this transaction.
func (t *Tx) TaskErasures(ctx context.Context, taskID string) ([]events.Event, error) {
	rows, err := t.q.TaskErasures(ctx, taskID)
	if err != nil {
		return nil, classify(err)
	}
	return toEvents(rows), nil
}

// TaskEvents counts a task's events: all of them, and the tombstones
// among them.
func (s *Store) TaskEvents(ctx context.Context, taskID string) (all, tombstones int64, err error) {
	c, err := queriesOf(s.queries()).TaskEventCounts(ctx, eventsdb.TaskEventCountsParams{TaskID: taskID, Before: 1<<63 - 1})
	if err != nil {
		return 0, 0, classify(err)
	}
	return c.Events, c.Tombstones, nil
}

// checkErasure checks an imported event against the erasure rules of the
// log as the transaction holds it before ev. A tombstone's data is exactly
// what an erasure writes and names a later position. A task.erased follows
// only tombstones of its task, as many made by it as it says. An erased
// task's id is not created again.
func (t *Tx) checkErasure(ctx context.Context, ev events.Event) error {
	switch ev.Type {
	case events.TypeTaskCreated:
		erasures, err := t.TaskErasures(ctx, ev.TaskID())
		if err != nil {
			return err
		}
		if len(erasures) > 0 {
			return events.Broken(ev, "task %s was erased at position %d: its id is not used again", ev.TaskID(), erasures[0].Position)
		}
	case events.TypeEventErased:
		p, err := events.Decode(ev)
		if err != nil {
			return err
		}
		by := p.(*events.EventErased).ErasedBy
		if string(ev.Data) != string(events.Tombstone(by)) {
			return events.Broken(ev, "its data is not a tombstone's, %s", events.Tombstone(by))
		}
		if by <= ev.Position {
			return events.Broken(ev, "erased_by %d is not a position after the tombstone's own", by)
		}
		if ev.RequestID != "" {
			return events.Broken(ev, "a tombstone keeps no request id")
		}
	case events.TypeTaskErased:
		p, err := events.Decode(ev)
		if err != nil {
			return err
		}
		e := p.(*events.TaskErased)
		c, err := t.q.TaskEventCounts(ctx, eventsdb.TaskEventCountsParams{
			Tombstone: string(events.Tombstone(ev.Position)), TaskID: e.TaskID, Before: ev.Position})
		if err != nil {
			return classify(err)
		}
		if live := c.Events - c.Tombstones; live > 0 {
			return events.Broken(ev, "%d event(s) of task %s before it are not tombstones", live, e.TaskID)
		}
		if c.ErasedHere != e.Events {
			return events.Broken(ev, "events is %d, but %d tombstone(s) of task %s name it", e.Events, c.ErasedHere, e.TaskID)
		}
		if e.Retention != nil {
			return t.checkRetention(ctx, ev, e)
		}
	}
	return nil
}

// checkRetention checks an erasure a retention policy made: its
// last_activity is the recorded_at of the task's latest event before it,
// at least its retain period before the erasure's own recorded_at.
func (t *Tx) checkRetention(ctx context.Context, ev events.Event, e *events.TaskErased) error {
	r := e.Retention
	last, err := t.q.TaskLastRecordedBefore(ctx, eventsdb.TaskLastRecordedBeforeParams{TaskID: e.TaskID, Before: ev.Position})
	if errors.Is(err, sql.ErrNoRows) {
		return events.Broken(ev, "retention: task %s has no event before it", e.TaskID)
	}
	if err != nil {
		return classify(err)
	}
	if last != r.LastActivity {
		return events.Broken(ev, "retention.last_activity is %s, but the latest event of task %s before it was recorded at %s", r.LastActivity, e.TaskID, last)
	}
	period, err := retention.ParseDuration(r.Retain)
	if err != nil {
		return events.Broken(ev, "retention.retain: %v", err)
	}
	lastAt, err1 := time.Parse(events.TimeFormat, r.LastActivity)
	at, err2 := time.Parse(events.TimeFormat, ev.RecordedAt)
	if err1 != nil || err2 != nil || lastAt.Add(period).After(at) {
		return events.Broken(ev, "retention: the last activity %s is less than %s before the erasure (%s)", r.LastActivity, r.Retain, ev.RecordedAt)
	}
	return nil
}

// ScrubOptions say how far Store.Scrub goes.
type ScrubOptions struct {
	// Vacuum rebuilds an SQLite database file from its live rows (VACUUM),
	// which also clears what deletes left in it before memoryd overwrote
	// freed space. It holds the write lock for the time it takes.
	Vacuum bool
	// Wait bounds how long Scrub waits for readers to let the WAL go. It
	// defaults to 10 seconds.
	Wait time.Duration
}

// Scrub is what Store.Scrub did, and what it could not do.
type Scrub struct {
	Engine Engine `json:"engine"`
	// SecureDelete: the erasure's transaction overwrote the free pages,
	// and then what it freed, with zeros (SQLite).
	SecureDelete bool `json:"secure_delete"`
	// FreePagesZeroed is how many free pages it overwrote first (the
	// caller copies it from Erased).
	FreePagesZeroed int64 `json:"free_pages_zeroed"`
	// WALTruncated: the WAL was checkpointed and truncated to 0 bytes, so
	// it holds no page image of before the erasure (SQLite).
	WALTruncated bool `json:"wal_truncated"`
	// WALBytes is the WAL's size afterwards (SQLite).
	WALBytes int64 `json:"wal_bytes"`
	// Vacuumed names the tables rewritten (PostgreSQL: VACUUM FULL) or
	// ["*"] for a whole SQLite file rebuilt by VACUUM, and VacuumReason
	// says why SQLite's was.
	Vacuumed     []string `json:"vacuumed"`
	VacuumReason string   `json:"vacuum_reason,omitempty"`
	// Left says what may still hold the erased content, if anything.
	Left []string `json:"left"`
}

// errWALBusy is a checkpoint that could not take the whole WAL.
var errWALBusy = errors.New("readers held the WAL")

// Scrub takes what an erasure left out of the database's files: on SQLite
// the page images of before it in the WAL (a TRUNCATE checkpoint, retried
// while readers hold the WAL, for up to opts.Wait), with opts.Vacuum, and
// once for a file an older memoryd wrote, the whole file rebuilt first; on
// PostgreSQL the dead rows (VACUUM FULL of every table in tables and of
// the log). It runs on connections of its own after the erasure's commit,
// so the writer goes on meanwhile.
func (s *Store) Scrub(ctx context.Context, tables []string, opts ScrubOptions) (Scrub, error) {
	if opts.Wait <= 0 {
		opts.Wait = 10 * time.Second
	}
	return s.engine.scrub(ctx, s, tables, opts)
}

// Reclaim gives back to the file system the space that rows written and
// deleted again by a bulk write (an import's one long transaction) left
// in tables. On PostgreSQL they are dead tuples, which a plain VACUUM
// marks free for later rows but keeps in the files, so each table is
// rewritten (VACUUM FULL, locking it meanwhile: a table that churns is
// small once its dead rows are gone). SQLite reuses a deleted row's pages
// for the next rows, and there it does nothing.
func (s *Store) Reclaim(ctx context.Context, tables []string) error {
	return s.engine.reclaim(ctx, s, tables)
}
