package inspector

import "strings"

// diffLine is one line of a line diff: kept ('='), added ('+') or
// removed ('-').
type diffLine struct {
	Op   string
	Text string
}

// maxDiffCells bounds the LCS table of a diff (lines of one side times
// lines of the other, after the common head and tail are set aside);
// past it the middle is shown as removed, then added.
const maxDiffCells = 4_000_000

// lineDiff is the line diff from a to b by longest common subsequence.
func lineDiff(a, b string) []diffLine {
	x, y := splitLines(a), splitLines(b)
	var head, tail []diffLine
	for len(x) > 0 && len(y) > 0 && x[0] == y[0] {
		head = append(head, diffLine{"=", x[0]})
		x, y = x[1:], y[1:]
	}
	for len(x) > 0 && len(y) > 0 && x[len(x)-1] == y[len(y)-1] {
		tail = append([]diffLine{{"=", x[len(x)-1]}}, tail...)
		x, y = x[:len(x)-1], y[:len(y)-1]
	}
	out := head
	if len(x)*len(y) > maxDiffCells {
		for _, l := range x {
			out = append(out, diffLine{"-", l})
		}
		for _, l := range y {
			out = append(out, diffLine{"+", l})
		}
		return append(out, tail...)
	}
	// lcs[i][j] is the LCS length of x[i:] and y[j:].
	lcs := make([][]int32, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
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
			out = append(out, diffLine{"=", x[i]})
			i, j = i+1, j+1
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, diffLine{"-", x[i]})
			i++
		default:
			out = append(out, diffLine{"+", y[j]})
			j++
		}
	}
	for ; i < len(x); i++ {
		out = append(out, diffLine{"-", x[i]})
	}
	for ; j < len(y); j++ {
		out = append(out, diffLine{"+", y[j]})
	}
	return append(out, tail...)
}

// splitLines splits s into lines without their newlines; a final newline
// ends the last line rather than starting an empty one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
