package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/memoryd/memoryd/internal/atrest"
	"github.com/memoryd/memoryd/internal/eventlog"
)

// Encryption at rest (issue 36). With -at-rest every memoryd the bench
// runs, serve and every verb, has MEMORYD_ENCRYPT=1 and a fixed
// MEMORYD_ENCRYPTION_KEY in its environment, so every database it makes
// is encrypted at rest and is opened with that key afterwards. The
// ceilings (raw SQLite, bare servers, the file scans) are untouched. With
// -compare-at-rest the bench makes two runs, plain and encrypted, each
// with fixtures of its own, runs every row on both in each repetition and
// reports each row's encrypted / plain ratio (writeCompareReport).

// benchKey is the key of the encrypted runs: fixed, so that a kept scratch
// folder can be opened afterwards (MEMORYD_ENCRYPTION_KEY=benchKey).
const benchKey = "6d656d6f7279642062656e63686d61726b206b65792c20617420726573742031"

// eventsDataTag and eventsPackedTag are where memoryd seals an event's
// payload and its compressed copy (internal/eventlog's tags for
// events.data and events.packed), which buildCeiling reads.
const (
	eventsDataTag   = "events.data"
	eventsPackedTag = "events.packed"
)

// benchSealer is the sealer of benchKey.
func benchSealer() *atrest.Sealer {
	key, err := atrest.ParseKey(benchKey)
	if err != nil {
		panic(err)
	}
	s, err := atrest.New(key)
	if err != nil {
		panic(err)
	}
	return s
}

// memorydEnv is extra followed by what the environment of a memoryd
// process adds for this run: the key and MEMORYD_ENCRYPT=1 for an
// encrypted one, and for a plain one their absence, whatever the bench's
// own environment holds.
func (b *bench) memorydEnv(extra ...string) []string {
	env := append([]string(nil), extra...)
	if b.atRest {
		return append(env, "MEMORYD_ENCRYPT=1", "MEMORYD_ENCRYPTION_KEY="+benchKey)
	}
	return append(env, "MEMORYD_ENCRYPT=0", "MEMORYD_ENCRYPTION_KEY=")
}

// importsLog reports whether the startup and inspector rows' database is
// made by memoryd import of the event log rather than by the replay row,
// so that both runs of -compare-at-rest make theirs the same way, whichever
// rows are chosen.
func (b *bench) importsLog() bool { return b.atRest || b.cfg.compareAtRest }

// importReplayed makes the startup and inspector rows' database with
// memoryd import of the event log, timed from exec to exit.
func (b *bench) importReplayed(ctx context.Context) error {
	out := filepath.Join(b.scratch, "imported.db")
	removeDB(out)
	cmd := exec.CommandContext(ctx, b.bin, "import", "--db", out, b.logPath)
	cmd.Env = append(os.Environ(), b.memorydEnv()...)
	t := time.Now()
	printed, err := cmd.CombinedOutput()
	took := time.Since(t)
	if err != nil {
		return fmt.Errorf("memoryd import of the event log: %v\n%s", err, printed)
	}
	if want := fmt.Sprintf("imported %d events", b.cfg.events); !strings.Contains(string(printed), want) {
		return fmt.Errorf("memoryd import of the event log printed %q, want %q", printed, want)
	}
	syncFS()
	b.replayed = out
	b.recordSize("imported.db after memoryd import of the event log", out)
	b.oneShots = append(b.oneShots, namedValue{"memoryd import of the event log (s)", took.Seconds()})
	b.info = append(b.info, fmt.Sprintf("The startup and inspector rows serve a database made by `memoryd import` of the event log (%s events), "+
		"not by the replay row: %s exec to exit, database %s.",
		num(float64(b.cfg.events), 0), ms(took.Seconds()), fileSize(out)))
	return nil
}

// dbSize is the size of a database a fixture made, with its WAL.
type dbSize struct {
	name  string
	bytes int64
}

func (b *bench) recordSize(name, path string) {
	b.dbSizes = append(b.dbSizes, dbSize{name, fileBytes(path)})
}

