// Package sessiongen builds Pi coding-agent sessions (format version 3)
// deterministically, for tests, benchmarks and tools that feed memoryd's
// history journal. A Builder appends entries to a session tree with
// seeded ids and a fixed clock; scenario functions (Tools, Images,
// Compactions, BranchSwitch, Controls, EmptyMessages, Unicode, Large)
// return ready-made sessions; Read and ReadFile parse a Pi session JSONL
// file and compute its current branch, the path from the last entry to the
// root.
//
// Entries are raw JSON exactly as Pi writes them: one object per line with
// type, id, parentId and timestamp, and per type message, summary,
// customType, content, data and so on.
package sessiongen

import (
	"bufio"
	"bytes"
	"encoding/json"

	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strconv"
	"time"

	"github.com/memoryd/memoryd/internal/history"
)

// Session is a Pi session: its header, its entries in file order (the
// header excluded) and the current branch.
type Session struct {
	// Header is the {"type":"session",...} line, or nil.
	Header json.RawMessage
	// Entries are the session's entries in file order: every branch of
	// the tree, not only the current one.
	Entries []json.RawMessage
	// Branch is the current branch: entry ids from the root to the leaf.
	Branch []string
	// Marks name notable entries of a generated session (name → entry
	// id); nil for a session read from a file.
	Marks map[string]string
}

// Bytes returns the total size of the entries' JSON.
func (s Session) Bytes() int {
	n := 0
	for _, e := range s.Entries {
		n += len(e)
	}
	return n
}

