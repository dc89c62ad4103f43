// Package sessiongen builds Pi coding-agent sessions deterministically, for
// tests, benchmarks and tools that feed memoryd's history journal.
//
// The sessions are in Pi's format version 3. A Builder appends entries to a
// session tree with seeded ids and a fixed clock. Scenario functions such as
// Tools, Images and Large return ready-made sessions. Read and ReadFile
// parse a Pi session JSONL file and compute its current branch, the path
// from the last entry to the root.
//
// Entries are raw JSON exactly as Pi writes them, one object per line with
// type, id, parentId and timestamp, and per type message, summary,
// customType, content, data and so on.
package sessiongen

import (
	"bufio"
	"encoding/json"
	"io"
)

// Session is a Pi session, with its header, its entries in file order and
// the current branch.
type Session struct {
	// Header is the {"type":"session",...} line, or nil.
	Header json.RawMessage
	// Entries are the session's entries in file order, without the header.
	// They hold every branch of the tree, not only the current one.
	Entries []json.RawMessage
	// Branch is the current branch, the entry ids from the root to the leaf.
	Branch []string
	// Marks map names to notable entries of a generated session. They are
	// nil for a session read from a file.
	Marks map[string]string
}

// Bytes returns the total size of the entries' JSON.
func (s Session) Bytes() int {
	n := 0
	for _, e := range s.Entries {
		n += len(e)
	}
	return n
}

// WriteJSONL writes the session as a Pi session file, with the header if
// there is one and then one entry per line.
func (s Session) WriteJSONL(w io.Writer) error {
	bw := bufio.NewWriter(w)
	if len(s.Header) > 0 {
		bw.Write(s.Header)
		bw.WriteByte('\n')
	}
	for _, e := range s.Entries {
		bw.Write(e)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// Batches splits entries into consecutive batches of at most maxBytes of
// JSON each, so a large session can be synced in requests under a body limit.
func Batches(entries []json.RawMessage, maxBytes int) [][]json.RawMessage {
	var out [][]json.RawMessage
	start, size := 0, 0
	for i, e := range entries {
		// An entry larger than maxBytes makes a batch of its own.
		if i > start && size+len(e) > maxBytes {
			out = append(out, entries[start:i])
			start, size = i, 0
		}
		size += len(e)
	}
	if start < len(entries) {
		out = append(out, entries[start:])
	}
	return out
}
