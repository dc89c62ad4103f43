package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// usageHead and usageTail are the -h text before and after the rows,
// which usage takes from allRows.
const usageHead = `usage: bench [flags] > report.md

bench measures memoryd against the ceilings of this machine and prints a
Markdown report on stdout (progress on stderr). memoryd runs as a subprocess
(built from ./cmd/server unless -server is given); each figure and its
ceiling run interleaved in the same repetition. Rows:

`

const usageTail = `
Sizes accept 1048576, 1<<20, 64KiB, 64MiB, 1GiB (also KB/MB/GB, powers of
1000). Exit status: 0 when the run completed (whatever the results), 1 on
any failure (a non-200 response, a process that died), 2 on bad usage.

flags:
`

// usage is the -h text before the flags.
func usage() string {
	var b strings.Builder
	b.WriteString(usageHead)
	for _, r := range allRows {
		lines := strings.Split(r.help, "\n")
		fmt.Fprintf(&b, "  %-13s  %s\n", r.name, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(&b, "%17s%s\n", "", l)
		}
	}
	b.WriteString(usageTail)
	return b.String()
}

// config is the parsed command line.
type config struct {
	reps         int
	historyBytes int64
	// sessionsBytes is the size of the search-all rows' session files.
	sessionsBytes int64
	// diskBytes is the size of the bytes-per-session-byte rows' Pi
	// session files.
	diskBytes int64
	events    int
	// rolloverEntries is the history of rollover-190k (rollover's is
	// 10,000 or this, the fewer).
	rolloverEntries int
	dur             time.Duration
	rows            []string
	dir             string
	keep            bool
	server          string
	serverFlags     string
	postgres        string
	// atRest runs every memoryd on databases encrypted at rest;
	// compareAtRest runs the rows on plain and encrypted ones side by
	// side (atrest.go).
	atRest, compareAtRest bool
	args                  []string
}

// has reports whether row is selected.
func (c *config) has(rows ...string) bool {
	for _, r := range rows {
		if slices.Contains(c.rows, r) {
			return true
		}
	}
	return false
}

