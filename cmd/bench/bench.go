package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/history"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// bench is one run: its scratch folder, the processes it started and the
// samples it took.
type bench struct {
	cfg      *config
	progress io.Writer
	scratch  string
	bin      string
	binNote  string // where the memoryd binary came from
	token    string
	cl       *client
	calls    atomic.Int64 // call ids

	// append16, append1, read8: one memoryd on a notes database.
	notes     *proc
	notesTask string
	appends   [17]int64 // per-client append counters (16 = the sequential client)
	readBytes int       // size of memoryd's read8 response
	bare      *proc     // read8's ceiling: answers with memoryd's read8 response
	// append16's bound: a bare server answering with memoryd's append
	// response, driven like memoryd (no target; it shows what loopback
	// HTTP alone allows on this machine).
	bareAppend *proc
	// append16's durable reference: the same, but storing each request
	// as one raw row with group commit before it answers (no target; the
	// least a durable HTTP append server does on this machine).
	durableAppend *proc
	appendBytes   int // size of memoryd's append response

	// search-rare, search-common, search-everywhere, rss: one memoryd
	// serving the history.
	hist       *proc
	histTask   string
	rare       string
	common     string
	everywhere string // a needle in nearly every tool result
	everyHits  int    // the items holding it, counted by GLOB
	ceiling    *sql.DB
	textBytes  int64
	textItems  int64
	searchedAt int // the repetition whose searches ran

	// replay, startup.
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

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.progress, "[%6.1fs] %s\n", time.Since(b.started).Seconds(), fmt.Sprintf(format, args...))
}

func (b *bench) result(row string) *rowResult {
	r := b.results[row]
	if r == nil {
		r = &rowResult{}
		b.results[row] = r
	}
	return r
}

// runBench runs the selected rows and writes the report.
func runBench(ctx context.Context, cfg *config, stdout, stderr io.Writer) (err error) {
	b := &bench{cfg: cfg, progress: stderr, results: map[string]*rowResult{}, started: time.Now()}
	if b.scratch, err = makeScratch(cfg.dir); err != nil {
		return err
	}
	defer func() {
		b.closeAll(&err)
		if cfg.keep {
			b.logf("kept the scratch folder %s", b.scratch)
		} else if rerr := os.RemoveAll(b.scratch); rerr != nil && err == nil {
			err = rerr
		}
	}()
	b.logf("scratch folder %s", b.scratch)
	tok := make([]byte, 16)
	rand.Read(tok)
	b.token = hex.EncodeToString(tok)
	b.cl = newClient(b.token)
	defer b.cl.http.CloseIdleConnections()

	if err := b.buildServer(ctx); err != nil {
		return err
	}
	m, err := describeMachine(ctx, b.scratch, b.bin)
	if err != nil {
		return err
	}
	if cfg.has("append16", "append1", "read8") {
		if err := b.setupNotes(ctx); err != nil {
			return err
		}
	}
	if cfg.has("search-rare", "search-common", "search-everywhere", "rss") {
		if err := b.setupHistory(ctx); err != nil {
			return err
		}
	}
	if cfg.has("replay", "startup") {
		if err := b.setupLog(ctx); err != nil {
			return err
		}
	}
	for rep := 1; rep <= cfg.reps; rep++ {
		figFirst := rep%2 == 1 // alternate which of the pair runs first
		for _, row := range allRows {
			if !cfg.has(row) {
				continue
			}
			b.logf("rep %d/%d: %s", rep, cfg.reps, row)
			if err := b.measure(ctx, row, rep, figFirst); err != nil {
				return fmt.Errorf("rep %d, %s: %w", rep, row, err)
			}
		}
	}
	b.closeAll(&err)
	if err != nil {
		return err
	}
	elapsed := time.Since(b.started)
	b.logf("done in %v", elapsed.Round(time.Second))
	return writeReport(stdout, b, m, elapsed)
}

// closeAll stops every process still running; the first error lands in
// *err if it is nil.
func (b *bench) closeAll(err *error) {
	for _, p := range []**proc{&b.notes, &b.bare, &b.bareAppend, &b.durableAppend, &b.hist} {
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
}

// makeScratch returns the scratch folder: dir (created; it must be empty)
// or a new temporary one.
func makeScratch(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "memoryd-bench-")
	}
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

