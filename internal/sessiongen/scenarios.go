package sessiongen

// Tools is a session of tool calls and results, of Pi's tools and of
// memoryd's own. Its marks name each call and result.
func Tools() Session {
	b := NewBuilder(1)
	b.UserText("Run the test suite and tell me why TestParse fails.")
	b.Mark("request")
	bash := b.CallID()
	b.Assistant(Thinking("The user wants the failing test; run go test first."),
		Text("Running the tests."), ToolCall(bash, "bash", map[string]any{"command": "go test ./..."}))
	b.Mark("bash_call")
	// This result has no toolName and is linked by toolCallId alone.
	b.ToolResult(bash, "", false, Text("--- FAIL: TestParse (0.00s)\n    parse_test.go:41: got \"a\", want \"b\"\nFAIL"))
	b.Mark("bash_result")
	b.Call("read", map[string]any{"path": "parse_test.go", "offset": 30, "limit": 20},
		"func TestParse(t *testing.T) {\n\tgot := Parse(\"a\")\n\tif got != \"b\" {")
	b.marks["read_call"], b.marks["read_result"] = b.parents[b.leaf], b.leaf
	// One assistant message calls bash and notes_write_file together.
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

// Images is a session with images in a user message and in a read tool
// result. Its marks are screenshot, reply and image_result.
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

// Compactions is a session with the four windows w1, w2, w4 and w5,
// opened by Pi-native and memoryd rollover compactions.
func Compactions() Session {
	b := NewBuilder(3)
	b.UserText("Refactor the config loader.")
	b.Mark("first")
	b.Assistant(Text("Splitting config.go into load.go and validate.go."))
	b.Compaction("The user asked to refactor the config loader; config.go was split.", b.Leaf(), 90000) // opens w2
	b.Mark("native")
	b.UserText("Now add env overrides.")
	b.Mark("in_w2")
	b.Assistant(Text("Added MEMORYD_ env overrides in load.go."))
	b.ControlMessage("fallback", "w2", "Context is nearly full: save a checkpoint in your notes now.")
	// The bootstrap names w4, and the marked id wins over the ordinal w3.
	b.MarkedCompaction("w4", "w2")
	b.Mark("marked")
	b.ControlMessage("context-window", "w4", "Current context window id: w4")
	b.UserText("Continue with the tests for env overrides.")
	b.Mark("in_w4")
	b.Assistant(Text("Tests added in load_test.go."))
	// The ordinal w4 is taken, so this compaction opens w5.
	b.Compaction("Env overrides are implemented and tested.", b.Leaf(), 80000)
	b.Mark("native2")
	b.UserText("Ship it.")
	b.Mark("in_w5")
	return b.Session()
}

// BranchSwitch returns a session as it was on branch A and as it is after
// the user went back to the prefix A shares with branch B and continued
// there. a holds only A's entries; b is the whole tree. Both carry b's marks.
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

// Controls is a session with pi-token-budget's control records among other
// extensions' records, model and thinking level changes, a label and a
// new_context call.
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
	// Another extension's custom message is kept as a history item.
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

// EmptyMessages is a session with empty entries, some of which are no
// history items and some of which are.
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
	// A content that is neither a string nor an array makes no item.
	b.add("message", messageBody{userMessage{"user", 42, b.millis()}})
	b.Mark("odd_user")
	id := b.CallID()
	b.Assistant(ToolCall(id, "bash", map[string]any{"command": "df -h >/dev/null"}))
	// An empty tool result and a compaction with an empty summary are
	// history items all the same.
	b.ToolResult(id, "bash", false, Text("  "))
	b.Mark("empty_result")
	b.Compaction("", b.Leaf(), 1000)
	b.Mark("empty_compaction")
	b.Assistant(Thinking("done"), Text("Disk usage is fine."))
	b.Mark("answer")
	return b.Session()
}

// UnicodeText mixes emoji, a ZWJ sequence and a flag among them, with
// combining characters, CJK and ASCII.
const UnicodeText = "Résumé: e\u0301te\u0301 👩‍💻 fixed 🇯🇵 日本語のテスト and naïve café ☕; a\u0308\u0332 done 😀."

// Unicode is a session whose messages mix emoji, combining characters and
// CJK. Its marks are user, reply and result.
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
