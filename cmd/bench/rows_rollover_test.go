package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestRollover runs the rollover rows on small histories, keeping the
// scratch folder, and checks what they answered: every rollover's
// checks passed (prepare's bootstrap names the old window as the
// previous one and lists the user requests and the notes, commit made
// the new window live), the windows moved on by one per rollover, and
// the report gives each row a figure and its calls. It asserts nothing
// about speed.
func TestRollover(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"-rows", "rollover,rollover-190k", "-rollover-entries", "1500", "-reps", "2", "-dir", t.TempDir()}
	if err := run(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	report := stdout.String()
	fig := regexp.MustCompile(`(?m)^\| (rollover|rollover-190k) \| [0-9][0-9.,]* (ms|µs|s) \| `)
	if got := len(fig.FindAllString(report, -1)); got != 2 {
		t.Errorf("%d rollover rows with a figure, want 2:\n%s", got, report)
	}
	// Two repetitions of rolloverCycles rollovers each, from w1.
	last := "the window grows by one each: w11 after the last"
	if got := strings.Count(report, last); got != 2 {
		t.Errorf("the report says %q %d times, want 2:\n%s", last, got, report)
	}
	if !regexp.MustCompile(`a history of 1,5[0-9]{2} entries \([0-9,]+ user requests`).MatchString(report) {
		t.Errorf("the report does not give the history's entries and user requests:\n%s", report)
	}
	for _, want := range []string{"- rollover/prepare, client time: ", "- sync (compaction), client time: ",
		"- rollover/commit, client time: ", "- bootstrap (bytes): ", "Rollover history of 1,5"} {
		if !strings.Contains(report, want) {
			t.Errorf("the report lacks %q:\n%s", want, report)
		}
	}
}
