package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestTurn runs the turn row and checks the report: a figure, a ceiling
// and the notes' comparison with the separate requests. Every turn's
// answers were checked by the row (a request memoryd refused fails it).
// It asserts nothing about speed.
func TestTurn(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"-rows", "turn", "-reps", "2", "-dir", t.TempDir()}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	report := stdout.String()
	if !regexp.MustCompile(`(?m)^\| turn \| [0-9][0-9.,]* (ms|µs|s) \| [0-9][0-9.,]* (ms|µs|s) \| `).MatchString(report) {
		t.Errorf("no turn row with a figure and a ceiling:\n%s", report)
	}
	for _, want := range []string{"- the separate requests of before, client time per turn: ", "- memoryd CPU per turn, turn route: ",
		"- request bodies per turn, separate requests (bytes): ", "- response bodies per turn, turn route (bytes): "} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}
