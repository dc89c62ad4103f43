package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Session is a Pi session file read whole, with its header, its entries in
// file order and its current branch.
type Session struct {
	// ID is the header's session id, or "" without a header.
	ID string
	// Header is the header line {"type":"session",...} as read, or nil.
	Header json.RawMessage
	// Entries are the entries in file order, the header left out.
	Entries []json.RawMessage
	// Lines are the entries' lines in the file, from 1.
	Lines []int
	// Branch is the path from the last entry to the root, root first.
	Branch []string
}

// MaxSessionLine is the longest line ReadSession accepts.
const MaxSessionLine = 256 << 20

// ReadSession reads a Pi session JSONL file, one JSON object a line, whose
// entries form a tree by parentId. Errors name the line.
func ReadSession(r io.Reader) (Session, error) {
	var s Session
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<20), MaxSessionLine)
	parents := map[string]string{}
	line, last := 0, ""
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		head, err := ReadHead(b)
		if err != nil {
			return Session{}, fmt.Errorf("line %d: not a JSON object: %v", line, err)
		}
		// The header, {"type":"session",...}, may come before the entries.
		if head.Type == "session" && s.Header == nil && len(s.Entries) == 0 {
			s.ID, s.Header = head.ID, json.RawMessage(bytes.Clone(b))
			continue
		}
		if head.ID == "" || head.Type == "" {
			return Session{}, fmt.Errorf("line %d: entry without type or id", line)
		}
		if _, dup := parents[head.ID]; dup {
			return Session{}, fmt.Errorf("line %d: entry id %q appears twice", line, head.ID)
		}
		parent := ""
		if head.ParentID != nil {
			parent = *head.ParentID
		}
		parents[head.ID] = parent
		s.Entries = append(s.Entries, json.RawMessage(bytes.Clone(b)))
		s.Lines = append(s.Lines, line)
		last = head.ID
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Session{}, fmt.Errorf("line %d: longer than %d bytes", line+1, MaxSessionLine)
		}
		return Session{}, err
	}
	for id := last; id != ""; id = parents[id] {
		if len(s.Branch) > len(parents) {
			return Session{}, errors.New("the entries' parentId links form a cycle")
		}
		if _, ok := parents[id]; !ok {
			return Session{}, fmt.Errorf("entry %q names a parent that is not in the file", s.Branch[len(s.Branch)-1])
		}
		s.Branch = append(s.Branch, id)
	}
	for i, j := 0, len(s.Branch)-1; i < j; i, j = i+1, j-1 {
		s.Branch[i], s.Branch[j] = s.Branch[j], s.Branch[i]
	}
	return s, nil
}
