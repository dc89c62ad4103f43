package forensics_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/forensics"
)

// benchEvents is the size of the synthetic log: MEMORYD_BENCH_EVENTS,
// default 1,000,000.
func benchEvents(b *testing.B) int {
	n := 1_000_000
	if v := os.Getenv("MEMORYD_BENCH_EVENTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 10 {
			b.Fatalf("MEMORYD_BENCH_EVENTS=%q: want a number of events, at least 10", v)
		}
	}
	return n
}

// writeSyntheticLog writes forensics.WriteSyntheticLog's log of n events
// to path.
func writeSyntheticLog(b *testing.B, path string, n int) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := forensics.WriteSyntheticLog(f, n); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkReplay1M replays a synthetic log of MEMORYD_BENCH_EVENTS
// (default 1,000,000) note.appended events into a scratch database.
func BenchmarkReplay1M(b *testing.B) {
	ctx := context.Background()
	n := benchEvents(b)
	dir := b.TempDir()
	log := filepath.Join(dir, "bench.jsonl")
	t0 := time.Now()
	writeSyntheticLog(b, log, n)
	if fi, err := os.Stat(log); err == nil {
		b.Logf("synthetic log: %d events, %d MB, written in %v", n, fi.Size()>>20, time.Since(t0).Round(time.Millisecond))
	}
	var total time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		store, err := forensics.Open(ctx, filepath.Join(dir, fmt.Sprintf("replay-%d.db", i)))
		if err != nil {
			b.Fatal(err)
		}
		f, err := os.Open(log)
		if err != nil {
			b.Fatal(err)
		}
		lr := forensics.NewLogReader(f)
		b.StartTimer()
		start := time.Now()
		if _, err := forensics.Replay(ctx, store, lr.Next, forensics.ReplayOptions{}); err != nil {
			b.Fatal(lr.AtLine(err))
		}
		total += time.Since(start)
		b.StopTimer()
		if last, err := store.LastPosition(ctx); err != nil || last != int64(n) {
			b.Fatalf("replayed up to %d (%v), want %d", last, err, n)
		}
		f.Close()
		store.Close()
		os.Remove(filepath.Join(dir, fmt.Sprintf("replay-%d.db", i)))
		b.StartTimer()
	}
	b.StopTimer()
	b.ReportMetric(float64(n)*float64(b.N)/total.Seconds(), "events/s")
}