// buildServer sets b.bin: -server, else go build ./cmd/server from the
// module root into the scratch folder.
func (b *bench) buildServer(ctx context.Context) error {
	if b.cfg.server != "" {
		abs, err := filepath.Abs(b.cfg.server)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return fmt.Errorf("-server: %w", err)
		}
		b.bin, b.binNote = abs, "given with -server"
		return nil
	}
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	gomod := strings.TrimSpace(string(out))
	if err != nil || gomod == "" || gomod == os.DevNull {
		return fmt.Errorf("cannot find the memoryd module to build ./cmd/server (go env GOMOD: %q, %v): run bench inside the module or pass -server", gomod, err)
	}
	root := filepath.Dir(gomod)
	b.bin = filepath.Join(b.scratch, "memoryd")
	b.logf("building memoryd: go build -o <scratch>/memoryd ./cmd/server")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", b.bin, "./cmd/server")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/server: %v\n%s", err, out)
	}
	b.binNote = "built with go build ./cmd/server"
	if rev, err := exec.CommandContext(ctx, "git", "-C", root, "describe", "--always", "--dirty", "--abbrev=12").Output(); err == nil {
		b.binNote += " at commit " + strings.TrimSpace(string(rev))
	}
	return nil
}

// startMemoryd starts memoryd serve on db.
func (b *bench) startMemoryd(ctx context.Context, name, db string) (*proc, error) {
	args := []string{b.bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--log-level", "error"}
	args = append(args, strings.Fields(b.cfg.serverFlags)...)
	return startProc(ctx, name, args, []string{"MEMORYD_TOKEN=" + b.token}, b.progress)
}

// attach attaches a new session and returns its task id.
func (b *bench) attach(ctx context.Context, p *proc, name string) (string, error) {
	body := fmt.Appendf(nil, `{"session_key":"/bench/%s.jsonl","budget":{"context_window":200000}}`, name)
	var res struct {
		TaskID string `json:"task_id"`
		Agent  string `json:"agent"`
	}
	if err := b.cl.postJSON(ctx, p.url+"/v1/sessions/attach", body, &res); err != nil {
		return "", err
	}
	if res.TaskID == "" || res.Agent != "/root" {
		return "", fmt.Errorf("attach returned task %q agent %q, want a task and /root", res.TaskID, res.Agent)
	}
	return res.TaskID, nil
}

// toolBody is a tool call's request body with a new call id.
func (b *bench) toolBody(task, args string) []byte {
	return fmt.Appendf(nil, `{"context":{"task_id":%q,"agent":"/root","call_id":"toolu_bench%d"},"arguments":%s}`, task, b.calls.Add(1), args)
}

// appendBody is client c's next notes_append_to_file: a new file every
// 1,000 appends per client, so notes stay small.
func (b *bench) appendBody(c int) []byte {
	n := b.appends[c]
	b.appends[c]++
	return b.toolBody(b.notesTask, fmt.Sprintf(`{"path":"bench/%d-%d.md","text":"- appended line %d of the benchmark\n"}`, c, n/1000, n))
}

// readBody is a read8 request: notes_read_file of the ~4 KB note.
func (b *bench) readBody() []byte {
	return b.toolBody(b.notesTask, `{"path":"bench/read8.md"}`)
}

// setupNotes starts memoryd on a notes database, attaches, writes the
// read8 note, starts the bare server on memoryd's response and warms
// both up.
func (b *bench) setupNotes(ctx context.Context) error {
	var err error
	if b.notes, err = b.startMemoryd(ctx, "memoryd(notes)", filepath.Join(b.scratch, "notes.db")); err != nil {
		return err
	}
	if b.notesTask, err = b.attach(ctx, b.notes, "notes"); err != nil {
		return err
	}
	b.logf("memoryd(notes) at %s, task %s", b.notes.url, b.notesTask)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if b.cfg.has("append16", "append1") {
		warm := min(b.cfg.dur/5, time.Second)
		if _, err := loop(ctx, 16, warm, func(ctx context.Context, c int) error {
			_, err := b.cl.post(ctx, b.notes.url+"/v1/tools/notes_append_to_file", b.appendBody(c), false)
			return err
		}); err != nil {
			return fmt.Errorf("append warm-up: %w", err)
		}
	}
	if b.cfg.has("append16") {
		resp, err := b.cl.post(ctx, b.notes.url+"/v1/tools/notes_append_to_file", b.appendBody(0), true)
		if err != nil {
			return err
		}
		b.appendBytes = len(resp)
		file := filepath.Join(b.scratch, "append-response.json")
		if err := os.WriteFile(file, resp, 0o600); err != nil {
			return err
		}
		if b.bareAppend, err = startProc(ctx, "bare-server(append)", []string{self, bareVerb, file}, nil, b.progress); err != nil {
			return err
		}
		durableDB := filepath.Join(b.scratch, "durable-append.db")
		if b.durableAppend, err = startProc(ctx, "durable-server(append)", []string{self, durableVerb, durableDB, file}, nil, b.progress); err != nil {
			return err
		}
		for _, p := range []*proc{b.bareAppend, b.durableAppend} {
			if _, err := loop(ctx, 16, min(b.cfg.dur/5, time.Second), func(ctx context.Context, c int) error {
				_, err := b.cl.post(ctx, p.url+"/v1/tools/notes_append_to_file", b.appendBody(c), false)
				return err
			}); err != nil {
				return fmt.Errorf("%s warm-up: %w", p.name, err)
			}
		}
	}
	if !b.cfg.has("read8") {
		return nil
	}
	var text strings.Builder
	for i := 0; text.Len() < 4000; i++ {
		fmt.Fprintf(&text, "line %03d: the quick brown fox jumps over the lazy dog\n", i)
	}
	args, _ := json.Marshal(map[string]string{"path": "bench/read8.md", "text": text.String()})
	if _, err := b.cl.post(ctx, b.notes.url+"/v1/tools/notes_write_file", b.toolBody(b.notesTask, string(args)), false); err != nil {
		return err
	}
	resp, err := b.cl.post(ctx, b.notes.url+"/v1/tools/notes_read_file", b.readBody(), true)
	if err != nil {
		return err
	}
	var read struct {
		Details struct {
			Text string `json:"text"`
		} `json:"details"`
	}
	if err := json.Unmarshal(resp, &read); err != nil || read.Details.Text != text.String() {
		return fmt.Errorf("notes_read_file did not return the note written (%v): %.200s", err, resp)
	}
	b.readBytes = len(resp)
	file := filepath.Join(b.scratch, "read8-response.json")
	if err := os.WriteFile(file, resp, 0o600); err != nil {
		return err
	}
	if b.bare, err = startProc(ctx, "bare-server", []string{self, bareVerb, file}, nil, b.progress); err != nil {
		return err
	}
	for _, url := range []string{b.notes.url, b.bare.url} {
		if _, err := loop(ctx, 8, min(b.cfg.dur/5, time.Second), func(ctx context.Context, _ int) error {
			_, err := b.cl.post(ctx, url+"/v1/tools/notes_read_file", b.readBody(), false)
			return err
		}); err != nil {
			return fmt.Errorf("read warm-up: %w", err)
		}
	}
	return nil
}

// maxSyncRequest bounds one history sync request body (memoryd's limit
// is 8 MiB).
const maxSyncRequest = 6_000_000

// setupHistory generates a Pi session of about -history-bytes, syncs it
// into memoryd over HTTP, copies the rendered item texts into the
// ceiling database, restarts memoryd on the history and checks both
// searches.
func (b *bench) setupHistory(ctx context.Context) error {
	t0 := time.Now()
	b.logf("history: generating %s of Pi session entries (sessiongen.Large)", mb(b.cfg.historyBytes))
	sess := sessiongen.Large(int(b.cfg.historyBytes))
	if len(sess.Branch) != len(sess.Entries) {
		return fmt.Errorf("sessiongen.Large is no longer linear (%d entries, branch of %d)", len(sess.Entries), len(sess.Branch))
	}
	total := int64(sess.Bytes())
	b.logf("history: %d entries, %s, generated in %v", len(sess.Entries), mb(total), time.Since(t0).Round(time.Millisecond))

	db := filepath.Join(b.scratch, "history.db")
	p, err := b.startMemoryd(ctx, "memoryd(history)", db)
	if err != nil {
		return err
	}
	b.hist = p
	if b.histTask, err = b.attach(ctx, p, "history"); err != nil {
		return err
	}
	if err := b.syncHistory(ctx, sess); err != nil {
		return err
	}
	branch := sess.Branch
	sess = sessiongen.Session{} // free the gigabyte before measuring anything
	runtime.GC()
	debug.FreeOSMemory()
	if err := b.syncProbe(ctx, branch); err != nil {
		return err
	}
	// The ingest's own peak, which the rss row (a restarted server) does
	// not cover.
	hwm, rss, err := procMemory(b.hist.pid())
	if err != nil {
		return err
	}
	b.info = append(b.info, fmt.Sprintf("History server memory at the end of the ingest (VmHWM is the peak over the whole ingest, requests ≤ %s): VmHWM %s, VmRSS %s.",
		mb(maxSyncRequest), mb(hwm), mb(rss)))
	err = b.hist.stop()
	b.hist = nil
	if err != nil {
		return err
	}
	if err := b.buildCeiling(ctx, db); err != nil {
		return err
	}
	t1 := time.Now()
	if b.hist, err = b.startMemoryd(ctx, "memoryd(history)", db); err != nil {
		return err
	}
	pos, err := b.cl.health(ctx, b.hist.url)
	if err != nil {
		return err
	}
	b.info = append(b.info, fmt.Sprintf("History server restart on the %s database (position %s): %s to the first 200 from /healthz.",
		fileSize(db), num(float64(pos), 0), ms(time.Since(t1).Seconds())))
	hwm, rss, err = procMemory(b.hist.pid())
	if err != nil {
		return err
	}
	b.info = append(b.info, fmt.Sprintf("History server memory after the restart, before any search: VmHWM %s, VmRSS %s.", mb(hwm), mb(rss)))
	b.logf("memoryd(history) restarted at %s; warming both searches", b.hist.url)
	for i, needle := range []string{b.rare, b.common} {
		took, err := b.searchMemoryd(ctx, needle)
		if err != nil {
			return err
		}
		if i == 0 {
			b.info = append(b.info, fmt.Sprintf("The server's first search after the restart (%q, untimed in the rows: it loads the chunk filters, docs/performance.md): %s.",
				needle, ms(took.Seconds())))
		}
		if _, err := b.searchCeiling(ctx, needle); err != nil {
			return err
		}
	}
	return nil
}

// syncHistory sends the session's entries in order, each request carrying
// the branch from the root to its last entry, in bodies of at most
// maxSyncRequest bytes.
func (b *bench) syncHistory(ctx context.Context, sess sessiongen.Session) error {
	head := fmt.Sprintf(`{"context":{"task_id":%q,"agent":"/root"},"entries":[`, b.histTask)
	const mid, end = `],"branch":[`, `]}`
	start := time.Now()
	lastReport := start
	var sent, branchBytes int64
	var requests int
	var firstTenth, lastTenth time.Duration
	total := int64(sess.Bytes())
	var body bytes.Buffer
	for i := 0; i < len(sess.Entries); {
		j, eb, bb := i, int64(0), branchBytes
		for j < len(sess.Entries) && j-i < memory.MaxSyncEntries {
			add, addB := int64(len(sess.Entries[j])+1), int64(len(sess.Branch[j])+3)
			if j > i && int64(len(head)+len(mid)+len(end))+eb+add+bb+addB > maxSyncRequest {
				break
			}
			eb, bb, j = eb+add, bb+addB, j+1
		}
		body.Reset()
		body.WriteString(head)
		for k, e := range sess.Entries[i:j] {
			if k > 0 {
				body.WriteByte(',')
			}
			body.Write(e)
		}
		body.WriteString(mid)
		for k, id := range sess.Branch[:j] {
			if k > 0 {
				body.WriteByte(',')
			}
			body.WriteByte('"')
			body.WriteString(id)
			body.WriteByte('"')
		}
		body.WriteString(end)
		t := time.Now()
		var res struct {
			Stored    int `json:"stored"`
			Unchanged int `json:"unchanged"`
		}
		if err := b.cl.postJSON(ctx, b.hist.url+"/v1/history/sync", body.Bytes(), &res); err != nil {
			return fmt.Errorf("history sync of entries %d–%d: %w", i, j-1, err)
		}
		if res.Stored+res.Unchanged != j-i {
			return fmt.Errorf("history sync of entries %d–%d: stored %d + unchanged %d, want %d", i, j-1, res.Stored, res.Unchanged, j-i)
		}
		took := time.Since(t)
		for _, e := range sess.Entries[i:j] {
			before := sent
			sent += int64(len(e))
			if before < total/10 {
				firstTenth += took * time.Duration(len(e)) / time.Duration(eb)
			}
			if sent > total-total/10 {
				lastTenth += took * time.Duration(len(e)) / time.Duration(eb)
			}
		}
		requests++
		branchBytes = bb
		i = j
		if time.Since(lastReport) > 5*time.Second || i == len(sess.Entries) {
			lastReport = time.Now()
			el := time.Since(start).Seconds()
			b.logf("history sync: %3.0f%% %s of %s, %d entries, %d requests: %.1f MB/s, %s entries/s",
				100*float64(sent)/float64(total), mb(sent), mb(total), i, requests, float64(sent)/1e6/el, num(float64(i)/el, 0))
		}
	}
	el := time.Since(start)
	tenth := float64(total/10) / 1e6
	firstTenth, lastTenth = max(firstTenth, time.Microsecond), max(lastTenth, time.Microsecond)
	b.info = append(b.info, fmt.Sprintf("History ingest (POST /v1/history/sync, one client, bodies ≤ %s carrying the whole branch so far): "+
		"%s entries, %s in %d requests in %s: **%.1f MB/s, %s entries/s** (first tenth of the bytes %.1f MB/s, last tenth %.1f MB/s).",
		mb(maxSyncRequest), num(float64(len(sess.Entries)), 0), mb(total), requests, el.Round(100*time.Millisecond),
		float64(total)/1e6/el.Seconds(), num(float64(len(sess.Entries))/el.Seconds(), 0),
		tenth/firstTenth.Seconds(), tenth/lastTenth.Seconds()))
	return nil
}

// syncProbe times what a client pays per turn once the history is large:
// three syncs of one new user message each, every one carrying the whole
// branch as the contract requires (informational; the texts contain no
// needle).
func (b *bench) syncProbe(ctx context.Context, branch []string) error {
	known := make(map[string]bool, len(branch))
	for _, id := range branch {
		known[id] = true
	}
	var took []float64
	var size int
	for i := range 3 {
		id := fmt.Sprintf("be5c%04x", i)
		for known[id] {
			id = fmt.Sprintf("%08x", len(known)+i)
		}
		known[id] = true
		entry := fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2027-01-01T00:00:0%dZ","message":{"role":"user","content":"probe %d: one more turn","timestamp":%d}}`,
			id, branch[len(branch)-1], i, i, 1798761600000+i)
		branch = append(branch, id)
		var body bytes.Buffer
		fmt.Fprintf(&body, `{"context":{"task_id":%q,"agent":"/root"},"entries":[%s],"branch":`, b.histTask, entry)
		ids, err := json.Marshal(branch)
		if err != nil {
			return err
		}
		body.Write(ids)
		body.WriteString("}")
		size = body.Len()
		var res struct {
			Stored int `json:"stored"`
		}
		t := time.Now()
		if err := b.cl.postJSON(ctx, b.hist.url+"/v1/history/sync", body.Bytes(), &res); err != nil {
			return fmt.Errorf("sync probe: %w", err)
		}
		took = append(took, time.Since(t).Seconds())
		if res.Stored != 1 {
			return fmt.Errorf("sync probe: stored %d entries, want 1", res.Stored)
		}
	}
	b.info = append(b.info, fmt.Sprintf("One more turn on the full history: a sync of 1 new entry with the whole branch (%s ids, a %s body) "+
		"took %s per request (3 requests).", num(float64(len(branch)), 0), mb(int64(size)), spreadOf(took).format(ms)))
	b.logf("sync probe: %s per one-entry sync", spreadOf(took).format(ms))
	return nil
}

