package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/jsonenc"
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

// JSON returns the result as a response body: compact JSON without HTML
// escaping, ending in a newline, byte for byte what encoding/json's
// Encoder (SetEscapeHTML(false)) writes. It is encoded once, by the first
// call: the read audit fingerprints the same bytes the response carries.
//
// The content blocks, and the details of a note read, are encoded by
// hand (their strings by jsonenc.AppendString); other details by
// encoding/json.
func (r *ToolResult) JSON() ([]byte, error) {
	if r.body != nil {
		return r.body, nil
	}
	// The buffer's size: the strings, an eighth more for escapes (a
	// newline every 50 bytes needs a 50th), and the keys.
	size := 64
	for _, b := range r.Content {
		n := len(b.Type) + len(b.Text) + len(b.Data) + len(b.MimeType)
		size += n + n/8 + 48
	}
	var buf []byte
	switch d := r.Details.(type) {
	case readNoteDetails:
		n := len(d.Path) + len(d.Text)
		buf = make([]byte, 0, size+n+n/8+256)
		buf = r.appendContent(buf)
		buf = d.appendJSON(buf)
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

// writeMarshalJSON writes to w what json.Marshal writes for r (HTML
// escaping on, no final newline), from its response body (r.JSON): the
// two encodings differ only in <, > and & inside strings.
func (r *ToolResult) writeMarshalJSON(w io.Writer) error {
	body, err := r.JSON()
	if err != nil {
		return err
	}
	jsonenc.WriteHTMLEscaped(w, bytes.TrimSuffix(body, []byte("\n")))
	return nil
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

func chars(s string) int {
	if isASCII(s) {
		return len(s)
	}
	return utf8.RuneCountInString(s)
}

// isASCII reports whether s is all ASCII, eight bytes at a time.
func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if w&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// omissionLine is the last line of a list that left records out.
func omissionLine(omitted int, hint string) string {
	return compactJSON(struct {
		Omitted int    `json:"omitted"`
		Hint    string `json:"hint"`
	}{omitted, hint})
}

// fitLines keeps the longest prefix of lines (one record each) that fits in
// budget code points together with, when anything is left out, the
// omission line. omittedBefore counts records already dropped (by a limit).
// It returns how many lines were kept and the text.
func fitLines(lines []string, budget, omittedBefore int, hint string) (int, string) {
	total := 0
	for _, l := range lines {
		total += chars(l) + 1
	}
	if omittedBefore == 0 && total-1 <= budget {
		return len(lines), strings.Join(lines, "\n")
	}
	reserve := chars(omissionLine(omittedBefore+len(lines), hint))
	used, kept := 0, 0
	for _, l := range lines {
		n := chars(l) + 1
		if used+n+reserve > budget {
			break
		}
		used += n
		kept++
	}
	var b strings.Builder
	for _, l := range lines[:kept] {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString(omissionLine(omittedBefore+len(lines)-kept, hint))
	return kept, b.String()
}

// limitList cuts recs to the tool's limit and returns how many it left out.
func limitList[T any](recs []T, limit int) ([]T, int) {
	return recs[:min(len(recs), limit)], max(0, len(recs)-limit)
}

// fitList is the tail the list and search tools share: recs, already cut
// to the tool's limit (omitted counts the records the limit left out), one
// line of compact JSON each, fitted to budget by fitLines. It returns the
// text, the records shown and how many were left out in all.
func fitList[T any](recs []T, budget, omitted int, hint string) (string, []T, int) {
	return fitRendered(recs, jsonLines(recs), budget, omitted, hint)
}

// jsonLines renders each of recs as one line of compact JSON.
func jsonLines[T any](recs []T) []string {
	lines := make([]string, len(recs))
	for i := range recs {
		lines[i] = compactJSON(recs[i])
	}
	return lines
}

// fitRendered is fitList for records whose lines the caller rendered
// (lines[i] is recs[i]): a tool that shapes a record to fit its line, or
// tries a record in several shapes.
func fitRendered[T any](recs []T, lines []string, budget, omitted int, hint string) (string, []T, int) {
	kept, text := fitLines(lines, budget, omitted, hint)
	return text, recs[:kept], omitted + len(recs) - kept
}

// count is a JSON integer argument. Values beyond int64 saturate, so a
// huge limit is clamped like any other limit above its maximum.
type count int64

func (c *count) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	if i, err := n.Int64(); err == nil {
		*c = count(i)
		return nil
	}
	r, ok := new(big.Rat).SetString(n.String())
	if !ok || !r.IsInt() {
		return fmt.Errorf("%s is not an integer", n)
	}
	if i := r.Num(); i.IsInt64() { // an integral 2.0 or 1e2
		*c = count(i.Int64())
		return nil
	}
	if r.Sign() > 0 {
		*c = math.MaxInt64
	} else {
		*c = math.MinInt64
	}
	return nil
}

// limitOr returns *c clamped to [1, max], or def when c is nil.
func limitOr(c *count, def, max int) int {
	if c == nil {
		return def
	}
	return int(min(int64(*c), int64(max)))
}

// sliceChars returns the code points [off, off+n) of s (n < 0: to the end),
// with off clamped to the end.
func sliceChars(s string, off, n int) string {
	if isASCII(s) { // a code point per byte
		off = min(off, len(s))
		if n < 0 || off+n > len(s) {
			return s[off:]
		}
		return s[off : off+n]
	}
	i := 0
	for k := 0; k < off && i < len(s); k++ {
		_, w := utf8.DecodeRuneInString(s[i:])
		i += w
	}
	if n < 0 {
		return s[i:]
	}
	j := i
	for k := 0; k < n && j < len(s); k++ {
		_, w := utf8.DecodeRuneInString(s[j:])
		j += w
	}
	return s[i:j]
}
