package inspector

import (
	"context"
	"fmt"
	"strings"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/memory"
)

// timeline is an agent's history along the log, folded from its stream
// by the fence's own Apply, as the projection folds it.
type timeline struct {
	TaskID, Agent string
	First, Last   int64 // positions of the stream's first and last events
	Budget        events.Budget
	Windows       []windowBand
	Rollovers     []rolloverMark
	Steps         []step
	Calls         []auditCall
	Usage         []usagePoint
	State         fence.State
	Events        int
	// The agent's session as its registration and re-attaches left it.
	SessionKey, SessionID, SessionFile string
}

// windowBand is one context window, from the event that opened it to the
// last event before the next one.
type windowBand struct {
	ID       string
	From, To int64
	Current  bool
}

// rolloverMark is one rollover, prepared and then committed or failed.
type rolloverMark struct {
	Position         int64
	Reason           string
	WindowID         string
	PreviousWindowID string
	Bootstrap        string
	Committed        int64 // position of its commit, 0 if none
	Failed           []int64
}

// step is one lifecycle event and the phase it left the agent in.
type step struct {
	Position   int64
	Type       string
	Summary    string
	Phase      string
	WindowID   string
	RecordedAt string
}

// auditCall is one audited tool call of the agent.
type auditCall struct {
	Position     int64
	Tool         string
	CallID       string
	Outcome      string
	ReadPosition int64
}

// usagePoint is one usage report.
type usagePoint struct {
	Position int64
	Used     int64
}

// streamPage is how many events readTimeline reads at once.
const streamPage = 1000

// readTimeline folds the agent's stream up to position until, or its end
// for 0. It reads only the log, which as of a past position holds what a
// copy would.
func readTimeline(ctx context.Context, svc *memory.Service, taskID, agent string, until int64) (*timeline, error) {
	tl := &timeline{TaskID: taskID, Agent: agent, State: fence.Initial()}
	first, last, n, err := svc.StreamBounds(ctx, taskID, agent, until)
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, errNotFound("no agent %s in task %s at this position", agent, taskID)
	}
	tl.First, tl.Last, tl.Events = first, last, int(n)
	tl.Windows = append(tl.Windows, windowBand{ID: tl.State.WindowID, From: first})
	// Only the events the fence folds. Notes, history and audit events
	// change neither the fence nor the windows, and readCalls reads the
	// audited calls apart.
	after := int64(0)
	for {
		page, err := svc.FencedStreamEvents(ctx, taskID, agent, after, last, streamPage)
		if err != nil {
			return nil, err
		}
		for _, ev := range page {
			if err := tl.add(ev); err != nil {
				return nil, err
			}
		}
		if len(page) < streamPage {
			break
		}
		after = page[len(page)-1].Position
	}
	n1 := len(tl.Windows)
	tl.Windows[n1-1].To, tl.Windows[n1-1].Current = tl.Last, true
	return tl, nil
}

