package projections

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/fence"
)

// TestTasksByActivity: tasks come newest activity first by position, each
// with its agents in registration order, their states and the latest
// event of their own streams; paging stops where more says; a rebuild of
// the projections lists the same.
func TestTasksByActivity(t *testing.T) {
	ctx := context.Background()
	store, err := eventlog.Open(ctx, filepath.Join(t.TempDir(), "memory.db"), eventlog.Options{Projector: Projector{}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	add := func(stream, typ string, data any) {
		t.Helper()
		err := store.Update(ctx, "", func(tx *eventlog.Tx) error {
			_, err := tx.Append(ctx, stream, eventlog.AnyVersion, events.Pending{Type: typ, Data: data})
			return err
		})
		if err != nil {
			t.Fatalf("append %s to %s: %v", typ, stream, err)
		}
	}
	register := func(task, agent, parent, key string) {
		t.Helper()
		add(events.Stream(task, agent), events.TypeAgentRegistered, events.AgentRegistered{TaskID: task, Agent: agent,
			ParentAgent: parent, SessionKey: key, Budget: events.Budget{MaxToolOutputChars: 12000}})
	}
	add("t1/root", events.TypeTaskCreated, events.TaskCreated{TaskID: "t1", SessionKey: "k1"}) // 1
	register("t1", "/root", "", "k1")                                                          // 2
	add("t2/root", events.TypeTaskCreated, events.TaskCreated{TaskID: "t2", SessionKey: "k2"}) // 3
	register("t2", "/root", "", "k2")                                                          // 4
	register("t1", "/root/child", "/root", "k3")                                               // 5
	add("t3/root", events.TypeTaskCreated, events.TaskCreated{TaskID: "t3", SessionKey: "k4"}) // 6
	register("t3", "/root", "", "k4")                                                          // 7
	add("t1/root/child", events.TypeManualRequested, events.ManualRequested{                   // 8
		AgentRef: events.AgentRef{TaskID: "t1", Agent: "/root/child"}, RequestID: "m1", WindowID: "w1", Phase: fence.PhaseAwaiting})

	list := func(before int64, limit int) ([]TaskActivity, bool) {
		t.Helper()
		tasks, more, err := NewReader(store.Reader()).TasksByActivity(ctx, before, limit)
		if err != nil {
			t.Fatal(err)
		}
		return tasks, more
	}
	const all = int64(1) << 62
	tasks, more := list(all, 10)
	var order []string
	for _, task := range tasks {
		order = append(order, task.TaskID)
	}
	if !reflect.DeepEqual(order, []string{"t1", "t3", "t2"}) || more {
		t.Fatalf("order %v (more %v), want t1 t3 t2", order, more)
	}
	t1 := tasks[0]
	if t1.Created.Position != 1 || t1.Last.Position != 8 || t1.Created.At == "" || t1.Last.At == "" || len(t1.Agents) != 2 {
		t.Fatalf("t1 %+v", t1)
	}
	root, child := t1.Agents[0], t1.Agents[1]
	if root.Agent != "/root" || root.ParentAgent != "" || root.SessionKey != "k1" || root.Registered.Position != 2 ||
		root.Last.Position != 2 || root.State.Phase() != fence.Ready || root.State.WindowID != "w1" {
		t.Errorf("root %+v", root)
	}
	if child.Agent != "/root/child" || child.ParentAgent != "/root" || child.SessionKey != "k3" || child.Registered.Position != 5 ||
		child.Last.Position != 8 || child.State.Phase() != fence.ManualAwaiting {
		t.Errorf("child %+v", child)
	}

	// Pages of one, each before the last one's latest event.
	var paged []string
	before := all
	for range 4 {
		page, more := list(before, 1)
		if len(page) != 1 {
			t.Fatalf("page before %d: %d tasks", before, len(page))
		}
		paged = append(paged, page[0].TaskID)
		if !more {
			break
		}
		before = page[0].Last.Position
	}
	if !reflect.DeepEqual(paged, order) {
		t.Errorf("paged %v, want %v", paged, order)
	}
	if page, more := list(7, 10); len(page) != 1 || page[0].TaskID != "t2" || more {
		t.Errorf("before 7: %+v more %v, want t2 alone", page, more)
	}

	// A rebuild from the log lists the same.
	if err := store.Update(ctx, "", func(tx *eventlog.Tx) error { return rebuild(ctx, tx) }); err != nil {
		t.Fatal(err)
	}
	if again, _ := list(all, 10); !reflect.DeepEqual(again, tasks) {
		t.Errorf("after a rebuild:\n%+v\nwant\n%+v", again, tasks)
	}
}
