package memory

import (
	"strings"
	"testing"
)

// TestFitList checks the tail the list and search tools share: the records
// shown are the longest prefix whose lines fit the budget with the omission
// line, the text is those lines then the omission line, and the count left
// out adds the records the limit dropped to those the budget did.
func TestFitList(t *testing.T) {
	type rec struct {
		N int    `json:"n"`
		S string `json:"s"`
	}
	recs := []rec{{1, "a"}, {2, "bé"}, {3, "c<&> and a third record longer than an omission line"}}
	lines := []string{`{"n":1,"s":"a"}`, `{"n":2,"s":"bé"}`, `{"n":3,"s":"c<&> and a third record longer than an omission line"}`}
	all := strings.Join(lines, "\n")
	omission := func(n int) string { return omissionLine(n, "hint") }
	for _, tc := range []struct {
		name          string
		budget, limit int // limit: records the limit dropped before the fit
		text          string
		shown, left   int
	}{
		{"all fit exactly", chars(all), 0, all, 3, 0},
		{"one code point short of all", chars(all) - 1, 0, lines[0] + "\n" + lines[1] + "\n" + omission(1), 2, 1},
		{"the omission line takes room", chars(lines[0]+"\n"+lines[1]+"\n"+omission(1)) - 1, 0, lines[0] + "\n" + omission(2), 1, 2},
		{"a limit dropped some", 1000, 2, all + "\n" + omission(2), 3, 2},
		{"none fit", chars(omission(3)), 0, omission(3), 0, 3},
		{"none fit, after a limit", 5, 4, omission(7), 0, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text, shown, left := fitList(recs, tc.budget, tc.limit, "hint")
			if text != tc.text || len(shown) != tc.shown || left != tc.left {
				t.Fatalf("fitList(budget %d, omitted %d) = %q, %d shown, %d left out; want %q, %d, %d",
					tc.budget, tc.limit, text, len(shown), left, tc.text, tc.shown, tc.left)
			}
			for i := range shown {
				if shown[i] != recs[i] {
					t.Fatalf("shown[%d] = %v, want %v", i, shown[i], recs[i])
				}
			}
			if chars(text) > tc.budget && tc.shown > 0 {
				t.Fatalf("text of %d code points over the budget of %d", chars(text), tc.budget)
			}
			// fitList is fitRendered over the records' compact JSON, which is
			// fitLines' text.
			if k, want := fitLines(lines, tc.budget, tc.limit, "hint"); k != len(shown) || want != text {
				t.Fatalf("fitLines = %d, %q; fitList = %d, %q", k, want, len(shown), text)
			}
		})
	}
}

// TestLimitList checks the cut to a tool's limit and its count.
func TestLimitList(t *testing.T) {
	for _, tc := range []struct{ n, limit, kept, omitted int }{{5, 3, 3, 2}, {2, 3, 2, 0}, {0, 1, 0, 0}, {3, 3, 3, 0}} {
		kept, omitted := limitList(make([]int, tc.n), tc.limit)
		if len(kept) != tc.kept || omitted != tc.omitted {
			t.Errorf("limitList(%d records, limit %d) = %d, %d; want %d, %d", tc.n, tc.limit, len(kept), omitted, tc.kept, tc.omitted)
		}
	}
}
