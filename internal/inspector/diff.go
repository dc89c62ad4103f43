package inspector

import (
	"context"
	"strings"
)

// diffLine is one line of a line diff. Op is '=' for a kept line, '+' for
// an added one, '-' for a removed one, and '…' for Gap lines not shown.
type diffLine struct {
	Op   string
	Text string
	Gap  int
}

// maxDiffCells, diffContext and maxDiffLines bound a diff as the notes
// page shows it. The work is linear in the notes' size but for the table.
const (
	// maxDiffCells bounds the LCS table, the lines of one side times those
	// of the other once the common head and tail are set aside.
	maxDiffCells = 4_000_000
	// diffContext is how many unchanged lines are shown beside a change.
	// A longer unchanged run is one gap line.
	diffContext = 3
	// maxDiffLines is how many lines of the diff are shown. The rest are
	// counted.
	maxDiffLines = 2000
)

// lineDiff returns the line diff from a to b as shown, and the number of
// diff lines not shown. It stops with ctx's error when ctx ends.
func lineDiff(ctx context.Context, a, b string) ([]diffLine, int, error) {
	x, y := splitLines(a), splitLines(b)
	head := 0
	for head < len(x) && head < len(y) && x[head] == y[head] {
		head++
	}
	tail := 0
	for tail < len(x)-head && tail < len(y)-head && x[len(x)-1-tail] == y[len(y)-1-tail] {
		tail++
	}
	var e diffEmitter
	e.keep(x[:head]...)
	xm, ym := x[head:len(x)-tail], y[head:len(y)-tail]
	if len(xm)*len(ym) > maxDiffCells { // too big a table, so the middle is removed, then added
		for _, l := range xm {
			e.change("-", l)
		}
		for _, l := range ym {
			e.change("+", l)
		}
	} else if err := lcsDiff(ctx, xm, ym, &e); err != nil {
		return nil, 0, err
	}
	e.keep(x[len(x)-tail:]...)
	e.flush(true)
	return e.lines, e.omitted, nil
}

// lcsDiff emits the diff of x and y by their longest common subsequence.
func lcsDiff(ctx context.Context, x, y []string, e *diffEmitter) error {
	// lcs[i][j] is the LCS length of x[i:] and y[j:].
	lcs := make([][]int32, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		if err := ctx.Err(); err != nil {
			return err
		}
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(x) && j < len(y) {
		switch {
		case x[i] == y[j]:
			e.keep(x[i])
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			e.change("-", x[i])
			i++
		default:
			e.change("+", y[j])
			j++
		}
	}
	for ; i < len(x); i++ {
		e.change("-", x[i])
	}
	for ; j < len(y); j++ {
		e.change("+", y[j])
	}
	return nil
}

// diffEmitter builds the diff as shown from the unchanged lines and the
// changes in order.
type diffEmitter struct {
	lines   []diffLine
	omitted int      // diff lines past maxDiffLines, not shown
	run     []string // the unchanged lines since the last change
	changed bool     // a change came before run
}

// keep adds unchanged lines to the current run.
func (e *diffEmitter) keep(lines ...string) { e.run = append(e.run, lines...) }

// change shows the run so far and then one changed line.
func (e *diffEmitter) change(op, text string) {
	e.flush(false)
	e.add(diffLine{Op: op, Text: text})
	e.changed = true
}

// flush shows the unchanged run around the changes, with a gap line for
// what is beyond their context.
func (e *diffEmitter) flush(end bool) {
	n := len(e.run)
	first, last := n, 0
	switch {
	case !e.changed && !end: // before the first change, its last lines
		first, last = 0, min(n, diffContext)
	case end: // after the last change, its first lines
		first = min(n, diffContext)
	case n > 2*diffContext+1: // between two changes, both ends
		first, last = diffContext, diffContext
	}
	for _, l := range e.run[:first] {
		e.add(diffLine{Op: "=", Text: l})
	}
	if gap := n - first - last; gap > 0 {
		e.add(diffLine{Op: "…", Gap: gap})
	}
	for _, l := range e.run[n-last:] {
		e.add(diffLine{Op: "=", Text: l})
	}
	e.run = e.run[:0]
}

// add appends l, or counts it once maxDiffLines are shown.
func (e *diffEmitter) add(l diffLine) {
	switch {
	case len(e.lines) < maxDiffLines:
		e.lines = append(e.lines, l)
	case l.Gap > 0:
		e.omitted += l.Gap
	default:
		e.omitted++
	}
}

// splitLines splits s into lines without their newlines. A final newline
// ends the last line rather than starting an empty one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
