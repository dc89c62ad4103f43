package main

import (
	"bufio"
	"context"
	"debug/buildinfo"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// machine describes where the run happened.
type machine struct {
	cpu, ram, kernel, goBench, goServer, sqlite, fs, load string
	cpus                                                  int
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}

func describeMachine(ctx context.Context, scratch, bin string) (machine, error) {
	m := machine{cpu: "unknown", ram: "unknown", kernel: "unknown", fs: "unknown"}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, _ := strings.Cut(sc.Text(), ":")
			switch strings.TrimSpace(k) {
			case "processor":
				m.cpus++
			case "model name":
				m.cpu = strings.TrimSpace(v)
			}
		}
		f.Close()
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
				m.ram = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.kernel = "Linux " + strings.TrimSpace(string(b))
	}
	m.goBench = fmt.Sprintf("%s %s/%s, GOMAXPROCS %d", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	m.goServer = "unknown"
	if bi, err := buildinfo.ReadFile(bin); err == nil {
		m.goServer = bi.GoVersion
		for _, d := range bi.Deps {
			if d.Path == "modernc.org/sqlite" {
				m.goServer += ", modernc.org/sqlite " + d.Version
			}
		}
	}
	v, err := sqliteVersion(ctx)
	if err != nil {
		return m, err
	}
	m.sqlite = v
	m.fs = filesystemOf(scratch)
	m.load = loadAverage()
	return m, nil
}

// filesystemOf names the filesystem type and mount point holding dir,
// from /proc/self/mountinfo.
func filesystemOf(dir string) string {
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	best, fstype := "", "unknown"
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		fields, postFields := strings.Fields(pre), strings.Fields(post)
		if !ok || len(fields) < 5 || len(postFields) < 1 {
			continue
		}
		mp := strings.ReplaceAll(fields[4], `\040`, " ")
		if (dir == mp || strings.HasPrefix(dir, strings.TrimSuffix(mp, "/")+"/")) && len(mp) >= len(best) {
			best, fstype = mp, postFields[0]
		}
	}
	if best == "" {
		return "unknown"
	}
	return fmt.Sprintf("%s (mounted at %s)", fstype, best)
}

// rowSpec says how a row is shown and judged.
type rowSpec struct {
	fig, ceil  func(float64) string // nil ceil: an absolute target
	target     float64              // 0: no target, the row informs
	atLeast    bool                 // the ratio (or the absolute figure) must be ≥ target; else ≤
	targetText string
	what       string // the notes: what exactly was measured
}

func rate(unit string) func(float64) string {
	return func(x float64) string { return num(x, 0) + " " + unit }
}

