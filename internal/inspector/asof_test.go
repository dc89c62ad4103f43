package inspector

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
)

// The pages as of a past position P read the live log up to P instead of
// a whole copy of it: the tasks and notes pages fold its events, the
// history page reads a copy of the task's history alone. These tests
// hold each to what a whole copy of the log up to P answers, at every
// position of every scenario log (and of a log of interleaved note
// writes and appends by two agents of two tasks).

// asOfLogs are the memories the tests below walk: every scenario log,
// and notesMix.
func asOfLogs(t *testing.T) map[string]*memory.Service {
	t.Helper()
	paths, err := filepath.Glob(filepath.FromSlash("../forensics/testdata/logs/*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scenario logs (%v)", err)
	}
	out := map[string]*memory.Service{"notes-mix": notesMix(t)}
	for _, p := range paths {
		live := memorytest.Open(t, memory.OpenOptions{})
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		lr := forensics.NewLogReader(f)
		_, err = forensics.Import(context.Background(), live, lr.Next)
		f.Close()
		if err != nil {
			t.Fatal(lr.AtLine(err))
		}
		out[filepath.Base(p)] = live
	}
	return out
}

// notesMix is a memory of two tasks whose agents (a root and a sub-agent
// each) write and append notes, their own and under the same paths, each
// note five times (append, write, append, append, write), one root
// re-attaching from another session file half way.
func notesMix(t *testing.T) *memory.Service {
	t.Helper()
	ctx := context.Background()
	live := memorytest.Open(t, memory.OpenOptions{})
	var ccs []memory.CallContext
	for _, key := range []string{"/s/a.jsonl", "/s/b.jsonl"} {
		res, err := live.Attach(ctx, memory.AttachRequest{SessionKey: key}, "")
		if err != nil {
			t.Fatal(err)
		}
		ccs = append(ccs, memory.CallContext{TaskID: res.TaskID, Agent: res.Agent})
		sub, err := live.Attach(ctx, memory.AttachRequest{SessionKey: key + ".sub", Task: &memory.TaskRef{TaskID: res.TaskID, ParentAgent: res.Agent, AgentName: "sub"}}, "")
		if err != nil {
			t.Fatal(err)
		}
		ccs = append(ccs, memory.CallContext{TaskID: sub.TaskID, Agent: sub.Agent})
	}
	for i := range 60 {
		if i == 30 {
			if _, err := live.Attach(ctx, memory.AttachRequest{SessionKey: "/s/a.jsonl", SessionID: "second", SessionFile: "/f/a2.jsonl"}, ""); err != nil {
				t.Fatal(err)
			}
		}
		cc := ccs[i%len(ccs)]
		tool := []string{"notes_append_to_file", "notes_write_file", "notes_append_to_file", "notes_append_to_file", "notes_write_file"}[i/12]
		args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("n%d.md", i%3), "text": fmt.Sprintf("line %d é\n", i)})
		if _, err := live.CallTool(ctx, tool, cc, args, ""); err != nil {
			t.Fatal(err)
		}
	}
	return live
}

// eachPosition calls fn with a whole copy of live's log up to each
// position before its last, brought forward one event at a time.
func eachPosition(t *testing.T, live *memory.Service, fn func(at int64, whole *memory.Service)) {
	t.Helper()
	ctx := context.Background()
	last, err := live.LastPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	whole, cleanup, err := forensics.Scratch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	for at := int64(1); at < last; at++ {
		if _, err := forensics.ForwardLog(ctx, whole, live, at, nil); err != nil {
			t.Fatalf("copy up to %d: %v", at, err)
		}
		fn(at, whole)
		if t.Failed() {
			return
		}
	}
}

// TestTasksAtIsACopysTasks: the tasks page as of P (tasksAt, folded
// from the live log) lists what Tasks answers on a copy of the log up to
// P: the same tasks in the same order, the same agents with the same
// sessions, windows, phases and last events.
func TestTasksAtIsACopysTasks(t *testing.T) {
	ctx := context.Background()
	for name, live := range asOfLogs(t) {
		t.Run(name, func(t *testing.T) {
			eachPosition(t, live, func(at int64, whole *memory.Service) {
				got, err := tasksAt(ctx, live, at)
				if err != nil {
					t.Fatalf("at %d: %v", at, err)
				}
				want, err := whole.Tasks(ctx, 0, memory.TasksMaxLimit)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) {
					g, _ := json.Marshal(got)
					w, _ := json.Marshal(want)
					t.Errorf("at %d the tasks are\n%s\nwant (a copy's)\n%s", at, g, w)
				}
			})
		})
	}
}

