package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// allQuery is one search of the search-all rows: memoryd search NEEDLE,
// with --agent-kind kind and --limit limit when they are set.
type allQuery struct {
	row    string
	needle string
	kind   string
	limit  int
}

// searchAllQueries are the rows' searches, in the order of their rows.
var searchAllQueries = []allQuery{
	{row: "search-all-rare", needle: allRareNeedle},
	{row: "search-all-absent", needle: allAbsentNeedle},
	{row: "search-all-common", needle: allCommonNeedle, limit: allCommonLimit},
	{row: "search-all-codex", needle: allKindNeedle, kind: "codex"},
}

func queryOf(row string) allQuery {
	for _, q := range searchAllQueries {
		if q.row == row {
			return q
		}
	}
	panic("no search-all query for row " + row)
}

func (b *bench) measureSearchAllRow(ctx context.Context, rep repetition) (sample, error) {
	q := queryOf(rep.row)
	// Both once untimed first: the page cache may have dropped the
	// database or the files since the last repetition. The untimed search
	// also samples memoryd's resident set.
	warm, err := b.searchAll(ctx, q, true)
	if err != nil {
		return sample{}, err
	}
	if _, _, err := b.scanCeiling(ctx, q); err != nil {
		return sample{}, err
	}
	var f allSearch
	var c time.Duration
	var read int64
	err = rep.pair(func() (err error) {
		f, err = b.searchAll(ctx, q, false)
		return err
	}, func() (err error) {
		c, read, err = b.scanCeiling(ctx, q)
		return err
	})
	if err != nil {
		return sample{}, err
	}
	// The same search on the running server's inspector page, once warm.
	if _, err := b.searchPage(ctx, q); err != nil {
		return sample{}, err
	}
	page, err := b.searchPage(ctx, q)
	if err != nil {
		return sample{}, err
	}
	s := sample{fig: f.took.Seconds(), ceil: c.Seconds(), ratio: c.Seconds() / f.took.Seconds()}
	s.add("memoryd search CPU, user + system (s)", f.cpu.Seconds())
	s.add("memoryd search peak RSS, VmHWM sampled every millisecond in the untimed run (MB)", float64(warm.rss)/1e6)
	s.add("scan GB/s of the bytes it read", float64(read)/1e9/c.Seconds())
	s.add("the inspector's search page on a running memoryd, filters in memory (s)", page.Seconds())
	b.logf("%s: memoryd search %s (CPU %s, RSS %s), scan %s, inspector page %s", rep.row, ms(f.took.Seconds()), ms(f.cpu.Seconds()), mb(warm.rss),
		ms(c.Seconds()), ms(page.Seconds()))
	return s, nil
}

// runSampled runs cmd and, every so often if every is not 0, reads its
// VmHWM from /proc; it returns the last read, about the process's peak
// resident set. (The rusage of a child started by a Go program is no
// use: Linux counts in its ru_maxrss the parent's memory it shared until
// its exec.)
func runSampled(cmd *exec.Cmd, every time.Duration) (peak int64, err error) {
	if err := cmd.Start(); err != nil { // it returns once the exec is done
		return 0, err
	}
	if every == 0 {
		return 0, cmd.Wait()
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if hwm, _, err := procMemory(cmd.Process.Pid); err == nil {
			peak = max(peak, hwm)
		}
		select {
		case err := <-done:
			return peak, err
		case <-tick.C:
		}
	}
}

// searchPageLimit is the matches the inspector's search page shows.
const searchPageLimit = 100

