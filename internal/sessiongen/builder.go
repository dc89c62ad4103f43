package sessiongen

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"time"
)

// Builder appends entries to a session tree. Ids are 8 hex digits drawn
// from a seeded generator and timestamps advance one second per entry
// from a fixed start, so the same calls build the same bytes.
type Builder struct {
	rng     *rand.Rand
	parents map[string]string
	entries []json.RawMessage
	leaf    string
	clock   time.Time
	calls   int
	marks   map[string]string
	header  json.RawMessage
}

// Start is the clock of a new Builder.
var Start = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)

// NewBuilder returns an empty session whose ids derive from seed.
func NewBuilder(seed uint64) *Builder {
	b := &Builder{rng: rand.New(rand.NewPCG(seed, 0x5e55)), parents: map[string]string{},
		clock: Start, marks: map[string]string{}}
	h, _ := json.Marshal(struct {
		Type      string `json:"type"`
		Version   int    `json:"version"`
		ID        string `json:"id"`
		Timestamp string `json:"timestamp"`
		Cwd       string `json:"cwd"`
	}{"session", 3, fmt.Sprintf("%016x%016x", b.rng.Uint64(), b.rng.Uint64()), Start.Format(time.RFC3339Nano), "/home/dev/project"})
	b.header = h
	return b
}

func (b *Builder) newID() string {
	for {
		id := fmt.Sprintf("%08x", b.rng.Uint32())
		if _, used := b.parents[id]; !used {
			return id
		}
	}
}

// CallID returns a fresh, deterministic tool-call id that starts with toolu_.
func (b *Builder) CallID() string {
	b.calls++
	return fmt.Sprintf("toolu_%02d%08x", b.calls, b.rng.Uint32())
}

// add appends an entry of type typ as a child of the leaf and makes it the
// leaf. Its other fields are those of body, which marshals to a JSON object.
func (b *Builder) add(typ string, body any) string {
	id := b.newID()
	var parent *string
	if b.leaf != "" {
		p := b.leaf
		parent = &p
	}
	b.clock = b.clock.Add(time.Second)
	h, err := json.Marshal(struct {
		Type      string  `json:"type"`
		ID        string  `json:"id"`
		ParentID  *string `json:"parentId"`
		Timestamp string  `json:"timestamp"`
	}{typ, id, parent, b.clock.Format("2006-01-02T15:04:05.000Z")})
	if err != nil {
		panic(err)
	}
	raw := h
	if body != nil {
		rest, err := json.Marshal(body)
		if err != nil {
			panic(fmt.Sprintf("sessiongen: %s entry: %v", typ, err))
		}
		if len(rest) > 2 {
			raw = make([]byte, 0, len(h)+len(rest))
			raw = append(raw, h[:len(h)-1]...)
			raw = append(raw, ',')
			raw = append(raw, rest[1:]...)
		}
	}
	b.entries = append(b.entries, raw)
	b.parents[id] = b.leaf
	b.leaf = id
	return id
}

func (b *Builder) millis() int64 { return b.clock.Add(time.Second).UnixMilli() }

// Raw appends an entry of any type with the given extra fields.
func (b *Builder) Raw(typ string, body any) string { return b.add(typ, body) }

// Mark names the current leaf in the session's Marks.
func (b *Builder) Mark(name string) string {
	b.marks[name] = b.leaf
	return b.leaf
}

// Len returns the number of entries so far.
func (b *Builder) Len() int { return len(b.entries) }

// Session returns every entry so far, with the current branch ending at
// the leaf.
func (b *Builder) Session() Session {
	marks := make(map[string]string, len(b.marks))
	for k, v := range b.marks {
		marks[k] = v
	}
	return Session{Header: b.header, Entries: append([]json.RawMessage(nil), b.entries...),
		Branch: b.PathTo(b.leaf), Marks: marks}
}
