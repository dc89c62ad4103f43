// Package codex reads Codex CLI's rollouts as history.
//
// A rollout is the JSONL file Codex writes for each thread, one record a
// line: {"timestamp","ordinal","type","payload"} (docs/codex.md, §4).
// Converter turns each line into the Pi-shaped session entries memoryd's
// history already knows, as internal/claudecode does for Claude Code, so
// a Codex session is synced, searched and replayed by the same code as a
// Pi session. The conversion is pure and depends only on the lines
// before, so a line converts the same way however the file is read in
// pieces.
//
// A rollout has no parent pointers: it is linear, and each entry's parent
// is the entry before it. Every record becomes one entry, named by its
// line's ordinal as "o<ordinal>"; Codex numbers lines from 0 and goes on
// numbering when a resumed session appends to the same file, so the ids
// of the old lines stay what they were. A line without an ordinal, or
// whose ordinal is not above the last one used, is named by its line
// number in the file instead, "line<n>" from 1. Either way an id is
// unique in its file and the same on every read.
//
// Only conversation items become history items: messages, reasoning, tool
// calls and their outputs, and compactions. The other records (the
// session's and turns' metadata, token counts, Codex's events) become
// entries of type "codex" that keep the file whole and render as no item.
package codex

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/memoryd/memoryd/internal/history"
)

// ToolPrefix starts the name of memoryd's tools when the MCP server is
// registered as memoryd: Codex offers them in the namespace mcp__memoryd.
// History names them without it, as Pi does, so memoryd's own records
// stay hidden by default.
const ToolPrefix = "mcp__memoryd__"

// The customType of the custom messages made of Codex's harness text, the
// text the model saw but the user did not type.
const (
	// CustomDeveloper is a developer message: the system prompt, skills,
	// permissions and collaboration-mode instructions.
	CustomDeveloper = "codex:developer"
	// CustomHookContext is a hook's additionalContext (memoryd's bootstrap
	// among them), which Codex writes as a developer message.
	CustomHookContext = "codex:hook_context"
	// CustomEnvironmentContext is the <environment_context> Codex sends as
	// a user message.
	CustomEnvironmentContext = "codex:environment_context"
	// CustomHarness is other text Codex sends as a user message, such as
	// a sub-agent's notification.
	CustomHarness = "codex:harness"
)

// EntryType is the type of the entries made of records that are not
// conversation items; they render as no history item.
const EntryType = "codex"

// Entry is one Pi-shaped session entry made from a rollout line.
type Entry = history.Entry

// State is what conversion carries from one line to the next. It is kept
// between reads of a growing file.
type State struct {
	// Lines counts the lines converted so far, blank and broken ones too.
	Lines int64 `json:"lines"`
	// NextOrdinal is the least ordinal a line's id may be made from.
	NextOrdinal int64 `json:"next_ordinal"`
	// Last is the id of the latest entry, the parent of the next.
	Last string `json:"last,omitempty"`
	// Calls maps the call id of each tool call not answered yet to its
	// tool's name, which its output is given.
	Calls map[string]string `json:"calls,omitempty"`
	// Provider and Model are the session's model provider and the latest
	// turn's model, which assistant messages name.
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
}

// Converter converts a rollout's lines in file order.
type Converter struct {
	State State
	meta  *SessionMeta // the latest session_meta converted
}

// Usage is the token usage of a model response as Codex counts it, with
// the model's context window.
type Usage struct {
	InputTokens           int64 `json:"input_tokens"`
	CachedInputTokens     int64 `json:"cached_input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	ReasoningOutputTokens int64 `json:"reasoning_output_tokens"`
	TotalTokens           int64 `json:"total_tokens"`
	ContextWindow         int64 `json:"model_context_window,omitempty"`
}

// ContextTokens is the context the response's request filled, plus its
// output, which the next request carries: Codex's total_tokens, as Codex
// itself counts the window used. After a compaction Codex reports its
// estimate of the new window there, with no input tokens.
func (u Usage) ContextTokens() int64 {
	if u.TotalTokens > 0 {
		return u.TotalTokens
	}
	return u.InputTokens + u.OutputTokens
}

// line is a rollout line.
type line struct {
	Timestamp string          `json:"timestamp"`
	Ordinal   json.RawMessage `json:"ordinal"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

// item is the part of a response_item's payload the conversion reads.
type item struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	Summary   []part          `json:"summary"`
	Name      string          `json:"name"`
	Namespace string          `json:"namespace"`
	Arguments json.RawMessage `json:"arguments"`
	Input     json.RawMessage `json:"input"`
	CallID    string          `json:"call_id"`
	Output    json.RawMessage `json:"output"`
	Meta      *struct {
		Kinds []string `json:"content_item_kinds"`
	} `json:"internal_chat_message_metadata_passthrough"`
}

