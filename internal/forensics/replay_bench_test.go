package forensics_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/memoryd/memoryd/internal/events"
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

// writeSyntheticLog writes an exported log of n events: one task, four
// agents, and note.appended events spread over 2,000 notes per agent
// (so no note grows large), with valid ULIDs and gapless positions.
func writeSyntheticLog(b *testing.B, path string, n int) {
	b.Helper()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	entropy := ulid.Monotonic(rand.NewChaCha8([32]byte{1}), 0)
	task := ulid.MustNew(ulid.Timestamp(start), entropy).String()
	agents := []string{"/root", "/root/builder", "/root/reviewer", "/root/tester"}
	versions := make([]int64, len(agents))
	pos := int64(0)
	var line []byte
	emit := func(agent int, typ string, data []byte, at time.Time) {
		pos++
		versions[agent]++
		id := ulid.MustNew(ulid.Timestamp(at), entropy)
		line = append(line[:0], `{"position":`...)
		line = strconv.AppendInt(line, pos, 10)
		line = append(line, `,"id":"`...)
		line = append(line, id.String()...)
		line = append(line, `","stream":"`...)
		line = append(line, task...)
		line = append(line, agents[agent]...)
		line = append(line, `","stream_version":`...)
		line = strconv.AppendInt(line, versions[agent], 10)
		line = append(line, `,"type":"`...)
		line = append(line, typ...)
		line = append(line, `","schema":1,"recorded_at":"`...)
		line = at.AppendFormat(line, events.TimeFormat)
		line = append(line, `","data":`...)
		line = append(line, data...)
		line = append(line, "}\n"...)
		w.Write(line)
	}
	mustJSON := func(v any) []byte {
		d, err := events.MarshalData(v)
		if err != nil {
			b.Fatal(err)
		}
		return d
	}
	emit(0, events.TypeTaskCreated, mustJSON(events.TaskCreated{TaskID: task, SessionKey: "/bench/root.jsonl"}), start)
	for i, a := range agents {
		reg := events.AgentRegistered{TaskID: task, Agent: a, SessionKey: fmt.Sprintf("/bench/%d.jsonl", i),
			Budget: events.Budget{ReminderRemainingPercent: 0.25, ReminderRemainingFloorTokens: 21384,
				ReminderRemainingCeilingTokens: 60000, MaxToolOutputChars: 12000, NotesMaxFileBytes: 1000000, HistoryItemPreviewChars: 400}}
		if i > 0 {
			reg.ParentAgent = "/root"
		}
		emit(i, events.TypeAgentRegistered, mustJSON(reg), start)
	}
	var data []byte
	for i := int(pos); i < n; i++ {
		a := i % len(agents)
		data = append(data[:0], `{"task_id":"`...)
		data = append(data, task...)
		data = append(data, `","agent":"`...)
		data = append(data, agents[a]...)
		data = append(data, `","path":"log/`...)
		data = strconv.AppendInt(data, int64((i/len(agents))%2000), 10)
		data = append(data, `.md","text":"step `...)
		data = strconv.AppendInt(data, int64(i), 10)
		data = append(data, ` done\n","by":"`...)
		data = append(data, agents[a]...)
		data = append(data, `"}`...)
		if i < 100 && !json.Valid(data) {
			b.Fatalf("synthetic payload is not JSON: %s", data)
		}
		emit(a, events.TypeNoteAppended, data, start.Add(time.Duration(i)*time.Millisecond))
	}
	if err := w.Flush(); err != nil {
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
		if _, err := forensics.Replay(ctx, store, lr.Next, nil); err != nil {
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
