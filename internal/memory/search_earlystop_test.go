package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/sessiongen"
	"github.com/memoryd/memoryd/internal/tools"
)

// TestHistorySearchEarlyStopProperty: history_search_contents, which walks
// the matches in output order and stops after limit of them, returns what
// filtering every item of the current branch by a plain scan of its text,
// then slicing, returns: the same items in the same order with the same
// regions, n_returned + omitted = min(limit, matches) (omitted is what the
// budget cut) and more iff matches > limit. Over random histories with
// sealed chunks and an open one, windows, hidden records (internal tool
// calls, control messages), branch switches that leave matching entries
// off the branch, and an in-flight call; for needles found in most items,
// in few or in none, both orders, random filters and limits 1, exactly the
// number of matches, one less, one more and others.
func TestHistorySearchEarlyStopProperty(t *testing.T) {
	ctx := context.Background()
	s := mustOpenService(t)
	cc := mustAttach(t, s, "/home/u/.pi/agent/sessions/early-stop.jsonl")
	r := rand.New(rand.NewPCG(2026, 21))
	vocab := []string{"error", "error", "ok", "warn", "alpha", "beta", "Zeta", "日本", "😀", "e\u0301", "x", "\n"}
	text := func(n int) string {
		var sb strings.Builder
		for i := range n {
			if i > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(vocab[r.IntN(len(vocab))])
		}
		return sb.String() + " end"
	}
	b := sessiongen.NewBuilder(21)
	var calls []string // bash call ids, candidates for the in-flight call
	synced := 0
	sync := func() {
		sess := b.Session()
		if _, err := histSyncErr(s, cc, sess.Entries[synced:], b.PathTo(b.Leaf()), nil); err != nil {
			t.Fatal(err)
		}
		synced = len(sess.Entries)
	}
	var path []string // entries of the current branch that a switch may go back to
	window := 1
	for step := range 700 {
		n := 1 + r.IntN(30)
		if r.IntN(5) == 0 {
			n = 10000 + r.IntN(30000) // large items seal chunks
		}
		var id string
		switch k := r.IntN(10); {
		case k < 3:
			id = b.UserText(text(n))
		case k < 5: // two text blocks: a break between them
			id = b.Assistant(sessiongen.Text(text(n)), sessiongen.Text(text(1+r.IntN(5))))
		case k < 7:
			call := b.CallID()
			calls = append(calls, call)
			b.Assistant(sessiongen.Text(text(2)), sessiongen.ToolCall(call, "bash", map[string]any{"command": text(3)}))
			id = b.ToolResult(call, "bash", r.IntN(5) == 0, sessiongen.Text(text(n)))
		case k < 8: // hidden unless asked for by namespace or name
			call := b.CallID()
			b.Assistant(sessiongen.ToolCall(call, "notes_write_file", map[string]any{"path": "a.md", "text": text(4)}))
			id = b.ToolResult(call, "notes_write_file", false, sessiongen.Text(text(3)))
		case k < 9: // a control message: hidden
			id = b.ControlMessage("reminder", fmt.Sprintf("w%d", window), text(4))
		default:
			if step%7 == 0 && step > 0 {
				id = b.Compaction(text(3), b.Leaf(), 1000)
				window++
			} else {
				id = b.UserText(text(n))
			}
		}
		path = append(path, id)
		if step%150 == 149 && len(path) > 40 {
			// Switch back: the entries after the point leave the branch,
			// keeping their texts in the chunks.
			at := len(path) - 1 - 5 - r.IntN(30)
			b.Checkout(path[at])
			path = path[:at+1]
		}
		if r.IntN(15) == 0 {
			sync()
		}
	}
	b.UserText("the last words error ok") // in the open chunk
	sync()

	store := s.Store().Reader()
	var open, sealed, offBranch int
	if err := store.QueryRowContext(ctx, "SELECT count(*) FROM history_open_texts").Scan(&open); err != nil || open == 0 {
		t.Fatalf("%d open texts (%v): the test needs an open chunk", open, err)
	}
	// More chunks than a search checks against their full filters at once
	// (projections' lazyCheckAbove, 64): a common needle's are checked as
	// they are read.
	if err := store.QueryRowContext(ctx, "SELECT count(*) FROM history_chunks").Scan(&sealed); err != nil || sealed < 80 {
		t.Fatalf("%d sealed chunks (%v): the test needs more than 80", sealed, err)
	}
	if err := store.QueryRowContext(ctx, `SELECT count(*) FROM history_entries e WHERE e.item = 1 AND NOT EXISTS
		(SELECT 1 FROM history_items i WHERE i.task_id = e.task_id AND i.agent = e.agent AND i.entry_id = e.entry_id)`).Scan(&offBranch); err != nil || offBranch < 20 {
		t.Fatalf("%d items off the branch (%v): the test needs branch switches", offBranch, err)
	}

	// The plain scan: every item of the branch with its text, oldest first.
	type scanned struct {
		it     projections.Item
		text   string
		breaks []int
	}
	rd := projections.NewReader(store)
	var items []scanned
	if err := rd.EachItem(ctx, cc.TaskID, cc.Agent, projections.WholeBranch, false, func(it projections.Item) (bool, error) {
		text, breaks, err := rd.ItemText(ctx, cc.TaskID, cc.Agent, it.EntryID)
		items = append(items, scanned{it, text, breaks})
		return err == nil, err
	}); err != nil {
		t.Fatal(err)
	}
	preview := 400 // the default history_item_preview_chars
	windows := []string{"", "", "w1", "w2", fmt.Sprintf("w%d", window), "w99"}
	roles := []string{"", "", "user", "assistant", "tool"}
	toolFilters := [][2]string{{"", ""}, {"", ""}, {"", ""}, {"functions", ""}, {"notes", ""}, {"", "bash"}, {"", "write_file"}, {"notes", "notes_write_file"}}
	var many, few int
	for k := range 200 {
		var needle string
		switch k % 5 {
		case 0, 1:
			needle = vocab[r.IntN(len(vocab)-1)]
		case 2: // from one item's text, often rare
			rs := []rune(items[r.IntN(len(items))].text)
			i := r.IntN(len(rs))
			needle = string(rs[i:min(len(rs), i+1+r.IntN(12))])
		case 3:
			needle = []string{"r o", "Ze", "nowhere-at-all", "end\n", "\nerror", "ok warn"}[r.IntN(6)]
		default:
			needle = vocab[r.IntN(len(vocab)-1)] + " " + vocab[r.IntN(len(vocab)-1)]
		}
		caller := cc
		if r.IntN(3) == 0 {
			caller.CallID = calls[r.IntN(len(calls))]
		}
		f := itemFilter{windowID: windows[r.IntN(len(windows))], role: roles[r.IntN(len(roles))], selfCallID: caller.CallID}
		tool := toolFilters[r.IntN(len(toolFilters))]
		f.namespace, f.name = tool[0], tool[1]
		recent := r.IntN(2) == 0

		var want []scanned
		all := 0
		for _, sc := range items {
			if !strings.Contains(sc.text, needle) || len(findRegions(sc.text, sc.breaks, needle, 0)) == 0 {
				continue
			}
			all++
			if f.match(sc.it) {
				want = append(want, sc)
			}
		}
		if all > 300 {
			many++
		} else if all < 30 {
			few++
		}
		if recent {
			slices.Reverse(want)
		}
		limit := []int{1, 2, 20, 200, len(want), len(want) + 1, len(want) - 1, 1 + r.IntN(60)}[r.IntN(8)]
		limit = max(1, min(limit, 200))

		args := map[string]any{"query": needle, "limit": limit, "recent_first": recent}
		for key, v := range map[string]string{"window_id": f.windowID, "role": f.role, "tool_namespace": f.namespace, "tool_name": f.name} {
			if v != "" {
				args[key] = v
			}
		}
		raw, _ := json.Marshal(args)
		res := mustCall(t, s, caller, "history_search_contents", string(raw))
		d := res.Details.(tools.HistorySearchContentsDetails)
		what := fmt.Sprintf("query %d %s (call %q): %d of %d matches", k, raw, caller.CallID, len(want), all)
		if len(want) == 0 {
			if d.NReturned != 0 || d.Omitted != 0 || d.More || !strings.Contains(res.Content[0].Text, `"n_returned":0`) {
				t.Fatalf("%s: got %+v", what, d)
			}
			continue
		}
		if d.NReturned+d.Omitted != min(limit, len(want)) || d.More != (len(want) > limit) || d.NReturned == 0 || len(d.Results) != d.NReturned {
			t.Fatalf("%s: n_returned %d, omitted %d, more %v", what, d.NReturned, d.Omitted, d.More)
		}
		for i, rec := range d.Results {
			sc := want[i]
			exp := tools.SearchHit{ItemID: sc.it.EntryID, WindowID: sc.it.WindowID, Role: sc.it.Role,
				ToolNamespace: nullable(sc.it.ToolNamespace), ToolName: nullable(sc.it.ToolName), NChars: sc.it.NChars,
				Regions: findRegions(sc.text, sc.breaks, needle, preview)}
			if !reflect.DeepEqual(rec, exp) {
				t.Fatalf("%s: result %d is %+v, want %+v", what, i, rec, exp)
			}
		}
		lines := strings.Split(res.Content[0].Text, "\n")
		last := lines[len(lines)-1]
		if tail := d.Omitted > 0 || d.More; tail != strings.HasPrefix(last, `{"omitted":`) || d.More != strings.Contains(last, `"more":true`) ||
			len(lines) != d.NReturned+map[bool]int{true: 1, false: 0}[tail] {
			t.Fatalf("%s: %+v, content ends %q", what, d, last)
		}
	}
	if many < 20 || few < 20 {
		t.Fatalf("%d needles found in many items, %d in few: the test needs both", many, few)
	}
}
