package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections"
)

// BenchmarkNoteAppend: one client's notes_append_to_file (the append1
// bench row's request) through Service.CallTool, one after the other, a
// new call_id each, without the HTTP layer. "off" commits without fsync,
// so that it measures memoryd's own work; "full" is what a client waits
// for (the fsync of every commit included).
func BenchmarkNoteAppend(b *testing.B) {
	for _, sync := range []string{"off", "full"} {
		b.Run(sync, func(b *testing.B) {
			store, err := eventlog.Open(context.Background(), filepath.Join(b.TempDir(), "memory.db"),
				eventlog.Options{Projector: projections.Projector{}, Synchronous: sync})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			s := New(store)
			defer s.Close()
			cc := mustAttach(b, s, "/bench/noteappend.jsonl")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				cc.CallID = fmt.Sprintf("toolu_bench%d", i)
				args := fmt.Sprintf(`{"path":"bench/%d.md","text":"- appended line %d of the benchmark\n"}`, i/1000, i)
				if _, err := s.CallTool(ctx, "notes_append_to_file", cc, json.RawMessage(args), ""); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
