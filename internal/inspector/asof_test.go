package inspector

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
	"github.com/memoryd/memoryd/internal/sessiongen"
	"github.com/memoryd/memoryd/internal/tools"
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
						got := historyAnswers(ctx, historyView{svc: part, task: task.TaskID, agent: a.Agent})
						if want := historyAnswers(ctx, historyView{svc: whole, task: task.TaskID, agent: a.Agent}); got != want {
							t.Errorf("at %d, %s of task %s: the history copy answers\n%s\nwant (a whole copy's)\n%s", at, a.Agent, task.TaskID, got, want)
						}
					}
				}
			})
		})
	}
}

// historyAnswers is what the history tools answer on v: the agent's
// windows, each window's items, the last 20 of them read, and searches for
// a common letter and a line break, errors included.
func historyAnswers(ctx context.Context, v historyView) string {
	var out []byte
	call := answerOn(ctx, v, &out)
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

// answerOn returns a call of a tool on v that appends its answer, or its
// error, to out and returns the answer's JSON.
func answerOn(ctx context.Context, v historyView, out *[]byte) func(tool string, args map[string]any) json.RawMessage {
	return func(tool string, args map[string]any) json.RawMessage {
		raw, _ := json.Marshal(args)
		res, err := v.call(ctx, tool, raw)
		if err != nil {
			*out = fmt.Appendf(*out, "%s %s: error %v\n", tool, raw, err)
			return nil
		}
		body, err := res.JSON()
		if err != nil {
			*out = fmt.Appendf(*out, "%s %s: encoding %v\n", tool, raw, err)
			return nil
		}
		*out = fmt.Appendf(*out, "%s %s: %s\n", tool, raw, body)
		return body
	}
}

// TestHistoryAsOfAnswersAsAWholeCopy: the history page as of P answers
// what the history tools answer on a whole copy of the log up to P, at
// every position of every scenario log and of historyMix: from the live
// projections bounded to the agent's branch as of P when that branch is a
// prefix of today's, and from a copy of the task's history when a branch
// change since cut into it. The page's own data (readHistory: the four
// tools with the page's arguments) is compared at every position for the
// current window with its last item and a search that hits (pagesOf's
// first page); at the first 80 positions and every tenth past them, also
// for the first window with its first item and another search, and the
// tools' answers with more arguments (pageAnswers). Under the race
// detector, which makes it several times slower, it looks at fewer
// positions (asOfSchedule). Both ways are taken in
// branch-switch-compaction and historyMix; the live one in every log.
func TestHistoryAsOfAnswersAsAWholeCopy(t *testing.T) {
	ctx := context.Background()
	logs := asOfLogs(t)
	logs["history-mix"] = historyMix(t)
	for name, live := range logs {
		t.Run(name, func(t *testing.T) {
			tasks, err := live.Tasks(ctx, 0, memory.TasksMaxLimit)
			if err != nil {
				t.Fatal(err)
			}
			ss := newStates(live, keep(4))
			defer ss.close()
			probes := map[string]historyProbes{}
			for _, task := range tasks.Tasks {
				for _, a := range task.Agents {
					probes[task.TaskID+a.Agent] = probesOf(t, live, task.TaskID, a.Agent)
				}
			}
			livePages, copies := 0, 0
			eachPosition(t, live, func(at int64, whole *memory.Service) {
				look, more := asOfSchedule(at)
				if !look {
					return
				}
				for _, task := range tasks.Tasks {
					for _, a := range task.Agents {
						if a.RegisteredPosition > at {
							continue // the page refuses it (agentAt)
						}
						pr := probes[task.TaskID+a.Agent]
						v, release, err := ss.historyView(ctx, task.TaskID, a.Agent, at, false)
						if err != nil {
							t.Fatalf("at %d, %s: %v", at, a.Agent, err)
						}
						if v.past != nil {
							livePages++
						} else {
							copies++
						}
						w := historyView{svc: whole, task: task.TaskID, agent: a.Agent}
						if more {
							if got, want := pageAnswers(ctx, v, pr), pageAnswers(ctx, w, pr); got != want {
								t.Fatalf("at %d, %s of task %s (live: %v): the history as of P answers\n%s\nwant (a whole copy's)\n%s", at, a.Agent, task.TaskID, v.past != nil, got, want)
							}
						}
						release()
						pages := pagesOf(ctx, w, pr)
						if !more {
							pages = pages[:1]
						}
						for _, page := range pages {
							g, wd := page, page
							gerr := ss.readHistory(ctx, &g.historyData, page.item, at)
							werr := fillHistory(ctx, w, &wd.historyData, page.item)
							gj, _ := json.Marshal(g.historyData)
							wj, _ := json.Marshal(wd.historyData)
							if string(gj) != string(wj) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
								t.Fatalf("at %d, %s: the page shows\n%s (error %v)\nwant (a whole copy's)\n%s (error %v)", at, a.Agent, gj, gerr, wj, werr)
							}
						}
					}
				}
			})
			t.Logf("%d answers from the live projections, %d from copies", livePages, copies)
			if livePages == 0 {
				t.Error("no page was answered from the live projections")
			}
			if (name == "branch-switch-compaction.jsonl" || name == "history-mix") && copies == 0 {
				t.Error("no page fell back to a copy, though the branch switched")
			}
		})
	}
}