// checkAtRest checks that the memoryd databases the fixtures made are
// encrypted at rest, or plain, as the run asks: that they hold the at_rest
// row or not. It notes what it checked among the informational figures.
func (b *bench) checkAtRest() error {
	var checked []string
	check := func(name, driver, dsn string) error {
		db, err := sql.Open(driver, dsn)
		if err != nil {
			return err
		}
		defer db.Close()
		var n int
		if err := db.QueryRow("SELECT count(*) FROM at_rest").Scan(&n); err != nil {
			return fmt.Errorf("%s: read at_rest: %w", name, err)
		}
		if (n > 0) != b.atRest {
			return fmt.Errorf("%s: %d at_rest row(s), and the run is encrypted at rest: %v", name, n, b.atRest)
		}
		checked = append(checked, name)
		return nil
	}
	var files []string
	for _, f := range []string{"notes.db", "history.db", "sessions.db", "redact-default.db", "redact-off.db"} {
		files = append(files, filepath.Join(b.scratch, f))
	}
	if b.replayed != "" {
		files = append(files, b.replayed)
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			continue
		}
		if err := check(filepath.Base(f), "sqlite", eventlog.FileURI(f, url.Values{"mode": {"ro"}})); err != nil {
			return err
		}
	}
	if b.pgDB != "" {
		if err := check("PostgreSQL "+strings.TrimPrefix(mustPath(b.pgDB), "/"), "pgx", b.pgDB); err != nil {
			return err
		}
	}
	if len(checked) == 0 {
		return nil
	}
	what := "plain (no at_rest row)"
	if b.atRest {
		what = "encrypted at rest (an at_rest row)"
	}
	b.info = append(b.info, fmt.Sprintf("memoryd's databases checked %s after the fixtures' setup: %s.", what, strings.Join(checked, ", ")))
	return nil
}

func mustPath(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil {
		return dsn
	}
	return u.Path
}

// costRatio is what encryption costs in one repetition of row, encrypted
// over plain: of the time per operation (for a rate, plain over
// encrypted), or of the megabytes.
func costRatio(r *row, plain, enc float64) float64 {
	if r.rate {
		return plain / enc
	}
	return enc / plain
}

