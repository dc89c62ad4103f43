package projections

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/memoryd/memoryd/internal/address"
	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// checkImported is the projector's import check, which returns an
// *events.RuleError when ev names what the projections do not hold before
// it, as the commands that record it require.
//   - A task.created names a task that does not exist yet.
//   - An agent.registered names an existing task, an agent not registered
//     in it yet, and a registered parent agent.
//   - Every other event names an agent registered in its task, and so does
//     a note's writer.
//   - A note write or append leaves the note within its owner's cap.
//   - A task.retention_set names an existing task.
func checkImported(ctx context.Context, db eventlog.DBTX, st *txState, ev events.Event) error {
	payload, err := events.Decode(ev)
	if err != nil {
		return err
	}
	c := importChecker{ctx: ctx, q: queriesOf(db), st: st, ev: ev}
	switch p := payload.(type) {
	case *events.TaskCreated:
		exists, err := c.taskExists(p.TaskID)
		if err != nil || !exists {
			return err
		}
		return c.invalid("task %s exists already", p.TaskID)
	case *events.AgentRegistered:
		exists, err := c.taskExists(p.TaskID)
		if err != nil {
			return err
		}
		if !exists {
			return c.invalid("task %s does not exist (no task.created before it)", p.TaskID)
		}
		if _, known, err := c.noteCap(p.TaskID, p.Agent); err != nil || known {
			if err != nil {
				return err
			}
			return c.invalid("agent %s is registered in task %s already", p.Agent, p.TaskID)
		}
		if p.ParentAgent == "" {
			return nil
		}
		_, err = c.registered(p.TaskID, p.ParentAgent)
		return err
	case *events.AgentReattached:
		if _, err := c.registered(p.TaskID, p.Agent); err != nil {
			return err
		}
		c.forget(p.TaskID, p.Agent) // its budget, so its cap, may change
		return nil
	case *events.NoteWritten:
		return c.note(p.TaskID, p.Agent, p.Path, p.Text, p.By, false)
	case *events.NoteAppended:
		return c.note(p.TaskID, p.Agent, p.Path, p.Text, p.By, true)
	case *events.HistoryEntryRecorded:
		_, err := c.registered(p.TaskID, p.Agent)
		return err
	case *events.HistoryBranchChanged:
		_, err := c.registered(p.TaskID, p.Agent)
		return err
	case *events.ToolCalled:
		_, err := c.registered(p.TaskID, p.Agent)
		return err
	case *events.TaskRetentionSet:
		exists, err := c.taskExists(p.TaskID)
		if err != nil || exists {
			return err
		}
		return c.invalid("task %s does not exist", p.TaskID)
	case *events.EventErased, *events.TaskErased:
		// The log's own rules check them (eventlog): a tombstone names
		// nothing, and an erasure's task has no rows left to check once its
		// events are tombstones.
		return nil
	}
	if ref, ok := lifecycleRef(payload); ok {
		_, err := c.registered(ref.TaskID, ref.Agent)
		return err
	}
	return fmt.Errorf("projections: no import check for %s", ev.Type)
}

// importChecker checks one imported event.
type importChecker struct {
	ctx context.Context
	q   projectionsdb.Querier
	st  *txState // the transaction's
	ev  events.Event
}

func (c importChecker) invalid(format string, args ...any) error {
	return events.Broken(c.ev, format, args...)
}

// noteCapKey names a registered agent in txState.caps.
type noteCapKey struct{ taskID, agent string }

// noteCap returns the note cap of a registered agent and whether it is
// registered. Agents are never unregistered, so the transaction's state
// keeps the cap of one that is until forget.
func (c importChecker) noteCap(taskID, agent string) (int64, bool, error) {
	k := noteCapKey{taskID, agent}
	if n, ok := c.st.caps[k]; ok {
		return n, true, nil
	}
	row, err := c.q.GetAgent(c.ctx, projectionsdb.GetAgentParams{TaskID: taskID, Agent: agent})
	if errors.Is(err, sql.ErrNoRows) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	a, err := agentFrom(row)
	if err != nil {
		return 0, false, err
	}
	n := min(a.Budget.NotesMaxFileBytes, events.MaxNoteBytes) // the tools' rule
	if c.st.caps == nil {
		c.st.caps = map[noteCapKey]int64{}
	}
	c.st.caps[k] = n
	return n, true, nil
}

func (c importChecker) forget(taskID, agent string) { delete(c.st.caps, noteCapKey{taskID, agent}) }

// registered returns the note cap of an agent that must be registered.
func (c importChecker) registered(taskID, agent string) (int64, error) {
	n, ok, err := c.noteCap(taskID, agent)
	if err != nil || ok {
		return n, err
	}
	exists, err := c.taskExists(taskID)
	if err != nil {
		return 0, err
	}
	if !exists {
		return 0, c.invalid("task %s does not exist (no task.created before it)", taskID)
	}
	return 0, c.invalid("agent %s is not registered in task %s", agent, taskID)
}

func (c importChecker) taskExists(taskID string) (bool, error) {
	_, err := c.q.GetTask(c.ctx, taskID)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, err
}

// note checks that a note write or append has a registered owner and
// writer and leaves a note within its owner's cap, whoever writes.
func (c importChecker) note(taskID, agent, path, text, by string, appendMode bool) error {
	limit, err := c.registered(taskID, agent)
	if err != nil {
		return err
	}
	if by != agent {
		if _, err = c.registered(taskID, by); err != nil {
			return err
		}
	}
	size := int64(len(text))
	if appendMode {
		before, err := noteSizeNow(c.ctx, c.q, c.st, noteKey{taskID, agent, path})
		if err != nil {
			return err
		}
		size += before
	}
	if size > limit {
		return c.invalid("%s would hold %d bytes; the notes of %s hold at most %d", address.Full(agent, path), size, agent, limit)
	}
	return nil
}

// noteSizeNow returns the size of a note as the transaction sees it with
// its deferred changes, or 0 if there is none. A size read from the table
// is kept in the transaction's state, where the applier looks first.
func noteSizeNow(ctx context.Context, q projectionsdb.Querier, st *txState, mk noteKey) (int64, error) {
	if pn := st.pending; pn != nil {
		if p := pn.notes[mk]; p != nil {
			return p.now.row.Bytes, nil
		}
	}
	n, err := noteBefore(ctx, q, st, mk)
	if err != nil {
		return 0, err
	}
	st.rememberNote(mk, n)
	return n.row.Bytes, nil
}
