package jsonenc

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// encodingJSON is the reference: what encoding/json's Encoder writes for v
// with HTML escaping off, without its final newline.
func encodingJSON(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
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

func seeds(f *testing.F) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 20 {
		f.Add(trickyString(r))
	}
	f.Add("")
	f.Add("plain ascii text longer than one word of eight bytes")
	f.Add("<a href=\"x?a=1&b=2\">\u2028</a>")
}

// checkAppendString: AppendString appends to what dst holds exactly what
// encoding/json writes for s.
func checkAppendString(t *testing.T, s string) {
	t.Helper()
	want := encodingJSON(t, s)
	if got := AppendString([]byte("prefix"), s); !bytes.Equal(got, append([]byte("prefix"), want...)) {
		t.Fatalf("AppendString(%q) = %q, want %q", s, got[6:], want)
	}
}

// checkHTMLEscaped: WriteHTMLEscaped of the unescaped encoding of v is
// json.Marshal's encoding of v.
func checkHTMLEscaped(t *testing.T, v any) {
	t.Helper()
	want, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	WriteHTMLEscaped(&got, encodingJSON(t, v))
	if !bytes.Equal(got.Bytes(), want) {
		t.Fatalf("WriteHTMLEscaped of %#v:\n got %q\nwant %q", v, got.Bytes(), want)
	}
}

func TestAppendStringIsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "a", "abcdefgh", "abcdefghi", `"`, `\`, "\x00", "\x7f", "\u2028", "\u2029", "\xff", "<>&"} {
		checkAppendString(t, s)
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 5000 {
		checkAppendString(t, trickyString(r))
	}
}

func TestWriteHTMLEscapedIsMarshal(t *testing.T) {
	for _, s := range []string{"", "<", ">", "&", "a<b>c&d", "&&&", "\u2028<\u2029"} {
		checkHTMLEscaped(t, s)
	}
	r := rand.New(rand.NewPCG(5, 6))
	for i := range 2000 {
		checkHTMLEscaped(t, map[string]any{trickyString(r): []string{trickyString(r), trickyString(r)}, "n": i})
	}
}

// FuzzAppendString: AppendString writes what encoding/json writes for any
// string, valid UTF-8 or not.
func FuzzAppendString(f *testing.F) {
	seeds(f)
	f.Fuzz(checkAppendString)
}

// FuzzWriteHTMLEscaped: WriteHTMLEscaped makes encoding/json's unescaped
// encoding of any string json.Marshal's.
func FuzzWriteHTMLEscaped(f *testing.F) {
	seeds(f)
	f.Fuzz(func(t *testing.T, s string) { checkHTMLEscaped(t, s) })
}
