// Package claudecode reads Claude Code's session transcripts as history.
//
// A transcript is a JSONL file whose lines form a tree by uuid and
// parentUuid (docs/claude-code.md, §4). Converter turns each line into the
// Pi-shaped session entries memoryd's history already knows, so a Claude
// Code session is synced, searched and replayed by the same code as a Pi
// session. The conversion is pure and depends only on the lines before,
// so a line converts the same way however the file is read in pieces.
package claudecode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/memoryd/memoryd/internal/history"
)

// ToolPrefix starts the name Claude Code gives memoryd's tools when the
// MCP server is registered as memoryd. History names them without it, as
// Pi does, so memoryd's own records stay hidden by default.
const ToolPrefix = "mcp__memoryd__"

// SubagentTranscript is the transcript of a session's sub-agent, beside
// the session's own: <session>/subagents/agent-<id>.jsonl.
func SubagentTranscript(session, agentID string) string {
	return filepath.Join(strings.TrimSuffix(session, ".jsonl"), "subagents", "agent-"+agentID+".jsonl")
}

// Entry is one Pi-shaped session entry made from a transcript line.
type Entry = history.Entry

// State is what conversion carries from one line to the next. It is kept
// between reads of a growing file.
type State struct {
	// Reparent maps each entry a compaction replaced to the entry that
	// now takes its children.
	Reparent map[string]string `json:"reparent,omitempty"`
	// Seen holds the ids converted so far, and Last the latest of them. A
	// line whose parent is not in the file (Claude Code sometimes names
	// an entry it kept in memory only) continues from Last.
	Seen map[string]bool `json:"seen,omitempty"`
	Last string          `json:"last,omitempty"`
}

// parent resolves a line's parent: through a compaction that replaced
// it, and to the latest entry when it is not in the file.
func (s *State) parent(p string) string {
	if to, ok := s.Reparent[p]; ok {
		p = to
	}
	if p != "" && !s.Seen[p] {
		p = s.Last
	}
	return p
}

// saw records the entries a line became.
func (s *State) saw(entries []Entry) {
	if len(entries) == 0 {
		return
	}
	if s.Seen == nil {
		s.Seen = map[string]bool{}
	}
	for _, e := range entries {
		s.Seen[e.ID] = true
	}
	s.Last = entries[len(entries)-1].ID
}

// Converter converts a transcript's lines in file order.
type Converter struct {
	State State
}

// line is the part of a transcript line the conversion reads.
type line struct {
	Type              string          `json:"type"`
	Subtype           string          `json:"subtype"`
	UUID              string          `json:"uuid"`
	ParentUUID        *string         `json:"parentUuid"`
	LogicalParentUUID string          `json:"logicalParentUuid"`
	Timestamp         string          `json:"timestamp"`
	IsMeta            bool            `json:"isMeta"`
	IsCompactSummary  bool            `json:"isCompactSummary"`
	Content           json.RawMessage `json:"content"`
	Message           *struct {
		Role       string          `json:"role"`
		Model      string          `json:"model"`
		Content    json.RawMessage `json:"content"`
		StopReason string          `json:"stop_reason"`
		Usage      *Usage          `json:"usage"`
	} `json:"message"`
	Attachment *struct {
		Type string `json:"type"`
	} `json:"attachment"`
	CompactMetadata *struct {
		Trigger          string `json:"trigger"`
		PreTokens        int64  `json:"preTokens"`
		PostTokens       int64  `json:"postTokens"`
		PreservedSegment *struct {
			HeadUUID   string `json:"headUuid"`
			AnchorUUID string `json:"anchorUuid"`
		} `json:"preservedSegment"`
	} `json:"compactMetadata"`
}

// Usage is an assistant message's token usage as the Anthropic API reports it.
type Usage struct {
	InputTokens              int64 `json:"input_tokens"`
	OutputTokens             int64 `json:"output_tokens"`
	CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
}

// ContextTokens is the context the message's request filled, plus its
// output, which the next request carries.
func (u Usage) ContextTokens() int64 {
	return u.InputTokens + u.CacheCreationInputTokens + u.CacheReadInputTokens + u.OutputTokens
}