// asOfSchedule says whether TestHistoryAsOfAnswersAsAWholeCopy looks at
// position at, and whether with more than the page. Without the race
// detector it looks at every position, with more at the first 80 and
// every tenth past them; with it, at the first 20 and every tenth, with
// more at the first 20 and every 40th.
func asOfSchedule(at int64) (look, more bool) {
	if raceEnabled {
		return at <= 20 || at%10 == 0, at <= 20 || at%40 == 0
	}
	return true, at <= 80 || at%10 == 0
}

// historyProbes are what pageAnswers asks beyond what it lists: items of
// the agent's branch today (not found before they are on it) and search
// queries that hit, some only once their items are recorded.
type historyProbes struct {
	items   [][2]string // window and item ids
	queries []string
}

// probesOf takes the probes from an agent's history today: its first and
// last three items, and as queries, besides a common letter, the word or
// pair of words of its first, middle and last items that the fewest items
// hold (so that the searches stay quick).
func probesOf(t *testing.T, live *memory.Service, task, agent string) historyProbes {
	t.Helper()
	ctx := context.Background()
	cc := memory.CallContext{TaskID: task, Agent: agent}
	res, err := live.InspectTool(ctx, "history_list_items", cc, json.RawMessage(`{"limit":200}`))
	if err != nil {
		t.Fatal(err)
	}
	items := res.Details.(tools.HistoryListItemsDetails).Results
	pr := historyProbes{queries: []string{"e"}}
	for i, it := range items {
		if i < 1 || i >= len(items)-3 {
			pr.items = append(pr.items, [2]string{it.WindowID, it.ItemID})
		}
		if i != 0 && i != len(items)/2 && i != len(items)-1 {
			continue
		}
		word, hits := "", 0
		fields := strings.Fields(it.TruncatedContent)
		for j, f := range fields {
			if j > 0 && strings.Contains(it.TruncatedContent, fields[j-1]+" "+f) {
				f = fields[j-1] + " " + f
			}
			if len(f) < 4 || len(f) > 40 || !utf8.ValidString(f) {
				continue
			}
			args, _ := json.Marshal(map[string]any{"query": f, "limit": 200})
			res, err := live.InspectTool(ctx, "history_search_contents", cc, args)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(res.Details.(tools.HistorySearchContentsDetails).Results); n > 0 && (word == "" || n < hits) {
				word, hits = f, n
			}
		}
		if word != "" {
			pr.queries = append(pr.queries, word)
		}
	}
	return pr
}

// pageAnswers is what the history tools answer on v with the history
// page's arguments and more: the windows (both ways), each window's items
// as the page lists them and its newest three, all items (limit 3, for the
// omitted count), the first and last two items of each window read whole
// offset by offset as the page reads them, the probes' items read, and
// each probe query searched as the page searches and newest first with
// limit 1 (the more flag).
func pageAnswers(ctx context.Context, v historyView, pr historyProbes) string {
	var out []byte
	call := answerOn(ctx, v, &out)
	var windows struct {
		Details tools.HistoryListWindowsDetails `json:"details"`
	}
	json.Unmarshal(call("history_list_windows", map[string]any{"limit": 200}), &windows)
	call("history_list_windows", map[string]any{"limit": 2, "recent_first": true})
	call("history_list_items", map[string]any{"limit": 3})
	for _, w := range windows.Details.Windows {
		var items struct {
			Details tools.HistoryListItemsDetails `json:"details"`
		}
		json.Unmarshal(call("history_list_items", map[string]any{"window_id": w.WindowID, "limit": 200, "max_chars_per_item": 160}), &items)
		call("history_list_items", map[string]any{"window_id": w.WindowID, "limit": 3, "recent_first": true})
		for i, it := range items.Details.Results {
			if i >= 2 && i < len(items.Details.Results)-2 {
				continue
			}
			for offset := 0; ; {
				var read struct {
					Details tools.HistoryReadItemDetails `json:"details"`
				}
				json.Unmarshal(call("history_read_item", map[string]any{"window_id": w.WindowID, "item_id": it.ItemID, "offset_chars": offset}), &read)
				next := read.Details.NextOffsetChars
				if next == nil || *next <= offset {
					break
				}
				offset = *next
			}
		}
	}
	for _, it := range pr.items {
		call("history_read_item", map[string]any{"window_id": it[0], "item_id": it[1]})
	}
	for _, q := range pr.queries {
		call("history_search_contents", map[string]any{"query": q, "limit": 50})
		call("history_search_contents", map[string]any{"query": q, "limit": 1, "recent_first": true})
	}
	return string(out)
}