// parseConfig parses the command line. It returns nil, nil for -h.
func parseConfig(args []string, stderr io.Writer) (*config, error) {
	c := &config{historyBytes: 1 << 30, rolloverEntries: 190_000, args: args}
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage())
		fs.PrintDefaults()
	}
	fs.IntVar(&c.reps, "reps", 3, "repetitions of every figure and its ceiling")
	fs.Var((*byteSize)(&c.historyBytes), "history-bytes", "`bytes` of generated Pi session history to search")
	fs.Var((*byteSize)(&c.sessionsBytes), "sessions-bytes", "`bytes` of generated Pi, Claude Code and Codex session files the search-all rows import and search (default: -history-bytes)")
	fs.Var((*byteSize)(&c.diskBytes), "disk-bytes", "`bytes` of generated Pi session files the bytes-per-session-byte rows import (default: -history-bytes, at most 64 MiB)")
	fs.IntVar(&c.events, "events", 1_000_000, "events in the log to replay (and in the startup database)")
	fs.IntVar(&c.rolloverEntries, "rollover-entries", c.rolloverEntries, "`entries` of the history rollover-190k rolls over (rollover's: 10000 or fewer)")
	fs.DurationVar(&c.dur, "dur", 3*time.Second, "duration of each throughput loop")
	rows := fs.String("rows", strings.Join(rowNames(), ","), "comma-separated `rows` to run")
	fs.StringVar(&c.dir, "dir", "", "scratch `folder` (default a new temporary one); removed at the end unless -keep")
	fs.BoolVar(&c.keep, "keep", false, "keep the scratch folder")
	fs.StringVar(&c.server, "server", "", "memoryd binary `path`; default: go build ./cmd/server into the scratch folder")
	fs.StringVar(&c.serverFlags, "server-flags", "", "extra `flags` for every memoryd serve, space-separated (e.g. \"--cpuprofile /tmp/memoryd.prof\"); the report names them")
	fs.StringVar(&c.postgres, "postgres", "", "PostgreSQL server `URL` for postgres-append16 and postgres-bytes-per-session-byte (it makes and drops the databases memoryd_bench, memoryd_bench_raw and memoryd_bench_disk, with the suffix _at_rest for an encrypted run); default: a private server started with scripts/local-postgres in a new temporary folder")
	fs.BoolVar(&c.atRest, "at-rest", false, "encrypt every database memoryd makes at rest (MEMORYD_ENCRYPT=1 and a fixed MEMORYD_ENCRYPTION_KEY in the environment of every memoryd the bench runs); the ceilings stay plain")
	fs.BoolVar(&c.compareAtRest, "compare-at-rest", false, "run the rows twice in each repetition, on plain databases and on databases encrypted at rest, each with fixtures of its own, and report each row's encrypted / plain ratio")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, nil
		}
		return nil, &usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return nil, &usageError{fmt.Sprintf("bench takes no arguments, got %q", fs.Args())}
	}
	if c.atRest && c.compareAtRest {
		return nil, &usageError{"-at-rest and -compare-at-rest exclude each other (-compare-at-rest runs both)"}
	}
	if c.reps < 1 {
		return nil, &usageError{"-reps must be at least 1"}
	}
	if c.dur <= 0 {
		return nil, &usageError{"-dur must be positive"}
	}
	if c.events < 1000 {
		return nil, &usageError{"-events must be at least 1000"}
	}
	if c.rolloverEntries < 100 || c.rolloverEntries > 10_000_000 {
		return nil, &usageError{"-rollover-entries must be between 100 and 10,000,000"}
	}
	if c.historyBytes < 1<<20 || c.historyBytes > 1<<40 {
		return nil, &usageError{"-history-bytes must be between 1MiB and 1TiB"}
	}
	if c.sessionsBytes == 0 {
		c.sessionsBytes = c.historyBytes
	}
	if c.sessionsBytes < 1<<20 || c.sessionsBytes > 1<<40 {
		return nil, &usageError{"-sessions-bytes must be between 1MiB and 1TiB"}
	}
	if c.diskBytes == 0 {
		c.diskBytes = min(c.historyBytes, 64<<20)
	}
	if c.diskBytes < 1<<20 || c.diskBytes > 1<<40 {
		return nil, &usageError{"-disk-bytes must be between 1MiB and 1TiB"}
	}
	for _, r := range strings.Split(*rows, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		if !slices.Contains(rowNames(), r) {
			return nil, &usageError{fmt.Sprintf("-rows: unknown row %q (rows: %s)", r, strings.Join(rowNames(), ", "))}
		}
		if !slices.Contains(c.rows, r) {
			c.rows = append(c.rows, r)
		}
	}
	if len(c.rows) == 0 {
		return nil, &usageError{"-rows names no row"}
	}
	return c, nil
}

// byteSize is a flag value in bytes, such as 1048576, 1<<20, 64MiB or 500MB.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	n, err := parseSize(s)
	if err != nil {
		return err
	}
	*b = byteSize(n)
	return nil
}

func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	if a, sh, ok := strings.Cut(s, "<<"); ok {
		x, err1 := strconv.ParseInt(strings.TrimSpace(a), 10, 64)
		y, err2 := strconv.ParseUint(strings.TrimSpace(sh), 10, 6)
		if err1 != nil || err2 != nil || x < 0 || x > (1<<62)>>y {
			return 0, fmt.Errorf("bad size %q", s)
		}
		return x << y, nil
	}
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"B", 1}} {
		if strings.HasSuffix(s, u.suffix) {
			s, mult = strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), u.mult
			break
		}
	}
	x, err := strconv.ParseInt(strings.ReplaceAll(s, "_", ""), 10, 64) // base 10, so "010MiB" is 10 MiB
	if err != nil || x < 0 || x > (1<<62)/mult {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return x * mult, nil
}
