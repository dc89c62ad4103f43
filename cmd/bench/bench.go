package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// bench is one run, with its scratch folder, fixtures and samples.
type bench struct {
	cfg *config
	// atRest: every memoryd runs on databases encrypted at rest
	// (atrest.go). label names the run in progress lines when
	// -compare-at-rest runs two.
	atRest bool
	label  string
	// dbSizes are the bytes of the databases the fixtures made
	// deterministically, for -compare-at-rest's size ratios.
	dbSizes []dbSize
	// oneShots are timings the fixtures took once (an ingest, an import),
	// also compared by -compare-at-rest.
	oneShots []namedValue

	// postgres-append16 has two memoryd servers on one PostgreSQL database,
	// the raw ceiling's database, and a way to stop a private server.
	pg        [2]*proc
	pgTask    string
	pgAppends atomic.Int64
	pgRaw     string
	pgDB      string // the database memoryd serves
	pgVersion string
	pgStop    func()
	pgBase    string // the PostgreSQL server's connection string

	// The bytes-per-session-byte rows: generated Pi session files, the
	// database import-sessions made of them on each engine, and what the
	// last repetition found in each.
	disk *diskFixture

	progress io.Writer
	scratch  string
	bin      string
	binNote  string // where the memoryd binary came from
	token    string
	cl       *client
	calls    atomic.Int64 // call ids

	// append16, append1, read8, append1-http and read1-http share one
	// memoryd on a notes database.
	notes     *proc
	notesTask string
	appends   [17]int64 // per-client append counters; 16 is the sequential client
	readBytes int       // size of memoryd's read8 response
	bare      *proc     // read8's and read1-http's floor, answering with memoryd's read8 response
	// bareAppend is append1-http's floor and append16's bound. It is a bare
	// server answering with memoryd's append response, driven like memoryd.
	bareAppend *proc
	// durableAppend is append16's ceiling, the durable reference. It also
	// stores each request as one raw row with group commit before it answers.
	durableAppend *proc
	appendBytes   int    // size of memoryd's append response
	appendFile    string // memoryd's append response, which both answer with

	// mcp-read1 and hook-sync: a Claude Code HOME whose projects folder
	// holds the hook's transcripts, and hook-sync's transcript.
	hookHome, transcriptDir string
	transcript              [][]byte

	// search-rare, search-common, search-everywhere and rss share one
	// memoryd serving the history.
	hist       *proc
	histTask   string
	rare       string
	common     string
	everywhere string // a needle in nearly every tool result
	everyHits  int    // the items holding it, counted by GLOB
	ceiling    *sql.DB
	textBytes  int64
	textItems  int64
	searchedAt int      // the repetition whose searches ran
	histBranch []string // the history agent's branch, which the sync rows extend

	// sync-turn and sync-turn-whole use a second memoryd on the history.
	syncer       *proc
	syncRevision int64 // the history branch's revision, as the last sync returned it
	syncTurns    int   // turns sent
	syncFrom     int   // the branch's length before the first turn

	// The turn row's memoryd, agents and bare server.
	turn *turnFixture

	// The rollover rows: rollover's fixture and rollover-190k's.
	rollovers [2]*rollFixture

	// The search-all rows search the database import-sessions made of a
	// machine's session files, and scan the files as their ceiling.
	sessions    *sessionSet
	sessionsDB  string
	commonFiles int // the files holding allCommonNeedle, counted by the first scan
	// sessionsServer serves the same database, its chunk filters loaded
	// at start, for the same searches on the inspector's search page.
	sessionsServer *proc
	sessionsWeb    *http.Client

	// The redact rows: two memoryds, with redaction and without.
	redact *redactFixture

	// replay and startup use the exported log and the replayed database.
	logPath  string
	logBytes int64
	replayed string // the last replayed database

	results map[string]*rowResult
	info    []string // informational lines of the report
	started time.Time
}

// rowResult is the samples of one row, one per repetition.
type rowResult struct {
	fig, ceil, ratio []float64
	series           map[string][]float64 // other per-repetition values
	seriesOrder      []string
	printed          []string // what a subprocess printed, for the notes
}

func (r *rowResult) add(name string, v float64) {
	if r.series == nil {
		r.series = map[string][]float64{}
	}
	if _, ok := r.series[name]; !ok {
		r.seriesOrder = append(r.seriesOrder, name)
	}
	r.series[name] = append(r.series[name], v)
}

// record adds one repetition's sample.
func (r *rowResult) record(s sample, hasCeiling bool) {
	r.fig = append(r.fig, s.fig)
	if hasCeiling {
		r.ceil, r.ratio = append(r.ceil, s.ceil), append(r.ratio, s.ratio)
	}
	for _, v := range s.series {
		r.add(v.name, v.v)
	}
	if s.printed != "" {
		r.printed = append(r.printed, s.printed)
	}
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.progress, "[%6.1fs] %s%s\n", time.Since(b.started).Seconds(), b.label, fmt.Sprintf(format, args...))
}

