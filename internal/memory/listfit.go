package memory

import (
	"strings"
)

// omissionLine returns the last line of a list that left records out.
func omissionLine(omitted int, hint string) string {
	return compactJSON(struct {
		Omitted int    `json:"omitted"`
		Hint    string `json:"hint"`
	}{omitted, hint})
}

// fitLines keeps the longest prefix of lines that fits in budget code
// points with the omission line, and returns how many it kept and the text.
// omittedBefore counts records a limit already dropped.
func fitLines(lines []string, budget, omittedBefore int, hint string) (int, string) {
	return fitLinesTail(lines, budget, omittedBefore > 0, func(omitted int) string {
		return omissionLine(omittedBefore+omitted, hint)
	})
}

// fitLinesTail keeps the longest prefix of lines that fits in budget code
// points with the last line tail gives for the lines left out. The tail is
// written when a line is left out, or always with withTail.
func fitLinesTail(lines []string, budget int, withTail bool, tail func(omitted int) string) (int, string) {
	total := 0
	for _, l := range lines {
		total += chars(l) + 1
	}
	if !withTail && total-1 <= budget {
		return len(lines), strings.Join(lines, "\n")
	}
	reserve := chars(tail(len(lines)))
	used, kept := 0, 0
	for _, l := range lines {
		n := chars(l) + 1
		if used+n+reserve > budget {
			break
		}
		used += n
		kept++
	}
	var b strings.Builder
	for _, l := range lines[:kept] {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	b.WriteString(tail(len(lines) - kept))
	return kept, b.String()
}

// limitList cuts recs to the tool's limit and returns how many it left out.
func limitList[T any](recs []T, limit int) ([]T, int) {
	return recs[:min(len(recs), limit)], max(0, len(recs)-limit)
}

// fitList fits recs, one line of compact JSON each, to budget for the list
// and search tools. It returns the text, the records shown and how many
// were left out in all, counting the omitted the limit left out.
func fitList[T any](recs []T, budget, omitted int, hint string) (string, []T, int) {
	return fitRendered(recs, jsonLines(recs), budget, omitted, hint)
}

// jsonLines renders each of recs as one line of compact JSON.
func jsonLines[T any](recs []T) []string {
	lines := make([]string, len(recs))
	for i := range recs {
		lines[i] = compactJSON(recs[i])
	}
	return lines
}

// fitRendered is fitList for records whose lines the caller rendered, one
// line for each of recs.
func fitRendered[T any](recs []T, lines []string, budget, omitted int, hint string) (string, []T, int) {
	kept, text := fitLines(lines, budget, omitted, hint)
	return text, recs[:kept], omitted + len(recs) - kept
}
