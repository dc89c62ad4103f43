package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memoryd/memoryd/internal/fence"
	"github.com/memoryd/memoryd/internal/tools"
)

// noteText reads a note and returns its text.
func noteText(tb testing.TB, s *Service, cc CallContext, path string) string {
	tb.Helper()
	res := mustCall(tb, s, cc, tools.NotesReadFile, fmt.Sprintf(`{"path":%q}`, path))
	return detailsMap(tb, res)["text"].(string)
}

// cacheHits returns the note cache's hits so far.
func cacheHits(s *Service) uint64 {
	h, _ := s.notes.Stats()
	return h
}

// TestNoteCacheAnswersUntilACommit: a note read again with nothing
// committed in between comes from the cache; any commit (of the note, of
// another note, of the caller's fence state, from another process) makes
// the next read query SQLite, and it sees the commit.
func TestNoteCacheAnswersUntilACommit(t *testing.T) {
	s := mustOpenSQLite(t)
	cc := mustAttach(t, s, "/s/cache.jsonl")
	mustCall(t, s, cc, tools.NotesWriteFile, `{"path":"a.md","text":"one"}`)

	if got := noteText(t, s, cc, "a.md"); got != "one" {
		t.Fatalf("first read %q", got)
	}
	before := cacheHits(s)
	for range 3 {
		if got := noteText(t, s, cc, "a.md"); got != "one" {
			t.Fatalf("cached read %q", got)
		}
	}
	if hits := cacheHits(s) - before; hits != 3 {
		t.Fatalf("%d of 3 repeated reads came from the cache", hits)
	}

	t.Run("own write of the note", func(t *testing.T) {
		mustCall(t, s, cc, tools.NotesAppendToFile, `{"path":"a.md","text":" two"}`)
		if got := noteText(t, s, cc, "a.md"); got != "one two" {
			t.Fatalf("read after an append %q", got)
		}
	})

	t.Run("another process's write", func(t *testing.T) {
		other := mustOpenAt(t, fcDBPath(t, s), OpenOptions{})
		defer other.Close()
		noteText(t, s, cc, "a.md") // cached again
		if _, err := other.CallTool(context.Background(), tools.NotesWriteFile, cc,
			[]byte(`{"path":"a.md","text":"from elsewhere"}`), ""); err != nil {
			t.Fatal(err)
		}
		if got := noteText(t, s, cc, "a.md"); got != "from elsewhere" {
			t.Fatalf("read after another store's write %q", got)
		}
	})

	t.Run("a note written after a not-found read", func(t *testing.T) {
		mustCall(t, s, cc, tools.NotesWriteFile, `{"path":"b.md","text":"bee"}`)
		noteText(t, s, cc, "b.md")
		noteText(t, s, cc, "b.md")
		if _, err := call(t, s, cc, tools.NotesReadFile, `{"path":"missing.md"}`); !errors.Is(err, ErrNotFound) {
			t.Fatalf("missing note: %v", err)
		}
		mustCall(t, s, cc, tools.NotesWriteFile, `{"path":"missing.md","text":"now here"}`)
		if got := noteText(t, s, cc, "missing.md"); got != "now here" {
			t.Fatalf("read of a note written after a not-found read %q", got)
		}
	})

	t.Run("the caller's fence", func(t *testing.T) {
		s := mustOpenSQLite(t)
		root := fcAttach(t, s, "/s/cache-fence.jsonl", fcBudget())
		fcMustTool(t, s, root, "w1", tools.NotesWriteFile, `{"path":"f.md","text":"x"}`)
		fcMustTool(t, s, root, "r1", tools.NotesReadFile, `{"path":"f.md"}`)
		fcMustTool(t, s, root, "r2", tools.NotesReadFile, `{"path":"f.md"}`)
		fcFence(t, s, root)
		_, err := fcTool(s, root, "r3", tools.NotesReadFile, `{"path":"f.md"}`)
		fcWantFenced(t, "a read after the fence", err, fence.ReasonCheckpointRequired)
	})
}

// TestNoteCacheRetriesAfterACommitDuringTheCall: a call that took the note
// from the cache and then queried SQLite (here: the owner of another
// agent's note) runs again without the cache if something was committed
// meanwhile, so that its queries and the note are of one state.
func TestNoteCacheRetriesAfterACommitDuringTheCall(t *testing.T) {
	var s *Service
	var root CallContext
	calls, commit := 0, false
	s = mustOpenSQLiteWith(t, serviceOptions{afterCachedRead: func() {
		calls++
		if commit && calls == 1 { // a commit between the cached note and the end of the call
			mustCall(t, s, root, tools.NotesWriteFile, `{"path":"plan.md","text":"v2"}`)
		}
	}})
	root = mustAttach(t, s, "/s/retry.jsonl")
	child := mustAttachChild(t, s, root.TaskID, "/s/retry-child.jsonl", "worker")
	mustCall(t, s, root, tools.NotesWriteFile, `{"path":"plan.md","text":"v1"}`)
	const path = "/root/notes/plan.md"
	noteText(t, s, child, path)

	calls, commit = 0, true
	got := noteText(t, s, child, path)
	if calls != 1 {
		t.Fatalf("the hook ran %d times, want once (the retry reads without the cache)", calls)
	}
	if got != "v2" {
		t.Fatalf("the retried read returned %q, want the state after the commit (v2)", got)
	}
	// And with nothing committed meanwhile, no retry and no query.
	calls, commit = 0, false
	noteText(t, s, child, path)
	before := cacheHits(s)
	if got := noteText(t, s, child, path); got != "v2" || calls != 1 || cacheHits(s) != before+1 {
		t.Fatalf("read %q, hook ran %d times, cache hits +%d", got, calls, cacheHits(s)-before)
	}
}

// TestNoteCacheReadsAreLinearizable: readers racing one writer never see a
// note older than the last append acknowledged before their read began,
// and always see a text some sequence of the appends produced.
func TestNoteCacheReadsAreLinearizable(t *testing.T) {
	s := mustOpenSQLite(t)
	cc := mustAttach(t, s, "/s/linear.jsonl")
	mustCall(t, s, cc, tools.NotesWriteFile, `{"path":"log.md","text":""}`)
	const appends = 200
	var acked atomic.Int64
	line := func(i int) string { return fmt.Sprintf("line %d\n", i) }

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for r := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				floor := acked.Load()
				res, err := s.CallTool(ctx, tools.NotesReadFile, cc, []byte(`{"path":"log.md"}`), "")
				if err != nil {
					if ctx.Err() == nil {
						errs <- fmt.Errorf("reader %d: %v", r, err)
					}
					return
				}
				text := res.Details.(tools.NotesReadFileDetails).Text
				n := int64(strings.Count(text, "\n"))
				var want strings.Builder
				for i := range n {
					want.WriteString(line(int(i)))
				}
				if n < floor || text != want.String() {
					errs <- fmt.Errorf("reader %d read %d lines (%q…) after %d appends were acknowledged", r, n, text[:min(len(text), 40)], floor)
					return
				}
			}
		}()
	}
	for i := range appends {
		if _, err := s.CallTool(context.Background(), tools.NotesAppendToFile, cc,
			fmt.Appendf(nil, `{"path":"log.md","text":%q}`, line(i)), ""); err != nil {
			t.Fatal(err)
		}
		acked.Store(int64(i + 1))
	}
	stop()
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := noteText(t, s, cc, "log.md"); strings.Count(got, "\n") != appends {
		t.Fatalf("final read has %d lines", strings.Count(got, "\n"))
	}
	if cacheHits(s) == 0 {
		t.Error("no read came from the cache: the test did not exercise it")
	}
}
