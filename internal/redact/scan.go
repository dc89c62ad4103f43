package redact

import (
	"slices"
	"strings"
)

// The prefilter. Every rule but the keywordless ones names keywords, one of
// which each of its matches contains; a rule runs only at its keywords.
// Searching a megabyte once per keyword with strings.Index costs about 8 ns
// a byte, since a keyword that starts with a common letter makes Index stop
// often. Instead each keyword is anchored at its rarest byte, the text is
// searched once per distinct anchor byte with strings.IndexByte
// (vectorised), and at each hit the byte next to it picks the few keywords
// to compare.

// anchorGroup is the keywords anchored at one byte b. Each is indexed by
// the byte next to its anchor, on the rarer side (rel -1 or 1; 0 for a
// keyword of one byte), so that most hits of b cost a table look-up.
type anchorGroup struct {
	b      byte
	tables []*neighbourTable
}

type neighbourTable struct {
	rel   int
	index [256]uint16 // by the neighbour: 1 + an index into lists, or 0
	lists [][]anchoredKeyword
}

// anchoredKeyword is a keyword of rule whose byte at offset is its anchor.
type anchoredKeyword struct {
	text   string
	offset int
	rule   int // index in Redactor.rules; -1 for the marker prefix
}

// commonness ranks bytes by how often they occur in tool output (source
// code, logs with paths, URLs and hex ids, prose): the lower, the rarer.
// Bytes not listed are rarer still.
const commonness = " etaoinsrlcdhupm\nfgy./b_w,()\"=:-0123456789kvxTSEAIRNCL;D\tjOP{}MFBUGH*qz'VWY[]>KQ<XJZ"

func rarity(b byte) int {
	if i := strings.IndexByte(commonness, b); i >= 0 {
		return i
	}
	return len(commonness)
}

// index groups the rules' keywords (and the marker prefix) by anchor byte
// and neighbour.
func (r *Redactor) index() {
	add := func(text string, rule int) {
		best := 0
		for i := 1; i < len(text); i++ {
			if rarity(text[i]) > rarity(text[best]) {
				best = i
			}
		}
		rel := 0
		switch {
		case best+1 < len(text) && (best == 0 || rarity(text[best+1]) >= rarity(text[best-1])):
			rel = 1
		case best > 0:
			rel = -1
		}
		i := slices.IndexFunc(r.anchors, func(g *anchorGroup) bool { return g.b == text[best] })
		if i < 0 {
			r.anchors = append(r.anchors, &anchorGroup{b: text[best]})
			i = len(r.anchors) - 1
		}
		g := r.anchors[i]
		j := slices.IndexFunc(g.tables, func(t *neighbourTable) bool { return t.rel == rel })
		if j < 0 {
			g.tables = append(g.tables, &neighbourTable{rel: rel})
			j = len(g.tables) - 1
		}
		t := g.tables[j]
		n := text[best+rel]
		if t.index[n] == 0 {
			t.lists = append(t.lists, nil)
			t.index[n] = uint16(len(t.lists))
		}
		t.lists[t.index[n]-1] = append(t.lists[t.index[n]-1], anchoredKeyword{text: text, offset: best, rule: rule})
	}
	add(markerPrefix, -1)
	for i, ru := range r.rules {
		for _, k := range ru.keywords {
			add(k, i)
		}
	}
}

// hits is where keywords occur in a text: for each rule, the positions of
// its keywords, sorted; and the positions of marker prefixes.
type hits struct {
	byRule  [][]int // nil when no keyword occurs
	markers []int
}

// scan finds the keywords of s, one IndexByte pass per anchor byte. It
// allocates nothing when there is none.
func (r *Redactor) scan(s string) hits {
	var h hits
	unsorted := false
	for _, g := range r.anchors {
		for i := 0; ; {
			j := strings.IndexByte(s[i:], g.b)
			if j < 0 {
				break
			}
			p := i + j
			i = p + 1
			for _, t := range g.tables {
				if p+t.rel < 0 || p+t.rel >= len(s) {
					continue
				}
				l := t.index[s[p+t.rel]]
				if l == 0 {
					continue
				}
				for _, k := range t.lists[l-1] {
					start := p - k.offset
					if start < 0 || start+len(k.text) > len(s) || s[start:start+len(k.text)] != k.text {
						continue
					}
					if k.rule < 0 {
						h.markers = append(h.markers, start)
						continue
					}
					if h.byRule == nil {
						h.byRule = make([][]int, len(r.rules))
					}
					pos := h.byRule[k.rule]
					unsorted = unsorted || len(pos) > 0 && pos[len(pos)-1] >= start
					h.byRule[k.rule] = append(pos, start)
				}
			}
		}
	}
	if unsorted {
		for i, pos := range h.byRule {
			slices.Sort(pos)
			h.byRule[i] = slices.Compact(pos)
		}
	}
	slices.Sort(h.markers)
	return h
}

// caseVariants returns k in lower case, Title case and UPPER case, for the
// keywords of case-insensitive rules.
func caseVariants(keys ...string) []string {
	var out []string
	for _, k := range keys {
		low := strings.ToLower(k)
		for _, v := range []string{low, strings.ToUpper(low[:1]) + low[1:], strings.ToUpper(low)} {
			if !slices.Contains(out, v) {
				out = append(out, v)
			}
		}
	}
	return out
}
