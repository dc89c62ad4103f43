package sessiongen

import (
	"encoding/json"
	"fmt"
)

// Block is one text, thinking, toolCall or image block of a message.
// Build them with Text, Thinking, ToolCall and Image.
type Block struct {
	kind, text, id, name, data, mime string
	args                             json.RawMessage
}

// Text is a text block.
func Text(s string) Block { return Block{kind: "text", text: s} }

// Thinking is a thinking block, which is never part of a history item's text.
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
