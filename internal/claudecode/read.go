package claudecode

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"

	"github.com/memoryd/memoryd/internal/history"
)

// Cursor is how much of a transcript has been read, what the conversion
// carries on, and the branch the read lines made. A hook keeps it between
// runs so that each run reads only what was appended.
type Cursor struct {
	Offset int64    `json:"offset"`
	State  State    `json:"state"`
	Branch []string `json:"branch"`
	// Usage is the last assistant line's usage read so far.
	Usage *Usage `json:"usage,omitempty"`
}

// Batch is what one read of a transcript adds.
type Batch struct {
	Entries []Entry
	// Branch is the whole branch after the read; its first Keep ids are
	// the branch before it.
	Branch []string
	Keep   int
	// Cursor is the cursor after the read.
	Cursor Cursor
	// Skipped counts complete lines that are not JSON objects, and
	// SkippedLines numbers them from 1 at the read's start (the file's
	// line numbers when it reads from the start).
	Skipped      int
	SkippedLines []int
}

// ErrRewound reports a transcript whose new lines continue from an entry
// that is not on the branch read before (a rewind, or a file rewritten):
// read it again from the start.
var ErrRewound = errors.New("the transcript continues from an entry off the branch read before")

// Read reads the complete lines of r past cur.Offset (a last line without
// its newline is left for the next read) and converts them.
func Read(r io.ReaderAt, size int64, cur Cursor) (Batch, error) {
	if cur.Offset > size {
		return Batch{}, ErrRewound
	}
	conv := Converter{State: cloneState(cur.State)}
	b := Batch{Cursor: Cursor{Offset: cur.Offset, Usage: cur.Usage}}
	sc := bufio.NewReader(io.NewSectionReader(r, cur.Offset, size-cur.Offset))
	for line := 1; ; line++ {
		raw, err := history.ReadLine(sc)
		if errors.Is(err, io.EOF) {
			break // an unfinished last line waits for its newline
		}
		if err != nil {
			return Batch{}, err
		}
		b.Cursor.Offset += int64(len(raw))
		if len(bytes.TrimSpace(raw)) == 0 {
			continue
		}
		entries, usage, err := conv.Line(raw)
		if err != nil {
			b.Skipped++
			b.SkippedLines = append(b.SkippedLines, line)
			continue
		}
		b.Entries = append(b.Entries, entries...)
		if usage != nil {
			u := *usage
			b.Cursor.Usage = &u
		}
	}
	b.Cursor.State = conv.State
	branch, keep, err := extend(cur.Branch, b.Entries)
	if err != nil {
		return Batch{}, err
	}
	b.Branch, b.Keep = branch, keep
	b.Cursor.Branch = branch
	return b, nil
}

// extend returns the branch that ends at the last new entry: the new
// entries on its path, after the part of the old branch it continues from.
func extend(old []string, entries []Entry) (branch []string, keep int, err error) {
	if len(entries) == 0 {
		return old, len(old), nil
	}
	parents := make(map[string]string, len(entries))
	for _, e := range entries {
		parents[e.ID] = e.ParentID
	}
	var path []string // leaf first
	id := entries[len(entries)-1].ID
	for {
		path = append(path, id)
		p, isNew := parents[id]
		if !isNew {
			return nil, 0, ErrRewound // cannot happen: the walk starts at a new entry
		}
		if p == "" {
			keep = 0
			break
		}
		if _, ok := parents[p]; ok {
			if len(path) > len(entries) {
				return nil, 0, fmt.Errorf("the transcript's entries form a cycle at %q", id)
			}
			id = p
			continue
		}
		k := lastIndex(old, p)
		if k < 0 {
			return nil, 0, ErrRewound
		}
		keep = k + 1
		break
	}
	branch = make([]string, 0, keep+len(path))
	branch = append(branch, old[:keep]...)
	for i := len(path) - 1; i >= 0; i-- {
		branch = append(branch, path[i])
	}
	return branch, keep, nil
}

// lastIndex finds id in the branch, from its end, where a transcript
// usually continues.
func lastIndex(branch []string, id string) int {
	for i := len(branch) - 1; i >= 0; i-- {
		if branch[i] == id {
			return i
		}
	}
	return -1
}

func cloneState(s State) State {
	return State{Reparent: maps.Clone(s.Reparent), Seen: maps.Clone(s.Seen), Last: s.Last}
}
