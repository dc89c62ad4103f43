package memory

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/memoryd/memoryd/internal/sessiongen"
)

// TestInspectToolAsOfStaysOnThePastBranch: as of a position P, the history
// tools answer from the live projections what they answered at P, while
// later syncs append to the branch and a re-attach changes the budget;
// another agent's history and the other tools need a copy; a switch
// since P that cuts into the branch as of P makes a call made after it
// need a copy (ErrNeedsCopy), and PastBranchAt then says so. Before the
// agent's registration there is no past branch.
func TestInspectToolAsOfStaysOnThePastBranch(t *testing.T) {
	s := mustOpenService(t)
	ctx := context.Background()
	preview, out := int64(20), int64(400)
	cc := fcAttach(t, s, "/sessions/asof.jsonl", &BudgetInput{HistoryItemPreviewChars: &preview, MaxToolOutputChars: &out})
	child, err := s.Attach(ctx, AttachRequest{SessionKey: "/sessions/asof-child.jsonl", Task: &TaskRef{TaskID: cc.TaskID, ParentAgent: cc.Agent, AgentName: "child"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	b := sessiongen.NewBuilder(5)
	first := b.UserText("the quick brown fox jumps over the lazy dog, and again the quick brown fox")
	b.Assistant(sessiongen.Text("a brown answer: brown brown brown brown brown brown brown brown brown brown brown brown brown brown"))
	histSync(t, s, cc, b.Session())
	at, err := s.LastPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct{ tool, args string }{
		{"history_list_windows", `{}`},
		{"history_list_items", `{"limit":200}`},
		{"history_list_items", `{"limit":1,"recent_first":true}`},
		{"history_read_item", `{"window_id":"w1","item_id":"` + first + `"}`},
		{"history_search_contents", `{"query":"brown"}`},
		{"history_search_contents", `{"query":"brown","recent_first":true,"limit":1}`},
	}
	answers := func(call func(tool string, args json.RawMessage) (ToolResult, error)) []string {
		var out []string
		for _, c := range calls {
			res, err := call(c.tool, json.RawMessage(c.args))
			if err != nil {
				t.Fatalf("%s %s: %v", c.tool, c.args, err)
			}
			body, err := res.JSON()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(body))
		}
		return out
	}
	want := answers(func(tool string, args json.RawMessage) (ToolResult, error) { return s.InspectTool(ctx, tool, cc, args) })

	// Later: more of the branch, a larger budget.
	b.Assistant(sessiongen.Text("a later brown answer"))
	b.UserText("brown again, later")
	histSync(t, s, cc, b.Session())
	preview, out = 200, 4000
	if _, err := s.Attach(ctx, AttachRequest{SessionKey: "/sessions/asof.jsonl", Budget: &BudgetInput{HistoryItemPreviewChars: &preview, MaxToolOutputChars: &out}}, ""); err != nil {
		t.Fatal(err)
	}
	past, prefix, err := s.PastBranchAt(ctx, cc.TaskID, cc.Agent, at)
	if err != nil || !prefix || past.Length != 2 {
		t.Fatalf("PastBranchAt(%d) = %+v, %v, %v; want a prefix of length 2", at, past, prefix, err)
	}
	asOf := func(tool string, args json.RawMessage) (ToolResult, error) {
		return s.InspectToolAsOf(ctx, tool, past, args)
	}
	got := answers(asOf)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s %s as of %d:\n%s\nwant (answered then)\n%s", calls[i].tool, calls[i].args, at, got[i], want[i])
		}
	}
	now := answers(func(tool string, args json.RawMessage) (ToolResult, error) { return s.InspectTool(ctx, tool, cc, args) })
	if now[1] == want[1] {
		t.Errorf("the live items did not change: %s", now[1])
	}

	if _, err := asOf("history_list_items", json.RawMessage(`{"agent_name":"child"}`)); !errors.Is(err, ErrNeedsCopy) {
		t.Errorf("another agent's items as of a position: %v, want ErrNeedsCopy", err)
	}
	if _, err := asOf("get_context_remaining", json.RawMessage(`{}`)); !errors.Is(err, ErrNeedsCopy) {
		t.Errorf("get_context_remaining as of a position: %v, want ErrNeedsCopy", err)
	}
	if _, prefix, err := s.PastBranchAt(ctx, cc.TaskID, child.Agent, 1); err != nil || prefix {
		t.Errorf("PastBranchAt before the child's registration: %v, %v; want no past branch", prefix, err)
	}

	// A switch back to the first entry cuts into the branch as of at.
	b.Checkout(first)
	b.Assistant(sessiongen.Text("another way"))
	histSync(t, s, cc, b.Session())
	if _, err := asOf("history_list_windows", json.RawMessage(`{}`)); !errors.Is(err, ErrNeedsCopy) {
		t.Errorf("after a switch: %v, want ErrNeedsCopy", err)
	}
	if _, prefix, err := s.PastBranchAt(ctx, cc.TaskID, cc.Agent, at); err != nil || prefix {
		t.Errorf("PastBranchAt after a switch: %v, %v; want no prefix", prefix, err)
	}
	// As of the switch, its branch is a prefix again.
	switched, err := s.LastPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b, prefix, err := s.PastBranchAt(ctx, cc.TaskID, cc.Agent, switched); err != nil || !prefix || b.Length != 2 {
		t.Errorf("PastBranchAt(%d), after the switch: %+v, %v, %v; want a prefix of length 2", switched, b, prefix, err)
	}
}
