package memory

import (
	"context"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/sessiongen"
)

// TestHostSessionRemindedOncePerWindow: a Claude Code session past the
// reminder threshold gets the reminder on its next PostToolUse or
// UserPromptSubmit hook, once; a compaction synced from its transcript
// moves its window, and the reminder is due again in the new one. A Pi
// session's synced compaction moves nothing: Pi's windows move by the
// extension's rollover.
func TestHostSessionRemindedOncePerWindow(t *testing.T) {
	s := mustOpenService(t)
	ctx := context.Background()
	hook := func(event, agentID string) string {
		t.Helper()
		a, err := s.HandleHostHook(ctx, HostHook{Host: KindClaudeCode, Event: event, SessionID: "s1", AgentID: agentID}, "")
		if err != nil {
			t.Fatalf("%s: %v", event, err)
		}
		return a.AdditionalContext
	}
	if got := hook("PostToolUse", ""); got != "" {
		t.Fatalf("a session memoryd does not know is reminded: %q", got)
	}
	cc := mustAttach(t, s, HostSessionKey(KindClaudeCode, "s1", ""))
	b := sessiongen.NewBuilder(1)
	b.UserText("the first request")
	histSync(t, s, cc, b.Session())
	usage := func(used int64) {
		t.Helper()
		if _, err := s.ReportUsage(ctx, cc, ptr(used), ptr(int64(200_000)), ""); err != nil {
			t.Fatal(err)
		}
	}
	usage(100_000)
	if got := hook("PostToolUse", ""); got != "" {
		t.Fatalf("reminded with half the window left: %q", got)
	}
	usage(160_000)
	got := hook("PostToolUse", "")
	for _, want := range []string{`<context_window_reminder window_id="w1"/>`, "about 40000 of its 200000 tokens are left", "mcp__memoryd__notes_write_file"} {
		if !strings.Contains(got, want) {
			t.Fatalf("the reminder lacks %q: %q", want, got)
		}
	}
	usage(165_000)
	if again, prompt := hook("PostToolUse", ""), hook("UserPromptSubmit", ""); again != "" || prompt != "" {
		t.Fatalf("reminded twice in one window: %q, %q", again, prompt)
	}
	if got := hook("PostToolUse", "agent-unknown"); got != "" {
		t.Fatalf("a sub-agent memoryd does not know is reminded: %q", got)
	}

	b.Compaction("the summary", b.Leaf(), 160_000)
	b.UserText("after the compaction")
	if res := histSync(t, s, cc, b.Session()); res.WindowID != "w2" {
		t.Fatalf("the synced compaction opened %q, want w2", res.WindowID)
	}
	st, err := s.State(ctx, cc)
	if err != nil {
		t.Fatal(err)
	}
	if st.WindowID != "w2" || st.PreviousWindowID != "w1" || st.ReminderDue || st.ReminderDelivered {
		t.Fatalf("after the synced compaction the state is %+v, want window w2 after w1 with no reminder", st)
	}
	if d := detailsMap(t, mustCall(t, s, cc, "get_context_remaining", `{}`)); d["window_id"] != "w2" {
		t.Fatalf("get_context_remaining answers window %v, want w2", d["window_id"])
	}
	histSync(t, s, cc, b.Session()) // synced again: the window stays
	if st, _ := s.State(ctx, cc); st.WindowNumber != 2 {
		t.Fatalf("a second sync of the same branch moved the window to number %d", st.WindowNumber)
	}
	usage(170_000)
	if got := hook("UserPromptSubmit", ""); !strings.Contains(got, `<context_window_reminder window_id="w2"/>`) {
		t.Fatalf("no reminder in the new window: %q", got)
	}

	pi := mustAttach(t, s, "pi-session")
	p := sessiongen.NewBuilder(2)
	p.UserText("a request")
	p.Compaction("a summary", p.Leaf(), 1000)
	p.UserText("another")
	if res := histSync(t, s, pi, p.Session()); res.WindowID != "w2" {
		t.Fatalf("Pi's compaction opened %q, want w2", res.WindowID)
	}
	if st, _ := s.State(ctx, pi); st.WindowID != "w1" {
		t.Fatalf("a Pi session's synced compaction moved its window to %s", st.WindowID)
	}
}
