package forensics_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// piSession builds a Pi session tree (format version 3) the way Pi writes
// it: one JSON object per entry with type, id, parentId and timestamp.
// Ids are a fixed prefix and a counter, timestamps advance one second per
// entry, so the same calls always build the same bytes.
type piSession struct {
	prefix  string
	n       int
	calls   int
	clock   time.Time
	leaf    string
	parents map[string]string
	entries []json.RawMessage
	synced  int // entries already handed out by unsynced
}

func newPiSession(prefix string) *piSession {
	return &piSession{prefix: prefix, clock: time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC), parents: map[string]string{}}
}

// piJSON marshals v as Pi does (JSON.stringify: no HTML escaping).
func piJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

func (s *piSession) millis() int64 { return s.clock.UnixMilli() }

// add appends an entry of type typ with the given fields as a child of the
// leaf and makes it the leaf.
func (s *piSession) add(typ string, fields map[string]any) string {
	s.n++
	s.clock = s.clock.Add(time.Second)
	id := fmt.Sprintf("%s%04x", s.prefix, s.n)
	var parent any
	if s.leaf != "" {
		parent = s.leaf
	}
	head := piJSON(struct {
		Type      string `json:"type"`
		ID        string `json:"id"`
		ParentID  any    `json:"parentId"`
		Timestamp string `json:"timestamp"`
	}{typ, id, parent, s.clock.Format("2006-01-02T15:04:05.000Z")})
	line := head
	if len(fields) > 0 {
		body := piJSON(fields)
		line = append(append(head[:len(head)-1:len(head)-1], ','), body[1:]...)
	}
	s.entries = append(s.entries, json.RawMessage(line))
	s.parents[id] = s.leaf
	s.leaf = id
	return id
}

// callID returns a fresh tool-call id.
func (s *piSession) callID() string {
	s.calls++
	return fmt.Sprintf("toolu_%s%03d", s.prefix, s.calls)
}

func textBlock(t string) map[string]any     { return map[string]any{"type": "text", "text": t} }
func thinkingBlock(t string) map[string]any { return map[string]any{"type": "thinking", "thinking": t} }
func imageBlock(data, mime string) map[string]any {
	return map[string]any{"type": "image", "data": data, "mimeType": mime}
}
func toolCallBlock(id, name string, args any) map[string]any {
	return map[string]any{"type": "toolCall", "id": id, "name": name, "arguments": args}
}

// user appends a user message with plain text content.
func (s *piSession) user(text string) string {
	return s.add("message", map[string]any{"message": map[string]any{"role": "user", "content": text, "timestamp": s.millis() + 1000}})
}

// userBlocks appends a user message with content blocks (text, images).
func (s *piSession) userBlocks(blocks ...map[string]any) string {
	return s.add("message", map[string]any{"message": map[string]any{"role": "user", "content": blocks, "timestamp": s.millis() + 1000}})
}

// assistant appends an assistant message.
func (s *piSession) assistant(blocks ...map[string]any) string {
	stop := "stop"
	for _, b := range blocks {
		if b["type"] == "toolCall" {
			stop = "toolUse"
		}
	}
	return s.add("message", map[string]any{"message": map[string]any{
		"role": "assistant", "content": blocks, "api": "anthropic-messages", "provider": "anthropic",
		"model": "claude-sonnet-4-5", "stopReason": stop, "timestamp": s.millis() + 1000,
		"usage": map[string]any{"input": 2000 + 40*s.n, "output": 60, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2060 + 40*s.n},
	}})
}

// toolResult appends the result of call id of tool name.
func (s *piSession) toolResult(id, name string, isError bool, blocks ...map[string]any) string {
	if blocks == nil {
		blocks = []map[string]any{}
	}
	return s.add("message", map[string]any{"message": map[string]any{
		"role": "toolResult", "toolCallId": id, "toolName": name, "content": blocks, "isError": isError, "timestamp": s.millis() + 1000,
	}})
}

// call appends an assistant message calling a host tool and its text
// result; it returns the ids of both entries.
func (s *piSession) call(name string, args any, result string) (callEntry, resultEntry string) {
	id := s.callID()
	callEntry = s.assistant(textBlock("Running "+name+"."), toolCallBlock(id, name, args))
	resultEntry = s.toolResult(id, name, false, textBlock(result))
	return callEntry, resultEntry
}

// compaction appends a compaction: it opens a new window.
func (s *piSession) compaction(summary, firstKept string, tokensBefore int) string {
	return s.add("compaction", map[string]any{"summary": summary, "firstKeptEntryId": firstKept, "tokensBefore": tokensBefore})
}

// branchSummary appends the summary Pi writes when the user navigates the
// tree away from fromID.
func (s *piSession) branchSummary(fromID, summary string) string {
	return s.add("branch_summary", map[string]any{"fromId": fromID, "summary": summary})
}

// control appends a pi-token-budget control message for window.
func (s *piSession) control(kind, window, text string) string {
	return s.add("custom_message", map[string]any{"customType": "pi-token-budget:" + kind, "content": text,
		"display": false, "details": map[string]any{"windowId": window}})
}

// checkout moves the leaf to id: the next entry starts a branch there.
func (s *piSession) checkout(id string) {
	if _, ok := s.parents[id]; !ok {
		panic("checkout of unknown entry " + id)
	}
	s.leaf = id
}

// branch returns the current branch: the path from the root to the leaf.
func (s *piSession) branch() []string {
	var out []string
	for id := s.leaf; id != ""; id = s.parents[id] {
		out = append(out, id)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// unsynced returns the entries added since its last call.
func (s *piSession) unsynced() []json.RawMessage {
	out := s.entries[s.synced:]
	s.synced = len(s.entries)
	return out
}