// add folds ev into the timeline.
func (tl *timeline) add(ev events.Event) error {
	payload, err := events.Decode(ev)
	if err != nil {
		return fmt.Errorf("event %d: %w", ev.Position, err)
	}
	if e, ok := payload.(*events.EventErased); ok { // its registration, at every position
		return errNotFound("task %s was erased, at position %d", tl.TaskID, e.ErasedBy)
	}
	before := tl.State
	tl.State = fence.Apply(tl.State, payload)
	if tl.State.WindowID != before.WindowID {
		tl.Windows[len(tl.Windows)-1].To = ev.Position - 1
		tl.Windows = append(tl.Windows, windowBand{ID: tl.State.WindowID, From: ev.Position})
	}
	st := step{Position: ev.Position, Type: ev.Type, Phase: tl.State.Phase(), WindowID: tl.State.WindowID, RecordedAt: ev.RecordedAt}
	switch p := payload.(type) {
	case *events.AgentRegistered:
		tl.Budget = p.Budget
		tl.SessionKey, tl.SessionID, tl.SessionFile = p.SessionKey, p.SessionID, p.SessionFile
		st.Summary = "registered" + ifSet(" under ", p.ParentAgent)
	case *events.AgentReattached:
		tl.Budget = p.Budget
		tl.SessionID, tl.SessionFile = p.SessionID, p.SessionFile
		st.Summary = "re-attached"
	case *events.UsageReported:
		if p.TokensUsed != nil {
			tl.Usage = append(tl.Usage, usagePoint{Position: ev.Position, Used: *p.TokensUsed})
		}
		if p.Due == "" {
			return nil // usage without a threshold crossed is a point on the plot, not a step
		}
		st.Summary = "due: " + p.Due
	case *events.ControlDelivered:
		st.Summary = p.Kind + " delivered in " + p.WindowID
	case *events.FenceArmed:
		st.Summary = p.Kind + " armed in " + p.WindowID
	case *events.ClaimTaken:
		st.Summary = "claim taken by " + p.ToolName + ifSet(" call ", p.CallID)
	case *events.ClaimReleased:
		st.Summary = "claim released" + ifSet(" by call ", p.CallID)
	case *events.CallBlocked:
		st.Summary = p.ToolName + " blocked: " + p.Reason
	case *events.CheckpointSaved:
		st.Summary = "checkpoint saved to " + p.Path + ifSet(" by call ", p.CallID)
	case *events.NewContextRequested:
		st.Summary = "new_context requested" + ifSet(" by call ", p.CallID)
	case *events.UserInputReceived:
		st.Summary = "user input"
	case *events.RolloverPrepared:
		tl.Rollovers = append(tl.Rollovers, rolloverMark{Position: ev.Position, Reason: p.Reason, WindowID: p.WindowID,
			PreviousWindowID: p.PreviousWindowID, Bootstrap: p.Bootstrap})
		st.Summary = "rollover prepared (" + p.Reason + ") " + p.PreviousWindowID + " → " + p.WindowID
	case *events.RolloverCommitted:
		if n := len(tl.Rollovers); n > 0 && tl.Rollovers[n-1].WindowID == p.WindowID {
			tl.Rollovers[n-1].Committed = ev.Position
		}
		st.Summary = "rollover committed: " + p.WindowID + " is live"
	case *events.RolloverFailed:
		if n := len(tl.Rollovers); n > 0 {
			tl.Rollovers[n-1].Failed = append(tl.Rollovers[n-1].Failed, ev.Position)
		}
		st.Summary = "rollover failed" + map[bool]string{true: " (aborted)", false: ""}[p.Aborted] + ifSet(": ", p.Error)
	case *events.ManualRequested:
		st.Summary = "manual checkpoint requested (" + p.Phase + ")"
	case *events.ManualPhaseChanged:
		st.Summary = "manual checkpoint " + p.Phase
	case *events.ManualCancelled:
		st.Summary = "manual checkpoint cancelled"
	case *events.FenceLifted:
		st.Summary = "fence lifted in " + p.WindowID + " (" + strings.ReplaceAll(p.Reason, "_", " ") + ")"
	default:
		return nil // notes and history have their own pages, and readCalls reads calls
	}
	tl.Steps = append(tl.Steps, st)
	return nil
}

// readCalls returns the agent's last audited calls before position before,
// in the order they were made, and the position of the first event listed
// when earlier ones are left out. It lists whole events (each holds at most
// events.MaxCallRecords calls), as many as hold n calls or fewer, and one
// event at least.
func (tl *timeline) readCalls(ctx context.Context, svc *memory.Service, before int64, n int) ([]auditCall, int64, error) {
	if before <= 0 || before > tl.Last { // up to tl.Last
		before = tl.Last + 1
	}
	page, err := svc.StreamCalls(ctx, tl.TaskID, tl.Agent, before, n+1) // newest first; each holds one call at least
	if err != nil {
		return nil, 0, err
	}
	var batches [][]auditCall
	total, earlier := 0, int64(0)
	for i, ev := range page {
		payload, err := events.Decode(ev)
		if err != nil {
			return nil, 0, fmt.Errorf("event %d: %w", ev.Position, err)
		}
		p, ok := payload.(*events.ToolCalled)
		if !ok {
			return nil, 0, fmt.Errorf("event %d: %s is not an audited call", ev.Position, ev.Type)
		}
		if total > 0 && total+len(p.Calls) > n {
			earlier = page[i-1].Position
			break
		}
		batch := make([]auditCall, len(p.Calls))
		for j, c := range p.Calls {
			batch[j] = auditCall{Position: ev.Position, Tool: c.Tool, CallID: c.CallID, Outcome: c.Outcome, ReadPosition: c.ReadPosition}
		}
		batches = append(batches, batch)
		total += len(batch)
	}
	calls := make([]auditCall, 0, total)
	for i := len(batches) - 1; i >= 0; i-- {
		calls = append(calls, batches[i]...)
	}
	return calls, earlier, nil
}

// ifSet returns prefix and s, or "" when s is empty.
func ifSet(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// thresholds are the used-token levels the fence acts at, for a window of
// Window tokens. A zero level is off.
type thresholds struct {
	Window, Reminder, Fallback, Hard int64
}

// thresholdsOf returns the thresholds for a window of w tokens under b.
func thresholdsOf(w int64, b events.Budget) thresholds {
	if w <= 0 {
		return thresholds{Hard: b.HardRolloverUsedTokens}
	}
	return thresholds{Window: w, Reminder: w - fence.ReminderThreshold(w, b), Fallback: w - fence.FallbackThreshold(w, b),
		Hard: b.HardRolloverUsedTokens}
}
