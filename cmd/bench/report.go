package main

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// writeReport writes the Markdown report.
func writeReport(w io.Writer, b *bench, m machine, elapsed time.Duration) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	p("# memoryd benchmarks\n\n")
	p("Measured by `cmd/bench` on %s in %s. Each figure is measured against its ceiling (the same job done by raw SQLite or a bare\n", b.started.UTC().Format("2006-01-02 15:04 MST"), elapsed.Round(time.Second))
	p("net/http handler on the same machine) inside the same repetition loop, so the ratio is what to read; values are medians of %d repetition(s),\n", b.cfg.reps)
	if b.cfg.serverFlags != "" {
		p("with [min–max] in the notes. memoryd (%s) runs as a subprocess with its defaults (synchronous=FULL, read audit on) but `--log-level error` and `%s`;\n", b.binNote, b.cfg.serverFlags)
	} else {
		p("with [min–max] in the notes. memoryd (%s) runs as a subprocess with its defaults (synchronous=FULL, read audit on) but `--log-level error` (no line per request);\n", b.binNote)
	}
	p("the clients run in the bench process.\n\n")
	if b.atRest {
		p("**Encrypted at rest** (`-at-rest`): every memoryd process runs with MEMORYD_ENCRYPT=1 and a fixed MEMORYD_ENCRYPTION_KEY, so every database\n")
		p("memoryd makes is encrypted at rest (checked: see Other figures); the ceilings are plain. The replay row is not: `memoryd replay` makes a plain\n")
		p("database whatever MEMORYD_ENCRYPT says, so startup and the inspector rows serve a database made by `memoryd import` of the event log.\n\n")
	}

	writeMachine(bw, m)
	p("## Command\n\n```sh\n%s > docs/benchmarks.md\n```\n\n", commandLine(b.cfg.args))
	p("Settings: -reps %d, -history-bytes %s (%s), -sessions-bytes %s (%s), -disk-bytes %s (%s), -events %s, -dur %v, -rows %s.\n\n", b.cfg.reps, num(float64(b.cfg.historyBytes), 0),
		mb(b.cfg.historyBytes), num(float64(b.cfg.sessionsBytes), 0), mb(b.cfg.sessionsBytes), num(float64(b.cfg.diskBytes), 0), mb(b.cfg.diskBytes),
		num(float64(b.cfg.events), 0), b.cfg.dur, strings.Join(b.cfg.rows, ","))

	p("## Results\n\n")
	writeResults(bw, b)
	p("\nFigure and ceiling are medians; the ratio is the median of the per-repetition ratios.\n\n")

	p("## Notes\n\n")
	for _, s := range allRows {
		r, ok := b.results[s.name]
		if !ok {
			continue
		}
		p("### %s\n\n%s\n\n", s.name, s.notes(b))
		p("- figure: %s\n", spreadOf(r.fig).format(s.fig))
		if s.ceil != nil {
			p("- ceiling: %s\n", spreadOf(r.ceil).format(s.ceil))
			p("- ratio: %s\n", spreadOf(r.ratio).format(func(x float64) string { return fmt.Sprintf("%.2f×", x) }))
		}
		for _, name := range r.seriesOrder {
			f, label := seriesFormat(name)
			p("- %s: %s\n", label, spreadOf(r.series[name]).format(f))
		}
		if s.stretch != 0 {
			med := spreadOf(r.fig).med
			verdict := "not met"
			if med <= s.stretch {
				verdict = "met"
			}
			p("- stretch target %s: %s (%s)\n", s.stretchText, verdict, s.fig(med))
		}
		for i, pr := range r.printed {
			p("- rep %d, memoryd replay printed: %s\n", i+1, pr)
		}
		p("\n")
	}
	if len(b.info) > 0 {
		p("## Other figures (informational)\n\n")
		for _, line := range b.info {
			p("- %s\n", line)
		}
		p("\n")
	}
	return bw.Flush()
}

// writeMachine writes the report's Machine section.
func writeMachine(w io.Writer, m machine) {
	fmt.Fprintf(w, "## Machine\n\n")
	fmt.Fprintf(w, "| | |\n|---|---|\n")
	fmt.Fprintf(w, "| CPU | %s × %d |\n", m.cpu, m.cpus)
	fmt.Fprintf(w, "| RAM | %s |\n", m.ram)
	fmt.Fprintf(w, "| Kernel | %s |\n", m.kernel)
	fmt.Fprintf(w, "| Go (bench) | %s |\n", m.goBench)
	fmt.Fprintf(w, "| Go (memoryd binary) | %s |\n", m.goServer)
	fmt.Fprintf(w, "| SQLite | %s (`select sqlite_version()`) |\n", m.sqlite)
	fmt.Fprintf(w, "| Scratch filesystem | %s |\n", m.fs)
	fmt.Fprintf(w, "| Load average (1, 5, 15 min) | %s at the start, %s at the end (other processes share the machine) |\n\n", m.load, loadAverage())

}

// writeResults writes the table of b's results.
func writeResults(w io.Writer, b *bench) {
	fmt.Fprintf(w, "| row | figure | ceiling | ratio | target | result |\n|---|---|---|---|---|---|\n")
	for _, s := range allRows {
		r, ok := b.results[s.name]
		if !ok {
			continue
		}
		fig := spreadOf(r.fig)
		ceil, ratio, judged := "—", "—", fig.med
		if s.ceil != nil {
			ceil = s.ceil(spreadOf(r.ceil).med)
			judged = spreadOf(r.ratio).med
			ratio = fmt.Sprintf("%.2f×", judged)
		}
		pass := judged <= s.target
		if s.atLeast {
			pass = judged >= s.target
		}
		result := "short"
		switch {
		case s.target == 0:
			result = "—"
		case pass && !math.IsNaN(judged):
			result = "pass"
			if s.stretch != 0 {
				result = "pass (stretch: no)"
				if fig.med <= s.stretch {
					result = "pass (stretch: yes)"
				}
			}
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s |\n", s.name, s.fig(fig.med), ceil, ratio, s.targetText, result)
	}
}

// seriesFormat is the format and label of a series, which the suffix of
// its name picks.
func seriesFormat(name string) (func(float64) string, string) {
	f, label := sig, name
	if l, ok := strings.CutSuffix(name, " (s)"); ok {
		f, label = ms, l
	} else if l, ok := strings.CutSuffix(name, " (MB)"); ok {
		f, label = megabytes, l
	} else if l, ok := strings.CutSuffix(name, " (req/s)"); ok {
		f, label = rate("req/s"), l
	} else if l, ok := strings.CutSuffix(name, " (rows/s)"); ok {
		f, label = rate("rows/s"), l
	} else if l, ok := strings.CutSuffix(name, " (×)"); ok {
		f, label = func(x float64) string { return fmt.Sprintf("%.2f×", x) }, l
	}
	return f, label
}

// commandLine is the bench command line that produced the report.
func commandLine(args []string) string {
	parts := []string{"go run ./cmd/bench"}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"<>|&;$*?()") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}