// part is one content part of a message, a reasoning item or a tool output.
type part struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Refusal  string `json:"refusal"`
	ImageURL string `json:"image_url"`
}

// Line converts the file's next line (each call is one line, so that ids
// by line number count right). A blank line becomes no entry; a line that
// is not a JSON object, or whose record cannot be read, is an error and
// becomes no entry. usage is the line's token usage, for a token count.
func (c *Converter) Line(raw []byte) (entries []Entry, usage *Usage, err error) {
	c.State.Lines++
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return nil, nil, nil
	}
	if trimmed[0] != '{' {
		return nil, nil, fmt.Errorf("line %d is not a JSON object", c.State.Lines)
	}
	var l line
	if err := json.Unmarshal(trimmed, &l); err != nil {
		return nil, nil, fmt.Errorf("line %d is not a rollout record: %w", c.State.Lines, err)
	}
	id, next := c.id(l.Ordinal)
	e, usage, err := c.convert(l, id, c.State.Last, piTime(l.Timestamp))
	if err != nil {
		return nil, nil, fmt.Errorf("line %d (%s): %w", c.State.Lines, kind(l), err)
	}
	c.State.NextOrdinal, c.State.Last = next, id
	return []Entry{e}, usage, nil
}

// id names a line by its ordinal when it has one above the last used,
// else by its line number; next is the NextOrdinal after it.
func (c *Converter) id(ordinal json.RawMessage) (id string, next int64) {
	if n, err := strconv.ParseInt(string(ordinal), 10, 64); err == nil && n >= c.State.NextOrdinal && n < 1<<62 {
		return "o" + strconv.FormatInt(n, 10), n + 1
	}
	return "line" + strconv.FormatInt(c.State.Lines, 10), c.State.NextOrdinal
}

func (c *Converter) convert(l line, id, parent string, ts int64) (Entry, *Usage, error) {
	switch l.Type {
	case "response_item":
		var it item
		if err := json.Unmarshal(l.Payload, &it); err != nil {
			return Entry{}, nil, fmt.Errorf("payload: %w", err)
		}
		e, ok, err := c.responseItem(it, id, parent, ts)
		if err != nil || ok {
			return e, nil, err
		}
	case "compacted":
		e, err := compaction(l.Payload, id, parent, ts)
		return e, nil, err
	case "event_msg":
		e := record(id, parent, ts, map[string]any{"type": EntryType, "kind": kind(l)})
		return e, tokenCount(l.Payload), nil
	case "session_meta":
		if m, provider, ok := metaOf(l.Payload); ok {
			c.meta = &m
			if provider != "" {
				c.State.Provider = provider
			}
		}
	case "turn_context":
		var p struct {
			Model string `json:"model"`
		}
		if json.Unmarshal(l.Payload, &p) == nil && p.Model != "" {
			c.State.Model = p.Model
		}
	}
	return record(id, parent, ts, map[string]any{"type": EntryType, "kind": kind(l)}), nil, nil
}

// kind names a record that is not a conversation item: its type, then
// its payload's type for events and response items, then an
// item_completed event's item type ("event_msg/item_completed/McpToolCall").
func kind(l line) string {
	k := l.Type
	if k == "" {
		k = "unknown"
	}
	if l.Type != "event_msg" && l.Type != "response_item" {
		return k
	}
	var p struct {
		Type string `json:"type"`
		Item *struct {
			Type string `json:"type"`
		} `json:"item"`
	}
	if json.Unmarshal(l.Payload, &p) != nil || p.Type == "" {
		return k
	}
	k += "/" + p.Type
	if p.Item != nil && p.Item.Type != "" {
		k += "/" + p.Item.Type
	}
	return k
}