func specs(b *bench) map[string]rowSpec {
	dur := b.cfg.dur.String()
	return map[string]rowSpec{
		"append16": {rate("appends/s"), rate("rows/s"), 0.6, true, "≥ 0.6×",
			"memoryd: 16 goroutines, each POSTing `notes_append_to_file` back to back for " + dur + " with a new call_id per request " +
				"(`{\"path\":\"bench/<client>-<n/1000>.md\",\"text\":\"- appended line <n> of the benchmark\\n\"}`, a new file per 1,000 appends per client), " +
				"keep-alive connections, every response checked for 200; figure = 200s / wall time. " +
				"Ceiling: raw SQLite in this process (modernc), the perf-limits §2 loop: table events with UNIQUE(stream_id, stream_seq), INDEX(type), UNIQUE(ulid), " +
				"WAL, synchronous=FULL, one connection, busy_timeout=5000, one prepared INSERT through tx.Stmt, ~1,000-byte lowercase JSON bodies, " +
				"1,000 inserts per transaction for " + dur + " on a fresh file in the scratch folder; rows/s. Ratio = figure / ceiling. " +
				"Bound (no target, after each pair): the same 16-client loop with the same requests against a bare net/http server in its own process " +
				"(`bench " + bareVerb + "`) that reads each body and answers with the bytes of one memoryd append response (" + num(float64(b.appendBytes), 0) + " bytes) " +
				"and stores nothing: what loopback HTTP alone allows on this machine, as a ratio of the same ceiling. " +
				"Durable reference (no target, after the bound): the same loop against `bench " + durableVerb + "`, which answers the same way " +
				"but only once it has inserted the request's body as one row of a fresh database with the ceiling's schema and settings " +
				"(synchronous=FULL), from a single writer that commits the requests waiting together in one transaction (group commit, at most 256); " +
				"it parses, checks and projects nothing: about the least a durable HTTP append server does here."},
		"append1": {ms, ms, 3, false, "≤ 3×",
			"memoryd: one client appending sequentially (as in append16) for " + dur + "; figure = p50 of the HTTP round trip of each append. " +
				"Ceiling: the same raw SQLite loop with 1 insert per transaction (FULL) for " + dur + "; p50 of BEGIN…COMMIT. Ratio = figure / ceiling (lower is better)."},
		"search-rare": {ms, ms, 2, true, "≥ 2× (stretch ≤ 20 ms)",
			fmt.Sprintf("memoryd: one `history_search_contents` `{\"query\":%q,\"limit\":20}` over HTTP on the restarted server, timed by the client; "+
				"it must return exactly 1 result (details.n_returned + omitted). Ceiling: `SELECT count(*) FROM t WHERE body GLOB '*…*'` "+
				"over a copy of the same rendered item texts (%s items, %s) in a fresh ceiling.db; it must count 1. "+
				"Both are warm: in every repetition each runs once untimed before the timed runs. Ratio = ceiling time / memoryd time.", b.rare, num(float64(b.textItems), 0), mb(b.textBytes))},
		"search-common": {ms, ms, 1, true, "≥ 1×",
			fmt.Sprintf("As search-rare with the needle %q, which occurs nowhere and whose first byte is the most frequent letter of the text "+
				"(the worst case for first-byte skipping); both must find 0. %s of text scanned.", b.common, mb(b.textBytes))},
		"search-everywhere": {ms, ms, 0, true, "none (information)",
			fmt.Sprintf("As search-rare with the needle %q, found in nearly every tool result (%s items): memoryd's trigram filters skip few "+
				"chunks, so it reads most of the text and looks up every hit, its worst case; GLOB stops at the first match of each row. "+
				"Both must count the items GLOB counted when the ceiling was built. Not a row of the issue's table: it shows where memoryd is slower.",
				b.everywhere, num(float64(b.everyHits), 0))},
		"replay": {rate("events/s"), rate("events/s"), 0.75, true, "≥ 0.75×",
			fmt.Sprintf("memoryd: wall time of the subprocess `memoryd replay events.jsonl --db replayed-<rep>.db` (exec to exit, its summary and digests included) "+
				"on a synthetic exported log of %s events (%s; `forensics.WriteSyntheticLog`: one task, 4 agents, note.appended events spread over up to 2,000 notes per agent); "+
				"its summary must count every event. Ceiling: in this process, read the same file, decode each line with encoding/json into a small struct and "+
				"insert it into the raw perf-limits table (stream_id=stream, stream_seq=stream_version, type, ulid=id, ts=position, body=data), "+
				"1,000 per transaction with synchronous=OFF (as memoryd replays: a replayed database is rebuilt, not acknowledged), timed from opening "+
				"the fresh database to closing it. The file systems are synced between the two halves, untimed. events/s; ratio = figure / ceiling. "+
				"After the row the file systems are synced (outside the timing), so that the writeback of the gigabytes it wrote does not take CPU from the next row.",
				num(float64(b.cfg.events), 0), mb(b.logBytes))},
		"read8": {rate("req/s"), rate("req/s"), 0.3, true, "≥ 0.3×",
			fmt.Sprintf("memoryd: 8 goroutines POSTing `notes_read_file` `{\"path\":\"bench/read8.md\"}` (a new call_id each) of a ~4 KB note (a %s-byte response) for %s. "+
				"Ceiling: a bare net/http server in its own process (`bench %s`) that reads the request body and answers with the exact bytes memoryd "+
				"returned (application/json), driven by the same 8-goroutine loop with the same requests (a new call_id each). req/s; ratio = figure / ceiling.",
				num(float64(b.readBytes), 0), dur, bareVerb)},
		"rss": {func(x float64) string { return sig(x) + " MB" }, nil, 150, false, "≤ 150 MB",
			"VmHWM (peak resident set) of the restarted memoryd serving the history, read from /proc/<pid>/status after the repetition's searches; " +
				"MB = 10⁶ bytes. The server was restarted after the ingest, so this is the peak of start-up plus serving searches, not of ingesting (the ingest's own peak is under Other figures)."},
		"startup": {ms, nil, 0.3, false, "≤ 300 ms",
			fmt.Sprintf("Time from exec of `memoryd serve` on the replayed %s-event database to the first 200 from `GET /healthz` (polled every 1 ms "+
				"once the listening line is printed); the reported position must equal the event count.", num(float64(b.cfg.events), 0))},
	}
}

