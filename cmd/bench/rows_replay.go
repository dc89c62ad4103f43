package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// measureReplay pairs "memoryd replay" of the event log with the raw
// batched insert of the same events.
func (b *bench) measureReplay(ctx context.Context, rep repetition) (sample, error) {
	var f, c time.Duration
	var printed string
	err := rep.pair(func() (err error) {
		f, printed, err = b.replayMemoryd(ctx, rep.n)
		syncFS() // untimed, so the next half does not pay this one's writeback
		return err
	}, func() error {
		n, took, err := rawReplay(ctx, b.logPath, filepath.Join(b.scratch, "raw-replay.db"))
		if err == nil && n != b.cfg.events {
			err = fmt.Errorf("raw replay inserted %d events, want %d", n, b.cfg.events)
		}
		c = took
		return err
	})
	if err != nil {
		return sample{}, err
	}
	// The replays wrote gigabytes. Flushing them now keeps the kernel's
	// writeback from taking CPU from the row measured next.
	syncFS()
	n := float64(b.cfg.events)
	s := sample{fig: n / f.Seconds(), ceil: n / c.Seconds(), ratio: c.Seconds() / f.Seconds(), printed: printed}
	s.add("memoryd replay wall time (s)", f.Seconds())
	s.add("raw wall time (s)", c.Seconds())
	b.logf("replay: memoryd %s events/s (%v), raw %s events/s (%v)", num(n/f.Seconds(), 0), f.Round(time.Millisecond),
		num(n/c.Seconds(), 0), c.Round(time.Millisecond))
	return s, nil
}

func (b *bench) replayNotes() string {
	return fmt.Sprintf("memoryd: wall time of the subprocess `memoryd replay events.jsonl --db replayed-<rep>.db` (exec to exit, its summary and digests included) "+
		"on a synthetic exported log of %s events (%s; `forensics.WriteSyntheticLog`: one task, 4 agents, note.appended events spread over up to 2,000 notes per agent); "+
		"its summary must count every event. Ceiling: in this process, read the same file, decode each line with encoding/json into a small struct and "+
		"insert it into the raw events table (stream_id=stream, stream_seq=stream_version, type, ulid=id, ts=position, body=data), "+
		"1,000 per transaction with synchronous=OFF (as memoryd replays: a replayed database is rebuilt, not acknowledged), timed from opening "+
		"the fresh database to closing it. The file systems are synced between the two halves, untimed. events/s; ratio = figure / ceiling. "+
		"After the row the file systems are synced (outside the timing), so that the writeback of the gigabytes it wrote does not take CPU from the next row.",
		num(float64(b.cfg.events), 0), mb(b.logBytes))
}

// replayMemoryd runs "memoryd replay LOG --db replayed-REP.db" and returns
// its wall time and what it printed.
func (b *bench) replayMemoryd(ctx context.Context, rep int) (time.Duration, string, error) {
	out := filepath.Join(b.scratch, fmt.Sprintf("replayed-%d.db", rep))
	removeDB(out)
	cmd := exec.CommandContext(ctx, b.bin, "replay", b.logPath, "--db", out)
	cmd.Env = append(os.Environ(), b.memorydEnv()...)
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
	switch {
	case b.importsLog():
		// replay makes a plain database whatever MEMORYD_ENCRYPT says:
		// startup and the inspector rows serve the one setupReplayed
		// imported.
		removeDB(out)
	default:
		if b.replayed != "" && b.replayed != out { // the previous replayed database
			removeDB(b.replayed)
		}
		b.replayed = out
	}
	printed := fmt.Sprintf("events %d, last_position %d, notes %d, digest %s", sum.Events, sum.LastPosition, sum.Notes, sum.Digest)
	return took, printed, nil
}
