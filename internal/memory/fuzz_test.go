package memory

import (
	"testing"
	"unicode/utf8"
)

// FuzzPageText pages arbitrary text by code points: the pages concatenate
// to the text, each has at least one character while any is left, the
// header is whole, and the coordinates describe what was returned.
func FuzzPageText(f *testing.F) {
	f.Add("hello world", 3, 60)
	f.Add("😀😀😀e\u0301\u0301中文", 1, 50)
	f.Add("", 5, 10)
	f.Add("a\nb\nc", 100, 1)
	f.Fuzz(func(t *testing.T, text string, limit, budget int) {
		if !utf8.ValidString(text) || limit < 1 || limit > 1000 || budget < 1 || budget > 20000 || len(text) > 1<<16 {
			return
		}
		total := chars(text)
		var got []rune
		offset := 0
		for steps := 0; ; steps++ {
			if steps > total+2 {
				t.Fatalf("paging does not advance at offset %d of %d", offset, total)
			}
			off := offset
			var end int
			var next *int
			header := func() string { return compactJSON(map[string]any{"o": off, "e": end, "n": next}) }
			out := pageText(text, &off, &end, &next, total, limit, budget, header)
			h := header()
			if len(out) < len(h)+1 || out[:len(h)] != h || out[len(h)] != '\n' {
				t.Fatalf("output does not start with its whole header: %q", out)
			}
			frag := out[len(h)+1:]
			if chars(frag) != end-off {
				t.Fatalf("fragment has %d chars, coordinates say %d..%d", chars(frag), off, end)
			}
			if off < total && end == off {
				t.Fatalf("no content at offset %d of %d", off, total)
			}
			got = append(got, []rune(frag)...)
			if next == nil {
				if end != total {
					t.Fatalf("next is null at %d of %d", end, total)
				}
				break
			}
			if *next != end {
				t.Fatalf("next %d != end %d", *next, end)
			}
			offset = end
		}
		if string(got) != text {
			t.Fatalf("pages give %q, want %q", string(got), text)
		}
	})
}