// askedPage is what a history page is asked for: its data's task, agent,
// window and query, and the item to show.
type askedPage struct {
	historyData
	item string
}

// pagesOf returns the pages the test asks for: the current window (the
// page's default) with its last item and the first item's word, which
// hits from the first item on, and the first window with its first item
// and the last probe query, which hits once the last items are recorded.
// The items are those the whole copy w lists.
func pagesOf(ctx context.Context, w historyView, pr historyProbes) []askedPage {
	current := askedPage{historyData: historyData{TaskID: w.task, Agent: w.agent, Query: pr.queries[min(1, len(pr.queries)-1)]}}
	first := askedPage{historyData: historyData{TaskID: w.task, Agent: w.agent, Window: "w1", Query: pr.queries[len(pr.queries)-1]}}
	if _, last, err := inspectTool[tools.HistoryListItemsDetails](ctx, w, tools.HistoryListItems, map[string]any{"limit": 1, "recent_first": true}); err == nil && len(last.Results) > 0 {
		current.item = last.Results[0].ItemID
	}
	if _, items, err := inspectTool[tools.HistoryListItemsDetails](ctx, w, tools.HistoryListItems, map[string]any{"limit": 1}); err == nil && len(items.Results) > 0 {
		first.Window, first.item = items.Results[0].WindowID, items.Results[0].ItemID
	}
	return []askedPage{current, first}
}

// historyMix is a memory of one agent whose history is synced in steps,
// with a budget small enough that items are read in several pages and
// lists are cut, a compaction, a re-attach that changes the budget, then
// a switch back to an earlier entry and a new branch from there (with a
// compaction of its own), and a switch to the first branch's end again.
func historyMix(t *testing.T) *memory.Service {
	t.Helper()
	ctx := context.Background()
	live := memorytest.Open(t, memory.OpenOptions{})
	budget := func(out, preview int64) *memory.BudgetInput {
		return &memory.BudgetInput{MaxToolOutputChars: &out, HistoryItemPreviewChars: &preview}
	}
	res, err := live.Attach(ctx, memory.AttachRequest{SessionKey: "/s/mix.jsonl", Budget: budget(700, 30)}, "")
	if err != nil {
		t.Fatal(err)
	}
	cc := memory.CallContext{TaskID: res.TaskID, Agent: res.Agent}
	b := sessiongen.NewBuilder(31)
	sync := func() {
		t.Helper()
		sess := b.Session()
		if _, err := live.Sync(ctx, memory.SyncRequest{Context: cc, Entries: sess.Entries, Branch: &sess.Branch}, ""); err != nil {
			t.Fatal(err)
		}
	}
	long := strings.Repeat("the quick brown fox jumps over the lazy dog, ", 40)
	b.UserText("alpha: please look at the wiring of the flux capacitor")
	b.Assistant(sessiongen.Text("bravo: reading the notes first"))
	b.Call("notes_read_file", map[string]any{"path": "plan.md"}, "step one") // memoryd's own: hidden
	sync()
	b.Call("read", map[string]any{"path": "main.go"}, "charlie "+long)
	fork := b.Assistant(sessiongen.Text("delta: the wiring is fine " + long))
	sync()
	b.UserText("echo: now the other module")
	b.Compaction("foxtrot: the wiring was looked at", fork, 90000)
	b.Assistant(sessiongen.Text("golf: after the compaction"))
	sync()
	if _, err := live.Attach(ctx, memory.AttachRequest{SessionKey: "/s/mix.jsonl", Budget: budget(2500, 120)}, ""); err != nil {
		t.Fatal(err)
	}
	b.Call("bash", map[string]any{"command": "go test"}, "hotel: ok "+long)
	endA := b.Assistant(sessiongen.Text("india: done on this branch"))
	sync()
	b.Checkout(fork) // back to the fork, then a new branch
	b.UserText("juliet: try it another way")
	b.Call("grep", map[string]any{"pattern": "wire"}, "kilo "+long)
	sync()
	b.Compaction("lima: the other way", "", 120000)
	b.Assistant(sessiongen.Text("mike: after the second compaction"))
	sync()
	b.Checkout(endA) // back to the first branch's end
	b.UserText("november: back where we were")
	sync()
	b.Assistant(sessiongen.Text("oscar: and on"))
	sync()
	return live
}
