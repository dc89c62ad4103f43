package projections

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
)

// chunkHistory is a test history: texts placed in agents' chunks as the
// history projection places them, and what was placed, for an oracle.
type chunkHistory struct {
	t     *testing.T
	store *eventlog.Store
	texts map[chunkAgent][][2]string // id, text, in the order placed
	n     int
}

func newChunkHistory(t *testing.T) *chunkHistory {
	store, err := eventlog.Open(context.Background(), filepath.Join(t.TempDir(), "memory.db"), eventlog.Options{Projector: Projector{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return &chunkHistory{t: t, store: store, texts: map[chunkAgent][][2]string{}}
}

// place adds texts to an agent's history, in one transaction.
func (h *chunkHistory) place(a chunkAgent, texts []string) {
	ctx := context.Background()
	err := h.store.Update(ctx, "", func(tx *eventlog.Tx) error {
		q := queriesOf(tx.DB())
		for _, text := range texts {
			h.n++
			id := fmt.Sprintf("e%06d", h.n)
			if _, err := placeText(ctx, q, a.taskID, a.agent, id, text, "[]"); err != nil {
				return err
			}
			h.texts[a] = append(h.texts[a], [2]string{id, text})
		}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
}

// search runs SearchTexts in one read transaction, through filters when
// they are not nil.
func search(t *testing.T, rtx *eventlog.ReadTx, filters *ChunkFilters, a chunkAgent, needle string) []string {
	t.Helper()
	r := NewReader(rtx.DB())
	if filters != nil {
		r.UseChunkFilters(filters)
	}
	var ids []string
	if err := r.SearchTexts(context.Background(), a.taskID, a.agent, needle, func(id string) error {
		ids = append(ids, id)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

// oracle is what a search of the first n texts of an agent must find.
func (h *chunkHistory) oracle(a chunkAgent, n int, needle string) []string {
	var ids []string
	for _, e := range h.texts[a][:n] {
		if strings.Contains(e[1], needle) {
			ids = append(ids, e[0])
		}
	}
	return ids
}

// TestChunkFiltersFindWhatEveryFilterFinds: searches through the
// in-memory filters find exactly what the search through every filter in
// SQL finds, and what a plain substring scan finds, for needles of every
// kind, as the history grows (the filters are extended), in a snapshot
// older than what the filters hold, across agents, and with limits that
// evict agents or refuse one outright.
func TestChunkFiltersFindWhatEveryFilterFinds(t *testing.T) {
	ctx := context.Background()
	h := newChunkHistory(t)
	r := rand.New(rand.NewPCG(11, 12))
	agents := []chunkAgent{{"t1", "/root"}, {"t1", "/root/child"}, {"t2", "/root"}}
	words := strings.Fields("the a of error warning func return value go test chunk filter bloom needle main package import")
	text := func() string {
		var b strings.Builder
		for b.Len() < 1000+r.IntN(5000) {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(" \n\t."[r.IntN(4)])
			if r.IntN(300) == 0 { // a rare token
				fmt.Fprintf(&b, "RARE-%d-TOKEN ", r.IntN(50))
			}
		}
		return b.String()
	}
	limits := map[string]*ChunkFilters{
		"default":   NewChunkFilters(DefaultChunkFiltersLimit),
		"one agent": NewChunkFilters(9 * foldedBytes), // fits one agent's chunks, not two
		"too small": NewChunkFilters(3 * foldedBytes), // fits no agent once it has 4 chunks
	}
	needles := func(a chunkAgent) []string {
		out := []string{"RARE-7-TOKEN", "RARE-49-TOKEN ", "NOT-THERE-AT-ALL", "error", "e", "rr", "zzz", "needle main", "\n\t"}
		if es := h.texts[a]; len(es) > 0 {
			s := es[r.IntN(len(es))][1]
			i := r.IntN(len(s))
			out = append(out, s[i:min(len(s), i+3+r.IntN(20))])
		}
		return out
	}
	check := func(round int, rtx *eventlog.ReadTx, a chunkAgent, n int) {
		t.Helper()
		for _, needle := range needles(a) {
			want := h.oracle(a, n, needle)
			if got := search(t, rtx, nil, a, needle); !slices.Equal(got, want) {
				t.Fatalf("round %d, %v, %q: every filter found %v, the oracle %v", round, a, needle, got, want)
			}
			for name, f := range limits {
				if got := search(t, rtx, f, a, needle); !slices.Equal(got, want) {
					t.Fatalf("round %d, %v, %q, filters %s: found %v, want %v", round, a, needle, name, got, want)
				}
			}
		}
	}
	for round := range 12 {
		old, err := h.store.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var pin int // the snapshot starts at its first read
		if err := old.DB().QueryRowContext(ctx, `SELECT count(*) FROM history_chunks`).Scan(&pin); err != nil {
			t.Fatal(err)
		}
		oldCount := map[chunkAgent]int{}
		for _, a := range agents {
			oldCount[a] = len(h.texts[a])
			var batch []string
			for range 10 + r.IntN(40) {
				batch = append(batch, text())
			}
			h.place(a, batch)
		}
		rtx, err := h.store.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range agents {
			check(round, rtx, a, len(h.texts[a]))
		}
		rtx.Close()
		// The filters now hold chunks the old snapshot does not have.
		for _, a := range agents {
			check(round, old, a, oldCount[a])
		}
		old.Close()
		for name, f := range limits {
			if f.bytes > f.limit {
				t.Fatalf("filters %s hold %d bytes, over their limit of %d", name, f.bytes, f.limit)
			}
		}
	}
	var least, most int64
	if err := h.store.Reader().QueryRow(`SELECT min(n), max(n) FROM (SELECT count(*) AS n FROM history_chunks GROUP BY task_id, agent)`).Scan(&least, &most); err != nil || least < 5 || most > 9 {
		t.Fatalf("the agents have %d to %d sealed chunks (%v): the limits of the test need 5 to 9", least, most, err)
	}
	if n := len(limits["one agent"].agents); n != 1 {
		t.Fatalf("the filters that fit one agent hold %d", n)
	}
	if n := len(limits["too small"].agents); n != 0 {
		t.Fatalf("the filters too small for any agent hold %d", n)
	}
}

// TestFoldKeepsEveryBit: a folded filter has the folded bit of every bit
// of the filter, so no probe the full filter passes is refused.
func TestFoldKeepsEveryBit(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	for range 200 {
		full := make([]byte, bloomBytes)
		for range r.IntN(3000) {
			b := r.IntN(bloomBits)
			full[b>>3] |= 1 << (b & 7)
		}
		folded := fold(full)
		for b := range bloomBits {
			if full[b>>3]&(1<<(b&7)) != 0 {
				f := b % foldedBits
				if folded[f>>3]&(1<<(f&7)) == 0 {
					t.Fatalf("bit %d set, folded bit %d not", b, f)
				}
			}
		}
	}
	for _, b := range fold([]byte("short")) {
		if b != 0xff {
			t.Fatal("a malformed filter does not fold to all bits set")
		}
	}
}

// TestChunkFiltersPreload: Preload loads the filters of the agents whose
// branch changed last, as many as fit in the cache together (one that
// does not fit is skipped, a smaller older one still loaded); what it
// loads finds what the SQL check of every filter finds; a search during
// the load (between its batches, and from other goroutines) finds the
// same and loads what it needs itself; and a canceled load stops between
// batches with what it loaded still right.
func TestChunkFiltersPreload(t *testing.T) {
	ctx := context.Background()
	h := newChunkHistory(t)
	r := rand.New(rand.NewPCG(21, 4))
	words := strings.Fields("error warning func return value chunk filter bloom needle RARE-TOKEN")
	text := func() string {
		var b strings.Builder
		for n := 2000 + r.IntN(6000); b.Len() < n; {
			b.WriteString(words[r.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	// Branches changed in this order: small (oldest), big, recent.
	sizes := map[chunkAgent]int{{"t1", "/root/small"}: 90, {"t1", "/root/big"}: 250, {"t2", "/root"}: 150}
	positions := map[chunkAgent]int{{"t1", "/root/small"}: 1, {"t1", "/root/big"}: 2, {"t2", "/root"}: 3}
	for a, n := range sizes {
		var texts []string
		for range n {
			texts = append(texts, text())
		}
		h.place(a, texts)
	}
	if err := h.store.Update(ctx, "", func(tx *eventlog.Tx) error {
		for a, p := range positions {
			if _, err := tx.DB().ExecContext(ctx, `INSERT INTO history_branches (task_id, agent, revision, length, position)
				VALUES (?, ?, 1, 0, ?)`, a.taskID, a.agent, p); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sealed := map[chunkAgent]int64{}
	for a := range sizes {
		var n int64
		if err := h.store.Reader().QueryRow(`SELECT max(chunk_no) FROM history_chunks WHERE task_id = ? AND agent = ?`,
			a.taskID, a.agent).Scan(&n); err != nil {
			t.Fatal(err)
		}
		sealed[a] = n
	}
	recent, big, small := chunkAgent{"t2", "/root"}, chunkAgent{"t1", "/root/big"}, chunkAgent{"t1", "/root/small"}
	if !(sealed[small] > 4 && sealed[small] < sealed[recent] && sealed[recent] < sealed[big]) {
		t.Fatalf("sealed chunks %v: the test needs small < recent < big", sealed)
	}
	check := func(what string, f *ChunkFilters) {
		t.Helper()
		rtx, err := h.store.BeginRead(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rtx.Close()
		for a := range sizes {
			for _, needle := range []string{"RARE-TOKEN", "error", "NOT-THERE", "needle chunk"} {
				if got, want := search(t, rtx, f, a, needle), search(t, rtx, nil, a, needle); !slices.Equal(got, want) {
					t.Fatalf("%s: %v %q: found %v, every filter %v", what, a, needle, got, want)
				}
			}
		}
	}
	loaded := func(f *ChunkFilters) map[chunkAgent]int64 {
		out := map[chunkAgent]int64{}
		for a := range sizes {
			out[a] = f.Loaded(a.taskID, a.agent)
		}
		return out
	}

	// Everything fits.
	f := NewChunkFilters(DefaultChunkFiltersLimit)
	stats, err := f.Preload(ctx, h.store, PreloadOptions{BatchChunks: 7})
	if err != nil || stats.Agents != 3 || stats.Chunks != sealed[small]+sealed[big]+sealed[recent] || !maps.Equal(loaded(f), sealed) {
		t.Fatalf("preload: %+v, %v; loaded %v, want %v", stats, err, loaded(f), sealed)
	}
	check("all loaded", f)

	// Room for recent and small, not big: big is skipped, the older small
	// one still loaded.
	f = NewChunkFilters(int(sealed[recent]+sealed[small]) * foldedBytes)
	if stats, err := f.Preload(ctx, h.store, PreloadOptions{}); err != nil || stats.Agents != 2 {
		t.Fatalf("bounded preload: %+v, %v", stats, err)
	}
	if got := loaded(f); got[recent] != sealed[recent] || got[small] != sealed[small] || got[big] != 0 {
		t.Fatalf("bounded preload loaded %v of %v", got, sealed)
	}
	check("bounded", f)

	// A search between two batches of the agent being loaded loads the
	// rest itself; the load then skips it.
	f = NewChunkFilters(DefaultChunkFiltersLimit)
	batches := 0
	stats, err = f.Preload(ctx, h.store, PreloadOptions{BatchChunks: 3, BeforeBatch: func(context.Context) {
		if batches++; batches == 2 {
			check("between batches", f)
		}
	}})
	if err != nil || !maps.Equal(loaded(f), sealed) || stats.Chunks >= sealed[small]+sealed[big]+sealed[recent] {
		t.Fatalf("preload with a search between batches: %+v, %v; loaded %v", stats, err, loaded(f))
	}

	// Searches from other goroutines while it loads (run with -race).
	f = NewChunkFilters(DefaultChunkFiltersLimit)
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for range 5 {
				check("concurrent", f)
			}
		})
	}
	if _, err := f.Preload(ctx, h.store, PreloadOptions{BatchChunks: 2}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !maps.Equal(loaded(f), sealed) {
		t.Fatalf("after concurrent searches: loaded %v, want %v", loaded(f), sealed)
	}

	// Canceled at its third batch: it stops there.
	f = NewChunkFilters(DefaultChunkFiltersLimit)
	cctx, cancel := context.WithCancel(ctx)
	batches = 0
	_, err = f.Preload(cctx, h.store, PreloadOptions{BatchChunks: 2, BeforeBatch: func(context.Context) {
		if batches++; batches == 3 {
			cancel()
		}
	}})
	cancel()
	if !errors.Is(err, context.Canceled) || batches != 3 {
		t.Fatalf("canceled preload: %v after %d batches", err, batches)
	}
	if got := loaded(f); got[small] != 4 || got[big] != 0 || got[recent] != 0 {
		t.Fatalf("canceled preload loaded %v", got)
	}
	check("canceled", f)
}