// block is one content block of a Claude message.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  string          `json:"thinking"`
	Signature string          `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	IsError   bool            `json:"is_error"`
	Source    *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
	} `json:"source"`
}

// Line converts one transcript line. A line without a uuid (queue
// operations, modes, the last prompt, file snapshots) becomes no entry;
// usage is the line's token usage, for an assistant line that has one.
func (c *Converter) Line(raw []byte) (entries []Entry, usage *Usage, err error) {
	entries, usage, err = c.line(raw)
	if err == nil {
		c.State.saw(entries)
	}
	return entries, usage, err
}

func (c *Converter) line(raw []byte) ([]Entry, *Usage, error) {
	var l line
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if l.UUID == "" {
		return nil, nil, nil
	}
	parent := ""
	if l.ParentUUID != nil {
		parent = c.State.parent(*l.ParentUUID)
	}
	ts := piTime(l.Timestamp)
	switch {
	case l.Type == "system" && l.Subtype == "compact_boundary":
		return c.compaction(l, ts), nil, nil
	case (l.Type == "user" || l.Type == "assistant") && l.Message != nil:
		if l.IsCompactSummary && c.State.Reparent != nil {
			// No anchor named: the summary takes the compacted entry's
			// children from here on.
			for from, to := range c.State.Reparent {
				if to == parent {
					c.State.Reparent[from] = l.UUID
				}
			}
		}
		if l.Type == "assistant" {
			e, err := assistant(l, parent, ts)
			return []Entry{e}, l.Message.Usage, err
		}
		entries, err := user(l, parent, ts)
		return entries, nil, err
	}
	kind := l.Type
	if l.Subtype != "" {
		kind += "/" + l.Subtype
	} else if l.Attachment != nil && l.Attachment.Type != "" {
		kind += "/" + l.Attachment.Type
	}
	return []Entry{record(l.UUID, parent, ts, map[string]any{"type": "claude_code", "kind": kind})}, nil, nil
}

// compaction converts a compact_boundary: a compaction entry under the
// entry it compacted, which opens a new window. The boundary itself is a
// root in the transcript; the lines written after it that continue from
// the compacted entry continue from the summary instead.
func (c *Converter) compaction(l line, ts int64) []Entry {
	parent := c.State.parent(l.LogicalParentUUID)
	if l.LogicalParentUUID == "" {
		parent = c.State.Last
	}
	summary := "Conversation compacted"
	if s := jsonString(l.Content); s != "" {
		summary = s
	}
	e := map[string]any{"type": "compaction", "summary": summary}
	takeover := l.UUID
	if m := l.CompactMetadata; m != nil {
		e["trigger"] = m.Trigger
		e["tokensBefore"] = m.PreTokens
		e["tokensAfter"] = m.PostTokens
		if m.PreservedSegment != nil {
			if m.PreservedSegment.HeadUUID != "" {
				e["firstKeptEntryId"] = m.PreservedSegment.HeadUUID
			}
			if m.PreservedSegment.AnchorUUID != "" {
				takeover = m.PreservedSegment.AnchorUUID
			}
		}
	}
	if l.LogicalParentUUID != "" {
		if c.State.Reparent == nil {
			c.State.Reparent = map[string]string{}
		}
		c.State.Reparent[l.LogicalParentUUID] = takeover
	}
	return []Entry{record(l.UUID, parent, ts, e)}
}

// assistant converts an assistant line: text stays text, thinking stays
// thinking, and a tool_use becomes a toolCall.
func assistant(l line, parent string, ts int64) (Entry, error) {
	blocks, err := blocksOf(l.Message.Content)
	if err != nil {
		return Entry{}, err
	}
	content := make([]map[string]any, 0, len(blocks))
	for _, b := range blocks {
		switch b.Type {
		case "text":
			content = append(content, map[string]any{"type": "text", "text": b.Text})
		case "thinking":
			t := map[string]any{"type": "thinking", "thinking": b.Thinking}
			if b.Signature != "" {
				t["thinkingSignature"] = b.Signature
			}
			content = append(content, t)
		case "redacted_thinking":
			content = append(content, map[string]any{"type": "redacted_thinking", "data": b.Data})
		case "tool_use", "server_tool_use":
			args := b.Input
			if len(args) == 0 {
				args = json.RawMessage("{}")
			}
			content = append(content, map[string]any{"type": "toolCall", "id": b.ID, "name": strings.TrimPrefix(b.Name, ToolPrefix), "arguments": args})
		default:
			content = append(content, map[string]any{"type": b.Type})
		}
	}
	msg := map[string]any{"role": "assistant", "content": content, "provider": "anthropic", "api": "anthropic-messages",
		"model": l.Message.Model, "stopReason": stopReason(l.Message.StopReason), "timestamp": ts}
	if u := l.Message.Usage; u != nil {
		msg["usage"] = map[string]any{"input": u.InputTokens, "output": u.OutputTokens, "cacheRead": u.CacheReadInputTokens,
			"cacheWrite": u.CacheCreationInputTokens, "totalTokens": u.ContextTokens()}
	}
	return record(l.UUID, parent, ts, map[string]any{"type": "message", "message": msg}), nil
}

// user converts a user line. Its tool results become one toolResult
// message each, and its other blocks one user message; the line's uuid
// names the last of them, which the next line continues from, and the
// others are chained before it as <uuid>#<n>.
func user(l line, parent string, ts int64) ([]Entry, error) {
	if s, ok := stringContent(l.Message.Content); ok {
		return []Entry{userMessage(l, l.UUID, parent, ts, s)}, nil
	}
	blocks, err := blocksOf(l.Message.Content)
	if err != nil {
		return nil, err
	}
	type part struct {
		result *block
		rest   []map[string]any
	}
	var parts []part
	var rest []map[string]any
	for i := range blocks {
		b := &blocks[i]
		if b.Type == "tool_result" {
			parts = append(parts, part{result: b})
			continue
		}
		rest = append(rest, contentBlock(*b))
	}
	if len(rest) > 0 {
		parts = append(parts, part{rest: rest})
	}
	if len(parts) == 0 {
		parts = append(parts, part{rest: []map[string]any{}})
	}
	out := make([]Entry, 0, len(parts))
	prev := parent
	for i, p := range parts {
		id := l.UUID
		if i < len(parts)-1 {
			id = fmt.Sprintf("%s#%d", l.UUID, i)
		}
		var e Entry
		if p.result != nil {
			e = toolResult(id, prev, ts, *p.result)
		} else {
			e = userMessage(l, id, prev, ts, p.rest)
		}
		out = append(out, e)
		prev = id
	}
	return out, nil
}

// userMessage is a user message; a compaction's summary, as Pi keeps
// one; or a custom message for the lines Claude Code adds itself
// (isMeta), which the model saw but the user did not type.
func userMessage(l line, id, parent string, ts int64, content any) Entry {
	if s, ok := content.(string); ok && l.IsCompactSummary {
		msg := map[string]any{"role": "compactionSummary", "summary": s, "timestamp": ts}
		return record(id, parent, ts, map[string]any{"type": "message", "message": msg})
	}
	if l.IsMeta {
		return record(id, parent, ts, map[string]any{"type": "custom_message", "customType": "claude-code:meta",
			"content": content, "display": false})
	}
	msg := map[string]any{"role": "user", "content": content, "timestamp": ts}
	return record(id, parent, ts, map[string]any{"type": "message", "message": msg})
}

// toolResult is a tool_result block as a toolResult message. Its tool's
// name is the call's, which history looks up by the call id.
func toolResult(id, parent string, ts int64, b block) Entry {
	var content any = []map[string]any{}
	if s, ok := stringContent(b.Content); ok {
		content = []map[string]any{{"type": "text", "text": s}}
	} else if inner, err := blocksOf(b.Content); err == nil && len(inner) > 0 {
		blocks := make([]map[string]any, 0, len(inner))
		for _, ib := range inner {
			blocks = append(blocks, contentBlock(ib))
		}
		content = blocks
	}
	msg := map[string]any{"role": "toolResult", "toolCallId": b.ToolUseID, "content": content, "isError": b.IsError, "timestamp": ts}
	return record(id, parent, ts, map[string]any{"type": "message", "message": msg})
}

// contentBlock converts a user or tool-result content block.
func contentBlock(b block) map[string]any {
	switch b.Type {
	case "text":
		return map[string]any{"type": "text", "text": b.Text}
	case "image":
		if b.Source != nil && b.Source.Type == "base64" {
			return map[string]any{"type": "image", "data": b.Source.Data, "mimeType": b.Source.MediaType}
		}
	}
	return map[string]any{"type": b.Type}
}

// record marshals an entry with its id, parent and time.
func record(id, parent string, ts int64, fields map[string]any) Entry {
	return history.NewEntry(id, parent, ts, fields)
}

func blocksOf(raw json.RawMessage) ([]block, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var blocks []block
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return nil, fmt.Errorf("message content is neither text nor blocks: %w", err)
	}
	return blocks, nil
}

func stringContent(raw json.RawMessage) (string, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

func jsonString(raw json.RawMessage) string {
	s, _ := stringContent(raw)
	return s
}

// stopReason names an Anthropic stop reason as Pi does.
func stopReason(r string) string {
	switch r {
	case "tool_use":
		return "toolUse"
	case "max_tokens":
		return "length"
	case "", "end_turn", "stop_sequence":
		return "stop"
	}
	return r
}

// piTime is a transcript timestamp in Unix milliseconds, 0 when absent.
func piTime(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}
