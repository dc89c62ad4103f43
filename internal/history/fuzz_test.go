package history

import (
	"encoding/json"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzRender renders arbitrary bytes as a Pi entry: it must never panic,
// an item always has a public role, its text is valid UTF-8 (when the
// input was), and its breaks are sorted offsets inside the text.
func FuzzRender(f *testing.F) {
	for _, s := range []string{
		`{"type":"message","id":"a","message":{"role":"user","content":"hi"}}`,
		`{"type":"message","id":"b","message":{"role":"assistant","content":[{"type":"thinking","thinking":"x"},{"type":"text","text":"t"},{"type":"toolCall","id":"c","name":"bash","arguments":{"cmd":"ls"}}]}}`,
		`{"type":"message","id":"c","message":{"role":"toolResult","toolCallId":"c","toolName":"bash","content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}}`,
		`{"type":"compaction","id":"d","summary":"<context_window_reset/>\nCurrent context window id: w2"}`,
		`{"type":"custom_message","id":"e","customType":"pi-token-budget:fallback","content":[{"type":"text","text":"save"}]}`,
		`{"type":"message","id":"f","message":{"role":"bashExecution","command":"ls","output":"x","exitCode":2}}`,
		`{"type":"branch_summary","id":"g","summary":""}`,
		`{"type":"message","id":"h","message":{"role":"user","content":[{"type":"weird"}]}}`,
		`[]`, `null`, `{"type":"message"}`, `{"type":"message","message":{"role":"assistant","content":"s"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		r := Render(raw)
		if r.Item && r.Role == "" {
			t.Fatalf("item without a role: %s", raw)
		}
		if utf8.Valid(raw) && !utf8.ValidString(r.Text) {
			t.Fatalf("text is not valid UTF-8: %q", r.Text)
		}
		n := utf8.RuneCountInString(r.Text)
		if !slices.IsSorted(r.Breaks) {
			t.Fatalf("breaks not sorted: %v", r.Breaks)
		}
		runes := []rune(r.Text)
		for _, b := range r.Breaks {
			if b < 0 || b >= n || runes[b] != '\n' {
				t.Fatalf("break %d is not a newline of the %d-char text", b, n)
			}
		}
		_ = Images(raw)
		if c, err := Canonical(raw); err == nil {
			c2, err := Canonical(c)
			if err != nil || string(c2) != string(c) {
				t.Fatalf("canonical form is not stable: %s vs %s (%v)", c, c2, err)
			}
			// Numbers are kept as written, so one beyond float64's range
			// is still valid JSON (RFC 8259 sets no range): check syntax,
			// not whether it fits a float64.
			if !json.Valid(c) {
				t.Fatalf("canonical form is not JSON: %s", c)
			}
		}
	})
}
