package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/mattn/go-isatty"
	"github.com/schollz/progressbar/v3"
)

// writeJSON writes v to w as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// progress returns a function that reports the number of items done on
// stderr, and a function that ends the report. A total below zero is unknown.
func progress(stderr io.Writer, what, noun string, total int64) (func(int64), func()) {
	f, ok := stderr.(*os.File)
	if !ok || !(isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())) {
		return nil, func() {} // no report when stderr is not a terminal
	}
	return newProgressBar(f, what, noun, total, time.Now)
}

// rateAfter is how long a progress line runs before it shows a rate. An
// earlier rate would divide the first batch by almost no time.
const rateAfter = time.Second

// newProgressBar is progress writing to w, with the clock now. It shows a
// rate of its own from rateAfter on, as the bar's first rate is far too high.
func newProgressBar(w io.Writer, what, noun string, total int64, now func() time.Time) (func(int64), func()) {
	bar := progressbar.NewOptions64(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(false), // its estimate comes from the bar's own rate
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	start := now()
	report := func(n int64) {
		if el := now().Sub(start); el >= rateAfter {
			bar.Describe(progressLabel(what, noun, n, el))
		}
		_ = bar.Set64(n)
	}
	finished := false
	return report, func() {
		if !finished {
			finished = true
			_ = bar.Finish()
		}
	}
}

// progressLabel returns a progress line's description. From rateAfter on
// it adds the rate of n items in elapsed.
func progressLabel(what, noun string, n int64, elapsed time.Duration) string {
	if elapsed < rateAfter {
		return what
	}
	return fmt.Sprintf("%s: %.0f %s/s", what, float64(n)/elapsed.Seconds(), noun)
}