// buildCeiling copies the rendered text of every history entry out of
// memoryd's database (read-only) into ceiling.db table t, counts its bytes
// and picks the needles.
func (b *bench) buildCeiling(ctx context.Context, histDB string) error {
	t0 := time.Now()
	src, err := sql.Open("sqlite", events.FileURI(histDB, url.Values{"mode": {"ro"}}))
	if err != nil {
		return err
	}
	defer src.Close()
	path := filepath.Join(b.scratch, "ceiling.db")
	removeDB(path)
	dst, err := sql.Open("sqlite", events.FileURI(path, url.Values{"_pragma": {"journal_mode(WAL)", "synchronous(OFF)"}}))
	if err != nil {
		return err
	}
	dst.SetMaxOpenConns(1)
	// One row per history item, its text as TEXT: the layout a plain
	// implementation would search, and the one GLOB scans fastest (no
	// conversion of each value).
	if _, err := dst.ExecContext(ctx, "CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)"); err != nil {
		dst.Close()
		return err
	}
	// The texts memoryd searches: each stored entry rendered by the same
	// function memoryd renders it with (history.Render), read from the raw
	// entries memoryd keeps. If that column goes, this query fails and the
	// run stops.
	rows, err := src.QueryContext(ctx, "SELECT raw FROM history_entries")
	if err != nil {
		dst.Close()
		return fmt.Errorf("read the rendered history texts from memoryd's database: %w", err)
	}
	var freq [256]int64
	tx, err := dst.BeginTx(ctx, nil)
	if err != nil {
		rows.Close()
		dst.Close()
		return err
	}
	for rows.Next() {
		var raw sql.RawBytes
		if err = rows.Scan(&raw); err != nil {
			break
		}
		r := history.Render(raw)
		if !r.Item || r.Text == "" {
			continue
		}
		text := r.Text
		for _, c := range []byte(text) {
			freq[c]++
		}
		b.textBytes += int64(len(text))
		b.textItems++
		if _, err = tx.ExecContext(ctx, "INSERT INTO t (body) VALUES (?)", text); err != nil {
			break
		}
		if b.textItems%20000 == 0 {
			if err = tx.Commit(); err != nil {
				break
			}
			if tx, err = dst.BeginTx(ctx, nil); err != nil {
				break
			}
		}
	}
	err = errors.Join(err, rows.Err(), rows.Close())
	if err == nil {
		err = tx.Commit()
	} else {
		tx.Rollback()
	}
	if err == nil {
		_, err = dst.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	}
	if err != nil {
		dst.Close()
		return fmt.Errorf("build ceiling.db: %w", err)
	}
	if b.textBytes == 0 {
		dst.Close()
		return errors.New("memoryd's history_entries render to no item text: the search ceiling would scan nothing")
	}
	b.ceiling = dst

	// The needles: the rare one planted by sessiongen, and one that never
	// occurs whose first byte is the most frequent letter of the text.
	b.rare = sessiongen.LargeRareNeedle
	type bf struct {
		c byte
		n int64
	}
	var all []bf
	for c, n := range freq {
		all = append(all, bf{byte(c), n})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].n > all[j].n })
	var top []string
	for _, x := range all[:8] {
		top = append(top, fmt.Sprintf("%q %.1f%%", x.c, 100*float64(x.n)/float64(b.textBytes)))
	}
	var letter bf
	for _, x := range all {
		if x.c >= 'a' && x.c <= 'z' {
			letter = x
			break
		}
	}
	b.common = string(letter.c) + "zq-common-needle"
	b.everywhere = sessiongen.LargeCommonNeedle
	if b.everyHits, _, err = globCount(ctx, dst, b.everywhere); err != nil || b.everyHits == 0 {
		dst.Close()
		return fmt.Errorf("counting the items with %q: %d (%v)", b.everywhere, b.everyHits, err)
	}
	share := func(c byte) string { return fmt.Sprintf("%.2f%%", 100*float64(freq[c])/float64(b.textBytes)) }
	b.info = append(b.info, fmt.Sprintf("Rendered history text: %s items, %s (%s bytes); most frequent bytes: %s. "+
		"Needles: rare %q (first byte %s of the text), common-first-byte %q (first byte %s, the most frequent letter).",
		num(float64(b.textItems), 0), mb(b.textBytes), num(float64(b.textBytes), 0), strings.Join(top, ", "),
		b.rare, share(b.rare[0]), b.common, share(b.common[0])))
	b.logf("ceiling.db: %s items, %s of text copied in %v; needles %q and %q", num(float64(b.textItems), 0), mb(b.textBytes),
		time.Since(t0).Round(time.Millisecond), b.rare, b.common)
	return nil
}

