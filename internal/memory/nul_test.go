package memory

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestNULInIdentifiersRefused: U+0000 in an identifier (an entry id, a
// tool call's id or name, a role, a call_id, a session key) is refused as
// an invalid argument with nothing stored, on both engines alike
// (PostgreSQL's text cannot hold it), while note text and history text,
// stored as bytes, keep it.
func TestNULInIdentifiersRefused(t *testing.T) {
	ctx := context.Background()
	s := mustOpenService(t)
	cc := mustAttach(t, s, "/nul/a.jsonl")
	before := lastPos(t, s)
	msg := func(id, role, extra string) json.RawMessage {
		return json.RawMessage(`{"type":"message","id":` + jsonString(id) + `,"parentId":null,"timestamp":"2026-12-02T10:00:00.000Z","message":{"role":` +
			jsonString(role) + `,"content":"hello"` + extra + `,"timestamp":1}}`)
	}
	for name, entry := range map[string]json.RawMessage{
		"entry id":    msg("e\x001", "user", ""),
		"role":        msg("e2", "us\x00er", ""),
		"toolCallId":  msg("e3", "toolResult", `,"toolCallId":"c\u0000","toolName":"bash"`),
		"toolName":    msg("e4", "toolResult", `,"toolCallId":"c1","toolName":"ba\u0000sh"`),
		"a call's id": json.RawMessage(`{"type":"message","id":"e5","parentId":null,"timestamp":"2026-12-02T10:00:00.000Z","message":{"role":"assistant","content":[{"type":"toolCall","id":"c\u0000","name":"bash","arguments":{}}],"timestamp":1}}`),
	} {
		var id struct {
			ID string `json:"id"`
		}
		json.Unmarshal(entry, &id)
		_, err := histSyncErr(s, cc, []json.RawMessage{entry}, []string{id.ID}, nil)
		if !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("%s with U+0000: %v, want an invalid argument", name, err)
		}
	}
	nulCall := cc
	nulCall.CallID = "toolu_\x00"
	if _, err := s.CallTool(ctx, "notes_write_file", nulCall, json.RawMessage(`{"path":"a.md","text":"x"}`), ""); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("call_id with U+0000: %v, want an invalid argument", err)
	}
	if _, err := s.Attach(ctx, AttachRequest{SessionKey: "/nul/\x00.jsonl"}, ""); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("session_key with U+0000: %v, want an invalid argument", err)
	}
	if after := lastPos(t, s); after != before {
		t.Fatalf("refused calls stored events: position %d → %d", before, after)
	}
	// Text keeps it.
	mustCall(t, s, cc, "notes_write_file", `{"path":"nul.md","text":"a\u0000b"}`)
	res := mustCall(t, s, cc, "notes_read_file", `{"path":"nul.md"}`)
	if b, _ := json.Marshal(res); !strings.Contains(string(b), `a\u0000b`) {
		t.Errorf("a note's text lost its U+0000: %s", b)
	}
	textNUL := json.RawMessage(`{"type":"message","id":"e6","parentId":null,"timestamp":"2026-12-02T10:00:00.000Z","message":{"role":"user","content":"zero\u0000byte","timestamp":1}}`)
	if _, err := histSyncErr(s, cc, []json.RawMessage{textNUL}, []string{"e6"}, nil); err != nil {
		t.Fatalf("an entry with U+0000 in its text: %v", err)
	}
	found := mustCall(t, s, cc, "history_search_contents", `{"query":"byte"}`)
	if b, _ := json.Marshal(found); !strings.Contains(string(b), `zero\u0000byte`) {
		t.Errorf("history text lost its U+0000: %s", b)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func lastPos(tb testing.TB, s *Service) int64 {
	tb.Helper()
	p, err := s.store.LastPosition(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return p
}
