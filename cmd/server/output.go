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

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// progress returns a function reporting the number of items done (noun:
// "events", "entries") to stderr when stderr is a terminal (nil
// otherwise), and a func to end it. total < 0 means unknown.
func progress(stderr io.Writer, what, noun string, total int64) (func(int64), func()) {
	f, ok := stderr.(*os.File)
	if !ok || !(isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd())) {
		return nil, func() {}
	}
	return newProgressBar(f, what, noun, total, time.Now)
}

// rateAfter is how long a progress line runs before it shows a rate: an
// earlier one divides the first batch by almost no time.
const rateAfter = time.Second

// newProgressBar is progress writing to w, with the clock now. The rate is
// memoryd's own (items done over the time since the bar was made), shown
// from rateAfter on: the bar's own rate divides the first items by the
// time since its first render, which the first items start, so its first
// sample was billions a second.
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

// progressLabel is a progress line's description: what, and from
// rateAfter on the rate of n items in elapsed.
func progressLabel(what, noun string, n int64, elapsed time.Duration) string {
	if elapsed < rateAfter {
		return what
	}
	return fmt.Sprintf("%s: %.0f %s/s", what, float64(n)/elapsed.Seconds(), noun)
}