// searchMemoryd runs history_search_contents for needle and checks the
// count of results (1 for the rare needle, 0 for the common one, GLOB's
// count for the one found everywhere).
func (b *bench) searchMemoryd(ctx context.Context, needle string) (time.Duration, error) {
	args, _ := json.Marshal(map[string]any{"query": needle, "limit": 20})
	body := b.toolBody(b.histTask, string(args))
	var res struct {
		Details struct {
			NReturned *int `json:"n_returned"`
			Omitted   int  `json:"omitted"`
		} `json:"details"`
	}
	t := time.Now()
	raw, err := b.cl.post(ctx, b.hist.url+"/v1/tools/history_search_contents", body, true)
	took := time.Since(t)
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.Details.NReturned == nil {
		return 0, fmt.Errorf("history_search_contents: no details.n_returned (%v): %.200s", err, raw)
	}
	if got, want := *res.Details.NReturned+res.Details.Omitted, b.wantHits(needle); got != want {
		return 0, fmt.Errorf("history_search_contents %q: %d results, want %d", needle, got, want)
	}
	return took, nil
}

// searchCeiling runs the GLOB scan for needle and checks its count.
func (b *bench) searchCeiling(ctx context.Context, needle string) (time.Duration, error) {
	n, took, err := globCount(ctx, b.ceiling, needle)
	if err != nil {
		return 0, err
	}
	if want := b.wantHits(needle); n != want {
		return 0, fmt.Errorf("GLOB scan of ceiling.db for %q: %d rows, want %d", needle, n, want)
	}
	return took, nil
}

