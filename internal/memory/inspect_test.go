package memory

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/memoryd/memoryd/internal/sessiongen"
	"github.com/memoryd/memoryd/internal/tools"
)

// TestInspectToolWritesNothing: the inspector's reads answer as the tools
// do, but record no audit event even with the audit on, refuse the tools
// that write, and are not blocked by the agent's fence.
func TestInspectToolWritesNothing(t *testing.T) {
	s := mustOpenServiceWith(t, serviceOptions{AuditCalls: true})
	ctx := context.Background()
	cc := fcAttach(t, s, "/sessions/inspect.jsonl", fcBudget())
	b := sessiongen.NewBuilder(7)
	b.UserText("the quick brown fox jumps")
	histSync(t, s, cc, b.Session())
	fcFence(t, s, cc) // no tool call so far: nothing waits in the audit
	before, err := s.LastPosition(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.InspectTool(ctx, "history_search_contents", cc, json.RawMessage(`{"query":"brown"}`))
	if err != nil {
		t.Fatalf("search while fenced: %v", err)
	}
	if d := res.Details.(tools.HistorySearchContentsDetails); d.NReturned != 1 || len(d.Results[0].Regions) == 0 {
		t.Fatalf("search found %+v", d)
	}
	if _, err := s.InspectTool(ctx, "notes_write_file", cc, json.RawMessage(`{"path":"a.md","text":"x"}`)); ErrorKind(err) != CodeInvalidArgument {
		t.Errorf("a write through the inspector: %v, want invalid_argument", err)
	}
	s.StopAudit()
	if after, _ := s.LastPosition(ctx); after != before {
		t.Errorf("the inspector's reads grew the log from %d to %d", before, after)
	}
	// The same search as the agent's tool call is refused by the fence.
	if _, err := call(t, s, cc, "history_search_contents", `{"query":"brown"}`); !errors.Is(err, ErrFenced) {
		t.Errorf("the agent's own search while fenced: %v, want fenced", err)
	}
}
