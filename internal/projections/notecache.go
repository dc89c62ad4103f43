package projections

import (
	"sync"
	"sync/atomic"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// DefaultNoteCacheBytes bounds a NoteCache by default.
const DefaultNoteCacheBytes = 8 << 20

// NoteCache keeps what a note read's query returned, tagged with the
// commit stamp read before its read transaction. An entry answers a later
// read only while the stamp is the same, since no connection has committed
// anything then. See docs/contract-notes.md.
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

// get returns k's entry if it was read at stamp. A nil c has none.
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
// could not.
func (c *NoteCache) Stats() (hits, misses uint64) { return c.hits.Load(), c.misses.Load() }

// put keeps row and note as k's, read at stamp. A nil c keeps nothing.
func (c *NoteCache) put(k noteReadKey, stamp eventlog.CommitStamp, row projectionsdb.GetAgentWithStateRow, note fetchedNote) {
	if c == nil {
		return
	}
	size := entryOverhead + len(note.note.Content) + len(row.Agent.Budget) + len(row.State) + len(row.Agent.SessionKey) +
		len(row.Agent.SessionID) + len(row.Agent.SessionFile) + len(k.taskID) + len(k.agent) + len(k.note.path)
	if size > c.limit/16 { // too large a share of the bound
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old := c.m[k]; old != nil {
		c.bytes -= old.size
		delete(c.m, k)
	}
	for victim, e := range c.m { // in random order, since any entry makes room
		if c.bytes+size <= c.limit {
			break
		}
		c.bytes -= e.size
		delete(c.m, victim)
	}
	c.m[k] = &noteReadEntry{stamp: stamp, row: row, note: note, size: size}
	c.bytes += size
}

// UseNoteCache makes AgentWithNote answer from c when it can and keep
// what it queried in c. Use it in read transactions only, with a stamp
// read before the transaction began, so no entry is tagged newer than its rows.
func (r *Reader) UseNoteCache(c *NoteCache, stamp eventlog.CommitStamp) {
	r.noteCache, r.stamp = c, stamp
}

// FromNoteCache reports whether AgentWithNote answered from the note cache.
// The caller's snapshot is then the stamp's, so its later queries see the
// same state only if the stamp has not moved.
func (r *Reader) FromNoteCache() bool { return r.fromCache }

// ForgetTask drops the cached note reads of a task's agents, for its
// erasure. Their stamps would keep them from answering after it, but
// their text would stay in memory until they were replaced.
func (c *NoteCache) ForgetTask(taskID string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.m {
		if k.taskID == taskID || k.note.taskID == taskID {
			c.bytes -= e.size
			delete(c.m, k)
		}
	}
}

// Holds reports whether the cache keeps a read of one of a task's notes.
func (c *NoteCache) Holds(taskID string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.m {
		if k.taskID == taskID || k.note.taskID == taskID {
			return true
		}
	}
	return false
}
