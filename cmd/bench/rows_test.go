package main

import (
	"slices"
	"testing"
)

// TestRowTable checks what the compiler does not: row names are unique
// and every row can be measured, described and judged; every fixture a
// row needs is in allFixtures, after the fixtures it needs.
func TestRowTable(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range allRows {
		if r.name == "" || seen[r.name] {
			t.Errorf("row %q: empty or repeated name", r.name)
		}
		seen[r.name] = true
		if r.help == "" || r.measure == nil || r.notes == nil || r.fig == nil || r.targetText == "" {
			t.Errorf("row %s lacks help, measure, notes, fig or targetText", r.name)
		}
		if (r.stretch != 0) != (r.stretchText != "") {
			t.Errorf("row %s: stretch %v with stretchText %q", r.name, r.stretch, r.stretchText)
		}
		var check func(fx *fixture)
		check = func(fx *fixture) {
			i := slices.Index(allFixtures, fx)
			if i < 0 {
				t.Errorf("row %s needs fixture %q, which is not in allFixtures", r.name, fx.name)
				return
			}
			for _, n := range fx.needs {
				if j := slices.Index(allFixtures, n); j > i {
					t.Errorf("fixture %q comes before %q, which it needs", fx.name, n.name)
				}
				check(n)
			}
		}
		for _, fx := range r.needs {
			check(fx)
		}
	}
}

func TestFixturesFor(t *testing.T) {
	for _, c := range []struct {
		rows []string
		want []*fixture
	}{
		{[]string{"append1"}, []*fixture{fxNotes, fxAppendWarm}},
		{[]string{"read8"}, []*fixture{fxNotes, fxRead8}},
		{[]string{"startup", "append16"}, []*fixture{fxNotes, fxAppendWarm, fxBareAppend, fxDurable, fxLog, fxReplayed}},
		{[]string{"append1-http"}, []*fixture{fxNotes, fxAppendWarm, fxBareAppend}},
		{[]string{"read1-http"}, []*fixture{fxNotes, fxRead8}},
		{[]string{"rss", "search-rare"}, []*fixture{fxHistory}},
		{[]string{"search-all-codex", "search-all-rare"}, []*fixture{fxSessions}},
		{rowNames(), allFixtures},
	} {
		got := fixturesFor(&config{rows: c.rows})
		if !slices.Equal(got, c.want) {
			var names []string
			for _, fx := range got {
				names = append(names, fx.name)
			}
			t.Errorf("fixturesFor(%v) = %q", c.rows, names)
		}
	}
}
