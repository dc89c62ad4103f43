package projections

import (
	"sync"
	"sync/atomic"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// DefaultNoteCacheBytes bounds a NoteCache by default.
const DefaultNoteCacheBytes = 8 << 20

// NoteCache keeps what a note read's query returned (the caller's row, its
// fence state, the log position and the note), each entry tagged with the
// database's commit stamp (eventlog.CommitStamp) read before the read
// transaction that fetched it. An entry answers a later read only while
// the stamp is still the same: no connection has committed anything since,
// so the query would return the same rows. A read repeated with nothing
// committed in between then runs no query (its read transaction is still
// begun and ended); any commit, a read audit batch included, sends the
// next read of every note back to SQLite.
//
// It is bounded by the bytes of the texts it keeps; a note larger than a
// sixteenth of the bound is not kept. An entry is replaced by the next
// read of its note after the stamp moved, and dropped (any one) when room
// is needed.
type NoteCache struct {
	hits, misses atomic.Uint64

	mu    sync.Mutex
	m     map[noteReadKey]*noteReadEntry
	bytes int // sum of the entries' sizes
	limit int
}

// noteReadKey is one caller reading one note.
type noteReadKey struct {
	taskID, agent string
	note          noteKey
}

type noteReadEntry struct {
	stamp eventlog.CommitStamp
	row   projectionsdb.GetAgentWithStateRow
	note  fetchedNote
	size  int
}

// NewNoteCache returns a cache of at most limit bytes of note text.
func NewNoteCache(limit int) *NoteCache {
	return &NoteCache{m: map[noteReadKey]*noteReadEntry{}, limit: limit}
}

// entryOverhead approximates an entry's memory besides its strings.
const entryOverhead = 256

// get returns k's entry if it was read at stamp; nil c has none.
func (c *NoteCache) get(k noteReadKey, stamp eventlog.CommitStamp) (*noteReadEntry, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.m[k]
	if e == nil || e.stamp != stamp {
		c.misses.Add(1)
		return nil, false
	}
	c.hits.Add(1)
	return e, true
}

// Stats returns how many note reads the cache answered and how many it
// could not (no entry, or one read before the last commit).
func (c *NoteCache) Stats() (hits, misses uint64) { return c.hits.Load(), c.misses.Load() }

// put keeps row and note as k's, read at stamp; nil c keeps nothing.
func (c *NoteCache) put(k noteReadKey, stamp eventlog.CommitStamp, row projectionsdb.GetAgentWithStateRow, note fetchedNote) {
	if c == nil {
		return
	}
	size := entryOverhead + len(note.note.Content) + len(row.Agent.Budget) + len(row.State) + len(row.Agent.SessionKey) +
		len(row.Agent.SessionID) + len(row.Agent.SessionFile) + len(k.taskID) + len(k.agent) + len(k.note.path)
	if size > c.limit/16 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[k]; old != nil {
		c.bytes -= old.size
		delete(c.m, k)
	}
	for victim, e := range c.m { // random order: any entry makes room
		if c.bytes+size <= c.limit {
			break
		}
		c.bytes -= e.size
		delete(c.m, victim)
	}
	c.m[k] = &noteReadEntry{stamp: stamp, row: row, note: note, size: size}
	c.bytes += size
}

// UseNoteCache makes AgentWithNote answer from c when it can, and keep
// what it queried in c. stamp must have been read before the reader's
// transaction began (before any of its queries), so that an entry is
// never tagged newer than its rows. For read transactions only.
func (r *Reader) UseNoteCache(c *NoteCache, stamp eventlog.CommitStamp) {
	r.noteCache, r.stamp = c, stamp
}

// FromNoteCache reports whether AgentWithNote answered from the note
// cache: the caller's snapshot is then the stamp's, and a query it made
// after that is of the same state only if the stamp has not moved.
func (r *Reader) FromNoteCache() bool { return r.fromCache }
