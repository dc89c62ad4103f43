package inspector

import (
	"context"
	"net/http"
	"path/filepath"
	"sort"
	"strings"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/memory"
)

// tasksData is what the start page shows.
type tasksData struct {
	Tasks []memory.TaskView
	More  bool
}

// tasksPage shows the start page, the tasks with the most recent activity
// with their agents.
func (in *Inspector) tasksPage(w http.ResponseWriter, r *http.Request) {
	at, err := atOf(r)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	list, err := tasksAt(r.Context(), in.cfg.Service, at)
	if err != nil {
		in.fail(w, r, err)
		return
	}
	in.renderAt(w, r, "tasks", "Tasks", at, tasksData{Tasks: list.Tasks, More: list.NextBefore != nil})
}

// rootAgent returns a task's /root agent, or nil if the listing lacks it.
func rootAgent(t memory.TaskView) *memory.TaskAgentView {
	for i := range t.Agents {
		if t.Agents[i].Agent == "/root" {
			return &t.Agents[i]
		}
	}
	return nil
}

// sessionPlace returns the folder and file name of a session file's path.
// Pi names the folder after the working folder, which a user recognises.
func sessionPlace(file string) string {
	if file == "" {
		return ""
	}
	dir := filepath.Base(filepath.Dir(file))
	if dir == "." || dir == string(filepath.Separator) {
		return filepath.Base(file)
	}
	return dir + string(filepath.Separator) + filepath.Base(file)
}

// short returns text on one line, cut to n characters with an ellipsis.
func short(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if r := []rune(text); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return text
}

// tasksAt returns the first page of memory.Tasks as of position at, or
// now for 0. TestTasksAtIsACopysTasks holds it to Tasks on a copy.
func tasksAt(ctx context.Context, svc *memory.Service, at int64) (memory.TaskList, error) {
	last, err := svc.LastPosition(ctx)
	if err != nil {
		return memory.TaskList{}, err
	}
	if at <= 0 || at >= last {
		return svc.Tasks(ctx, 0, memory.TasksMaxLimit)
	}
	// A past position needs no copy. The tasks and agents then are the
	// live ones registered by then, and what changed later is folded from
	// each agent's stream up to at, as the timeline folds it.
	var tasks []memory.TaskView
	for before := int64(0); ; {
		page, err := svc.Tasks(ctx, before, memory.TasksMaxLimit)
		if err != nil {
			return memory.TaskList{}, err
		}
		for _, t := range page.Tasks {
			if t.CreatedPosition > at {
				continue
			}
			if err := taskAt(ctx, svc, &t, at); err != nil {
				return memory.TaskList{}, err
			}
			tasks = append(tasks, t)
		}
		if page.NextBefore == nil {
			break
		}
		before = *page.NextBefore
	}
	sort.SliceStable(tasks, func(i, j int) bool { return tasks[i].LastActivityPosition > tasks[j].LastActivityPosition })
	out := memory.TaskList{Tasks: tasks}
	if len(tasks) > memory.TasksMaxLimit {
		out.Tasks = tasks[:memory.TasksMaxLimit]
		out.NextBefore = &tasks[memory.TasksMaxLimit-1].LastActivityPosition
	}
	if out.Tasks == nil {
		out.Tasks = []memory.TaskView{}
	}
	return out, nil
}

// taskAt turns t, a task as it is now, into the task as of position at.
// The task must have been created by then.
func taskAt(ctx context.Context, svc *memory.Service, t *memory.TaskView, at int64) error {
	agents := t.Agents[:0:0]
	t.LastActivityPosition, t.LastActivityAt = 0, ""
	for _, a := range t.Agents {
		if a.RegisteredPosition > at {
			// Not there yet, but its stream may be, as /root's holds the
			// task's creation.
			_, last, _, err := svc.StreamBounds(ctx, t.TaskID, a.Agent, at)
			if err != nil {
				return err
			}
			if last > t.LastActivityPosition {
				if t.LastActivityAt, err = recordedAt(ctx, svc, t.TaskID, last); err != nil {
					return err
				}
				t.LastActivityPosition = last
			}
			continue
		}
		tl, err := readTimeline(ctx, svc, t.TaskID, a.Agent, at)
		if err != nil {
			return err
		}
		a.SessionKey, a.SessionID, a.SessionFile = tl.SessionKey, tl.SessionID, tl.SessionFile
		a.WindowID, a.Phase = tl.State.WindowID, tl.State.Phase()
		if a.FirstRequest != nil {
			// The first request's entry is on the branch as of at once the
			// branch change after its recording is.
			placed, err := svc.BranchChangeFrom(ctx, t.TaskID, a.Agent, a.FirstRequest.Position)
			if err != nil {
				return err
			}
			if placed == 0 || placed > at {
				a.FirstRequest = nil
			}
		}
		a.LastActivityPosition = tl.Last
		if a.LastActivityAt, err = recordedAt(ctx, svc, t.TaskID, tl.Last); err != nil {
			return err
		}
		if a.LastActivityPosition > t.LastActivityPosition {
			t.LastActivityPosition, t.LastActivityAt = a.LastActivityPosition, a.LastActivityAt
		}
		agents = append(agents, a)
	}
	t.Agents = agents
	return nil
}

// recordedAt returns the time the task's event at position p was recorded.
func recordedAt(ctx context.Context, svc *memory.Service, taskID string, p int64) (string, error) {
	page, err := svc.Events(ctx, p-1, taskID, 1)
	if err != nil {
		return "", err
	}
	if len(page) == 0 || page[0].Position != p {
		return "", errNotFound("no event at position %d in task %s", p, taskID)
	}
	return page[0].RecordedAt, nil
}

// agentAt refuses, as not found, an agent not registered to its task by
// position at, or now for 0.
func agentAt(ctx context.Context, svc *memory.Service, taskID, agent string, at int64) error {
	if at <= 0 {
		_, err := svc.State(ctx, memory.CallContext{TaskID: taskID, Agent: agent})
		return err
	}
	// The registration is among the first two events the fence folds in
	// the agent's stream, as /root's first is the task's creation.
	first, err := svc.FencedStreamEvents(ctx, taskID, agent, 0, at, 2)
	if err != nil {
		return err
	}
	for _, ev := range first {
		if ev.Type == events.TypeAgentRegistered {
			return nil
		}
	}
	return errNotFound("no agent %s in task %s at this position", agent, taskID)
}
