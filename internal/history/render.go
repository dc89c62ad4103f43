// Package history turns raw Pi session entries into history items.
//
// It canonicalises entries for equality, renders each entry's canonical
// safe text, assigns public roles and tool namespaces, and recognises
// control records. The safe text leaves thinking out and shows tool calls
// and images as placeholders. The package is pure, so the same entry
// always renders the same way.
package history

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"
)

// ControlPrefix starts the customType of pi-token-budget's control messages.
const ControlPrefix = "pi-token-budget:"

// ResetMarker starts the summary of the bootstrap, the compaction that a
// memoryd rollover writes.
const ResetMarker = "<context_window_reset/>"

// Tool namespaces.
const (
	NamespaceFunctions = "functions"
	NamespaceNotes     = "notes"
	NamespaceHistory   = "history"
)

// Call is one tool call of an assistant message.
type Call struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// Image is one image content block.
type Image struct {
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
}

// Rendered is what one entry contributes to history.
type Rendered struct {
	// Item reports whether the entry is a history item at all.
	Item bool
	// Role is the public role, one of user, assistant, tool, system or developer.
	Role string
	// RawRole is the role as Pi wrote it in message.role, or else the entry type.
	RawRole string
	// Text is the canonical safe text.
	Text string
	// Breaks are the code-point offsets of the newlines that join the
	// entry's blocks in Text. No search match may span one.
	Breaks []int
	// Images counts the entry's image blocks.
	Images int
	// Calls are the tool calls of an assistant message.
	Calls []Call
	// CallsOnly reports an assistant message made of tool calls alone.
	CallsOnly bool
	// ToolCallID and ToolName identify the call a toolResult answers.
	ToolCallID, ToolName string
	// Compaction reports a compaction entry, which opens a new window.
	Compaction bool
	// Control reports a control record of pi-token-budget, either a control
	// custom message or a bootstrap compaction.
	Control bool
	// WindowID is the window a marked bootstrap compaction names, if any.
	WindowID string
}

// entry is the part of a Pi session entry that rendering reads.
type entry struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Message    *message        `json:"message"`
	Summary    *string         `json:"summary"`
	CustomType string          `json:"customType"`
	Content    json.RawMessage `json:"content"`
}

type message struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	ToolCallID string          `json:"toolCallId"`
	ToolName   string          `json:"toolName"`
	CustomType string          `json:"customType"`
	Command    string          `json:"command"`
	Output     string          `json:"output"`
	ExitCode   *int64          `json:"exitCode"`
	Cancelled  bool            `json:"cancelled"`
	Truncated  bool            `json:"truncated"`
	Summary    *string         `json:"summary"`
}