// responseItem converts a conversation item; ok is false for an item of
// another type (a web search, a remote compaction's opaque item, ...).
func (c *Converter) responseItem(it item, id, parent string, ts int64) (e Entry, ok bool, err error) {
	switch it.Type {
	case "message":
		e, err := c.message(it, id, parent, ts)
		return e, true, err
	case "reasoning":
		return c.assistant(id, parent, ts, reasoning(it), "stop"), true, nil
	case "function_call", "custom_tool_call":
		name := toolName(it.Namespace, it.Name)
		args := arguments(it.Arguments)
		if it.Type == "custom_tool_call" {
			// A freeform tool's input is text, not JSON arguments.
			args, _ = json.Marshal(map[string]json.RawMessage{"input": nonEmpty(it.Input)})
		}
		if it.CallID != "" {
			if c.State.Calls == nil {
				c.State.Calls = map[string]string{}
			}
			c.State.Calls[it.CallID] = name
		}
		call := map[string]any{"type": "toolCall", "id": it.CallID, "name": name, "arguments": args}
		return c.assistant(id, parent, ts, []map[string]any{call}, "toolUse"), true, nil
	case "function_call_output", "custom_tool_call_output":
		content, isError := output(it.Output)
		msg := map[string]any{"role": "toolResult", "toolCallId": it.CallID, "content": content, "isError": isError, "timestamp": ts}
		if name, ok := c.State.Calls[it.CallID]; ok {
			msg["toolName"] = name
			delete(c.State.Calls, it.CallID)
		}
		return record(id, parent, ts, map[string]any{"type": "message", "message": msg}), true, nil
	}
	return Entry{}, false, nil
}

// message converts a message: the user's text, the model's answer, or
// Codex's harness text as a custom message, which the model saw but the
// user did not type (content_item_kinds tells them apart).
func (c *Converter) message(it item, id, parent string, ts int64) (Entry, error) {
	parts, err := partsOf(it.Content)
	if err != nil {
		return Entry{}, err
	}
	var kinds []string
	if it.Meta != nil {
		kinds = it.Meta.Kinds
	}
	switch it.Role {
	case "assistant":
		// Also the answer to a compaction's request, which the compacted
		// record that follows carries as its summary (docs/codex.md, §5):
		// it is the model's, in the window it closes.
		return c.assistant(id, parent, ts, blocks(parts), "stop"), nil
	case "user":
		if typed(kinds) {
			msg := map[string]any{"role": "user", "content": blocks(parts), "timestamp": ts}
			return record(id, parent, ts, map[string]any{"type": "message", "message": msg}), nil
		}
		customType := CustomHarness
		if slices.Contains(kinds, "environments.environment_context") {
			customType = CustomEnvironmentContext
		}
		return custom(id, parent, ts, customType, kinds, parts), nil
	}
	customType := CustomDeveloper // developer, or any other role Codex gives its own text
	if slices.Contains(kinds, "hooks.additional_context") {
		customType = CustomHookContext
	}
	return custom(id, parent, ts, customType, kinds, parts), nil
}

// typed reports whether a user message is the user's: one of its kinds is
// user.*, or Codex named none.
func typed(kinds []string) bool {
	if len(kinds) == 0 {
		return true
	}
	for _, k := range kinds {
		if strings.HasPrefix(k, "user.") {
			return true
		}
	}
	return false
}

// custom is harness text as a custom message, not displayed, with its
// content kinds as details.
func custom(id, parent string, ts int64, customType string, kinds []string, parts []part) Entry {
	e := map[string]any{"type": "custom_message", "customType": customType, "content": blocks(parts), "display": false}
	if len(kinds) > 0 {
		e["details"] = map[string]any{"kinds": kinds}
	}
	return record(id, parent, ts, e)
}

// assistant is an assistant message of the given blocks.
func (c *Converter) assistant(id, parent string, ts int64, content []map[string]any, stop string) Entry {
	msg := map[string]any{"role": "assistant", "content": content, "api": "openai-responses", "provider": c.State.Provider,
		"model": c.State.Model, "stopReason": stop, "timestamp": ts}
	return record(id, parent, ts, map[string]any{"type": "message", "message": msg})
}