func (b *bench) wantHits(needle string) int {
	switch needle {
	case b.rare:
		return 1
	case b.everywhere:
		return b.everyHits
	}
	return 0
}

// setupLog writes the synthetic event log; without the replay row it
// also replays it once (untimed) for the startup row.
func (b *bench) setupLog(ctx context.Context) error {
	t0 := time.Now()
	b.logPath = filepath.Join(b.scratch, "events.jsonl")
	f, err := os.Create(b.logPath)
	if err != nil {
		return err
	}
	if err := forensics.WriteSyntheticLog(f, b.cfg.events); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	fi, err := os.Stat(b.logPath)
	if err != nil {
		return err
	}
	b.logBytes = fi.Size()
	b.logf("event log: %s events, %s, written in %v", num(float64(b.cfg.events), 0), mb(b.logBytes), time.Since(t0).Round(time.Millisecond))
	if !b.cfg.has("replay") {
		if _, _, err := b.replayMemoryd(ctx, 0); err != nil {
			return err
		}
	}
	return nil
}

// replayMemoryd runs "memoryd replay LOG --db replayed-REP.db" and returns
// its wall time and what it printed; the previous replayed database is
// removed.
func (b *bench) replayMemoryd(ctx context.Context, rep int) (time.Duration, string, error) {
	out := filepath.Join(b.scratch, fmt.Sprintf("replayed-%d.db", rep))
	removeDB(out)
	cmd := exec.CommandContext(ctx, b.bin, "replay", b.logPath, "--db", out)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &tail{prefix: "memoryd(replay): ", out: b.progress}
	t := time.Now()
	err := cmd.Run()
	took := time.Since(t)
	if err != nil {
		return 0, "", fmt.Errorf("memoryd replay: %w", err)
	}
	var sum struct {
		Events       int64  `json:"events"`
		LastPosition int64  `json:"last_position"`
		Notes        int64  `json:"notes"`
		Digest       string `json:"digest"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		return 0, "", fmt.Errorf("memoryd replay printed no summary (%v): %.300s", err, stdout.String())
	}
	if sum.Events != int64(b.cfg.events) || sum.LastPosition != int64(b.cfg.events) {
		return 0, "", fmt.Errorf("memoryd replay: %d events up to position %d, want %d", sum.Events, sum.LastPosition, b.cfg.events)
	}
	fmt.Fprintf(b.progress, "memoryd(replay) printed:\n%s", stdout.String())
	if b.replayed != "" && b.replayed != out {
		removeDB(b.replayed)
	}
	b.replayed = out
	printed := fmt.Sprintf("events %d, last_position %d, notes %d, digest %s", sum.Events, sum.LastPosition, sum.Notes, sum.Digest)
	return took, printed, nil
}

// mb formats bytes as MB (10^6 bytes).
func mb(n int64) string { return sig(float64(n)/1e6) + " MB" }

func fileSize(path string) string {
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(path + suffix); err == nil {
			n += fi.Size()
		}
	}
	return mb(n)
}
