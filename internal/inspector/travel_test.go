package inspector

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
)

const travelLog = "../forensics/testdata/logs/fenced-checkpoint-retry.jsonl"

// TestStatesBringAKeptCopyForward: a new position is built from the kept
// copy at the largest position below it that no page uses, which then
// leaves the cache; the result is what a fresh copy gives (projections
// and log); copies in use are not moved, and a position above none of
// the unused copies is copied afresh.
func TestStatesBringAKeptCopyForward(t *testing.T) {
	ctx := context.Background()
	live, task := scenarioLive(t)
	ss := newStates(live, keep(4))
	defer ss.close()
	get := func(at int64) (*memory.Service, func()) {
		t.Helper()
		svc, release, err := ss.at(ctx, task, at)
		if err != nil {
			t.Fatalf("at %d: %v", at, err)
		}
		if got, want := stateOf(t, svc), stateOf(t, freshAt(t, live, task, at)); got != want {
			t.Fatalf("the copy at %d differs from a fresh copy:\n%s\nwant\n%s", at, got, want)
		}
		return svc, release
	}
	counts := func(what string, builds, forwards int) {
		t.Helper()
		ss.mu.Lock()
		defer ss.mu.Unlock()
		if ss.builds != builds || ss.forwards != forwards {
			t.Errorf("%s: %d builds, %d forwards; want %d, %d", what, ss.builds, ss.forwards, builds, forwards)
		}
	}
	at10, release := get(10)
	release()
	at40, release := get(40)
	release()
	counts("10 then 40", 2, 1)
	if at40 != at10 {
		t.Error("40 was not built from the copy at 10")
	}
	_, release = get(10) // 10 left the cache: copied afresh (40 is above it)
	release()
	counts("10 again", 3, 1)
	_, release = get(45) // from 40, not 10
	release()
	counts("45", 4, 2)
	if got, want := stateOf(t, at10), stateOf(t, freshAt(t, live, task, 45)); got != want {
		t.Errorf("45 was not built from the copy at 40")
	}

	// Copies in use stay where they are.
	held10, release10 := get(10)
	held45, release45 := get(45)
	_, release = get(60)
	release()
	counts("60 while 10 and 45 are in use", 5, 2)
	for at, svc := range map[int64]*memory.Service{10: held10, 45: held45} {
		if got, want := stateOf(t, svc), stateOf(t, freshAt(t, live, task, at)); got != want {
			t.Errorf("the copy at %d, in use, was moved", at)
		}
	}
	release45()
	_, release = get(50) // from 45, now unused; 10 is still in use
	release()
	counts("50", 6, 3)
	if got, want := stateOf(t, held10), stateOf(t, freshAt(t, live, task, 10)); got != want {
		t.Errorf("the copy at 10, in use, was moved")
	}
	release10()
	if n := len(ss.order); n != 3 { // 10, 60, 50
		t.Errorf("%d copies kept, want 3", n)
	}
}

// TestStatesConcurrentPositions: pages at different positions, asked for
// at once with a cache smaller than the pages (so copies are evicted and
// brought forward while others are in use), each see the state at their
// own position for as long as they use it. In each round every page holds
// its copy until all of the round's pages have theirs, so each round's
// copies are built while the others are in use (in even rounds the pages
// ask one after the other, each once the previous has its copy, in
// increasing positions: each could be brought forward from the previous
// one's copy, were copies in use not left alone; in odd rounds they ask
// all at once). A round starts once the last has released its copies,
// and asks for positions above all of them, so that each round brings at
// least one kept copy forward.
func TestStatesConcurrentPositions(t *testing.T) {
	ctx := context.Background()
	live, task := scenarioLive(t)
	const pages, rounds = 4, 4
	position := func(g, r int) int64 { return int64(10 + 25*r + 5*g) }
	want := map[int64]string{}
	for r := range rounds {
		for g := range pages {
			want[position(g, r)] = stateOf(t, freshAt(t, live, task, position(g, r)))
		}
	}
	ss := newStates(live, keep(2))
	defer ss.close()
	held := make([]sync.WaitGroup, rounds)      // all of a round's pages hold their copy
	released := make([]sync.WaitGroup, rounds)  // all of a round's pages are done
	acquired := make([][]chan struct{}, rounds) // a page has its copy
	for r := range rounds {
		held[r].Add(pages)
		released[r].Add(pages)
		acquired[r] = make([]chan struct{}, pages)
		for g := range pages {
			acquired[r][g] = make(chan struct{})
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, pages*rounds)
	for g := range pages {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				if r > 0 {
					released[r-1].Wait()
				}
				if r%2 == 0 && g > 0 {
					<-acquired[r][g-1]
				}
				at := position(g, r)
				svc, release, err := ss.at(ctx, task, at)
				close(acquired[r][g])
				if err == nil {
					if got, serr := stateErr(svc); serr != nil || got != want[at] {
						err = fmt.Errorf("its page sees another state at first (%v)", serr)
					}
				}
				held[r].Done()
				held[r].Wait()
				if err != nil {
					errs <- fmt.Errorf("round %d at %d: %w", r, at, err)
					if release != nil {
						release()
					}
					released[r].Done()
					continue
				}
				got, err := stateErr(svc)
				if err == nil && got != want[at] {
					err = fmt.Errorf("round %d: the page at %d sees another state", r, at)
				}
				release()
				released[r].Done()
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.order) > 2 {
		t.Errorf("%d copies kept, the bound is 2", len(ss.order))
	}
	if ss.forwards < rounds-1 {
		t.Errorf("%d copies brought forward, want at least one a round after the first", ss.forwards)
	}
	t.Logf("%d builds, %d of them forward", ss.builds, ss.forwards)
}

// scenarioLive is a memory holding a scenario log, and its task.
func scenarioLive(t *testing.T) (*memory.Service, string) {
	t.Helper()
	live := memorytest.Open(t, memory.OpenOptions{})
	f, err := os.Open(filepath.FromSlash(travelLog))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lr := forensics.NewLogReader(f)
	if _, err := forensics.Import(context.Background(), live, lr.Next); err != nil {
		t.Fatal(lr.AtLine(err))
	}
	tasks, err := live.Tasks(context.Background(), 0, 2)
	if err != nil || len(tasks.Tasks) != 1 {
		t.Fatalf("the scenario log has %d tasks (%v), want 1", len(tasks.Tasks), err)
	}
	return live, tasks.Tasks[0].TaskID
}

// freshAt is a fresh copy of task's history in live's log up to at.
func freshAt(t *testing.T, live *memory.Service, task string, at int64) *memory.Service {
	t.Helper()
	svc, cleanup, err := forensics.Scratch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	if _, err := forensics.CopyHistory(context.Background(), svc, live, task, at, nil); err != nil {
		t.Fatal(err)
	}
	return svc
}

func stateOf(t *testing.T, svc *memory.Service) string {
	t.Helper()
	s, err := stateErr(svc)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// stateErr is the digest of svc's projections and its exported log: an
// event skipped is missing from the log even if no projection shows it.
func stateErr(svc *memory.Service) (string, error) {
	ctx := context.Background()
	sum, err := forensics.Summarize(ctx, svc)
	if err != nil {
		return "", err
	}
	var b bytes.Buffer
	if err := forensics.Export(ctx, svc, "", 0, &b, nil); err != nil {
		return "", err
	}
	return sum.Digest + "\n" + b.String(), nil
}