// searchPage fetches the inspector's search page for q from the server on
// the sessions' database: the same search through the same code, with
// the page's own limit, timed to the page's last byte.
func (b *bench) searchPage(ctx context.Context, q allQuery) (time.Duration, error) {
	v := url.Values{"q": {q.needle}}
	if q.kind != "" {
		v.Set("kind", q.kind)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.sessionsServer.url+"/ui/search?"+v.Encode(), nil)
	if err != nil {
		return 0, err
	}
	t := time.Now()
	page, err := fetch(b.sessionsWeb, req)
	took := time.Since(t)
	if err != nil {
		return 0, fmt.Errorf("inspector search page %q: %w", q.needle, err)
	}
	// The page shows the matches the verb prints, up to its limit of 100.
	hits, want, kind := strings.Count(page, `<div class="hit" `), 1, ""
	switch q.needle {
	case allRareNeedle:
		kind = "claude-code"
	case allKindNeedle:
		kind = "codex"
	case allAbsentNeedle:
		want = 0
	case allCommonNeedle:
		want = searchPageLimit
	}
	if hits != want || kind != "" && !strings.Contains(page, `data-kind="`+kind+`"`) {
		return 0, fmt.Errorf("inspector search page %q shows %d matches, want %d of kind %q", q.needle, hits, want, kind)
	}
	return took, nil
}

// allSearch is one memoryd search run.
type allSearch struct {
	took, cpu      time.Duration
	rss            int64
	tasks, agents  int
	matches        int
	more           bool
	kinds, session []string
}