// reasoning is a reasoning item as thinking: one block per summary part,
// then one per part of its raw content, if Codex kept any. The encrypted
// content is opaque and left out.
func reasoning(it item) []map[string]any {
	var out []map[string]any
	for _, p := range it.Summary {
		out = append(out, map[string]any{"type": "thinking", "thinking": p.Text})
	}
	if parts, err := partsOf(it.Content); err == nil {
		for _, p := range parts {
			if p.Text != "" {
				out = append(out, map[string]any{"type": "thinking", "thinking": p.Text})
			}
		}
	}
	if len(out) == 0 {
		out = append(out, map[string]any{"type": "thinking", "thinking": ""})
	}
	return out
}

// arguments are a function call's arguments, which Codex keeps as the
// JSON text the model wrote: that JSON, or the text itself as a string
// when it is not JSON.
func arguments(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return json.RawMessage(`{}`)
	}
	s, ok := stringOf(raw)
	if !ok {
		return raw // already JSON
	}
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return json.RawMessage(`{}`)
	case json.Valid([]byte(t)):
		return json.RawMessage(t)
	}
	return raw // the text, as a JSON string
}

func nonEmpty(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`""`)
	}
	return raw
}

// toolName is a call's name in history: namespace__name for a namespaced
// tool (an MCP server's tools are in the namespace mcp__<server>), with
// ToolPrefix taken off, so memoryd's own tools keep their Pi names.
func toolName(namespace, name string) string {
	if namespace != "" {
		name = namespace + "__" + name
	}
	return strings.TrimPrefix(name, ToolPrefix)
}

// output converts a tool's output: a string, an array of content items,
// or an object with content and success.
func output(raw json.RawMessage) (content []map[string]any, isError bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return []map[string]any{}, false
	}
	if s, ok := stringOf(raw); ok {
		return []map[string]any{{"type": "text", "text": s}}, false
	}
	if parts, err := partsOf(raw); err == nil {
		return blocks(parts), false
	}
	var obj struct {
		Content json.RawMessage `json:"content"`
		Success *bool           `json:"success"`
	}
	if json.Unmarshal(raw, &obj) == nil && len(obj.Content) > 0 {
		content, _ = output(obj.Content)
		return content, obj.Success != nil && !*obj.Success
	}
	return []map[string]any{{"type": "text", "text": string(raw)}}, false
}

// blocks converts content parts to Pi's content blocks: text stays text,
// an image given as a data URL an image; other parts are kept by type.
func blocks(parts []part) []map[string]any {
	out := make([]map[string]any, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text", "summary_text", "reasoning_text":
			out = append(out, map[string]any{"type": "text", "text": p.Text})
		case "refusal":
			out = append(out, map[string]any{"type": "text", "text": p.Refusal})
		case "input_image", "output_image", "image":
			if data, mime, ok := dataURL(p.ImageURL); ok {
				out = append(out, map[string]any{"type": "image", "data": data, "mimeType": mime})
				continue
			}
			out = append(out, map[string]any{"type": p.Type})
		default:
			out = append(out, map[string]any{"type": p.Type})
		}
	}
	return out
}

// dataURL reads a base64 image data URL.
func dataURL(u string) (data, mime string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	mime, data, ok = strings.Cut(rest, ";base64,")
	if !ok || !strings.HasPrefix(mime, "image/") {
		return "", "", false
	}
	return data, mime, true
}

// compaction converts a compacted record: a compaction entry under the
// line before it, which opens a new window, as claudecode does with a
// compact_boundary. Its summary is Codex's message, the text the next
// window starts from; the usage of the compaction's request is the
// context compacted (tokensBefore). Codex keeps the user's recent messages
// in the new window, not a tail of the old one, so no entry is named as
// the first kept (firstKeptEntryId). The model's answer to the
// compaction's request, written just before, stays an assistant message
// of the window it closes: it is what the model wrote there.
func compaction(payload json.RawMessage, id, parent string, ts int64) (Entry, error) {
	var p struct {
		Message string `json:"message"`
		Latest  *struct {
			Usage *Usage `json:"usage"`
		} `json:"latest_token_usage_record"`
	}
	if err := json.Unmarshal(payload, &p); err != nil {
		return Entry{}, fmt.Errorf("payload: %w", err)
	}
	summary := p.Message
	if strings.TrimSpace(summary) == "" {
		summary = "Conversation compacted"
	}
	e := map[string]any{"type": "compaction", "summary": summary}
	if p.Latest != nil && p.Latest.Usage != nil {
		e["tokensBefore"] = p.Latest.Usage.ContextTokens()
	}
	return record(id, parent, ts, e), nil
}

