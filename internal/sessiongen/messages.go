package sessiongen

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

// User appends a user message with text and image blocks.
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

// ToolResult appends the result of call callID of tool toolName. With an
// empty toolName the result is linked by toolCallId alone.
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

// CustomRoleMessage appends a message of role custom, the form an
// extension's message takes in the model context.
func (b *Builder) CustomRoleMessage(customType, text string) string {
	return b.add("message", messageBody{struct {
		Role       string `json:"role"`
		CustomType string `json:"customType"`
		Content    string `json:"content"`
		Display    bool   `json:"display"`
		Timestamp  int64  `json:"timestamp"`
	}{"custom", customType, text, false, b.millis()}})
}