// searchAll runs memoryd search for q on the sessions' database, exec to
// exit, and checks what it found. With rss it samples the process's
// resident set, which costs the timing CPU.
func (b *bench) searchAll(ctx context.Context, q allQuery, rss bool) (allSearch, error) {
	args := []string{"search", "--db", b.sessionsDB}
	if q.kind != "" {
		args = append(args, "--agent-kind", q.kind)
	}
	if q.limit != 0 {
		args = append(args, "--limit", strconv.Itoa(q.limit))
	}
	args = append(args, q.needle)
	cmd := exec.CommandContext(ctx, b.bin, args...)
	cmd.Env = append(os.Environ(), b.memorydEnv()...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	every := time.Duration(0)
	if rss {
		every = time.Millisecond
	}
	t := time.Now()
	peak, err := runSampled(cmd, every)
	took := time.Since(t)
	if err != nil {
		return allSearch{}, fmt.Errorf("memoryd %q: %w: %s", args, err, stderr.String())
	}
	var res struct {
		Matches []struct {
			Kind       string `json:"agent_kind"`
			SessionKey string `json:"session_key"`
		} `json:"matches"`
		More   bool `json:"more"`
		Tasks  int  `json:"tasks_searched"`
		Agents int  `json:"agents_searched"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return allSearch{}, fmt.Errorf("memoryd %q printed no result (%v): %.300s", args, err, stdout.String())
	}
	out := allSearch{took: took, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(), rss: peak,
		tasks: res.Tasks, agents: res.Agents, matches: len(res.Matches), more: res.More}
	for _, m := range res.Matches {
		out.kinds, out.session = append(out.kinds, m.Kind), append(out.session, m.SessionKey)
	}
	// What each search must find: the rare needle once, in a Claude Code
	// sub-agent; the absent one nowhere; the common one past the limit;
	// the kind needle once among the Codex agents.
	var bad bool
	switch q.needle {
	case allRareNeedle:
		bad = out.matches != 1 || out.more || out.kinds[0] != "claude-code"
	case allAbsentNeedle:
		bad = out.matches != 0 || out.more
	case allCommonNeedle:
		bad = out.matches != q.limit || !out.more
	case allKindNeedle:
		bad = out.matches != 1 || out.more || out.kinds[0] != "codex"
	}
	if bad {
		return allSearch{}, fmt.Errorf("memoryd %q: %d matches (kinds %q, sessions %q), more %v: not what the session files hold", args,
			out.matches, out.kinds, out.session, out.more)
	}
	return out, nil
}

// scanDir is the folder the ceiling scans for q: the Codex rollouts for a
// search of Codex agents, else every session file.
func (b *bench) scanDir(q allQuery) string {
	if q.kind == "codex" {
		return b.sessions.kinds[2].dir
	}
	return b.sessions.dir
}

// scanCeiling runs bench scan-files for q's needle, exec to exit, checks
// the files it found and returns its time and the bytes it read.
func (b *bench) scanCeiling(ctx context.Context, q allQuery) (time.Duration, int64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, 0, err
	}
	cmd := exec.CommandContext(ctx, self, scanVerb, q.needle, b.scanDir(q))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t := time.Now()
	err = cmd.Run()
	took := time.Since(t)
	if err != nil {
		return 0, 0, fmt.Errorf("bench %s %s: %w: %s", scanVerb, q.needle, err, stderr.String())
	}
	var res scanResult
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		return 0, 0, fmt.Errorf("bench %s printed no result (%v): %.300s", scanVerb, err, stdout.String())
	}
	var want []string
	switch q.needle {
	case allRareNeedle:
		want = []string{b.sessions.rareFile}
	case allKindNeedle:
		want = b.sessions.kindFiles[:1]
	case allCommonNeedle:
		if b.commonFiles == 0 { // the first scan counts them
			b.commonFiles = len(res.Matched)
		}
		if len(res.Matched) != b.commonFiles || b.commonFiles < res.Files/2 {
			return 0, 0, fmt.Errorf("bench %s %q: %d of %d files, want %d and most", scanVerb, q.needle, len(res.Matched), res.Files, b.commonFiles)
		}
		return took, res.Bytes, nil
	}
	if fmt.Sprint(res.Matched) != fmt.Sprint(want) {
		return 0, 0, fmt.Errorf("bench %s %q found it in %q, want %q", scanVerb, q.needle, res.Matched, want)
	}
	return took, res.Bytes, nil
}

func (b *bench) searchAllFiles() string {
	s := b.sessions
	return fmt.Sprintf("%s of session files (%s: %s)", mb(s.bytes()), filepath.Base(s.dir), s.describe())
}

func (b *bench) searchAllRareNotes() string {
	return fmt.Sprintf("memoryd: the verb `memoryd search --db sessions.db %s`, exec to exit, as a user runs it: it opens the database and searches the history "+
		"of every agent of every task (memory.SearchAll), each agent's chunk filters loaded from SQLite as no server has them in memory. The database is "+
		"`memoryd import-sessions --from all` of %s; the needle is in one tool output of one Claude Code sub-agent, and the search must print exactly that "+
		"match. Ceiling: `bench %s NEEDLE DIR`, exec to exit, a brute-force byte search of every .jsonl file under the folder (1 MiB reads, bytes.Contains, "+
		"each file read to its first match, as `grep -rlF` does); it must list exactly that file. Both warm: each runs once untimed in every repetition "+
		"before the timed pair. Ratio = scan time / memoryd time: how many times faster than grepping the raw files the index answers. "+
		"Beside them, for information, the same search on the inspector's search page (`GET /ui/search?q=…`, limit 100, through the same "+
		"memory.SearchAll) of a memoryd serving the same database, which loaded every agent's chunk filters into memory when it started, "+
		"timed by the client to the page's last byte after one untimed fetch.",
		allRareNeedle, b.searchAllFiles(), scanVerb)
}

func (b *bench) searchAllAbsentNotes() string {
	return fmt.Sprintf("As search-all-rare with the needle %q, which no session holds and whose first byte is the most frequent letter of the files "+
		"(the worst case for a scan that skips to the needle's first byte, where the rare needle's Z is the best): memoryd must print no match, "+
		"the scan list no file and read every byte.", allAbsentNeedle)
}

func (b *bench) searchAllCommonNotes() string {
	return fmt.Sprintf("As search-all-rare with `--limit %d` and the needle %q, which nearly every tool output holds: memoryd must print %d matches and more: true, "+
		"stopping once it has them; the scan lists every file that holds it (%s of %s .jsonl files), each read only to its first match.",
		allCommonLimit, allCommonNeedle, allCommonLimit, num(float64(b.commonFiles), 0), num(float64(b.sessions.files()), 0))
}

func (b *bench) searchAllCodexNotes() string {
	return fmt.Sprintf("As search-all-rare with `--agent-kind codex` and the needle %q, which one Codex sub-agent's rollout, one Pi session and one Claude Code "+
		"session hold: memoryd must print the Codex match alone. The scan reads only the Codex rollouts (%s in %d files), where a user would grep.",
		allKindNeedle, mb(b.sessions.kinds[2].bytes), b.sessions.kinds[2].files)
}
