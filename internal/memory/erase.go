package memory

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
)

// EraseOptions configure EraseTask.
type EraseOptions struct {
	// Vacuum rebuilds an SQLite database file after the erasure (VACUUM),
	// which also clears space freed before memoryd overwrote freed space.
	// It holds the write lock while it runs.
	Vacuum bool
	// Wait bounds how long the scrub waits for readers to let the WAL go;
	// 10 seconds when zero.
	Wait time.Duration
	// Retention, when set, makes it a retention policy's erasure: it
	// erases the task only if the policy erases it now, and says so in the
	// erasure (ApplyRetention sets it).
	Retention *RetentionCheck
}

// Scrub is what the scrub after an erasure did to the database's files.
type Scrub = eventlog.Scrub

// Erasure is what EraseTask erased, as POST /v1/tasks/{task_id}/forget
// and the forget verb answer.
type Erasure struct {
	TaskID string `json:"task_id"`
	// Position is the erasure's own event, task.erased.
	Position int64 `json:"position"`
	// Events is how many of the task's events became tombstones.
	Events int64 `json:"events"`
	// Agents were the task's agents.
	Agents []string `json:"agents"`
	// Rows are the projection rows deleted, by table.
	Rows  map[string]int64 `json:"rows"`
	Scrub Scrub            `json:"scrub"`
}

// maxTaskIDBytes bounds a task id given to EraseTask.
const maxTaskIDBytes = 256

// EraseTask makes a task's content unrecoverable from the database: in one
// write transaction every event of the task becomes a tombstone (its
// position, id, stream, stream version and time kept; its type, payload
// and request id gone), the erasure is appended as task.erased, and its
// projector deletes the task's projection rows; on SQLite what that frees
// is overwritten with zeros. After the commit the service forgets the task
// in its caches (and calls the OnErase hooks), then scrubs the database's
// files (Store.Scrub: SQLite's free pages and WAL, PostgreSQL's dead rows). An unknown task or one
// erased already is ErrNotFound. A failed scrub returns the committed
// erasure with an error saying so. With opts.Retention it is a retention
// policy's erasure: a task the policy does not erase now is ErrConflict
// and left alone. docs/forgetting.md describes it.
func (s *Service) EraseTask(ctx context.Context, taskID, requestID string, opts EraseOptions) (Erasure, error) {
	if err := checkTaskID(taskID); err != nil {
		return Erasure{}, err
	}
	res := Erasure{TaskID: taskID}
	var zeroed int64
	err := s.store.UpdateAlone(ctx, requestID, func(tx *eventlog.Tx) error {
		r := projections.TxReader(tx)
		exists, err := r.TaskExists(ctx, taskID)
		if err != nil {
			return err
		}
		if !exists {
			return s.unknownTask(ctx, tx, taskID)
		}
		var byRetention *events.ErasedByRetention
		if opts.Retention != nil {
			if byRetention, err = opts.Retention.check(ctx, r, taskID, s.retentionNow()); err != nil {
				return err
			}
		}
		if res.Agents, err = r.TaskAgents(ctx, taskID); err != nil {
			return err
		}
		if res.Rows, err = projections.TaskRows(ctx, tx.DB(), taskID); err != nil {
			return err
		}
		erased, err := tx.EraseTask(ctx, taskID, events.Stream(taskID, address.Root), func(n int64) events.Pending {
			return events.NewPending(events.TaskErased{TaskID: taskID, Events: n, Retention: byRetention})
		})
		res.Position, res.Events, zeroed = erased.Erasure.Position, erased.Tombstoned, erased.FreePagesZeroed
		return err
	})
	if err != nil {
		return Erasure{}, err
	}
	s.forgetTask(taskID)
	res.Scrub, err = s.store.Scrub(ctx, projections.Tables(), eventlog.ScrubOptions{Vacuum: opts.Vacuum, Wait: opts.Wait})
	res.Scrub.FreePagesZeroed = zeroed
	if err != nil {
		return res, fmt.Errorf("task %s is erased (position %d), but scrubbing the database's files failed: %w", taskID, res.Position, err)
	}
	return res, nil
}

// unknownTask is the error of erasing a task that is not there: erased
// already, or never known.
func (s *Service) unknownTask(ctx context.Context, tx *eventlog.Tx, taskID string) error {
	erasures, err := tx.TaskErasures(ctx, taskID)
	if err != nil {
		return err
	}
	if len(erasures) > 0 {
		last := erasures[len(erasures)-1]
		return notFoundf("task %s was erased already, at position %d (%s)", taskID, last.Position, last.RecordedAt)
	}
	return notFoundf("no task %s", taskID)
}

// OnErase registers fn to be called with the id of every task this
// service erases, after the erasure's commit, so that what keeps the
// task's content in memory or in scratch files drops it (the inspector's
// copies). fn must not block.
func (s *Service) OnErase(fn func(taskID string)) {
	s.erasing.Lock()
	defer s.erasing.Unlock()
	s.erasing.onErase = append(s.erasing.onErase, fn)
}

// erasing is the hooks of OnErase.
type erasing struct {
	sync.Mutex
	onErase []func(taskID string)
}

// forgetTask drops what the service keeps of an erased task in memory:
// its cached note reads, its history chunk filters, its host call
// bindings, and whatever the OnErase hooks keep.
func (s *Service) forgetTask(taskID string) {
	s.notes.ForgetTask(taskID)
	s.filters.ForgetTask(taskID)
	s.hostCalls.forgetTask(taskID)
	s.erasing.Lock()
	hooks := append([]func(string){}, s.erasing.onErase...)
	s.erasing.Unlock()
	for _, fn := range hooks {
		fn(taskID)
	}
}

// forgetTask drops the host call bindings of a task's agents.
func (h *hostCalls) forgetTask(taskID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	kept := h.order[:0]
	for _, id := range h.order {
		if h.byID[id].cc.TaskID == taskID {
			delete(h.byID, id)
			continue
		}
		kept = append(kept, id)
	}
	clear(h.order[len(kept):])
	h.order = kept
}
