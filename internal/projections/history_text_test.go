package projections

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestLiteralIndex: the rare-byte anchored search finds the first match
// exactly where bytes.Index does, for needles of any byte frequency.
func TestLiteralIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte("aaee  tZ\x00q\xff-")
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		return b
	}
	for range 20000 {
		hay := random(r.IntN(200))
		var needle []byte
		if len(hay) > 0 && r.IntN(2) == 0 {
			i := r.IntN(len(hay))
			needle = bytes.Clone(hay[i : i+1+r.IntN(min(len(hay)-i, 6))])
		} else {
			needle = random(1 + r.IntN(5))
		}
		m := newLiteral(string(needle))
		if got, want := m.index(hay), bytes.Index(hay, needle); got != want {
			t.Fatalf("index(%q, %q) = %d, want %d (anchor %q at %d)", hay, needle, got, want, m.anchor, m.at)
		}
	}
}

// TestBloomNoFalseNegative: a chunk's filter passes every needle the
// chunk contains, and skips most needles it does not.
func TestBloomNoFalseNegative(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	words := []string{"error ", "shard ", "checksum ", "mismatch ", "latency ", "request ", "😀 ", "日本語 ", "\n"}
	var data []byte
	for len(data) < chunkSealBytes {
		data = append(data, words[r.IntN(len(words))]...)
	}
	filter := trigramBloom(trigramBit, data)
	for range 5000 {
		i := r.IntN(len(data))
		needle := data[i : i+1+r.IntN(min(len(data)-i, 40))]
		if !bloomHas(filter, bloomProbes(trigramBit, needle)) {
			t.Fatalf("the filter skips %q, which the chunk holds", needle)
		}
	}
	skipped := 0
	for k := range 1000 {
		if !bloomHas(filter, bloomProbes(trigramBit, []byte("ZQX-RARE-NEEDLE-"+string(rune('A'+k%26))))) {
			skipped++
		}
	}
	if skipped < 990 {
		t.Fatalf("the filter skipped %d of 1000 absent needles", skipped)
	}
	if !bloomHas(filter, bloomProbes(trigramBit, []byte("zq"))) || !bloomHas(nil, bloomProbes(trigramBit, []byte("abc"))) {
		t.Fatal("a needle under three bytes, or a malformed filter, must pass")
	}
}
