package inspector

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// shown renders a diff as the page does, one word per line: "=a", "-b",
// "+c", "…5" for a gap of 5 unchanged lines.
func shown(lines []diffLine) string {
	var out []string
	for _, l := range lines {
		if l.Gap > 0 {
			out = append(out, fmt.Sprintf("…%d", l.Gap))
		} else {
			out = append(out, l.Op+l.Text)
		}
	}
	return strings.Join(out, " ")
}

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%d\n", i)
	}
	return b.String()
}

func TestLineDiff(t *testing.T) {
	for _, c := range []struct{ a, b, want string }{
		{"", "", ""},
		{"a\nb\n", "a\nb\n", "=a =b"},
		{"a\nb\nc\n", "a\nc\n", "=a -b =c"},
		{"a\nc\n", "a\nb\nc\n", "=a +b =c"},
		{"x\n", "y\n", "-x +y"},
		{"a\nb\nc\nd\n", "b\nx\nd\ne\n", "-a =b -c +x =d +e"},
		// Unchanged runs are cut to diffContext (3) lines beside a change.
		{numbered(1, 10), numbered(1, 9) + "ten\n", "…6 =7 =8 =9 -10 +ten"},
		{"zero\n" + numbered(2, 10), numbered(1, 10), "-zero +1 =2 =3 =4 …6"},
		{"a\n" + numbered(1, 7) + "b\n", "A\n" + numbered(1, 7) + "B\n", "-a +A =1 =2 =3 =4 =5 =6 =7 -b +B"},
		{"a\n" + numbered(1, 8) + "b\n", "A\n" + numbered(1, 8) + "B\n", "-a +A =1 =2 =3 …2 =6 =7 =8 -b +B"},
		{numbered(1, 10), numbered(1, 10), "=1 =2 =3 …7"},
	} {
		got, omitted, err := lineDiff(context.Background(), c.a, c.b)
		if err != nil || omitted != 0 {
			t.Fatalf("diff %q → %q: omitted %d, error %v", c.a, c.b, omitted, err)
		}
		if g := shown(got); g != c.want {
			t.Errorf("diff %q → %q: %q, want %q", c.a, c.b, g, c.want)
		}
	}
}

// TestLineDiffLargeNote: two revisions of 40,000 lines that differ in
// their first line (28.8 s before the tail was built by appending rather
// than one prepend per line) give a short diff.
func TestLineDiffLargeNote(t *testing.T) {
	a := numbered(1, 40_000)
	b := "first\n" + numbered(2, 40_000)
	got, omitted, err := lineDiff(context.Background(), a, b)
	if err != nil || omitted != 0 {
		t.Fatalf("omitted %d, error %v", omitted, err)
	}
	if g, want := shown(got), "-1 +first =2 =3 =4 …39996"; g != want {
		t.Errorf("diff %q, want %q", g, want)
	}
}

// TestLineDiffCapped: a diff of more than maxDiffLines lines shows that
// many and counts the rest.
func TestLineDiffCapped(t *testing.T) {
	got, omitted, err := lineDiff(context.Background(), "", numbered(1, 500_000))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != maxDiffLines || omitted != 500_000-maxDiffLines {
		t.Errorf("%d lines shown and %d omitted, want %d and %d", len(got), omitted, maxDiffLines, 500_000-maxDiffLines)
	}
	if got[0].Op != "+" || got[0].Text != "1" {
		t.Errorf("first line %+v", got[0])
	}
}

// TestLineDiffCancelled: the LCS stops when the request is cancelled.
func TestLineDiffCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := lineDiff(ctx, "a\n"+numbered(1, 1000)+"b\n", "c\n"+numbered(1000, 1999)+"d\n")
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

// BenchmarkLineDiffNote500k: a 500,000-line note (about 3.4 MB) and its
// revision with the first line changed, and with every line changed (past
// the LCS table's bound: removed, then added).
func BenchmarkLineDiffNote500k(b *testing.B) {
	a := numbered(1, 500_000)
	for _, c := range []struct{ name, b string }{
		{"first-line", "first\n" + numbered(2, 500_000)},
		{"every-line", numbered(500_001, 1_000_000)},
	} {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := lineDiff(context.Background(), a, c.b); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