// writeReport writes the Markdown report.
func writeReport(w io.Writer, b *bench, m machine, elapsed time.Duration) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	sp := specs(b)
	p("# memoryd benchmarks\n\n")
	p("Measured by `cmd/bench` on %s in %s. Each figure is measured against its ceiling (the same job done by raw SQLite or a bare\n", b.started.UTC().Format("2006-01-02 15:04 MST"), elapsed.Round(time.Second))
	p("net/http handler on the same machine) inside the same repetition loop, so the ratio is what to read; values are medians of %d repetition(s),\n", b.cfg.reps)
	if b.cfg.serverFlags != "" {
		p("with [min–max] in the notes. memoryd (%s) runs as a subprocess with its defaults (synchronous=FULL, read audit on) but `--log-level error` and `%s`;\n", b.binNote, b.cfg.serverFlags)
	} else {
		p("with [min–max] in the notes. memoryd (%s) runs as a subprocess with its defaults (synchronous=FULL, read audit on) but `--log-level error` (no line per request);\n", b.binNote)
	}
	p("the clients run in the bench process.\n\n")

	p("## Machine\n\n")
	p("| | |\n|---|---|\n")
	p("| CPU | %s × %d |\n", m.cpu, m.cpus)
	p("| RAM | %s |\n", m.ram)
	p("| Kernel | %s |\n", m.kernel)
	p("| Go (bench) | %s |\n", m.goBench)
	p("| Go (memoryd binary) | %s |\n", m.goServer)
	p("| SQLite | %s (`select sqlite_version()`) |\n", m.sqlite)
	p("| Scratch filesystem | %s |\n", m.fs)
	p("| Load average (1, 5, 15 min) | %s at the start, %s at the end (other processes share the machine) |\n\n", m.load, loadAverage())

	p("## Command\n\n```sh\n%s > docs/benchmarks.md\n```\n\n", commandLine(b.cfg.args))
	p("Settings: -reps %d, -history-bytes %s (%s), -events %s, -dur %v, -rows %s.\n\n", b.cfg.reps, num(float64(b.cfg.historyBytes), 0),
		mb(b.cfg.historyBytes), num(float64(b.cfg.events), 0), b.cfg.dur, strings.Join(b.cfg.rows, ","))

	p("## Results\n\n")
	p("| row | figure | ceiling | ratio | target | result |\n|---|---|---|---|---|---|\n")
	for _, row := range allRows {
		r, ok := b.results[row]
		if !ok {
			continue
		}
		s := sp[row]
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
			if row == "search-rare" {
				result = "pass (stretch: no)"
				if fig.med <= 0.020 {
					result = "pass (stretch: yes)"
				}
			}
		}
		p("| %s | %s | %s | %s | %s | %s |\n", row, s.fig(fig.med), ceil, ratio, s.targetText, result)
	}
	p("\nFigure and ceiling are medians; the ratio is the median of the per-repetition ratios.\n\n")

	p("## Notes\n\n")
	for _, row := range allRows {
		r, ok := b.results[row]
		if !ok {
			continue
		}
		s := sp[row]
		p("### %s\n\n%s\n\n", row, s.what)
		p("- figure: %s\n", spreadOf(r.fig).format(s.fig))
		if s.ceil != nil {
			p("- ceiling: %s\n", spreadOf(r.ceil).format(s.ceil))
			p("- ratio: %s\n", spreadOf(r.ratio).format(func(x float64) string { return fmt.Sprintf("%.2f×", x) }))
		}
		for _, name := range r.seriesOrder {
			f, label := sig, name
			if l, ok := strings.CutSuffix(name, " (s)"); ok {
				f, label = ms, l
			} else if l, ok := strings.CutSuffix(name, " (MB)"); ok {
				f, label = func(x float64) string { return sig(x) + " MB" }, l
			} else if l, ok := strings.CutSuffix(name, " (req/s)"); ok {
				f, label = rate("req/s"), l
			} else if l, ok := strings.CutSuffix(name, " (×)"); ok {
				f, label = func(x float64) string { return fmt.Sprintf("%.2f×", x) }, l
			}
			p("- %s: %s\n", label, spreadOf(r.series[name]).format(f))
		}
		if row == "search-rare" {
			med := spreadOf(r.fig).med
			verdict := "not met"
			if med <= 0.020 {
				verdict = "met"
			}
			p("- stretch target ≤ 20 ms: %s (%s)\n", verdict, ms(med))
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
