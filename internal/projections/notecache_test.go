package projections

import (
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// TestNoteCacheBounds: an entry answers only for its stamp; the cache
// keeps at most its limit of bytes, making room by dropping entries, and
// never keeps a note larger than a sixteenth of it.
func TestNoteCacheBounds(t *testing.T) {
	const limit = 64 << 10
	c := NewNoteCache(limit)
	var s1, s2 eventlog.CommitStamp
	s2[0] = 1
	key := func(i int) noteReadKey {
		return noteReadKey{taskID: "t", agent: "/root", note: noteKey{"t", "/root", strings.Repeat("p", i%7) + string(rune('a'+i%26))}}
	}
	note := func(n int) fetchedNote {
		return fetchedNote{found: true, note: Note{Content: strings.Repeat("x", n)}}
	}
	row := projectionsdb.GetAgentWithStateRow{Agent: projectionsdb.Agent{TaskID: "t", Agent: "/root"}}

	c.put(key(0), s1, row, note(100))
	if _, ok := c.get(key(0), s1); !ok {
		t.Fatal("no entry at its stamp")
	}
	if _, ok := c.get(key(0), s2); ok {
		t.Fatal("an entry answered for another stamp")
	}
	c.put(key(0), s2, row, note(200)) // replaced, not added
	if e, ok := c.get(key(0), s2); !ok || len(e.note.note.Content) != 200 || len(c.m) != 1 {
		t.Fatalf("replacement: %v, %d entries", ok, len(c.m))
	}

	c.put(key(1), s1, row, note(limit/16)) // over a sixteenth with its overhead
	if _, ok := c.get(key(1), s1); ok {
		t.Fatal("a note over a sixteenth of the limit was kept")
	}
	for i := range 200 {
		c.put(noteReadKey{taskID: "t", agent: "/root", note: noteKey{"t", "/root", strings.Repeat("n", i+1)}}, s1, row, note(3000))
		if c.bytes > limit {
			t.Fatalf("after %d puts the cache holds %d bytes, over its limit %d", i+1, c.bytes, limit)
		}
	}
	sum := 0
	for _, e := range c.m {
		sum += e.size
	}
	if sum != c.bytes || len(c.m) < 10 {
		t.Fatalf("%d entries of %d bytes, counted %d", len(c.m), sum, c.bytes)
	}
	var nilCache *NoteCache
	nilCache.put(key(0), s1, row, note(1))
	if _, ok := nilCache.get(key(0), s1); ok {
		t.Fatal("a nil cache answered")
	}
	if h, m := c.Stats(); h == 0 || m == 0 {
		t.Fatalf("stats %d hits %d misses", h, m)
	}
}
