package memory

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
)

// TestBudgetCannotRaiseTheNoteCap: notes_max_file_bytes may lower the
// per-file cap, never raise it above the 1,000,000-byte ceiling, at the
// first attach as at a re-attach; the refusal names the field and the
// ceiling, and records nothing.
func TestBudgetCannotRaiseTheNoteCap(t *testing.T) {
	s := mustOpenService(t)
	ctx := context.Background()
	for _, raised := range []int64{MaxNotesMaxFileBytes + 1, 5_000_000, math.MaxInt64} {
		before, err := s.store.LastPosition(ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Attach(ctx, AttachRequest{SessionKey: "raise", Budget: capBytes(raised)}, "")
		e := checkError(t, err, ErrInvalidArgument, "budget.notes_max_file_bytes")
		if !strings.Contains(e.Message, "1000000") {
			t.Errorf("cap %d: message %q does not name the ceiling", raised, e.Message)
		}
		if e.Details["field"] != "budget.notes_max_file_bytes" || e.Details["limit"] != int64(MaxNotesMaxFileBytes) {
			t.Errorf("cap %d: details %#v, want the field and the limit", raised, e.Details)
		}
		if after, _ := s.store.LastPosition(ctx); after != before {
			t.Errorf("cap %d: a refused attach recorded %d events", raised, after-before)
		}
	}

	// The ceiling itself and anything below it are accepted.
	root := attachWithBudget(t, s, "ceiling", capBytes(MaxNotesMaxFileBytes))
	_, err := call(t, s, root, "notes_write_file", args("path", "big.md", "text", strings.Repeat("x", 3_000_000)))
	checkTooLarge(t, err, 3_000_000, MaxNotesMaxFileBytes, MaxNotesMaxFileBytes)

	// A re-attach of the known session cannot raise it either; one that
	// lowers it lowers the cap of the agent's notes.
	_, err = s.Attach(ctx, AttachRequest{SessionKey: "ceiling", Budget: capBytes(5_000_000)}, "")
	checkError(t, err, ErrInvalidArgument, "budget.notes_max_file_bytes")
	if _, err := s.Attach(ctx, AttachRequest{SessionKey: "ceiling", Budget: capBytes(10)}, ""); err != nil {
		t.Fatal(err)
	}
	_, err = call(t, s, root, "notes_write_file", args("path", "a.md", "text", "0123456789x"))
	checkTooLarge(t, err, 11, 10, 10)
}

// TestNoteCapIsTheOwners: whoever writes, a note is capped by its owner's
// notes_max_file_bytes: a child with a lower cap may fill the root's note
// up to the root's cap, a child with a higher cap cannot grow it past
// the root's, and the root's own appends keep working afterwards.
func TestNoteCapIsTheOwners(t *testing.T) {
	s := mustOpenService(t)
	root := attachWithBudget(t, s, "owner/root", capBytes(100))
	small := mustAttachChildWithBudget(t, s, root.TaskID, "owner/small", "small", capBytes(10))
	large := mustAttachChildWithBudget(t, s, root.TaskID, "owner/large", "large", capBytes(1000))

	// The small child writes 60 bytes into the root's note: the root's cap.
	mustCall(t, s, small, "notes_write_file", args("path", "/root/notes/fromchild.md", "text", strings.Repeat("s", 60)))
	// The large child cannot grow it past the root's 100 bytes, and the
	// details are the root's.
	_, err := call(t, s, large, "notes_append_to_file", args("path", "/root/notes/fromchild.md", "text", strings.Repeat("l", 50)))
	checkTooLarge(t, err, 110, 100, 40)
	_, err = call(t, s, large, "notes_write_file", args("path", "/root/notes/fromchild.md", "text", strings.Repeat("l", 101)))
	checkTooLarge(t, err, 101, 100, 100)
	// The root's own appends work, up to its cap.
	mustCall(t, s, root, "notes_append_to_file", args("path", "fromchild.md", "text", strings.Repeat("r", 40)))
	_, err = call(t, s, root, "notes_append_to_file", args("path", "fromchild.md", "text", "r"))
	checkTooLarge(t, err, 101, 100, 0)

	// The other way round: the root writes into the small child's note
	// at the child's cap.
	_, err = call(t, s, root, "notes_write_file", args("path", "/root/small/notes/n.md", "text", strings.Repeat("r", 11)))
	checkTooLarge(t, err, 11, 10, 10)
	mustCall(t, s, root, "notes_write_file", args("path", "/root/small/notes/n.md", "text", strings.Repeat("r", 10)))
}

// TestStoredNoteCapAboveTheCeilingIsClamped: a database written before
// the ceiling was enforced may hold budgets above it (an attach, or a
// re-attach, that raised the cap). At use the cap is min(stored,
// ceiling), so such data cannot bypass it: neither the agent itself nor a
// child with a raised cap writing into the root's note.
func TestStoredNoteCapAboveTheCeilingIsClamped(t *testing.T) {
	s := mustOpenService(t)
	root := mustAttach(t, s, "old/root")
	child := mustAttachChild(t, s, root.TaskID, "old/child", "child")
	for _, cc := range []CallContext{root, child} {
		raiseStoredCap(t, s, cc, 5_000_000)
	}

	_, err := call(t, s, root, "notes_write_file", args("path", "big.md", "text", strings.Repeat("x", 3_000_000)))
	checkTooLarge(t, err, 3_000_000, MaxNotesMaxFileBytes, MaxNotesMaxFileBytes)
	mustCall(t, s, child, "notes_write_file", args("path", "/root/notes/fromchild.md", "text", strings.Repeat("c", 900_000)))
	_, err = call(t, s, child, "notes_append_to_file", args("path", "/root/notes/fromchild.md", "text", strings.Repeat("c", 200_000)))
	checkTooLarge(t, err, 1_100_000, MaxNotesMaxFileBytes, 100_000)
	mustCall(t, s, root, "notes_append_to_file", args("path", "fromchild.md", "text", strings.Repeat("r", 100_000)))
}

// raiseStoredCap records, as a database from before the ceiling could
// hold, that the agent of cc re-attached with notes_max_file_bytes n.
func raiseStoredCap(tb testing.TB, s *Service, cc CallContext, n int64) {
	tb.Helper()
	ctx := context.Background()
	err := s.store.Update(ctx, "", func(tx *eventlog.Tx) error {
		a, err := projections.NewReader(tx.DB()).Agent(ctx, cc.TaskID, cc.Agent)
		if err != nil {
			return err
		}
		a.Budget.NotesMaxFileBytes = n
		_, err = tx.Append(ctx, events.Stream(cc.TaskID, cc.Agent), eventlog.AnyVersion, events.Pending{
			Type: events.TypeAgentReattached,
			Data: events.AgentReattached{TaskID: cc.TaskID, Agent: cc.Agent, SessionID: a.SessionID,
				SessionFile: a.SessionFile, Budget: a.Budget}})
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// mustAttachChildWithBudget attaches a child session under /root with a
// budget.
func mustAttachChildWithBudget(tb testing.TB, s *Service, taskID, sessionKey, name string, b *BudgetInput) CallContext {
	tb.Helper()
	res, err := s.Attach(context.Background(), AttachRequest{SessionKey: sessionKey, Budget: b,
		Task: &TaskRef{TaskID: taskID, ParentAgent: "/root", AgentName: name}}, "")
	if err != nil {
		tb.Fatalf("attach child %s: %v", sessionKey, err)
	}
	return CallContext{TaskID: res.TaskID, Agent: res.Agent}
}