func (b *bench) result(row string) *rowResult {
	r := b.results[row]
	if r == nil {
		r = &rowResult{}
		b.results[row] = r
	}
	return r
}

// runBench sets up the fixtures the selected rows need, runs the rows
// -reps times in the order of allRows and writes the report. With
// -compare-at-rest it does so for two runs, plain and encrypted at rest,
// each with fixtures of its own in a subfolder of the scratch folder, and
// runs each row on both in every repetition (which first alternates).
func runBench(ctx context.Context, cfg *config, stdout, stderr io.Writer) (err error) {
	started := time.Now()
	scratch, err := makeScratch(cfg.dir)
	if err != nil {
		return err
	}
	runs := []*bench{{cfg: cfg, atRest: cfg.atRest, scratch: scratch}}
	if cfg.compareAtRest {
		runs = []*bench{{cfg: cfg, scratch: scratch, label: "plain: "}, {cfg: cfg, atRest: true, label: "at rest: "}}
		runs[1].scratch = filepath.Join(scratch, "at-rest")
	}
	for _, b := range runs {
		b.progress, b.results, b.started = stderr, map[string]*rowResult{}, started
		tok := make([]byte, 16)
		rand.Read(tok)
		b.token = hex.EncodeToString(tok)
		b.cl = newClient(b.token)
		defer b.cl.http.CloseIdleConnections()
	}
	b := runs[0]
	defer func() {
		for _, r := range runs {
			r.closeAll(&err)
		}
		if cfg.keep {
			b.logf("kept the scratch folder %s", scratch)
		} else if rerr := os.RemoveAll(scratch); rerr != nil && err == nil {
			err = rerr
		}
	}()
	b.logf("scratch folder %s", scratch)
	if cfg.compareAtRest {
		if err := os.Mkdir(runs[1].scratch, 0o700); err != nil {
			return err
		}
	}

	if err := b.buildServer(ctx); err != nil {
		return err
	}
	for _, r := range runs[1:] {
		r.bin, r.binNote = b.bin, b.binNote
	}
	m, err := describeMachine(ctx, b.scratch, b.bin)
	if err != nil {
		return err
	}
	for _, r := range runs {
		for _, fx := range fixturesFor(cfg) {
			if err := fx.setup(r, ctx); err != nil {
				return fmt.Errorf("%s%w", r.label, err)
			}
		}
		if err := r.checkAtRest(); err != nil {
			return err
		}
	}
	for n := 1; n <= cfg.reps; n++ {
		figFirst := n%2 == 1 // alternate which of the pair runs first
		for _, row := range allRows {
			if !cfg.has(row.name) {
				continue
			}
			for i := range runs {
				r := runs[i]
				if !figFirst { // and which of the runs
					r = runs[len(runs)-1-i]
				}
				r.logf("rep %d/%d: %s", n, cfg.reps, row.name)
				s, err := row.measure(r, ctx, repetition{row: row.name, n: n, figFirst: figFirst})
				if err != nil {
					return fmt.Errorf("%srep %d, %s: %w", r.label, n, row.name, err)
				}
				r.result(row.name).record(s, row.ceil != nil)
			}
		}
	}
	for _, r := range runs {
		r.closeAll(&err)
	}
	if err != nil {
		return err
	}
	elapsed := time.Since(started)
	b.logf("done in %v", elapsed.Round(time.Second))
	if cfg.compareAtRest {
		return writeCompareReport(stdout, runs[0], runs[1], m, elapsed)
	}
	return writeReport(stdout, b, m, elapsed)
}

// closeAll stops every process still running.
// The first error lands in *err if it is nil.
func (b *bench) closeAll(err *error) {
	procs := []**proc{&b.notes, &b.bare, &b.bareAppend, &b.durableAppend, &b.syncer, &b.hist, &b.sessionsServer, &b.pg[0], &b.pg[1]}
	for _, f := range b.rollovers {
		if f != nil {
			procs = append(procs, &f.p)
		}
	}
	if b.turn != nil {
		procs = append(procs, &b.turn.md, &b.turn.bare)
	}
	if b.redact != nil {
		for _, s := range []*redactServer{b.redact.on, b.redact.off} {
			if s != nil {
				procs = append(procs, &s.p)
			}
		}
	}
	for _, p := range procs {
		if *p == nil {
			continue
		}
		if e := (*p).stop(); e != nil && *err == nil {
			*err = e
		}
		*p = nil
	}
	if b.ceiling != nil {
		b.ceiling.Close()
		b.ceiling = nil
	}
	if b.pgStop != nil {
		b.pgStop()
		b.pgStop = nil
	}
}

// makeScratch returns the scratch folder, dir or a new temporary one.
func makeScratch(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "memoryd-bench-")
	}
	// dir is created if missing and must be empty.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	if len(ents) > 0 {
		return "", &usageError{fmt.Sprintf("-dir %s is not empty (it is removed at the end)", dir)}
	}
	return filepath.Abs(dir)
}
