package projections

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
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
		q := projectionsdb.New(tx.DB())
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
