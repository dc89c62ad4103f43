package codex

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/memoryd/memoryd/internal/history"
)

// Cursor is how much of a rollout has been read, what the conversion
// carries on, and the branch the read lines made. A hook keeps it between
// runs so that each run reads only what was appended.
type Cursor struct {
	Offset int64 `json:"offset"`
	// LastLine is where the last complete line read starts, and Digest
	// its SHA-256: a read first checks that the file still holds that
	// line there, as a rollout only grows, and reports a file rewritten
	// or replaced as ErrRewound.
	LastLine int64  `json:"last_line"`
	Digest   string `json:"digest,omitempty"`
	State    State  `json:"state"`
	// Branch holds the ids of every entry read, in file order: a rollout
	// is linear, so the branch is the whole file.
	Branch []string `json:"branch"`
	// Usage is the last token count's usage read so far.
	Usage *Usage `json:"usage,omitempty"`
}

// Batch is what one read of a rollout adds.
type Batch struct {
	Entries []Entry
	// Branch is the whole branch after the read; its first Keep ids are
	// the branch before it (a rollout only appends, so Keep is the old
	// branch's length).
	Branch []string
	Keep   int
	// Cursor is the cursor after the read.
	Cursor Cursor
	// Meta is the first session_meta the read converted, if any: the
	// thread, its session and, for a sub-agent, its parent thread.
	Meta *SessionMeta
	// Skipped counts complete lines that are not JSON objects (or whose
	// record cannot be read), and SkippedLines gives their line numbers
	// in the file, from 1.
	Skipped      int
	SkippedLines []int
}

// ErrRewound reports a rollout that is shorter than the cursor or no
// longer holds the line the cursor read last (a file rewritten or
// replaced): read it again from the start.
var ErrRewound = errors.New("the rollout no longer holds the lines read before")

// Read reads the complete lines of r past cur.Offset (a last line without
// its newline is left for the next read) and converts them.
func Read(r io.ReaderAt, size int64, cur Cursor) (Batch, error) {
	if err := check(r, size, cur); err != nil {
		return Batch{}, err
	}
	conv := Converter{State: cloneState(cur.State)}
	b := Batch{Cursor: Cursor{Offset: cur.Offset, LastLine: cur.LastLine, Digest: cur.Digest, Usage: cur.Usage}}
	sc := bufio.NewReader(io.NewSectionReader(r, cur.Offset, size-cur.Offset))
	for {
		raw, err := history.ReadLine(sc)
		if errors.Is(err, io.EOF) {
			break // an unfinished last line waits for its newline
		}
		if err != nil {
			return Batch{}, fmt.Errorf("read the rollout at %d: %w", b.Cursor.Offset, err)
		}
		sum := sha256.Sum256(raw)
		b.Cursor.LastLine, b.Cursor.Digest = b.Cursor.Offset, hex.EncodeToString(sum[:])
		b.Cursor.Offset += int64(len(raw))
		entries, usage, err := conv.Line(raw)
		if err != nil {
			b.Skipped++
			b.SkippedLines = append(b.SkippedLines, int(conv.State.Lines))
			continue
		}
		b.Entries = append(b.Entries, entries...)
		if usage != nil {
			u := *usage
			b.Cursor.Usage = &u
		}
		if b.Meta == nil && conv.meta != nil {
			m := *conv.meta
			b.Meta = &m
		}
	}
	b.Cursor.State = conv.State
	b.Keep = len(cur.Branch)
	b.Branch = slices.Clone(cur.Branch)
	for _, e := range b.Entries {
		b.Branch = append(b.Branch, e.ID)
	}
	b.Cursor.Branch = b.Branch
	return b, nil
}

// check reports ErrRewound unless the file still holds what cur read: it
// is at least as long, and the last line read is where it was, unchanged.
// The branch read must end at the entry the next line continues from.
func check(r io.ReaderAt, size int64, cur Cursor) error {
	if cur.Offset > size || cur.Offset < 0 {
		return ErrRewound
	}
	last := ""
	if n := len(cur.Branch); n > 0 {
		last = cur.Branch[n-1]
	}
	if last != cur.State.Last {
		return ErrRewound
	}
	if cur.Offset == 0 {
		if len(cur.Branch) > 0 || cur.State.Lines > 0 {
			return ErrRewound // lines converted, but none read
		}
		return nil
	}
	if cur.Digest == "" || cur.LastLine < 0 || cur.LastLine >= cur.Offset {
		return ErrRewound
	}
	h := sha256.New()
	if _, err := io.Copy(h, io.NewSectionReader(r, cur.LastLine, cur.Offset-cur.LastLine)); err != nil {
		return fmt.Errorf("read the rollout's last line read: %w", err)
	}
	if hex.EncodeToString(h.Sum(nil)) != cur.Digest {
		return ErrRewound
	}
	return nil
}

func cloneState(s State) State {
	s.Calls = maps.Clone(s.Calls)
	return s
}
