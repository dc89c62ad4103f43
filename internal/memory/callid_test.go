package memory

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestCallIDIsBounded: a call_id is stored with every event of its call
// and in its audit record, so one over 256 bytes, or not valid UTF-8, is
// refused with invalid_argument naming context.call_id, on tools (audit
// on) and on the lifecycle routes, and nothing is stored.
func TestCallIDIsBounded(t *testing.T) {
	ctx := context.Background()
	s, flush := mustOpenAuditedService(t)
	cc := attachWithBudget(t, s, "callid", nil)
	before := lastPosition(t, s)
	for _, id := range []string{strings.Repeat("c", 257), strings.Repeat("c", 30_000), "ok\xff"} {
		bad := cc
		bad.CallID = id
		args := json.RawMessage(`{"path":"a.md","text":"x"}`)
		_, err := s.CallTool(ctx, "notes_write_file", bad, args, "")
		checkCallIDRefused(t, "notes_write_file", err)
		_, err = s.CallTool(ctx, "notes_read_file", bad, json.RawMessage(`{"path":"a.md"}`), "")
		checkCallIDRefused(t, "notes_read_file", err)
		_, err = s.Admit(ctx, cc, id, "notes_write_file", args, "")
		checkCallIDRefused(t, "admit", err)
		_, err = s.ToolResult(ctx, cc, id, false, "")
		checkCallIDRefused(t, "tool-result", err)
	}
	flush()
	if after := lastPosition(t, s); after != before {
		t.Errorf("refused call_ids stored %d events", after-before)
	}
	ok := cc
	ok.CallID = strings.Repeat("c", 256)
	if _, err := s.CallTool(ctx, "notes_write_file", ok, json.RawMessage(`{"path":"a.md","text":"x"}`), ""); err != nil {
		t.Fatalf("a 256-byte call_id: %v", err)
	}
}

func checkCallIDRefused(t *testing.T, what string, err error) {
	t.Helper()
	var e *Error
	if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &e) || e.Details["field"] != "context.call_id" {
		t.Errorf("%s with a bad call_id: %v, want invalid_argument naming context.call_id", what, err)
	}
}