// writeCompareReport writes -compare-at-rest's Markdown report: each row's
// figure on plain databases and encrypted ones, and their ratio.
func writeCompareReport(w io.Writer, plain, enc *bench, m machine, elapsed time.Duration) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	cfg := plain.cfg
	p("# memoryd benchmarks: encryption at rest against plain\n\n")
	p("Measured by `cmd/bench -compare-at-rest` on %s in %s. Every row runs twice in each repetition, once on memoryd's plain databases and once on\n",
		plain.started.UTC().Format("2006-01-02 15:04 MST"), elapsed.Round(time.Second))
	p("databases encrypted at rest (every memoryd process with MEMORYD_ENCRYPT=1 and a fixed MEMORYD_ENCRYPTION_KEY), each run with fixtures of its\n")
	p("own, built the same way; which run goes first alternates. The ceilings (raw SQLite, bare servers, file scans) are the same jobs in both runs.\n")
	p("Values are medians of %d repetition(s), [min–max]. memoryd (%s) runs as a subprocess with its defaults but `--log-level error`", cfg.reps, plain.binNote)
	if cfg.serverFlags != "" {
		p(" and `%s`", cfg.serverFlags)
	}
	p(".\n\n")
	writeMachine(bw, m)
	p("## Command\n\n```sh\n%s\n```\n\n", commandLine(cfg.args))
	p("Settings: -reps %d, -history-bytes %s (%s), -sessions-bytes %s (%s), -events %s, -dur %v, -rows %s.\n\n", cfg.reps, num(float64(cfg.historyBytes), 0),
		mb(cfg.historyBytes), num(float64(cfg.sessionsBytes), 0), mb(cfg.sessionsBytes), num(float64(cfg.events), 0), cfg.dur, strings.Join(cfg.rows, ","))

	p("## Encrypted / plain\n\n")
	p("| row | plain | encrypted at rest | encrypted ÷ plain |\n|---|---|---|---|\n")
	for _, s := range allRows {
		rp, ok1 := plain.results[s.name]
		re, ok2 := enc.results[s.name]
		if !ok1 || !ok2 {
			continue
		}
		ratio := spreadOf(pairRatios(s, rp.fig, re.fig)).med
		p("| %s | %s | %s | %.2f× |\n", s.name, s.fig(spreadOf(rp.fig).med), s.fig(spreadOf(re.fig).med), ratio)
	}
	p("\nPlain and encrypted are the rows' figures (medians). The ratio is the median of the per-repetition ratios, of the time an operation takes\n")
	p("(for a rate, plain ÷ encrypted) or of the megabytes (rss): above 1× is what encryption at rest costs.\n")
	p("\n")

	if len(plain.dbSizes) > 0 {
		p("## Databases\n\n| database | plain | encrypted at rest | encrypted ÷ plain |\n|---|---|---|---|\n")
		for _, d := range plain.dbSizes {
			for _, e := range enc.dbSizes {
				if e.name == d.name {
					p("| %s | %s | %s | %.2f× |\n", d.name, mb(d.bytes), mb(e.bytes), float64(e.bytes)/float64(d.bytes))
				}
			}
		}
		p("\nBytes on disk, the database and its WAL, once the process that made it has exited.\n\n")
	}
	if len(plain.oneShots) > 0 {
		p("## Once per run\n\n| what | plain | encrypted at rest | encrypted ÷ plain |\n|---|---|---|---|\n")
		for _, d := range plain.oneShots {
			for _, e := range enc.oneShots {
				if e.name == d.name {
					name, _ := strings.CutSuffix(d.name, " (s)")
					p("| %s | %s | %s | %.2f× |\n", name, ms(d.v), ms(e.v), e.v/d.v)
				}
			}
		}
		p("\nTimed once, in the fixtures' setup (one sample each: read with the noise of this machine in mind).\n\n")
	}

	p("## Notes\n\n")
	for _, s := range allRows {
		rp, ok1 := plain.results[s.name]
		re, ok2 := enc.results[s.name]
		if !ok1 || !ok2 {
			continue
		}
		p("### %s\n\n%s\n\n", s.name, s.notes(enc))
		p("- plain: %s\n", spreadOf(rp.fig).format(s.fig))
		p("- encrypted at rest: %s\n", spreadOf(re.fig).format(s.fig))
		p("- encrypted ÷ plain: %s\n", spreadOf(pairRatios(s, rp.fig, re.fig)).format(func(x float64) string { return fmt.Sprintf("%.2f×", x) }))
		if s.ceil != nil {
			p("- ratio to the ceiling, plain: %s; encrypted: %s\n", fmt.Sprintf("%.2f×", spreadOf(rp.ratio).med), fmt.Sprintf("%.2f×", spreadOf(re.ratio).med))
		}
		// memoryd's CPU, steadier than the wall clock on a shared machine.
		for _, name := range rp.seriesOrder {
			if !strings.Contains(name, "memoryd") || !strings.Contains(name, "CPU") || strings.HasSuffix(name, "(cores)") || re.series[name] == nil {
				continue
			}
			f, label := seriesFormat(name)
			sp, se := spreadOf(rp.series[name]), spreadOf(re.series[name])
			p("- %s: plain %s, encrypted %s (%.2f×)\n", label, f(sp.med), f(se.med), se.med/sp.med)
		}
		p("\n")
	}
	for _, run := range []struct {
		title string
		b     *bench
	}{{"plain", plain}, {"encrypted at rest", enc}} {
		p("## Results, %s\n\n", run.title)
		writeResults(bw, run.b)
		p("\n")
		if len(run.b.info) > 0 {
			p("### Other figures, %s\n\n", run.title)
			for _, line := range run.b.info {
				p("- %s\n", line)
			}
			p("\n")
		}
	}
	return bw.Flush()
}

// pairRatios are the per-repetition cost ratios of a row.
func pairRatios(r *row, plain, enc []float64) []float64 {
	out := make([]float64, 0, len(plain))
	for i := range min(len(plain), len(enc)) {
		out = append(out, costRatio(r, plain[i], enc[i]))
	}
	return out
}
