package memory

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/tools"
)

// encodingJSON is the reference: what encoding/json's Encoder writes for v
// with HTML escaping off.
func encodingJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// trickyString builds a string of pieces that make encoders take their
// slow paths, between runs of plain ASCII of every length around a word.
func trickyString(r *rand.Rand) string {
	pieces := []string{
		`"`, `\`, "\n", "\r", "\t", "\b", "\f", "\x00", "\x01", "\x1f", "\x7f", " ", "<", ">", "&",
		"é", "中文", "😀", "\u2028", "\u2029", "\u2027", "\u202a", "\xff", "\xe2\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		"\xc0\xaf", "e\u0301", "\ufffd", "\U0010ffff",
	}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(strings.Repeat("abcdefgh"[:1+r.IntN(8)], r.IntN(20)))
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}

// TestNoteHeaderIsCompactJSON: a note read's header line, encoded by
// hand, is what compactJSON writes for its details without the text.
func TestNoteHeaderIsCompactJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	next := 12
	for i := range 2000 {
		d := tools.NotesReadFileDetails{Path: trickyString(r), Text: trickyString(r), StartLine: r.IntN(100), StopLine: -r.IntN(3),
			TotalLines: i, OffsetChars: r.IntN(1 << 20), EndChars: 1 << 40, TotalChars: -1 << 40}
		if i%2 == 0 {
			d.NextOffsetChars = &next
		}
		h := d
		h.Text = ""
		want := compactJSON(struct {
			tools.NotesReadFileDetails
			Text string `json:"text,omitempty"`
		}{NotesReadFileDetails: h})
		if got := readNoteHeader(&d); got != want {
			t.Fatalf("details %d:\n got %q\nwant %q", i, got, want)
		}
	}
}

// TestToolResultJSONIsEncodingJSON: the hand encoding of a result (its
// content blocks and a note read's details) is byte for byte what
// encoding/json writes, for strings of every kind and every shape of
// result.
func TestToolResultJSONIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	next := 7
	for i := range 5000 {
		var res ToolResult
		switch i % 4 {
		case 0: // nil content and details
		case 1:
			res = textResult(trickyString(r), map[string]any{"k": trickyString(r), "n": i})
		default:
			d := tools.NotesReadFileDetails{Path: trickyString(r), Text: trickyString(r), StartLine: r.IntN(100), StopLine: -r.IntN(3),
				TotalLines: i, OffsetChars: r.IntN(1 << 20), EndChars: 1 << 40, TotalChars: -1 << 40}
			if i%3 == 0 {
				d.NextOffsetChars = &next
			}
			res = ToolResult{Details: d, Terminate: i%5 == 0}
			for range r.IntN(3) {
				res.Content = append(res.Content, ContentBlock{Type: trickyString(r), Text: trickyString(r), Data: trickyString(r), MimeType: trickyString(r)})
			}
			if i%7 == 0 {
				res.Content = []ContentBlock{}
			}
		}
		want := encodingJSON(t, res)
		got, err := res.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("result %d:\n got %q\nwant %q", i, got, want)
		}
	}
}

// TestToolResultJSONErrors: details encoding/json cannot encode fail the
// result, as encoding/json fails.
func TestToolResultJSONErrors(t *testing.T) {
	res := textResult("x", map[string]any{"f": func() {}})
	if _, err := res.JSON(); err == nil {
		t.Fatal("a result with a function in its details was encoded")
	}
}

// benchRead is a note read's result: a ~4 KB note, in the content (after
// its header line) and in the details.
func benchRead() (string, tools.NotesReadFileDetails) {
	var text strings.Builder
	for i := 0; text.Len() < 4000; i++ {
		text.WriteString("line 000: the quick brown fox jumps over the lazy dog\n")
	}
	d := tools.NotesReadFileDetails{Path: "notes/bench.md", Text: text.String(), StopLine: 70, TotalLines: 70}
	return `{"path":"notes/bench.md"}` + "\n" + text.String(), d
}

func BenchmarkToolResultJSON(b *testing.B) {
	content, d := benchRead()
	b.SetBytes(int64(len(content) + len(d.Text)))
	for b.Loop() {
		res := textResult(content, d)
		if _, err := res.JSON(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkToolResultEncodingJSON is BenchmarkToolResultJSON by
// encoding/json, for comparison.
func BenchmarkToolResultEncodingJSON(b *testing.B) {
	content, d := benchRead()
	b.SetBytes(int64(len(content) + len(d.Text)))
	for b.Loop() {
		encodingJSON(b, textResult(content, d))
	}
}
