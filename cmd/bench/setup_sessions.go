package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// fxSessions is a machine's session files of every kind, about
// -sessions-bytes of them, imported into a database by memoryd
// import-sessions --from all, for the search-all rows.
var fxSessions = &fixture{name: "a machine's session files, imported", setup: (*bench).setupSessions}

// setupSessions writes the session files, imports them with the verb and
// checks every search-all search and its ceiling once.
func (b *bench) setupSessions(ctx context.Context) error {
	testdata, err := moduleFile(ctx, "testdata")
	if err != nil {
		return err
	}
	tpl, err := loadSessionTemplates(testdata)
	if err != nil {
		return err
	}
	t0 := time.Now()
	b.logf("sessions: generating %s of Pi, Claude Code and Codex session files", mb(b.cfg.sessionsBytes))
	dir := filepath.Join(b.scratch, "sessions")
	set, err := writeSessions(dir, b.cfg.sessionsBytes, tpl)
	if err != nil {
		return err
	}
	b.sessions = set
	syncFS() // untimed, so the import does not pay the files' writeback
	b.logf("sessions: %d files, %s, written in %v", set.files(), mb(set.bytes()), time.Since(t0).Round(time.Millisecond))

	b.sessionsDB = filepath.Join(b.scratch, "sessions.db")
	cmd := exec.CommandContext(ctx, b.bin, "import-sessions", "--from", "all", "--db", b.sessionsDB, dir)
	cmd.Env = append(os.Environ(), b.memorydEnv()...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &tail{prefix: "memoryd(import-sessions): ", out: b.progress}
	t1 := time.Now()
	peak, err := runSampled(cmd, 50*time.Millisecond)
	took := time.Since(t1)
	if err != nil {
		return fmt.Errorf("memoryd import-sessions: %w", err)
	}
	var sum struct {
		Files    int `json:"files"`
		Imported []struct {
			Kind    string `json:"kind"`
			Entries int    `json:"entries"`
		} `json:"imported"`
		Failed []any `json:"failed"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		return fmt.Errorf("memoryd import-sessions printed no summary (%v): %.300s", err, stdout.String())
	}
	// A Claude Code sub-agent's transcript is imported with its session;
	// a Codex sub-agent's rollout is a file of its own.
	want := set.kinds[0].sessions + set.kinds[1].sessions + set.kinds[2].sessions + set.kinds[2].subAgents
	if len(sum.Failed) > 0 || len(sum.Imported) != want {
		return fmt.Errorf("memoryd import-sessions imported %d files, failed %d; want %d imported", len(sum.Imported), len(sum.Failed), want)
	}
	entries := 0
	for _, f := range sum.Imported {
		entries += f.Entries
	}
	syncFS()
	dbBytes := fileBytes(b.sessionsDB)
	b.recordSize("sessions.db after import-sessions --from all", b.sessionsDB)
	b.oneShots = append(b.oneShots, namedValue{"import-sessions --from all of the session files (s)", took.Seconds()})
	files := set.bytes()
	user, sys := cmd.ProcessState.UserTime(), cmd.ProcessState.SystemTime()
	b.info = append(b.info, fmt.Sprintf("Session files of the search-all rows: %s in %s .jsonl files: %s. Largest session (its sub-agents included): %s.",
		mb(files), num(float64(set.files()), 0), set.describe(), mb(max(set.kinds[0].largest, set.kinds[1].largest, set.kinds[2].largest))))
	b.info = append(b.info, fmt.Sprintf("`memoryd import-sessions --from all` of them into a new database (exec to exit): %s for %s files, %s entries: "+
		"**%.1f MB/s** of session files; CPU %s user + %s system; peak RSS (VmHWM, sampled every 50 ms) %s. Database after it: **%s (with its WAL), %.2f bytes per byte of session files**.",
		took.Round(100*time.Millisecond), num(float64(len(sum.Imported)), 0), num(float64(entries), 0), float64(files)/1e6/took.Seconds(),
		user.Round(100*time.Millisecond), sys.Round(100*time.Millisecond), mb(peak), mb(dbBytes), float64(dbBytes)/float64(files)))
	b.logf("import-sessions: %v, %s entries; database %s (%.2f× the files)", took.Round(100*time.Millisecond), num(float64(entries), 0), mb(dbBytes),
		float64(dbBytes)/float64(files))

	// A memoryd serving the database, for the inspector's search page.
	// Its log at info says when it has loaded the chunk filters.
	args := []string{b.bin, "serve", "--addr", "127.0.0.1:0", "--db", b.sessionsDB, "--log-level", "info"}
	p, err := startProc(ctx, "memoryd(sessions)", append(args, strings.Fields(b.cfg.serverFlags)...), b.memorydEnv("MEMORYD_TOKEN="+b.token), nopWriter{})
	if err != nil {
		return err
	}
	b.sessionsServer = p
	line, err := p.log.await(ctx, preloadLine, 10*time.Minute)
	if err != nil {
		return fmt.Errorf("memoryd(sessions): %w", err)
	}
	var loaded struct {
		Agents     int     `json:"agents"`
		Chunks     int64   `json:"chunks"`
		DurationMS float64 `json:"duration_ms"`
	}
	if err := json.Unmarshal([]byte(line), &loaded); err != nil {
		return fmt.Errorf("memoryd(sessions): the load's log line %q: %w", line, err)
	}
	if b.sessionsWeb, _, _, err = b.inspectorLogin(ctx, p.url); err != nil {
		return err
	}
	b.info = append(b.info, fmt.Sprintf("A memoryd serving that database loaded the chunk filters of %d agents (%s chunks) in %s after its start, "+
		"before the inspector's search page was timed.", loaded.Agents, num(float64(loaded.Chunks), 0), ms(loaded.DurationMS/1000)))

	// Each search once, and its ceiling, which also checks what they find
	// and counts the files that hold the common needle.
	for _, q := range searchAllQueries {
		res, err := b.searchAll(ctx, q, false)
		if err != nil {
			return err
		}
		if q.needle == allRareNeedle {
			b.info = append(b.info, fmt.Sprintf("The search-all searches read every task and agent of the database: %d tasks, %d agents (the rare needle's search).",
				res.tasks, res.agents))
		}
		if _, _, err := b.scanCeiling(ctx, q); err != nil {
			return err
		}
		if _, err := b.searchPage(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// describe names the files of each kind.
func (s *sessionSet) describe() string {
	var parts []string
	for i, k := range s.kinds {
		sub := ""
		if k.subAgents > 0 {
			sub = fmt.Sprintf(" (%d of them sub-agents')", k.subAgents)
		}
		parts = append(parts, fmt.Sprintf("%s %s in %d sessions, %d files%s", sessionKindNames[i], mb(k.bytes), k.sessions, k.files, sub))
	}
	return fmt.Sprintf("%s; %s; %s", parts[0], parts[1], parts[2])
}

// fileBytes is the size of the database at path with its WAL.
func fileBytes(path string) int64 {
	var n int64
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(path + suffix); err == nil {
			n += fi.Size()
		}
	}
	return n
}
