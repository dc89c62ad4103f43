package main

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/memoryd/memoryd/internal/forensics"
)

// The event-log fixtures are the synthetic log replay replays, and a
// database replayed from it for startup.
var (
	fxLog      = &fixture{name: "event log", setup: (*bench).setupLog}
	fxReplayed = &fixture{name: "replayed database", needs: []*fixture{fxLog}, setup: (*bench).setupReplayed}
)

// setupLog writes the synthetic event log.
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
	return nil
}

// setupReplayed replays the log once, untimed, for the startup row.
func (b *bench) setupReplayed(ctx context.Context) error {
	// The replay row comes before startup in every repetition and leaves
	// its database.
	if b.importsLog() {
		return b.importReplayed(ctx)
	}
	if b.cfg.has("replay") {
		return nil
	}
	_, _, err := b.replayMemoryd(ctx, 0)
	return err
}
