package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/tools"
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
			header := func(p textPage) string { return compactJSON(map[string]any{"o": p.Offset, "e": p.End, "n": p.Next}) }
			pg, out := fitPage(text, off, total, limit, budget, header)
			end, next := pg.End, pg.Next
			h := header(pg)
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

// FuzzReadNoteLines reads arbitrary notes by line range, with and without
// offset_chars/limit_chars, as agents with a default, a small and a
// one-character output budget. The expectation is computed here from the
// spec (docs/behaviour.md §B.7, docs/contract-notes.md "Notes"), not with the
// code under test: lines are the text split at "\n" (a trailing newline
// makes an empty last line, an empty note has one empty line); a negative
// line n is len+1+n; start is clamped to >= 1 and stop to <= len; an empty
// range is invalid_argument, as is a value the schema refuses (lines below
// -1000000, offset below 0, limit below 1). Paging from the requested
// offset with next_offset_chars returns exactly the selected lines, every
// page a whole header line and its fragment.
//
// flags: bit 0 start_line given, bit 1 stop_line given, bit 2 offset_chars
// given, bit 3 limit_chars given, bits 4-5 the reader's budget.
func FuzzReadNoteLines(f *testing.F) {
	f.Add("one\ntwo\nthree", int64(2), int64(3), int64(0), int64(0), uint8(0x03))
	f.Add("one\ntwo\nthree\n", int64(-2), int64(-1), int64(0), int64(0), uint8(0x03))
	f.Add("", int64(1), int64(1), int64(0), int64(0), uint8(0x03))
	f.Add("a\nb", int64(3), int64(0), int64(0), int64(0), uint8(0x01))
	f.Add("a\nb\nc", int64(2), int64(99), int64(0), int64(0), uint8(0x03))
	f.Add("a\nb", int64(0), int64(0), int64(0), int64(0), uint8(0x02))
	f.Add("a\nb\nc", int64(-100), int64(-3), int64(0), int64(0), uint8(0x03))
	f.Add("a\nb\nc", int64(-1000001), int64(1), int64(0), int64(0), uint8(0x01))
	f.Add("😀 line one\nzweite Zeile é\n第三行", int64(2), int64(-1), int64(3), int64(5), uint8(0x1f))
	f.Add(strings.Repeat("0123456789\n", 40), int64(5), int64(30), int64(7), int64(0), uint8(0x17))
	f.Add("x\ny", int64(1), int64(2), int64(1<<40), int64(1<<62), uint8(0x2f))
	f.Add("x\ny", int64(1), int64(2), int64(-1), int64(0), uint8(0x07))
	f.Add("x\ny", int64(1), int64(2), int64(0), int64(0), uint8(0x0b))

	ctx := context.Background()
	s := mustOpenAt(f, filepath.Join(f.TempDir(), "memory.db"), OpenOptions{Synchronous: "off"})
	budgets := []int64{DefaultMaxToolOutputChars, 200, 1}
	readers := make([]CallContext, len(budgets))
	written := make([]*string, len(budgets))
	for i, b := range budgets {
		res, err := s.Attach(ctx, AttachRequest{SessionKey: fmt.Sprintf("/fuzz/read-lines-%d.jsonl", i),
			Budget: &BudgetInput{MaxToolOutputChars: &b}}, "")
		if err != nil {
			f.Fatal(err)
		}
		readers[i] = CallContext{TaskID: res.TaskID, Agent: res.Agent}
	}

	f.Fuzz(func(t *testing.T, text string, start, stop, offset, limit int64, flags uint8) {
		if !utf8.ValidString(text) || len(text) > 1<<14 {
			return
		}
		who := int(flags>>4) % len(budgets)
		cc, budget := readers[who], int(budgets[who])
		if written[who] == nil || *written[who] != text {
			args, _ := json.Marshal(map[string]string{"path": "f.md", "text": text})
			if _, err := s.CallTool(ctx, "notes_write_file", cc, args, ""); err != nil {
				t.Fatalf("write: %v", err)
			}
			written[who] = &text
		}
		args := map[string]any{"path": "f.md"}
		if flags&1 != 0 {
			args["start_line"] = start
		}
		if flags&2 != 0 {
			args["stop_line"] = stop
		}
		if flags&4 != 0 {
			args["offset_chars"] = offset
		}
		if flags&8 != 0 {
			args["limit_chars"] = limit
		}
		read := func(args map[string]any) (ToolResult, error) {
			raw, _ := json.Marshal(args)
			return s.CallTool(ctx, "notes_read_file", cc, raw, "")
		}

		// The expectation, from the spec.
		lines := 1 + strings.Count(text, "\n")
		lineNo := func(key string, def int64) int64 {
			v, ok := args[key].(int64)
			if !ok {
				return def
			}
			if v < 0 {
				return int64(lines) + 1 + v
			}
			return v
		}
		first, last := max(lineNo("start_line", 1), 1), min(lineNo("stop_line", int64(lines)), int64(lines))
		schemaOK := (flags&1 == 0 || start >= -1_000_000) && (flags&2 == 0 || stop >= -1_000_000) &&
			(flags&4 == 0 || offset >= 0) && (flags&8 == 0 || limit >= 1)
		res, err := read(args)
		if !schemaOK || first > last {
			if !errors.Is(err, ErrInvalidArgument) {
				t.Fatalf("read %v of %q: %v, want invalid_argument (schema ok %v, lines %d..%d)", args, text, err, schemaOK, first, last)
			}
			if schemaOK && !strings.Contains(err.Error(), "empty") {
				t.Fatalf("read %v of %q: %q does not say the range is empty", args, text, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("read %v of %q: %v", args, text, err)
		}
		// Lines first..last of the text: from just after the (first-1)th
		// newline up to the last-th newline or the end.
		var sel strings.Builder
		n := int64(1)
		for _, r := range text {
			if r == '\n' {
				n++
				if n > first && n <= last {
					sel.WriteRune(r)
				}
				continue
			}
			if n >= first && n <= last {
				sel.WriteRune(r)
			}
		}
		want := []rune(sel.String())
		total := len(want)

		off := 0
		if o, ok := args["offset_chars"].(int64); ok {
			off = int(min(o, int64(total)))
		}
		from := off
		var got []rune
		for page := 0; ; page++ {
			d := res.Details.(tools.NotesReadFileDetails)
			if d.Path != cc.Agent+"/notes/f.md" || d.StartLine != int(first) || d.StopLine != int(last) ||
				d.TotalLines != lines || d.TotalChars != total || d.OffsetChars != off {
				t.Fatalf("read %v of %q: details %+v, want lines %d..%d of %d, %d chars, offset %d",
					args, text, d, first, last, lines, total, off)
			}
			frag := []rune(d.Text)
			if d.EndChars != off+len(frag) || string(frag) != string(want[off:d.EndChars]) {
				t.Fatalf("read %v of %q: text %q at %d..%d, want %q", args, text, d.Text, off, d.EndChars, string(want[off:min(d.EndChars, total)]))
			}
			if off < total && len(frag) == 0 {
				t.Fatalf("read %v of %q: no text at offset %d of %d", args, text, off, total)
			}
			if l, ok := args["limit_chars"].(int64); ok && int64(len(frag)) > l {
				t.Fatalf("read %v: %d chars over limit_chars", args, len(frag))
			}
			out := res.Content[0].Text
			header, body, _ := strings.Cut(out, "\n")
			var h map[string]any
			if err := json.Unmarshal([]byte(header), &h); err != nil || body != d.Text || h["text"] != nil {
				t.Fatalf("read %v: output %q is not a header line and the text %q", args, out, d.Text)
			}
			if c := utf8.RuneCountInString(out); c > budget && c > utf8.RuneCountInString(header)+1+min(1, total-off) {
				t.Fatalf("read %v: %d code points of output, budget %d", args, c, budget)
			}
			got = append(got, frag...)
			if d.NextOffsetChars == nil {
				if d.EndChars != total {
					t.Fatalf("read %v: next_offset_chars null at %d of %d", args, d.EndChars, total)
				}
				break
			}
			if *d.NextOffsetChars != d.EndChars || d.EndChars >= total {
				t.Fatalf("read %v: next_offset_chars %d at end %d of %d", args, *d.NextOffsetChars, d.EndChars, total)
			}
			if page == 40 { // enough pages of a one-character budget
				return
			}
			off = d.EndChars
			args["offset_chars"] = int64(off)
			if res, err = read(args); err != nil {
				t.Fatalf("read %v: %v", args, err)
			}
		}
		if string(got) != string(want[from:]) {
			t.Fatalf("read %v of %q: pages give %q, want %q", args, text, string(got), string(want[from:]))
		}
	})
}
