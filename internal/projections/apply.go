package projections

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// apply updates the projections for ev in the write transaction whose
// state is st.
func apply(ctx context.Context, db eventlog.DBTX, st *txState, ev events.Event) error {
	if ev.Type == events.TypeToolCalled {
		return nil // the read audit changes no projection, so skip decoding it
	}
	payload, err := events.Decode(ev)
	if err != nil {
		return err
	}
	q := queriesOf(db)
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
		return applyNote(ctx, db, st, ev, noteChange{p.TaskID, p.Agent, p.Path, p.Text, p.By, p.CallID, p.RequestKey, false})
	case *events.NoteAppended:
		return applyNote(ctx, db, st, ev, noteChange{p.TaskID, p.Agent, p.Path, p.Text, p.By, p.CallID, p.RequestKey, true})
	case *events.HistoryEntryRecorded:
		return applyEntryRecorded(ctx, q, st, ev, p)
	case *events.HistoryBranchChanged:
		return applyBranchChanged(ctx, q, ev, p)
	case *events.EventErased:
		return nil // a tombstone projects nothing
	case *events.TaskErased:
		return applyTaskErased(ctx, db, st, p)
	case *events.TaskRetentionSet:
		return applyRetentionSet(ctx, q, p)
	}
	if ref, ok := lifecycleRef(payload); ok {
		return applyLifecycle(ctx, q, ev, ref, payload)
	}
	return fmt.Errorf("projections: no applier for %s", ev.Type)
}