// WriteJSONL writes the session as a Pi session file: the header (if any)
// and then one entry per line.
func (s Session) WriteJSONL(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if len(s.Header) > 0 {
		bw.Write(s.Header)
		bw.WriteByte('\n')
	}
	for _, e := range s.Entries {
		bw.Write(e)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Batches splits entries into consecutive batches of at most maxBytes of
// JSON each (an entry larger than maxBytes is a batch of its own), so a
// large session can be synced in requests under a body limit.
func Batches(entries []json.RawMessage, maxBytes int) [][]json.RawMessage {
	var out [][]json.RawMessage
	start, size := 0, 0
	for i, e := range entries {
		if i > start && size+len(e) > maxBytes {
			out = append(out, entries[start:i])
			start, size = i, 0
		}
		size += len(e)
	}
	if start < len(entries) {
		out = append(out, entries[start:])
	}
	return out
}

// ---- reading session files ----

// head is the tree part of an entry.
type head struct {
	Type     string  `json:"type"`
	ID       string  `json:"id"`
	ParentID *string `json:"parentId"`
}

// maxLine bounds one line of a session file (an entry with images can be
// large).
const maxLine = 256 << 20

// ReadFile reads a Pi session JSONL file. See Read.
func ReadFile(path string) (Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return Session{}, err
	}
	defer f.Close()
	s, err := Read(f)
	if err != nil {
		return Session{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Read parses a Pi session JSONL stream with the parser memoryd itself
// uses (history.ReadSession): an optional header line, one entry per
// line, and the current branch from the last entry to the root.
func Read(r io.Reader) (Session, error) {
	hs, err := history.ReadSession(r)
	if err != nil {
		return Session{}, err
	}
	return Session{Header: hs.Header, Entries: hs.Entries, Branch: hs.Branch}, nil
}

// parentsOf maps each id to its parent id ("" for a root) and checks that
// ids are unique and parents known and earlier.
func parentsOf(heads []head) (map[string]string, error) {
	parents := make(map[string]string, len(heads))
	for _, h := range heads {
		if _, dup := parents[h.ID]; dup {
			return nil, fmt.Errorf("entry id %q appears twice", h.ID)
		}
		p := ""
		if h.ParentID != nil {
			p = *h.ParentID
			if _, ok := parents[p]; !ok && p != "" {
				return nil, fmt.Errorf("entry %q has parentId %q, which is not an earlier entry", h.ID, p)
			}
		}
		parents[h.ID] = p
	}
	return parents, nil
}

func pathTo(parents map[string]string, leaf string) []string {
	var rev []string
	for id := leaf; id != ""; id = parents[id] {
		rev = append(rev, id)
	}
	out := make([]string, len(rev))
	for i, id := range rev {
		out[len(rev)-1-i] = id
	}
	return out
}

// Path returns the branch that ends at leaf: the entry ids from the root
// to leaf, following parentId through entries.
func Path(entries []json.RawMessage, leaf string) ([]string, error) {
	heads := make([]head, len(entries))
	for i, e := range entries {
		if err := json.Unmarshal(e, &heads[i]); err != nil {
			return nil, fmt.Errorf("entries[%d]: %w", i, err)
		}
	}
	parents, err := parentsOf(heads)
	if err != nil {
		return nil, err
	}
	if _, ok := parents[leaf]; !ok {
		return nil, fmt.Errorf("no entry %q", leaf)
	}
	return pathTo(parents, leaf), nil
}

// ---- building sessions ----

// Block is one content block of a message: text, thinking, toolCall or
// image. Build them with Text, Thinking, ToolCall and Image.
type Block struct {
	kind, text, id, name, data, mime string
	args                             json.RawMessage
}

// Text is a text block.
func Text(s string) Block { return Block{kind: "text", text: s} }

// Thinking is a thinking block (never part of a history item's text).
func Thinking(s string) Block { return Block{kind: "thinking", text: s} }

// Image is an image block with base64 data.
func Image(data, mimeType string) Block { return Block{kind: "image", data: data, mime: mimeType} }

// ToolCall is a tool call block; args is marshalled as its arguments.
func ToolCall(id, name string, args any) Block {
	raw, err := json.Marshal(args)
	if err != nil {
		panic(fmt.Sprintf("sessiongen: tool call arguments: %v", err))
	}
	return Block{kind: "toolCall", id: id, name: name, args: raw}
}

// MarshalJSON writes the block as Pi does.
func (b Block) MarshalJSON() ([]byte, error) {
	switch b.kind {
	case "text":
		return json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{b.kind, b.text})
	case "thinking":
		return json.Marshal(struct {
			Type      string `json:"type"`
			Thinking  string `json:"thinking"`
			Signature string `json:"thinkingSignature"`
		}{b.kind, b.text, "sig"})
	case "image":
		return json.Marshal(struct {
			Type     string `json:"type"`
			Data     string `json:"data"`
			MimeType string `json:"mimeType"`
		}{b.kind, b.data, b.mime})
	case "toolCall":
		return json.Marshal(struct {
			Type      string          `json:"type"`
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}{b.kind, b.id, b.name, b.args})
	}
	return nil, fmt.Errorf("sessiongen: unknown block kind %q", b.kind)
}

// Builder appends entries to a session tree. Ids are 8 hex digits drawn
// from a seeded generator and timestamps advance one second per entry
// from a fixed start, so the same calls build the same bytes.
type Builder struct {
	rng     *rand.Rand
	parents map[string]string
	entries []json.RawMessage
	leaf    string
	clock   time.Time
	calls   int
	marks   map[string]string
	header  json.RawMessage
}

// Start is the clock of a new Builder.
var Start = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

// NewBuilder returns an empty session whose ids derive from seed.
func NewBuilder(seed uint64) *Builder {
	b := &Builder{rng: rand.New(rand.NewPCG(seed, 0x5e55)), parents: map[string]string{},
		clock: Start, marks: map[string]string{}}
	h, _ := json.Marshal(struct {
		Type      string `json:"type"`
		Version   int    `json:"version"`
		ID        string `json:"id"`
		Timestamp string `json:"timestamp"`
		Cwd       string `json:"cwd"`
	}{"session", 3, fmt.Sprintf("%016x%016x", b.rng.Uint64(), b.rng.Uint64()), Start.Format(time.RFC3339Nano), "/home/dev/project"})
	b.header = h
	return b
}

func (b *Builder) newID() string {
	for {
		id := fmt.Sprintf("%08x", b.rng.Uint32())
		if _, used := b.parents[id]; !used {
			return id
		}
	}
}

// CallID returns a fresh, deterministic tool-call id (toolu_...).
func (b *Builder) CallID() string {
	b.calls++
	return fmt.Sprintf("toolu_%02d%08x", b.calls, b.rng.Uint32())
}

// add appends an entry of type typ whose other fields are those of body
// (a struct or map marshalling to a JSON object), child of the leaf, and
// makes it the leaf.
func (b *Builder) add(typ string, body any) string {
	id := b.newID()
	var parent *string
	if b.leaf != "" {
		p := b.leaf
		parent = &p
	}
	b.clock = b.clock.Add(time.Second)
	h, err := json.Marshal(struct {
		Type      string  `json:"type"`
		ID        string  `json:"id"`
		ParentID  *string `json:"parentId"`
		Timestamp string  `json:"timestamp"`
	}{typ, id, parent, b.clock.Format("2006-01-02T15:04:05.000Z")})
	if err != nil {
		panic(err)
	}
	raw := h
	if body != nil {
		rest, err := json.Marshal(body)
		if err != nil {
			panic(fmt.Sprintf("sessiongen: %s entry: %v", typ, err))
		}
		if len(rest) > 2 {
			raw = make([]byte, 0, len(h)+len(rest))
			raw = append(raw, h[:len(h)-1]...)
			raw = append(raw, ',')
			raw = append(raw, rest[1:]...)
		}
	}
	b.entries = append(b.entries, raw)
	b.parents[id] = b.leaf
	b.leaf = id
	return id
}

func (b *Builder) millis() int64 { return b.clock.Add(time.Second).UnixMilli() }

type messageBody struct {
	Message any `json:"message"`
}

type userMessage struct {
	Role      string `json:"role"`
	Content   any    `json:"content"`
	Timestamp int64  `json:"timestamp"`
}

type usage struct {
	Input       int `json:"input"`
	Output      int `json:"output"`
	CacheRead   int `json:"cacheRead"`
	CacheWrite  int `json:"cacheWrite"`
	TotalTokens int `json:"totalTokens"`
}

type assistantMessage struct {
	Role       string  `json:"role"`
	Content    []Block `json:"content"`
	API        string  `json:"api"`
	Provider   string  `json:"provider"`
	Model      string  `json:"model"`
	Usage      usage   `json:"usage"`
	StopReason string  `json:"stopReason"`
	Timestamp  int64   `json:"timestamp"`
}

type toolResultMessage struct {
	Role       string  `json:"role"`
	ToolCallID string  `json:"toolCallId"`
	ToolName   string  `json:"toolName,omitempty"`
	Content    []Block `json:"content"`
	IsError    bool    `json:"isError"`
	Timestamp  int64   `json:"timestamp"`
}

// UserText appends a user message whose content is a plain string.
func (b *Builder) UserText(text string) string {
	return b.add("message", messageBody{userMessage{"user", text, b.millis()}})
}

// User appends a user message with content blocks (text, image).
func (b *Builder) User(blocks ...Block) string {
	return b.add("message", messageBody{userMessage{"user", blocks, b.millis()}})
}

// Assistant appends an assistant message with the given blocks.
func (b *Builder) Assistant(blocks ...Block) string {
	stop := "stop"
	for _, bl := range blocks {
		if bl.kind == "toolCall" {
			stop = "toolUse"
		}
	}
	n := 0
	for _, bl := range blocks {
		n += len(bl.text) + len(bl.args)
	}
	return b.add("message", messageBody{assistantMessage{Role: "assistant", Content: blocks,
		API: "anthropic-messages", Provider: "anthropic", Model: "claude-sonnet-4-5",
		Usage:      usage{Input: 1200, Output: n/4 + 1, CacheRead: 30000, TotalTokens: 31200 + n/4 + 1},
		StopReason: stop, Timestamp: b.millis()}})
}

// ToolResult appends the result of call callID of tool toolName (toolName
// may be empty: the result is then linked by toolCallId alone).
func (b *Builder) ToolResult(callID, toolName string, isError bool, blocks ...Block) string {
	if blocks == nil {
		blocks = []Block{}
	}
	return b.add("message", messageBody{toolResultMessage{"toolResult", callID, toolName, blocks, isError, b.millis()}})
}

// Call appends an assistant message calling one tool and its text result,
// and returns the ids of both entries.
func (b *Builder) Call(name string, args any, result string) (callEntry, resultEntry string) {
	id := b.CallID()
	callEntry = b.Assistant(ToolCall(id, name, args))
	resultEntry = b.ToolResult(id, name, false, Text(result))
	return callEntry, resultEntry
}

// BashExecution appends a user "!" shell command run outside the model.
func (b *Builder) BashExecution(command, output string, exitCode int) string {
	return b.add("message", messageBody{struct {
		Role      string `json:"role"`
		Command   string `json:"command"`
		Output    string `json:"output"`
		ExitCode  int    `json:"exitCode"`
		Cancelled bool   `json:"cancelled"`
		Truncated bool   `json:"truncated"`
		Timestamp int64  `json:"timestamp"`
	}{"bashExecution", command, output, exitCode, false, false, b.millis()}})
}

// CustomRoleMessage appends a message of role custom (an extension's
// message as it enters the model context).
func (b *Builder) CustomRoleMessage(customType, text string) string {
	return b.add("message", messageBody{struct {
		Role       string `json:"role"`
		CustomType string `json:"customType"`
		Content    string `json:"content"`
		Display    bool   `json:"display"`
		Timestamp  int64  `json:"timestamp"`
	}{"custom", customType, text, false, b.millis()}})
}

// Compaction appends a Pi-native compaction: it opens a new window.
func (b *Builder) Compaction(summary, firstKeptEntryID string, tokensBefore int) string {
	return b.add("compaction", struct {
		Summary          string `json:"summary"`
		FirstKeptEntryID string `json:"firstKeptEntryId"`
		TokensBefore     int    `json:"tokensBefore"`
	}{summary, firstKeptEntryID, tokensBefore})
}

// ResetSentinel is the firstKeptEntryId of a memoryd rollover compaction:
// it matches no entry, so the new window keeps nothing.
const ResetSentinel = "memoryd:reset"

// Bootstrap returns the summary of a memoryd rollover compaction: the
// <context_window_reset/> marker and an identity block naming window.
func Bootstrap(agent, first, window, previous string) string {
	s := "<context_window_reset/>\nThis is a context-window reset notice, NOT a conversation summary.\n" +
		"Agent: " + agent + "\nFirst context window id: " + first + "\nCurrent context window id: " + window + "\n"
	if previous != "" {
		s += "Previous context window id: " + previous + "\n"
	}
	return s + "Recovery protocol: read your notes checkpoint first (notes_read_file checkpoint.md), then use history_* tools for details.\n" +
		"Existing notes for " + agent + " at this context-window reset\n(no note files)\n"
}

// MarkedCompaction appends a memoryd rollover compaction whose bootstrap
// names window as the new window id.
func (b *Builder) MarkedCompaction(window, previous string) string {
	return b.Compaction(Bootstrap("/root", "w1", window, previous), ResetSentinel, 150000)
}

// BranchSummary appends a branch summary: Pi writes one when the user
// navigates the tree from fromID to the current leaf (see Checkout).
func (b *Builder) BranchSummary(fromID, summary string) string {
	return b.add("branch_summary", struct {
		FromID  string `json:"fromId"`
		Summary string `json:"summary"`
	}{fromID, summary})
}

// CustomMessage appends an extension message that enters the model
// context. Content is a string or blocks.
func (b *Builder) CustomMessage(customType string, content any, display bool) string {
	return b.add("custom_message", struct {
		CustomType string `json:"customType"`
		Content    any    `json:"content"`
		Display    bool   `json:"display"`
	}{customType, content, display})
}

// ControlMessage appends a pi-token-budget control message (kind is e.g.
// "fallback", "reminder", "context-window") for window.
func (b *Builder) ControlMessage(kind, window, text string) string {
	return b.add("custom_message", struct {
		CustomType string            `json:"customType"`
		Content    string            `json:"content"`
		Display    bool              `json:"display"`
		Details    map[string]string `json:"details"`
	}{"pi-token-budget:" + kind, text, false, map[string]string{"windowId": window}})
}

// Custom appends extension state (never a history item).
func (b *Builder) Custom(customType string, data any) string {
	return b.add("custom", struct {
		CustomType string `json:"customType"`
		Data       any    `json:"data"`
	}{customType, data})
}

// ModelChange appends a model change.
func (b *Builder) ModelChange(provider, model string) string {
	return b.add("model_change", struct {
		Provider string `json:"provider"`
		ModelID  string `json:"modelId"`
	}{provider, model})
}

// ThinkingLevelChange appends a thinking level change.
func (b *Builder) ThinkingLevelChange(level string) string {
	return b.add("thinking_level_change", struct {
		ThinkingLevel string `json:"thinkingLevel"`
	}{level})
}

// Label appends a label on target.
func (b *Builder) Label(target, label string) string {
	return b.add("label", struct {
		TargetID string `json:"targetId"`
		Label    string `json:"label"`
	}{target, label})
}

// Raw appends an entry of any type with the given extra fields.
func (b *Builder) Raw(typ string, body any) string { return b.add(typ, body) }

// Checkout moves the leaf to id (an existing entry, or "" for a new
// root): the next entry is its child, starting a new branch there.
func (b *Builder) Checkout(id string) {
	if _, ok := b.parents[id]; !ok && id != "" {
		panic(fmt.Sprintf("sessiongen: checkout of unknown entry %q", id))
	}
	b.leaf = id
}

// Leaf returns the id of the current leaf.
func (b *Builder) Leaf() string { return b.leaf }

// Mark names the current leaf in the session's Marks.
func (b *Builder) Mark(name string) string {
	b.marks[name] = b.leaf
	return b.leaf
}

// Len returns the number of entries so far.
func (b *Builder) Len() int { return len(b.entries) }

// PathTo returns the branch ending at leaf.
func (b *Builder) PathTo(leaf string) []string { return pathTo(b.parents, leaf) }

// Session returns every entry so far, with the current branch ending at
// the leaf.
func (b *Builder) Session() Session {
	marks := make(map[string]string, len(b.marks))
	for k, v := range b.marks {
		marks[k] = v
	}
	return Session{Header: b.header, Entries: append([]json.RawMessage(nil), b.entries...),
		Branch: b.PathTo(b.leaf), Marks: marks}
}

// ---- scenarios ----

// Tools is a session of tool calls and results: bash and read calls with
// results linked by toolCallId (one result without toolName), one
// assistant message calling bash and notes_write_file together, notes_*,
// history_*, get_context_remaining and new_context calls with their
// results, an error result and an empty result. Marks: request, bash_call,
// bash_result, read_call, read_result, pair_call, pair_bash_result,
// pair_notes_result, notes_call, notes_result, history_call,
// history_result, gcr_call, gcr_result, empty_result, error_result, answer.
func Tools() Session {
	b := NewBuilder(1)
	b.UserText("Run the test suite and tell me why TestParse fails.")
	b.Mark("request")
	bash := b.CallID()
	b.Assistant(Thinking("The user wants the failing test; run go test first."),
		Text("Running the tests."), ToolCall(bash, "bash", map[string]any{"command": "go test ./..."}))
	b.Mark("bash_call")
	b.ToolResult(bash, "", false, Text("--- FAIL: TestParse (0.00s)\n    parse_test.go:41: got \"a\", want \"b\"\nFAIL"))
	b.Mark("bash_result")
	b.Call("read", map[string]any{"path": "parse_test.go", "offset": 30, "limit": 20},
		"func TestParse(t *testing.T) {\n\tgot := Parse(\"a\")\n\tif got != \"b\" {")
	b.marks["read_call"], b.marks["read_result"] = b.parents[b.leaf], b.leaf
	pb, pn := b.CallID(), b.CallID()
	b.Assistant(ToolCall(pb, "bash", map[string]any{"command": "git log -1 --oneline"}),
		ToolCall(pn, "notes_write_file", map[string]any{"path": "checkpoint.md", "text": "TestParse fails: want b"}))
	b.Mark("pair_call")
	b.ToolResult(pb, "bash", false, Text("4f1c2ab parse: handle quotes"))
	b.Mark("pair_bash_result")
	b.ToolResult(pn, "notes_write_file", false, Text(`{"path":"/root/notes/checkpoint.md","bytes":23}`))
	b.Mark("pair_notes_result")
	b.Call("notes_read_file", map[string]any{"path": "checkpoint.md"}, "TestParse fails: want b")
	b.marks["notes_call"], b.marks["notes_result"] = b.parents[b.leaf], b.leaf
	b.Call("history_search_contents", map[string]any{"query": "TestParse"}, `{"item_id":"x","window_id":"w1"}`)
	b.marks["history_call"], b.marks["history_result"] = b.parents[b.leaf], b.leaf
	b.Call("get_context_remaining", map[string]any{}, `{"remaining_tokens":120000}`)
	b.marks["gcr_call"], b.marks["gcr_result"] = b.parents[b.leaf], b.leaf
	empty := b.CallID()
	b.Assistant(ToolCall(empty, "bash", map[string]any{"command": "true"}))
	b.ToolResult(empty, "bash", false)
	b.Mark("empty_result")
	bad := b.CallID()
	b.Assistant(ToolCall(bad, "read", map[string]any{"path": "missing.go"}))
	b.ToolResult(bad, "read", true, Text("ENOENT: no such file or directory, open 'missing.go'"))
	b.Mark("error_result")
	b.Assistant(Text("TestParse fails because Parse(\"a\") returns \"a\"; the test expects \"b\"."))
	b.Mark("answer")
	return b.Session()
}

// PNG is a 1×1 transparent PNG, base64.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="

// Images is a session with images: a user message with text and two
// images, an assistant reply, and a read tool result holding an image.
// Marks: screenshot (2 images), reply, image_result (1 image).
func Images() Session {
	b := NewBuilder(2)
	b.User(Text("The login button is misaligned, see the screenshots:"), Image(PNG, "image/png"), Image(PNG, "image/png"))
	b.Mark("screenshot")
	b.Assistant(Text("The button has margin-left: 13px; it should be 12px."))
	b.Mark("reply")
	id := b.CallID()
	b.Assistant(ToolCall(id, "read", map[string]any{"path": "after.png"}))
	b.ToolResult(id, "read", false, Text("Read image file [image/png]"), Image(PNG, "image/png"))
	b.Mark("image_result")
	return b.Session()
}

// Compactions is a session with four windows: w1; a Pi-native compaction
// opening w2; a memoryd rollover compaction whose bootstrap names w4
// (the marked id wins over the ordinal w3); and a second native compaction,
// whose ordinal w4 is taken, so it opens w5. Marks: first, native,
// in_w2, marked, in_w4, native2, in_w5.
func Compactions() Session {
	b := NewBuilder(3)
	b.UserText("Refactor the config loader.")
	b.Mark("first")
	b.Assistant(Text("Splitting config.go into load.go and validate.go."))
	b.Compaction("The user asked to refactor the config loader; config.go was split.", b.Leaf(), 90000)
	b.Mark("native")
	b.UserText("Now add env overrides.")
	b.Mark("in_w2")
	b.Assistant(Text("Added MEMORYD_ env overrides in load.go."))
	b.ControlMessage("fallback", "w2", "Context is nearly full: save a checkpoint in your notes now.")
	b.MarkedCompaction("w4", "w2")
	b.Mark("marked")
	b.ControlMessage("context-window", "w4", "Current context window id: w4")
	b.UserText("Continue with the tests for env overrides.")
	b.Mark("in_w4")
	b.Assistant(Text("Tests added in load_test.go."))
	b.Compaction("Env overrides are implemented and tested.", b.Leaf(), 80000)
	b.Mark("native2")
	b.UserText("Ship it.")
	b.Mark("in_w5")
	return b.Session()
}

// BranchSwitch returns a session tree and two of its branches sharing a
// prefix. a is the session as it was on branch A (only A's entries,
// ending at A's leaf); b is the whole tree after the user navigated back
// to the shared prefix and continued on branch B, which has a compaction
// of its own. Marks (on both): shared_user, shared_reply, a_user, a_only,
// summary, b_user, b_compaction, b_leaf.
func BranchSwitch() (a, b Session) {
	g := NewBuilder(4)
	g.UserText("Speed up the JSON encoder.")
	g.Mark("shared_user")
	g.Assistant(Text("Two options: a pooled buffer, or a code-generated encoder."))
	fork := g.Mark("shared_reply")
	g.UserText("Try the pooled buffer (approach A).")
	g.Mark("a_user")
	g.Assistant(Text("Approach A: sync.Pool of bytes.Buffer; 8% faster."))
	g.Mark("a_only")
	a = g.Session()
	aLeaf := g.Leaf()
	g.Checkout(fork)
	g.BranchSummary(aLeaf, "Tried approach A (sync.Pool buffers): 8% faster, not enough.")
	g.Mark("summary")
	g.UserText("Try the code-generated encoder instead (approach B).")
	g.Mark("b_user")
	g.Compaction("Approach B in progress: generator scaffolding written.", g.Leaf(), 70000)
	g.Mark("b_compaction")
	g.Assistant(Text("Approach B: generated encoders are 41% faster."))
	g.Mark("b_leaf")
	b = g.Session()
	a.Marks = b.Marks
	return a, b
}

// Controls is a session with control records: pi-token-budget control
// custom messages (reminder, fallback, context-window), a custom-role
// control message, another extension's custom message (kept), extension
// state, model and thinking level changes, a label, and a new_context call
// with its result. Marks: request, reminder, fallback, other_ext,
// continue, new_context_call, new_context_result, answer.
func Controls() Session {
	b := NewBuilder(5)
	b.ModelChange("anthropic", "claude-sonnet-4-5")
	b.ThinkingLevelChange("high")
	b.UserText("Migrate the scheduler to the new queue API.")
	b.Mark("request")
	b.Custom("pi-token-budget:state", map[string]any{"windowId": "w1", "pendingNewContext": false})
	b.Assistant(Text("Migrating scheduler.go to queue.v2."))
	b.ControlMessage("reminder", "w1", "About 25% of the context window is left: keep taking incremental notes.")
	b.Mark("reminder")
	b.CustomMessage("todo-extension:list", "TODO: migrate scheduler; update docs", true)
	b.Mark("other_ext")
	b.ControlMessage("fallback", "w1", "The context window is nearly full: write your checkpoint to notes now, then call new_context.")
	b.Mark("fallback")
	b.CustomRoleMessage("pi-token-budget:continue", "Continue from your checkpoint.")
	b.Mark("continue")
	b.Label(b.Leaf(), "before-rollover")
	b.Call("new_context", map[string]any{}, `{"pending":true,"window_id":"w1"}`)
	b.marks["new_context_call"], b.marks["new_context_result"] = b.parents[b.leaf], b.leaf
	b.Assistant(Text("Scheduler migrated; queue.v2 is in use everywhere."))
	b.Mark("answer")
	return b.Session()
}

// EmptyMessages is a session with entries that are no history items (a
// thinking-only assistant message, a whitespace-only user message, an
// empty-string user message, a user message whose content is neither a
// string nor an array) next to ones that are (an empty tool result, a
// compaction with an empty summary). Marks: request, thinking_only,
// blank_user, empty_user, odd_user, empty_result, empty_compaction, answer.
func EmptyMessages() Session {
	b := NewBuilder(6)
	b.UserText("Check the disk usage.")
	b.Mark("request")
	b.Assistant(Thinking("Nothing to say yet; I will think about df first."))
	b.Mark("thinking_only")
	b.UserText(" \n\t  ")
	b.Mark("blank_user")
	b.UserText("")
	b.Mark("empty_user")
	b.add("message", messageBody{userMessage{"user", 42, b.millis()}})
	b.Mark("odd_user")
	id := b.CallID()
	b.Assistant(ToolCall(id, "bash", map[string]any{"command": "df -h >/dev/null"}))
	b.ToolResult(id, "bash", false, Text("  "))
	b.Mark("empty_result")
	b.Compaction("", b.Leaf(), 1000)
	b.Mark("empty_compaction")
	b.Assistant(Thinking("done"), Text("Disk usage is fine."))
	b.Mark("answer")
	return b.Session()
}

// UnicodeText has emoji (including a ZWJ sequence and a flag), combining
// characters, CJK and ASCII.
const UnicodeText = "Résumé: e\u0301te\u0301 👩‍💻 fixed 🇯🇵 日本語のテスト and naïve café ☕; a\u0308\u0332 done 😀."

// Unicode is a session whose messages mix emoji, combining characters
// and CJK: a user message of UnicodeText, an assistant reply with two
// text parts, and a tool result. Marks: user, reply, result.
func Unicode() Session {
	b := NewBuilder(7)
	b.UserText(UnicodeText)
	b.Mark("user")
	b.Assistant(Text("見つけた 🎉"), Thinking("隠された考え"), Text("Zoë's 🧑🏽‍🔬 patch"))
	b.Mark("reply")
	id := b.CallID()
	b.Assistant(ToolCall(id, "bash", map[string]any{"command": "echo 'ü 😀'"}))
	b.ToolResult(id, "bash", false, Text("ü 😀\n"))
	b.Mark("result")
	return b.Session()
}

// Needles of Large sessions.
const (
	// LargeRareNeedle occurs in exactly one entry of a Large session
	// (marked "rare").
	LargeRareNeedle = "ZQX-RARE-NEEDLE-4417"
	// LargeCommonNeedle occurs in nearly every tool result.
	LargeCommonNeedle = "error"
)

var words = []string{
	"worker", "batch", "processed", "in", "ms", "queue", "request", "handler", "cache", "miss", "hit",
	"the", "a", "config", "loaded", "from", "disk", "retry", "timeout", "connection", "reset", "by", "peer",
	"GET", "/api/v1/items", "200", "404", "500", "user", "session", "token", "refreshed", "scheduler",
	"tick", "job", "done", "started", "warning", "slow", "query", "index", "rebuild", "shard", "replica",
	"lag", "commit", "flush", "wal", "checkpoint", "compaction", "ok", "failed", "error", "panic", "goroutine",
}

// text writes about n bytes of log-like lines to buf.
func logText(r *rand.Rand, buf *bytes.Buffer, n int) {
	start := buf.Len()
	line := 0
	for buf.Len()-start < n {
		line++
		buf.WriteString("2026-12-02T10:")
		buf.WriteString(strconv.Itoa(10 + r.IntN(50)))
		buf.WriteString(":00Z ")
		if line%12 == 0 {
			buf.WriteString("ERROR ")
		} else {
			buf.WriteString("INFO ")
		}
		for k := 6 + r.IntN(10); k > 0; k-- {
			buf.WriteString(words[r.IntN(len(words))])
			buf.WriteByte(' ')
		}
		buf.WriteString(strconv.Itoa(r.IntN(100000)))
		buf.WriteByte('\n')
	}
}

// Large returns a session of about sizeBytes bytes of entries: turns of a
// user request, an assistant message (thinking, text and a bash or read
// call) and its tool result of 1–32 KB of log lines, with a Pi-native
// compaction about every 8 MB. LargeRareNeedle occurs in one tool result
// near the middle (mark "rare"); LargeCommonNeedle in nearly every tool
// result. Mark "big" is the largest tool result. The same size always
// gives the same session; 50 MB take well under a second to build.
func Large(sizeBytes int) Session {
	r := rand.New(rand.NewPCG(uint64(sizeBytes), 0x1a29e))
	b := NewBuilder(8)
	var buf bytes.Buffer
	size, sinceCompaction, turn, biggest := 0, 0, 0, 0
	rareAt := sizeBytes / 2
	rareDone := false
	for size < sizeBytes {
		turn++
		before := len(b.entries)
		b.UserText(fmt.Sprintf("Step %d: look at the %s %s logs and fix what is wrong 😀.", turn,
			words[r.IntN(len(words))], words[r.IntN(len(words))]))
		id := b.CallID()
		var call Block
		if turn%3 == 0 {
			call = ToolCall(id, "read", map[string]any{"path": fmt.Sprintf("logs/%s-%d.log", words[r.IntN(len(words))], turn)})
		} else {
			call = ToolCall(id, "bash", map[string]any{"command": fmt.Sprintf("tail -n %d /var/log/app/%s.log", 50+r.IntN(400), words[r.IntN(len(words))])})
		}
		b.Assistant(Thinking("Check the log for the failing "+words[r.IntN(len(words))]+"."), Text("Reading the logs."), call)
		buf.Reset()
		n := 1024 + r.IntN(31*1024)
		logText(r, &buf, n)
		rare := !rareDone && size >= rareAt
		if rare {
			buf.WriteString("2026-12-02T10:59:59Z ERROR " + LargeRareNeedle + " checksum mismatch in shard 7\n")
			rareDone = true
		}
		b.ToolResult(id, call.name, false, Text(buf.String()))
		if rare {
			b.Mark("rare")
		}
		if n > biggest {
			biggest = n
			b.Mark("big")
		}
		if turn%4 == 0 {
			b.Assistant(Text(fmt.Sprintf("Turn %d: the %s looks healthy now.", turn, words[r.IntN(len(words))])))
		}
		for _, e := range b.entries[before:] {
			size += len(e)
			sinceCompaction += len(e)
		}
		if sinceCompaction >= 8<<20 && size < sizeBytes {
			b.Compaction(fmt.Sprintf("Turns up to %d: logs inspected, fixes applied.", turn), b.Leaf(), 150000)
			sinceCompaction = 0
		}
	}
	return b.Session()
}