type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Data      string          `json:"data"`
	MimeType  string          `json:"mimeType"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// Render renders one raw entry, matching its keys exactly.
func Render(raw []byte) Rendered { return render(raw, hasVariantKey(raw)) }

// render is Render, decoding by exact keys when exact is set.
func render(raw []byte, exact bool) Rendered {
	e, err := decodeEntry(raw, exact)
	if err != nil {
		return Rendered{} // invalid JSON or not an object renders as no item
	}
	switch e.Type {
	case "message":
		if e.Message == nil {
			return Rendered{}
		}
		return renderMessage(e.Message, exact)
	case "compaction":
		r := Rendered{Item: true, Role: "user", RawRole: "compaction", Compaction: true, Text: summaryText(e.Summary)}
		if strings.HasPrefix(r.Text, ResetMarker) {
			r.Control = true
			r.WindowID = markedWindowID(r.Text)
		}
		return r
	case "branch_summary":
		return Rendered{Item: true, Role: "user", RawRole: "branch_summary", Text: summaryText(e.Summary)}
	case "custom_message":
		text, breaks, images, ok := renderUserContent(e.Content, exact)
		r := Rendered{Role: "user", RawRole: "custom_message", Text: text, Breaks: breaks, Images: images,
			Control: strings.HasPrefix(e.CustomType, ControlPrefix)}
		r.Item = ok && nonBlank(text)
		return r
	}
	return Rendered{} // session header, custom state, model/thinking changes, labels, session info
}

func summaryText(s *string) string {
	if s == nil || *s == "" {
		return "[empty summary]"
	}
	return *s
}

// markedWindowID reads "Current context window id: <id>" from a bootstrap.
func markedWindowID(text string) string {
	const key = "Current context window id: "
	for _, line := range strings.Split(text, "\n") {
		if id, ok := strings.CutPrefix(strings.TrimSpace(line), key); ok {
			id = strings.TrimSpace(id)
			if validWindowID(id) {
				return id
			}
		}
	}
	return ""
}

// validWindowID accepts short ids of letters, digits, '-' and '_'.
func validWindowID(id string) bool {
	if id == "" || len(id) > 64 {
		return false
	}
	for _, c := range id {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func renderMessage(m *message, exact bool) Rendered {
	r := Rendered{RawRole: m.Role}
	switch m.Role {
	case "user", "system", "developer":
		text, breaks, images, ok := renderUserContent(m.Content, exact)
		r.Role, r.Text, r.Breaks, r.Images = m.Role, text, breaks, images
		r.Item = ok && nonBlank(text)
	case "custom":
		text, breaks, images, ok := renderUserContent(m.Content, exact)
		r.Role, r.Text, r.Breaks, r.Images = "user", text, breaks, images
		r.Control = strings.HasPrefix(m.CustomType, ControlPrefix)
		r.Item = ok && nonBlank(text)
	case "assistant":
		blocks, ok := parseBlocks(m.Content, exact)
		if !ok {
			return Rendered{}
		}
		var parts []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				parts = append(parts, b.Text)
			case "thinking", "redacted_thinking", "toolResult":
				// never part of the body
			case "toolCall":
				args := canonicalOrRaw(b.Arguments)
				parts = append(parts, fmt.Sprintf("[tool_call %s] %s", b.Name, args))
				r.Calls = append(r.Calls, Call{ID: b.ID, Name: b.Name})
			case "image":
				parts = append(parts, "[image]")
				r.Images++
			default:
				parts = append(parts, fmt.Sprintf("[%s block omitted]", b.Type))
			}
		}
		r.Role = "assistant"
		r.Text, r.Breaks = joinParts(parts)
		r.CallsOnly = len(r.Calls) > 0 && len(r.Calls) == len(parts)
		r.Item = nonBlank(r.Text)
	case "toolResult":
		text, breaks, images, _ := renderUserContent(m.Content, exact)
		if !nonBlank(text) {
			text, breaks = "[empty tool result]", nil
		}
		r.Item, r.Role, r.Text, r.Breaks, r.Images = true, "tool", text, breaks, images
		r.ToolCallID, r.ToolName = m.ToolCallID, m.ToolName
	case "bashExecution":
		var b strings.Builder
		b.WriteString("$ " + m.Command)
		if m.Output != "" {
			b.WriteString("\n" + m.Output)
		}
		if m.Cancelled {
			b.WriteString("\n[cancelled]")
		} else if m.ExitCode != nil && *m.ExitCode != 0 {
			fmt.Fprintf(&b, "\n[exit code %d]", *m.ExitCode)
		}
		if m.Truncated {
			b.WriteString("\n[output truncated]")
		}
		r.Item, r.Role, r.Text = true, "user", b.String()
	case "branchSummary", "compactionSummary":
		r.Item, r.Role, r.Text = true, "user", summaryText(m.Summary)
	}
	return r
}

// renderUserContent renders a string or an array of text/image blocks.
// ok is false for content that is neither.
func renderUserContent(raw json.RawMessage, exact bool) (text string, breaks []int, images int, ok bool) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil, 0, true
	}
	blocks, ok := parseBlocks(raw, exact)
	if !ok {
		return "", nil, 0, false
	}
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			parts = append(parts, b.Text)
		case "image":
			parts = append(parts, "[image]")
			images++
		case "thinking", "redacted_thinking", "toolResult":
		default:
			parts = append(parts, fmt.Sprintf("[%s block omitted]", b.Type))
		}
	}
	text, breaks = joinParts(parts)
	return text, breaks, images, true
}

// joinParts joins parts with newlines and returns the newlines' offsets.
func joinParts(parts []string) (string, []int) {
	var b strings.Builder
	var breaks []int
	n := 0
	for i, p := range parts {
		if i > 0 {
			breaks = append(breaks, n)
			b.WriteByte('\n')
			n++
		}
		b.WriteString(p)
		n += utf8.RuneCountInString(p)
	}
	return b.String(), breaks
}

func parseBlocks(raw json.RawMessage, exact bool) ([]block, bool) {
	if len(raw) == 0 || raw[0] != '[' {
		return nil, false
	}
	blocks, err := decodeBlocks(raw, exact)
	if err != nil {
		return nil, false
	}
	return blocks, true
}

func nonBlank(s string) bool { return strings.TrimSpace(s) != "" }

// Images returns the valid image blocks of a raw entry, in order.
func Images(raw []byte) []Image {
	exact := hasVariantKey(raw)
	e, err := decodeEntry(raw, exact)
	if err != nil {
		return nil
	}
	content := e.Content
	if e.Message != nil {
		content = e.Message.Content
	}
	blocks, _ := parseBlocks(content, exact)
	var out []Image
	for _, b := range blocks {
		if b.Type == "image" && b.Data != "" && strings.HasPrefix(b.MimeType, "image/") {
			out = append(out, Image{Data: b.Data, MimeType: b.MimeType})
		}
	}
	return out
}

// Namespace returns the namespace of a Pi tool name, which is notes for
// notes_*, history for history_* and functions for everything else.
func Namespace(tool string) string {
	switch {
	case strings.HasPrefix(tool, "notes_"):
		return NamespaceNotes
	case strings.HasPrefix(tool, "history_"):
		return NamespaceHistory
	}
	return NamespaceFunctions
}

// Internal reports whether a tool is one of memoryd's own, whose records
// are hidden by default.
func Internal(tool string) bool {
	return Namespace(tool) != NamespaceFunctions || tool == "get_context_remaining" || tool == "new_context"
}

// NameMatches reports whether a tool_name filter names tool by its Pi name
// or, in the notes and history namespaces, by a short name such as write_file.
func NameMatches(filter, tool string) bool {
	if filter == tool {
		return true
	}
	ns := Namespace(tool)
	return ns != NamespaceFunctions && ns+"_"+filter == tool
}

// Canonical returns the canonical form of a JSON value, with object keys
// sorted, no insignificant space and numbers as written. Two entries are
// equal when their canonical forms are.
func Canonical(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("trailing data after JSON value")
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, k)
			buf.WriteByte(':')
			if err := writeCanonical(buf, x[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case string:
		writeString(buf, x)
	case json.Number:
		buf.WriteString(x.String())
	case bool:
		if x {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case nil:
		buf.WriteString("null")
	default:
		return fmt.Errorf("unexpected JSON value %T", v)
	}
	return nil
}

func writeString(buf *bytes.Buffer, s string) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	buf.Truncate(buf.Len() - 1)
}

// canonicalOrRaw renders tool-call arguments as compact canonical JSON.
func canonicalOrRaw(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "{}"
	}
	if c, err := Canonical(raw); err == nil {
		return string(c)
	}
	return string(raw)
}

// Chars counts code points.
func Chars(s string) int { return utf8.RuneCountInString(s) }
