package memory

import (
	"context"
	"math"

	"github.com/memoryd/memoryd/internal/projections"
)

// TasksDefaultLimit and TasksMaxLimit bound a task listing.
const (
	TasksDefaultLimit = 50
	TasksMaxLimit     = 500
)

// TaskList is a page of tasks, newest activity first, as GET /v1/tasks and
// the tasks verb answer. NextBefore is nil on the last page.
type TaskList struct {
	Tasks      []TaskView `json:"tasks"`
	NextBefore *int64     `json:"next_before"`
}

// TaskView is one task of a TaskList. Its last activity is its latest
// event, audit events included.
type TaskView struct {
	TaskID               string          `json:"task_id"`
	CreatedPosition      int64           `json:"created_position"`
	CreatedAt            string          `json:"created_at"`
	LastActivityPosition int64           `json:"last_activity_position"`
	LastActivityAt       string          `json:"last_activity_at"`
	Agents               []TaskAgentView `json:"agents"`
}

// TaskAgentView is an agent of a TaskView, with where it is attached from,
// its current window and phase, and the latest event of its own stream.
type TaskAgentView struct {
	Agent                string  `json:"agent"`
	ParentAgent          *string `json:"parent_agent"` // null for /root
	SessionKey           string  `json:"session_key"`
	SessionID            string  `json:"session_id"`
	SessionFile          string  `json:"session_file"`
	RegisteredPosition   int64   `json:"registered_position"`
	RegisteredAt         string  `json:"registered_at"`
	WindowID             string  `json:"window_id"`
	Phase                string  `json:"phase"`
	LastActivityPosition int64   `json:"last_activity_position"`
	LastActivityAt       string  `json:"last_activity_at"`
	// FirstRequest is what a user recognises the agent by, the first
	// message typed to it on its current branch, if any.
	FirstRequest *TaskRequestView `json:"first_request"`
}

// FirstRequestMaxChars bounds the text of a TaskRequestView.
const FirstRequestMaxChars = 200

// TaskRequestView is an agent's first request, with its history item's
// entry, the position that recorded it, and its text cut to
// FirstRequestMaxChars.
type TaskRequestView struct {
	EntryID  string `json:"entry_id"`
	Position int64  `json:"position"`
	Text     string `json:"text"`
	Cut      bool   `json:"cut"`
}

// Tasks lists at most limit tasks whose latest event is before the
// position before, newest activity first, from one snapshot.
func (s *Service) Tasks(ctx context.Context, before int64, limit int) (TaskList, error) {
	switch {
	case before < 0:
		return TaskList{}, invalidf("before must be a position (an integer of 1 or more)")
	case limit < 1:
		return TaskList{}, invalidf("limit must be an integer of 1 or more")
	case before == 0: // no bound
		before = math.MaxInt64
	}
	limit = min(limit, TasksMaxLimit) // clamped, as GET /v1/events clamps
	var tasks []projections.TaskActivity
	var more bool
	requests := map[[3]string]string{} // text by task, agent and entry
	err := s.read(ctx, func(r *projections.Reader) error {
		var err error
		if tasks, more, err = r.TasksByActivity(ctx, before, limit); err != nil {
			return err
		}
		for _, t := range tasks {
			for _, a := range t.Agents {
				if a.FirstRequestEntry == "" {
					continue
				}
				text, _, err := r.ItemText(ctx, t.TaskID, a.Agent, a.FirstRequestEntry)
				if err != nil {
					return err
				}
				requests[[3]string{t.TaskID, a.Agent, a.FirstRequestEntry}] = text
			}
		}
		return nil
	})
	if err != nil {
		return TaskList{}, err
	}
	out := TaskList{Tasks: make([]TaskView, len(tasks))}
	for i, t := range tasks {
		v := TaskView{TaskID: t.TaskID, CreatedPosition: t.Created.Position, CreatedAt: t.Created.At,
			LastActivityPosition: t.Last.Position, LastActivityAt: t.Last.At, Agents: make([]TaskAgentView, len(t.Agents))}
		for j, a := range t.Agents {
			av := TaskAgentView{Agent: a.Agent, SessionKey: a.SessionKey, SessionID: a.SessionID, SessionFile: a.SessionFile,
				RegisteredPosition: a.Registered.Position, RegisteredAt: a.Registered.At,
				WindowID: a.State.WindowID, Phase: a.State.Phase(),
				LastActivityPosition: a.Last.Position, LastActivityAt: a.Last.At}
			if a.ParentAgent != "" {
				av.ParentAgent = ptr(a.ParentAgent)
			}
			if a.FirstRequestEntry != "" {
				whole := requests[[3]string{t.TaskID, a.Agent, a.FirstRequestEntry}]
				text := truncate(whole, FirstRequestMaxChars)
				av.FirstRequest = &TaskRequestView{EntryID: a.FirstRequestEntry, Position: a.FirstRequestPosition, Text: text, Cut: text != whole}
			}
			v.Agents[j] = av
		}
		out.Tasks[i] = v
	}
	if more && len(tasks) > 0 {
		out.NextBefore = ptr(tasks[len(tasks)-1].Last.Position)
	}
	return out, nil
}
