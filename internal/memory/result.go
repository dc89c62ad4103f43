package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/memoryd/memoryd/internal/jsonenc"
	"github.com/memoryd/memoryd/internal/tools"
)

// ContentBlock is one block of a tool result the model sees.
type ContentBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text,omitempty"`
	Data     string `json:"data,omitempty"`
	MimeType string `json:"mimeType,omitempty"`
}

// ToolResult is a tool's successful result.
type ToolResult struct {
	Content   []ContentBlock `json:"content"`
	Details   any            `json:"details"`
	Terminate bool           `json:"terminate"`

	body []byte // the encoding of the above, once JSON has made it
}

// JSON returns the result as a response body, byte for byte what an
// encoding/json Encoder with HTML escaping off writes.
func (r *ToolResult) JSON() ([]byte, error) {
	// Encoded once, so the read audit fingerprints the same bytes the
	// response carries.
	if r.body != nil {
		return r.body, nil
	}
	// The buffer is sized for the strings, an eighth more for escapes, and
	// the keys. Text with a newline every 50 bytes needs only a 50th more.
	size := 64
	for _, b := range r.Content {
		n := len(b.Type) + len(b.Text) + len(b.Data) + len(b.MimeType)
		size += n + n/8 + 48
	}
	var buf []byte
	switch d := r.Details.(type) {
	case tools.NotesReadFileDetails:
		// A note read's details are encoded by hand, like the content
		// blocks. Other details go through encoding/json.
		n := len(d.Path) + len(d.Text)
		buf = make([]byte, 0, size+n+n/8+256)
		buf = r.appendContent(buf)
		buf = appendReadNote(buf, &d)
	default:
		var details bytes.Buffer
		enc := json.NewEncoder(&details)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(r.Details); err != nil {
			return nil, err
		}
		buf = make([]byte, 0, size+details.Len())
		buf = r.appendContent(buf)
		buf = append(buf, bytes.TrimSuffix(details.Bytes(), []byte("\n"))...)
	}
	buf = append(buf, `,"terminate":`...)
	buf = strconv.AppendBool(buf, r.Terminate)
	r.body = append(buf, '}', '\n')
	return r.body, nil
}

// appendContent appends the result's first fields, up to the details.
func (r *ToolResult) appendContent(dst []byte) []byte {
	dst = append(dst, `{"content":`...)
	if r.Content == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i, b := range r.Content {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"type":`...)
			dst = jsonenc.AppendString(dst, b.Type)
			for _, f := range []struct{ key, v string }{{`,"text":`, b.Text}, {`,"data":`, b.Data}, {`,"mimeType":`, b.MimeType}} {
				if f.v != "" { // omitempty
					dst = jsonenc.AppendString(append(dst, f.key...), f.v)
				}
			}
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, `,"details":`...)
}

func textResult(text string, details any) ToolResult {
	return ToolResult{Content: []ContentBlock{{Type: "text", Text: text}}, Details: details}
}

// compactJSON marshals v as one line of compact JSON without HTML escaping.
func compactJSON(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("memory: marshal %T: %v", v, err)) // only plain structs are marshalled
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
