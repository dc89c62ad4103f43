package history

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Entry is a Pi-shaped session entry made from another agent's transcript
// (internal/claudecode, internal/codex): its id, its parent's ("" for a
// root) and its JSON.
type Entry struct {
	ID       string
	ParentID string
	Raw      json.RawMessage
}

// NewEntry marshals fields as an entry with its id, its parent (null for a
// root) and its time ts in Unix milliseconds (left out when 0).
func NewEntry(id, parent string, ts int64, fields map[string]any) Entry {
	fields["id"] = id
	if parent != "" {
		fields["parentId"] = parent
	} else {
		fields["parentId"] = nil
	}
	if ts != 0 {
		fields["timestamp"] = time.UnixMilli(ts).UTC().Format("2006-01-02T15:04:05.000Z")
	}
	raw, err := json.Marshal(fields)
	if err != nil {
		panic(err) // maps of strings, numbers and raw JSON always marshal
	}
	return Entry{ID: id, ParentID: parent, Raw: raw}
}

// MaxTranscriptLine bounds one line of a transcript read by ReadLine.
const MaxTranscriptLine = 64 << 20

// ReadLine reads a line of r with its newline, longer than r's buffer if
// need be up to MaxTranscriptLine, as bufio.Reader.ReadSlice does: io.EOF
// with an unfinished last line.
func ReadLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	buf := append([]byte(nil), line...)
	for {
		more, err := r.ReadSlice('\n')
		buf = append(buf, more...)
		if len(buf) > MaxTranscriptLine {
			return nil, fmt.Errorf("a line is over %d bytes", MaxTranscriptLine)
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}
