package memory

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// preloadHistory makes a database with the histories of two agents and
// returns its path, their call contexts and their sealed chunk counts.
func preloadHistory(t *testing.T) (string, []CallContext, []int64) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "memory.db")
	s := mustOpenAt(t, path, testOptions())
	ccs := []CallContext{mustAttach(t, s, "/home/u/.pi/agent/sessions/preload-a.jsonl"), mustAttach(t, s, "/home/u/.pi/agent/sessions/preload-b.jsonl")}
	syncBatches(t, s, ccs[0], sessiongen.Large(3<<20), 8<<20)
	syncBatches(t, s, ccs[1], sessiongen.Large(1<<20), 8<<20)
	var sealed []int64
	for _, cc := range ccs {
		var n int64
		if err := s.Store().Reader().QueryRow(`SELECT max(chunk_no) FROM history_chunks WHERE task_id = ? AND agent = ?`,
			cc.TaskID, cc.Agent).Scan(&n); err != nil || n < 8 {
			t.Fatalf("%d sealed chunks (%v): the test needs several batches", n, err)
		}
		sealed = append(sealed, n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path, ccs, sealed
}

// waitClosed waits for ch to be closed, failing after a generous bound.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("%s: not done after a minute", what)
	}
}

// TestPreloadChunkFiltersAtOpen: with PreloadChunkFilters, Open loads
// every agent's chunk filters in the background, so that the first search
// finds them loaded; searches give what a service without the preload
// gives; a search that arrives while the load is held between two batches
// is right and loads its agent itself; Close stops a load held that way
// and returns once its goroutine has ended.
func TestPreloadChunkFiltersAtOpen(t *testing.T) {
	path, ccs, sealed := preloadHistory(t)
	queries := []string{`{"query":"error"}`, `{"query":"error","recent_first":true}`, `{"query":"` + sessiongen.LargeRareNeedle + `"}`, `{"query":"NOT-THERE"}`}
	var want []string
	plain := mustOpenAt(t, path, testOptions())
	for _, cc := range ccs {
		for _, q := range queries {
			want = append(want, mustCall(t, plain, cc, "history_search_contents", q).Content[0].Text)
		}
	}
	plain.Close()
	check := func(what string, s *Service) {
		t.Helper()
		i := 0
		for _, cc := range ccs {
			for _, q := range queries {
				if got := mustCall(t, s, cc, "history_search_contents", q).Content[0].Text; got != want[i] {
					t.Fatalf("%s: %s of %s: %.200s, want %.200s", what, q, cc.Agent, got, want[i])
				}
				i++
			}
		}
	}

	t.Run("loaded before the first search", func(t *testing.T) {
		opts := testOptions()
		opts.PreloadChunkFilters = true
		var logged syncBuffer
		opts.Logger = slog.New(slog.NewTextHandler(&logged, nil))
		s := mustOpenAt(t, path, opts)
		waitClosed(t, s.preload.done, "the preload")
		// The load ends with the reader connections warmed by a search.
		if got := logged.String(); !strings.Contains(got, "loaded the history chunk filters") || strings.Contains(got, "WARN") {
			t.Fatalf("the preload logged %q, want its end without a warning", got)
		}
		for i, cc := range ccs {
			if got := s.filters.Loaded(cc.TaskID, cc.Agent); got != sealed[i] {
				t.Fatalf("%s: %d chunks loaded, want %d", cc.Agent, got, sealed[i])
			}
		}
		check("preloaded", s)
	})

	t.Run("a search during the load, then Close", func(t *testing.T) {
		opts := testOptions()
		opts.PreloadChunkFilters = true
		reached, released := make(chan struct{}), make(chan struct{})
		batches := 0
		opts.preload = projections.PreloadOptions{BatchChunks: 2, BeforeBatch: func(ctx context.Context) {
			if batches++; batches == 2 { // held after its first batch until Close
				close(reached)
				<-ctx.Done()
				close(released)
			}
		}}
		s, err := Open(context.Background(), path, atRest(t, opts))
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		waitClosed(t, reached, "the preload's second batch")
		check("during the load", s)
		for i, cc := range ccs {
			if got := s.filters.Loaded(cc.TaskID, cc.Agent); got != sealed[i] {
				t.Fatalf("%s: %d chunks loaded after its search, want %d", cc.Agent, got, sealed[i])
			}
		}
		closed := make(chan struct{})
		go func() {
			s.Close()
			close(closed)
		}()
		waitClosed(t, closed, "Close")
		waitClosed(t, released, "the held batch")
		select {
		case <-s.preload.done:
		default:
			t.Fatal("Close returned before the preload ended")
		}
		if batches != 2 {
			t.Fatalf("the preload ran %d batches after Close", batches-2)
		}
	})
}

// syncBuffer is a bytes.Buffer a logger may write from another goroutine.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
