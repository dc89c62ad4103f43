package codex

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// readOn reads data[:end] past cur.
func readOn(t *testing.T, data []byte, end int, cur Cursor) Batch {
	t.Helper()
	b, err := Read(bytes.NewReader(data[:end]), int64(end), cur)
	if err != nil {
		t.Fatalf("read to %d from %d: %v", end, cur.Offset, err)
	}
	return b
}

// sameEntries fails unless two reads made the same entries.
func sameEntries(t *testing.T, what string, got, want []Entry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d", what, len(got), len(want))
	}
	for i := range got {
		if got[i].ID != want[i].ID || got[i].ParentID != want[i].ParentID || !bytes.Equal(got[i].Raw, want[i].Raw) {
			t.Fatalf("%s: entry %d differs:\n%s\n%s", what, i, got[i].Raw, want[i].Raw)
		}
	}
}

// TestReadInPiecesIsReadWhole reads each sample in two reads, cut after
// every line, and inside every third line (in its middle, and just before
// its newline): the entries, the branch, the usage and the state are
// those of one whole read, and each read keeps the branch before it.
func TestReadInPiecesIsReadWhole(t *testing.T) {
	for _, name := range rollouts {
		data := rollout(t, name)
		whole := readAll(t, data)
		var cuts []int
		start, n := 0, 0
		for i, c := range data {
			if c == '\n' {
				if n%3 == 0 {
					cuts = append(cuts, (start+i)/2, i)
				}
				cuts = append(cuts, i+1)
				start, n = i+1, n+1
			}
		}
		for _, cut := range cuts {
			first := readOn(t, data, cut, Cursor{})
			second := readOn(t, data, len(data), first.Cursor)
			if second.Keep != len(first.Branch) || !slices.Equal(second.Branch[:second.Keep], first.Branch) {
				t.Fatalf("%s cut %d: keep %d is not the branch before", name, cut, second.Keep)
			}
			sameEntries(t, name, append(first.Entries, second.Entries...), whole.Entries)
			if !slices.Equal(second.Branch, whole.Branch) || *second.Cursor.Usage != *whole.Cursor.Usage ||
				second.Cursor.State.Lines != whole.Cursor.State.Lines || second.Cursor.State.Last != whole.Cursor.State.Last ||
				second.Cursor.Offset != int64(len(data)) {
				t.Fatalf("%s cut %d: the cursor differs: %+v", name, cut, second.Cursor)
			}
		}
	}
}

// TestResumeAppendsWithTheSameIds reads the rollout that exec, exec
// resume and TUI resume wrote in turn, as it was after each (16, 30 and
// 44 lines): the old lines keep their ids, and the new ones continue the
// branch from the last.
func TestResumeAppendsWithTheSameIds(t *testing.T) {
	data := rollout(t, resumed)
	lines := bytes.SplitAfter(data, []byte("\n"))
	whole := readAll(t, data)
	var cur Cursor
	var entries []Entry
	for _, n := range []int{16, 30, 44} {
		end := len(bytes.Join(lines[:n], nil))
		b := readOn(t, data, end, cur)
		if len(b.Entries) == 0 || b.Entries[0].ParentID != cur.State.Last || b.Keep != len(cur.Branch) {
			t.Fatalf("after %d lines: the new entries do not continue from %q", n, cur.State.Last)
		}
		entries, cur = append(entries, b.Entries...), b.Cursor
		if last := b.Branch[len(b.Branch)-1]; last != whole.Entries[n-1].ID {
			t.Fatalf("after %d lines the branch ends at %s", n, last)
		}
	}
	sameEntries(t, "resumed", entries, whole.Entries)
	if whole.Entries[16].ID != "o16" || whole.Entries[30].ID != "o30" {
		t.Fatalf("the resumed lines are %s and %s", whole.Entries[16].ID, whole.Entries[30].ID)
	}
}

// TestUnfinishedLastLineWaits: a last line without its newline is not
// read, and the next read starts with it once it is whole.
func TestUnfinishedLastLineWaits(t *testing.T) {
	data := rollout(t, mcpCall)
	whole := readAll(t, data)
	cut := len(data) - 40
	b := readOn(t, data, cut, Cursor{})
	if len(b.Entries) != len(whole.Entries)-1 || b.Cursor.Offset != int64(bytes.LastIndexByte(data[:cut], '\n')+1) || b.Skipped != 0 {
		t.Fatalf("%d entries, offset %d, %d skipped", len(b.Entries), b.Cursor.Offset, b.Skipped)
	}
	again := readOn(t, data, cut, b.Cursor)
	if len(again.Entries) != 0 || again.Cursor.Offset != b.Cursor.Offset || again.Keep != len(b.Branch) {
		t.Fatalf("a read with nothing new: %d entries, offset %d", len(again.Entries), again.Cursor.Offset)
	}
	rest := readOn(t, data, len(data), again.Cursor)
	sameEntries(t, "the last line", rest.Entries, whole.Entries[len(whole.Entries)-1:])
}

// TestLinesNotJSONObjectsAreSkipped: lines that are not JSON objects are
// counted and named by their line numbers in the file, in a whole read
// and in a read past a cursor alike, and the other lines keep their ids.
func TestLinesNotJSONObjectsAreSkipped(t *testing.T) {
	data := rollout(t, mcpCall)
	lines := bytes.SplitAfter(data, []byte("\n"))
	var broken []byte
	for i, l := range lines {
		broken = append(broken, l...)
		if i == 2 {
			broken = append(broken, "not json\n[1,2]\nnull\n\n{\"ordinal\":\n"...)
		}
	}
	whole := readAll(t, data)
	b := readAll(t, broken)
	if b.Skipped != 4 || !slices.Equal(b.SkippedLines, []int{4, 5, 6, 8}) {
		t.Fatalf("skipped %d: lines %v", b.Skipped, b.SkippedLines)
	}
	sameEntries(t, "with broken lines", b.Entries, whole.Entries)
	third := len(bytes.Join(lines[:3], nil))
	first := readOn(t, broken, third, Cursor{})
	second := readOn(t, broken, len(broken), first.Cursor)
	if !slices.Equal(second.SkippedLines, []int{4, 5, 6, 8}) {
		t.Fatalf("skipped past a cursor: lines %v", second.SkippedLines)
	}
}

// TestRewritten: a file shorter than the cursor, or that no longer holds
// the line read last where it was, is reported as rewound; one that only
// grew is not.
func TestRewritten(t *testing.T) {
	data := rollout(t, mcpCall)
	half := bytes.LastIndexByte(data[:len(data)/2], '\n') + 1
	b := readOn(t, data, half, Cursor{})
	other := rollout(t, subagent) // another thread's rollout, longer than the half read
	changed := bytes.Clone(data)
	changed[half-3] ^= 1 // inside the last line read
	for name, file := range map[string][]byte{"shorter": data[:half-1], "another file": other, "changed": changed} {
		if _, err := Read(bytes.NewReader(file), int64(len(file)), b.Cursor); !errors.Is(err, ErrRewound) {
			t.Errorf("%s: %v, want ErrRewound", name, err)
		}
	}
	bad := b.Cursor
	bad.Branch = bad.Branch[:len(bad.Branch)-1]
	if _, err := Read(bytes.NewReader(data), int64(len(data)), bad); !errors.Is(err, ErrRewound) {
		t.Errorf("a branch that does not end at the last entry: %v, want ErrRewound", err)
	}
	if _, err := Read(bytes.NewReader(data), int64(len(data)), b.Cursor); err != nil {
		t.Errorf("grown: %v", err)
	}
}
