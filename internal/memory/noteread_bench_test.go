package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkNoteRead: notes_read_file of a ~4 KB note (the read8 bench row's
// request) through Service.CallTool, with a cancellable context as an HTTP
// request has, on 8 goroutines, without the HTTP layer. Nothing is
// committed while it runs, so the note cache answers: "uncached" reads
// through SQLite every time.
func BenchmarkNoteRead(b *testing.B) {
	b.Run("cached", func(b *testing.B) { benchmarkNoteRead(b, true) })
	b.Run("uncached", func(b *testing.B) { benchmarkNoteRead(b, false) })
}

func benchmarkNoteRead(b *testing.B, cached bool) {
	s := mustOpenService(b)
	if !cached {
		s.notes = nil
	}
	cc := mustAttach(b, s, "/bench/noteread.jsonl")
	var text strings.Builder
	for i := 0; text.Len() < 4000; i++ {
		fmt.Fprintf(&text, "line %03d: the quick brown fox jumps over the lazy dog\n", i)
	}
	args, _ := json.Marshal(map[string]string{"path": "bench.md", "text": text.String()})
	mustCall(b, s, cc, "notes_write_file", string(args))
	b.ReportAllocs()
	b.SetParallelism(4)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		for pb.Next() {
			res, err := s.CallTool(ctx, "notes_read_file", cc, json.RawMessage(`{"path":"bench.md"}`), "")
			if err != nil {
				b.Error(err)
				return
			}
			if _, err := res.JSON(); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkNoteReadAudited: one client's notes_read_file of the same note
// with the read audit on, as memoryd serve runs: what a lone reader waits
// for (the audit's batches commit in their own goroutine).
func BenchmarkNoteReadAudited(b *testing.B) {
	s := mustOpenServiceWith(b, serviceOptions{AuditCalls: true})
	cc := mustAttach(b, s, "/bench/noteread.jsonl")
	var text strings.Builder
	for i := 0; text.Len() < 4000; i++ {
		fmt.Fprintf(&text, "line %03d: the quick brown fox jumps over the lazy dog\n", i)
	}
	args, _ := json.Marshal(map[string]string{"path": "bench.md", "text": text.String()})
	mustCall(b, s, cc, "notes_write_file", string(args))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		res, err := s.CallTool(ctx, "notes_read_file", cc, json.RawMessage(`{"path":"bench.md"}`), "")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := res.JSON(); err != nil {
			b.Fatal(err)
		}
	}
}
