package memory

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestResultDigestIsMarshalDigest checks that the digest hashed from the
// response body (unescaped, escaped on the way into the hash) is the
// SHA-256 of json.Marshal's encoding, the definition recorded logs use,
// for texts full of what the two encodings treat differently.
func TestResultDigestIsMarshalDigest(t *testing.T) {
	pieces := []string{"<", ">", "&", "<&>", "\u2028", "\u2029", "\"", "\\", "\n", "\t", "\x00", "\x7f",
		"\xff", "\xe2\x80", "é", "😀", "a", "plain text ", "</script>", "\\u003c", "{\"k\":1}"}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		text := b.String()
		res := textResult(compactJSON(map[string]any{"text": text, "n": i}), map[string]any{"path": text, "lines": []string{text, "x"}})
		res.Terminate = i%2 == 0
		want, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(want)
		outcome, got := ResultDigest(&res, nil)
		if outcome != "ok" || got != hex.EncodeToString(sum[:]) {
			t.Fatalf("text %q: digest %s (%s), want %x", text, got, outcome, sum)
		}
		body, err := res.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var back ToolResult
		if err := json.Unmarshal(body, &back); err != nil || back.Content[0].Text != res.Content[0].Text {
			t.Fatalf("text %q: body %q does not decode back (%v)", text, body, err)
		}
	}
}

// TestCharsFastPath checks chars and sliceChars (which take a byte-wise
// path for ASCII text) against code point walks, on ASCII, multi-byte and
// invalid UTF-8 text of every length around the 8-byte stride.
func TestCharsFastPath(t *testing.T) {
	walk := func(s string, off, n int) string {
		r := []rune(s) // invalid bytes become one U+FFFD each, as DecodeRune counts them
		if off > len(r) {
			off = len(r)
		}
		end := len(r)
		if n >= 0 && off+n < end {
			end = off + n
		}
		// Map code point offsets back to byte offsets.
		b, start := 0, -1
		for k := 0; ; k++ {
			if k == off {
				start = b
			}
			if k == end || b >= len(s) {
				return s[start:b]
			}
			_, w := utf8.DecodeRuneInString(s[b:])
			b += w
		}
	}
	// One non-ASCII byte at every position of every word of the stride.
	for n := range 40 {
		for p := range n {
			s := strings.Repeat("a", p) + "\xff" + strings.Repeat("a", n-p-1)
			if got := chars(s); got != n {
				t.Fatalf("chars(%q) = %d, want %d", s, got, n)
			}
			if s2 := strings.Repeat("a", p) + "é" + strings.Repeat("a", n-p-1); sliceChars(s2, p, 1) != "é" {
				t.Fatalf("sliceChars(%q, %d, 1) = %q, want é", s2, p, sliceChars(s2, p, 1))
			}
		}
	}
	pieces := []string{"a", "bc", "\n", "é", "😀", "\xff", "\xe2\x80", "\x7f"}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		var b strings.Builder
		for range rng.IntN(24) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		s := b.String()
		if got, want := chars(s), utf8.RuneCountInString(s); got != want {
			t.Fatalf("chars(%q) = %d, want %d", s, got, want)
		}
		off, n := rng.IntN(len(s)+3), rng.IntN(len(s)+3)-1
		if got, want := sliceChars(s, off, n), walk(s, off, n); got != want {
			t.Fatalf("sliceChars(%q, %d, %d) = %q, want %q", s, off, n, got, want)
		}
	}
}

// TestLineSpan checks lineSpan against splitting into lines and joining.
func TestLineSpan(t *testing.T) {
	for _, s := range []string{"", "\n", "\n\n", "a", "a\n", "\na", "a\nb", "a\nb\n", "ab\n\ncd\ne\n\n", "é\n😀\nx"} {
		lines := strings.Split(s, "\n")
		for start := 1; start <= len(lines); start++ {
			for stop := start; stop <= len(lines); stop++ {
				if got, want := lineSpan(s, start, stop), strings.Join(lines[start-1:stop], "\n"); got != want {
					t.Fatalf("lineSpan(%q, %d, %d) = %q, want %q", s, start, stop, got, want)
				}
			}
		}
	}
}