// tokenCount reads the usage of a token_count event: the last response's,
// with the model's context window. It is nil for other events, and for a
// token count without usage (rate limits only) or one it cannot read.
func tokenCount(payload json.RawMessage) *Usage {
	var tc struct {
		Type string `json:"type"`
		Info *struct {
			Last   *Usage `json:"last_token_usage"`
			Window int64  `json:"model_context_window"`
		} `json:"info"`
	}
	if json.Unmarshal(payload, &tc) != nil || tc.Type != "token_count" || tc.Info == nil || tc.Info.Last == nil {
		return nil
	}
	u := *tc.Info.Last
	u.ContextWindow = tc.Info.Window
	return &u
}

// SessionMeta is what a rollout's session_meta says of its thread.
type SessionMeta struct {
	// ID is the thread's id, which names the rollout file.
	ID string `json:"id"`
	// SessionID is the root session's id: the thread's own, or for a
	// sub-agent its parent session's, as in its hooks' session_id.
	SessionID string `json:"session_id"`
	// ParentThreadID is the thread that spawned a sub-agent, "" for a
	// session's own thread.
	ParentThreadID string `json:"parent_thread_id,omitempty"`
	// AgentNickname is the name Codex gave a sub-agent.
	AgentNickname string `json:"agent_nickname,omitempty"`
	Cwd           string `json:"cwd,omitempty"`
	CLIVersion    string `json:"cli_version,omitempty"`
}

// Meta reads a session_meta line; ok is false for any other line.
func Meta(raw []byte) (meta SessionMeta, ok bool) {
	var l line
	if json.Unmarshal(bytes.TrimSpace(raw), &l) != nil || l.Type != "session_meta" {
		return SessionMeta{}, false
	}
	meta, _, ok = metaOf(l.Payload)
	return meta, ok
}

// metaOf reads a session_meta's payload, and the session's model provider.
func metaOf(payload json.RawMessage) (meta SessionMeta, provider string, ok bool) {
	var p struct {
		SessionMeta
		Source        json.RawMessage `json:"source"`
		ModelProvider string          `json:"model_provider"`
	}
	if json.Unmarshal(payload, &p) != nil || p.ID == "" {
		return SessionMeta{}, "", false
	}
	meta = p.SessionMeta
	if meta.SessionID == "" {
		meta.SessionID = meta.ID
	}
	if meta.ParentThreadID == "" {
		var src struct {
			Subagent struct {
				ThreadSpawn struct {
					ParentThreadID string `json:"parent_thread_id"`
				} `json:"thread_spawn"`
			} `json:"subagent"`
		}
		if json.Unmarshal(p.Source, &src) == nil {
			meta.ParentThreadID = src.Subagent.ThreadSpawn.ParentThreadID
		}
	}
	return meta, p.ModelProvider, true
}

// record marshals an entry with its id, parent and time.
func record(id, parent string, ts int64, fields map[string]any) Entry {
	return history.NewEntry(id, parent, ts, fields)
}

// partsOf decodes content parts; absent content is none, and a string
// one text part.
func partsOf(raw json.RawMessage) ([]part, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if s, ok := stringOf(raw); ok {
		return []part{{Type: "text", Text: s}}, nil
	}
	var parts []part
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, fmt.Errorf("content is not an array of parts: %w", err)
	}
	return parts, nil
}

func stringOf(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || raw[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(raw, &s) == nil
}

// piTime is a rollout timestamp in Unix milliseconds, 0 when absent.
func piTime(s string) int64 {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0
	}
	return t.UnixMilli()
}