// TestNotesAtIsACopysNotes: the notes page as of P (readNotes and
// notesAt, folded from the live log) lists the notes a copy of the log
// up to P holds, each with the copy's size, revision count and last
// write, and a note chosen there shows the same.
func TestNotesAtIsACopysNotes(t *testing.T) {
	ctx := context.Background()
	type note struct {
		Bytes, Revisions int
		Updated          int64
	}
	for name, live := range asOfLogs(t) {
		t.Run(name, func(t *testing.T) {
			tasks, err := live.Tasks(ctx, 0, memory.TasksMaxLimit)
			if err != nil {
				t.Fatal(err)
			}
			eachPosition(t, live, func(at int64, whole *memory.Service) {
				for _, task := range tasks.Tasks {
					want := map[string]note{}
					notes, err := whole.TaskNotes(ctx, task.TaskID)
					if err != nil {
						t.Fatal(err)
					}
					for _, n := range notes {
						want[n.Agent+"/"+n.Path] = note{int(n.Bytes), int(n.Revision), n.UpdatedPosition}
					}
					list, _, err := readNotes(ctx, live, task.TaskID, "", at)
					if err != nil {
						t.Fatal(err)
					}
					if err := notesAt(ctx, live, task.TaskID, at, list); err != nil {
						t.Fatal(err)
					}
					got := map[string]note{}
					for _, f := range list {
						got[f.Owner+"/"+f.Path] = note{f.Bytes, f.Revisions, f.Updated}
						_, file, err := readNotes(ctx, live, task.TaskID, f.Full(), at)
						if err != nil || file == nil {
							t.Fatalf("at %d, %s: %v", at, f.Full(), err)
						}
						if one := (note{file.Bytes, file.Revisions, file.Updated}); one != want[f.Owner+"/"+f.Path] {
							t.Errorf("at %d, %s chosen: %+v, want %+v", at, f.Full(), one, want[f.Owner+"/"+f.Path])
						}
					}
					if !reflect.DeepEqual(got, want) {
						t.Errorf("at %d, task %s: notes %+v, want (a copy's) %+v", at, task.TaskID, got, want)
					}
				}
			})
		})
	}
}

// TestHistoryCopyAnswersAsAWholeCopy: the history tools answer on a copy
// of one task's history up to P (forensics.CopyHistory, brought forward
// one event at a time as the inspector brings its copies forward) what
// they answer on a whole copy of the log up to P: every agent's windows,
// the items of each window, the last 20 items of each read, and a search.
// Past the first 80 positions it looks at every 20th: the copies are then
// brought forward 20 events at once.
func TestHistoryCopyAnswersAsAWholeCopy(t *testing.T) {
	ctx := context.Background()
	for name, live := range asOfLogs(t) {
		t.Run(name, func(t *testing.T) {
			tasks, err := live.Tasks(ctx, 0, memory.TasksMaxLimit)
			if err != nil {
				t.Fatal(err)
			}
			parts := map[string]*memory.Service{}
			for _, task := range tasks.Tasks {
				part, cleanup, err := forensics.Scratch(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer cleanup()
				if _, err := forensics.CopyHistory(ctx, part, live, task.TaskID, 1, nil); err != nil {
					t.Fatal(err)
				}
				parts[task.TaskID] = part
			}
			eachPosition(t, live, func(at int64, whole *memory.Service) {
				if at > 80 && at%20 != 0 {
					return
				}
				for _, task := range tasks.Tasks {
					part := parts[task.TaskID]
					if _, err := forensics.ForwardHistory(ctx, part, live, task.TaskID, at, nil); err != nil {
						t.Fatalf("task %s forward to %d: %v", task.TaskID, at, err)
					}
					for _, a := range task.Agents {
						if a.RegisteredPosition > at {
							continue // the page refuses it before it copies (agentAt)
						}
						if got, want := historyAnswers(ctx, part, task.TaskID, a.Agent), historyAnswers(ctx, whole, task.TaskID, a.Agent); got != want {
							t.Errorf("at %d, %s of task %s: the history copy answers\n%s\nwant (a whole copy's)\n%s", at, a.Agent, task.TaskID, got, want)
						}
					}
				}
			})
		})
	}
}

// historyAnswers is what the history tools answer agent on svc: its
// windows, each window's items, the last 20 of them read, and searches
// for a common letter and a line break, errors included.
func historyAnswers(ctx context.Context, svc *memory.Service, task, agent string) string {
	var out []byte
	call := func(tool string, args map[string]any) json.RawMessage {
		raw, _ := json.Marshal(args)
		res, err := svc.InspectTool(ctx, tool, memory.CallContext{TaskID: task, Agent: agent}, raw)
		if err != nil {
			out = fmt.Appendf(out, "%s %s: error %v\n", tool, raw, err)
			return nil
		}
		body, err := res.JSON()
		if err != nil {
			out = fmt.Appendf(out, "%s %s: encoding %v\n", tool, raw, err)
			return nil
		}
		out = fmt.Appendf(out, "%s %s: %s\n", tool, raw, body)
		return body
	}
	var windows struct {
		Details struct {
			Windows []struct {
				WindowID string `json:"window_id"`
			} `json:"windows"`
		} `json:"details"`
	}
	json.Unmarshal(call("history_list_windows", map[string]any{"limit": 200}), &windows)
	for _, w := range windows.Details.Windows {
		var items struct {
			Details struct {
				Results []struct {
					ItemID string `json:"item_id"`
				} `json:"results"`
			} `json:"details"`
		}
		json.Unmarshal(call("history_list_items", map[string]any{"window_id": w.WindowID, "limit": 200}), &items)
		for _, it := range items.Details.Results[max(len(items.Details.Results)-20, 0):] {
			call("history_read_item", map[string]any{"window_id": w.WindowID, "item_id": it.ItemID})
		}
	}
	call("history_search_contents", map[string]any{"query": "e", "limit": 50})
	call("history_search_contents", map[string]any{"query": "\n", "limit": 50})
	return string(out)
}
