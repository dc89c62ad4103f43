package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/memory"
)

// backwardClock is a clock that goes back one second at every reading, so
// that a listing ordered by time instead of position comes out reversed.
type backwardClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *backwardClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(-time.Second)
	return c.t
}

// getTasks sends GET /v1/tasks with query and decodes the answer strictly.
func (ts *testServer) getTasks(t *testing.T, query string) memory.TaskList {
	t.Helper()
	st, body := ts.do(t, "GET", "/v1/tasks"+query, "")
	if st != http.StatusOK {
		t.Fatalf("tasks%s: %d %s", query, st, body)
	}
	var list memory.TaskList
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&list); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	if list.Tasks == nil {
		t.Fatalf("tasks%s: tasks is null, want a list: %s", query, body)
	}
	return list
}

func TestTasksList(t *testing.T) {
	clock := &backwardClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	ts, _ := startServer(t, serverOptions{open: memory.OpenOptions{Now: clock.Now}})

	if l := ts.getTasks(t, ""); len(l.Tasks) != 0 || l.NextBefore != nil {
		t.Fatalf("empty database: %+v", l)
	}

	a := ts.attach(t, "/sessions/a.jsonl")
	b := ts.attach(t, "/sessions/b.jsonl")
	var child attachResponse
	ts.mustJSON(t, "POST", "/v1/sessions/attach", fmt.Sprintf(
		`{"session_key":"/sessions/a-review.jsonl","session_id":"s-review","task":{"task_id":%q,"parent_agent":"/root","agent_name":"reviewer"}}`,
		a.TaskID), &child)
	// b acts after a's child joined: b is the newest task.
	if st, body := ts.tool(t, "notes_write_file", b, `{"path":"b.md","text":"b"}`); st != 200 {
		t.Fatalf("write: %d %s", st, body)
	}

	l := ts.getTasks(t, "")
	if len(l.Tasks) != 2 || l.Tasks[0].TaskID != b.TaskID || l.Tasks[1].TaskID != a.TaskID || l.NextBefore != nil {
		t.Fatalf("tasks %+v, want b then a and no next page", l)
	}

	// a's child moves its fence: a becomes the newest task.
	cc := memory.CallContext{TaskID: a.TaskID, Agent: child.Agent}
	ctx, _ := json.Marshal(cc)
	if st, body := ts.do(t, "POST", "/v1/lifecycle/manual", fmt.Sprintf(`{"context":%s,"action":"request","request_id":"m1"}`, ctx)); st != 200 {
		t.Fatalf("manual request: %d %s", st, body)
	}
	l = ts.getTasks(t, "")
	if len(l.Tasks) != 2 || l.Tasks[0].TaskID != a.TaskID || l.Tasks[1].TaskID != b.TaskID {
		t.Fatalf("after the child's request: %+v, want a then b", l)
	}

	// Every position and time is the one of the log's events.
	var evs struct {
		Events []events.Event `json:"events"`
	}
	ts.mustJSON(t, "GET", "/v1/events", "", &evs)
	at := map[int64]string{}
	lastOf := map[string]int64{} // by task, and by stream
	for _, ev := range evs.Events {
		at[ev.Position] = ev.RecordedAt
		lastOf[ev.TaskID()] = ev.Position
		lastOf[ev.Stream] = ev.Position
	}
	for _, task := range l.Tasks {
		if want := lastOf[task.TaskID]; task.LastActivityPosition != want || task.LastActivityAt != at[want] {
			t.Errorf("task %s last activity %d %s, want %d %s", task.TaskID, task.LastActivityPosition, task.LastActivityAt, want, at[want])
		}
		if ev := evs.Events[task.CreatedPosition-1]; ev.Type != events.TypeTaskCreated || ev.TaskID() != task.TaskID || task.CreatedAt != ev.RecordedAt {
			t.Errorf("task %s created at %d %s: event %+v", task.TaskID, task.CreatedPosition, task.CreatedAt, ev)
		}
		for _, ag := range task.Agents {
			stream := events.Stream(task.TaskID, ag.Agent)
			if want := lastOf[stream]; ag.LastActivityPosition != want || ag.LastActivityAt != at[want] {
				t.Errorf("agent %s last activity %d %s, want %d %s", stream, ag.LastActivityPosition, ag.LastActivityAt, want, at[want])
			}
			if ev := evs.Events[ag.RegisteredPosition-1]; ev.Type != events.TypeAgentRegistered || ev.Stream != stream || ag.RegisteredAt != ev.RecordedAt {
				t.Errorf("agent %s registered at %d %s: event %+v", stream, ag.RegisteredPosition, ag.RegisteredAt, ev)
			}
			// Window and phase are those GET /v1/state shows.
			var st memory.StateView
			ts.mustJSON(t, "GET", "/v1/state?task_id="+task.TaskID+"&agent="+ag.Agent, "", &st)
			if ag.WindowID != st.WindowID || ag.Phase != st.Phase {
				t.Errorf("agent %s: window %s phase %s; GET /v1/state says %s %s", stream, ag.WindowID, ag.Phase, st.WindowID, st.Phase)
			}
		}
	}

	ta := l.Tasks[0]
	if len(ta.Agents) != 2 {
		t.Fatalf("task a agents %+v, want /root and its child", ta.Agents)
	}
	root, rev := ta.Agents[0], ta.Agents[1]
	if root.Agent != "/root" || root.ParentAgent != nil || root.SessionKey != "/sessions/a.jsonl" || root.Phase != fence.Ready || root.WindowID != "w1" {
		t.Errorf("root %+v", root)
	}
	if rev.Agent != "/root/reviewer" || rev.ParentAgent == nil || *rev.ParentAgent != "/root" || rev.SessionKey != "/sessions/a-review.jsonl" ||
		rev.SessionID != "s-review" || rev.Phase != fence.ManualAwaiting || rev.WindowID != "w1" {
		t.Errorf("child %+v", rev)
	}
	if ta.LastActivityPosition != rev.LastActivityPosition || root.LastActivityPosition >= rev.LastActivityPosition {
		t.Errorf("task a last activity %d, root %d, child %d: want the child's", ta.LastActivityPosition, root.LastActivityPosition, rev.LastActivityPosition)
	}
	// The clock ran backwards: ordered by time, b would come first.
	if ta.LastActivityAt >= l.Tasks[1].LastActivityAt {
		t.Fatalf("the test's clock did not run backwards: %s, %s", ta.LastActivityAt, l.Tasks[1].LastActivityAt)
	}

	// Paging: one task a page, following next_before.
	p1 := ts.getTasks(t, "?limit=1")
	if len(p1.Tasks) != 1 || p1.Tasks[0].TaskID != a.TaskID || p1.NextBefore == nil || *p1.NextBefore != ta.LastActivityPosition {
		t.Fatalf("page 1: %+v", p1)
	}
	p2 := ts.getTasks(t, fmt.Sprintf("?limit=1&before=%d", *p1.NextBefore))
	if len(p2.Tasks) != 1 || p2.Tasks[0].TaskID != b.TaskID || p2.NextBefore != nil {
		t.Fatalf("page 2: %+v", p2)
	}
	if p := ts.getTasks(t, fmt.Sprintf("?before=%d", l.Tasks[1].LastActivityPosition)); len(p.Tasks) != 0 || p.NextBefore != nil {
		t.Errorf("before b's last activity: %+v", p)
	}
	if p := ts.getTasks(t, "?limit=100000"); len(p.Tasks) != 2 {
		t.Errorf("limit over the max: %+v", p)
	}

	for _, q := range []string{"?before=0", "?before=-1", "?before=x", "?before=1.5", "?limit=0", "?limit=-5", "?limit=ten"} {
		st, h, body := ts.send(t, ts.request(t, "GET", "/v1/tasks"+q, ""))
		checkError(t, "tasks"+q, st, h, body, http.StatusBadRequest, "invalid_argument")
	}
	req := ts.request(t, "GET", "/v1/tasks", "")
	req.Header.Del("Authorization")
	st, h, body := ts.send(t, req)
	checkError(t, "tasks without a token", st, h, body, http.StatusUnauthorized, "unauthenticated")
}
