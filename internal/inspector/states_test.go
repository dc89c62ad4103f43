package inspector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
)

// TestStatesAreCopiedOncePerPosition: a past position is copied once and
// then served from the copy; the least recently used copy is closed when
// a fifth is made; close closes the rest, and a copy in use closes when
// its page releases it. Positions are asked for in decreasing order, so
// that each is copied afresh (none is above a kept copy to bring forward:
// travel_test.go).
func TestStatesAreCopiedOncePerPosition(t *testing.T) {
	ctx := context.Background()
	live := memorytest.Open(t, memory.OpenOptions{})
	res, err := live.Attach(ctx, memory.AttachRequest{SessionKey: "/s/a.jsonl"}, "")
	if err != nil {
		t.Fatal(err)
	}
	cc := memory.CallContext{TaskID: res.TaskID, Agent: res.Agent}
	for i := range 6 {
		args, _ := json.Marshal(map[string]string{"path": "a.md", "text": fmt.Sprint(i)})
		if _, err := live.CallTool(ctx, "notes_write_file", cc, args, ""); err != nil {
			t.Fatal(err)
		}
	}
	task := res.TaskID
	ss := newStates(live, keep(4))
	get := func(at int64) (*memory.Service, func()) {
		t.Helper()
		svc, release, err := ss.at(ctx, task, at)
		if err != nil {
			t.Fatalf("at %d: %v", at, err)
		}
		return svc, release
	}
	if svc, release := get(0); svc != live {
		t.Error("at 0 is not the live memory")
	} else {
		release()
	}
	last, _ := live.LastPosition(ctx)
	if svc, release := get(last + 5); svc != live {
		t.Error("past the end is not the live memory")
	} else {
		release()
	}
	first, release := get(7)
	if got, want := stateOf(t, first), stateOf(t, freshAt(t, live, task, 7)); got != want {
		t.Errorf("the copy at 7 is not a fresh copy's:\n%s\nwant\n%s", got, want)
	}
	release()
	again, release := get(7)
	release()
	if again != first || ss.builds != 1 {
		t.Errorf("at 7 again: same copy %v, %d builds", again == first, ss.builds)
	}
	held, holdRelease := get(6) // in use while evicted
	for _, p := range []int64{5, 4, 3, 2} {
		_, release := get(p)
		release()
	}
	if ss.builds != 6 || ss.forwards != 0 {
		t.Errorf("%d builds, %d forward; want 6, 0", ss.builds, ss.forwards)
	}
	if _, err := first.LastPosition(ctx); err == nil {
		t.Error("the evicted copy at 7 is still open")
	}
	if _, err := held.LastPosition(ctx); err != nil {
		t.Errorf("the copy at 6, evicted while in use, was closed under its page: %v", err)
	}
	holdRelease()
	if _, err := held.LastPosition(ctx); err == nil {
		t.Error("the copy at 6 is still open after its release")
	}
	kept, release := get(2)
	release()
	if ss.builds != 6 {
		t.Errorf("the kept copy at 2 was built again: %d builds", ss.builds)
	}
	ss.close()
	if _, err := kept.LastPosition(ctx); err == nil {
		t.Error("close left the copy at 2 open")
	}
	if _, _, err := ss.at(ctx, task, 2); err == nil {
		t.Error("a closed inspector copied a state")
	}
}

// keep is the default limits with n copies kept.
func keep(n int) limits {
	return limits{kept: n, builders: defaultBuilders, waiting: defaultWaiting, disk: defaultScratchBytes}
}

// notesLive is a memory whose log has one note write per position after
// the attach's.
func notesLive(t *testing.T, writes int) (*memory.Service, string) {
	t.Helper()
	ctx := context.Background()
	live := memorytest.Open(t, memory.OpenOptions{})
	res, err := live.Attach(ctx, memory.AttachRequest{SessionKey: "/s/a.jsonl"}, "")
	if err != nil {
		t.Fatal(err)
	}
	cc := memory.CallContext{TaskID: res.TaskID, Agent: res.Agent}
	for i := range writes {
		args, _ := json.Marshal(map[string]string{"path": "a.md", "text": fmt.Sprint(i)})
		if _, err := live.CallTool(ctx, "notes_write_file", cc, args, ""); err != nil {
			t.Fatal(err)
		}
	}
	return live, res.TaskID
}

// TestStatesBuildsAreBounded: with one builder and one position waiting,
// a third new position is refused as busy (a 503 with Retry-After, not a
// third copy), while positions already asked for are served; once the
// builds end, a new position is built again.
func TestStatesBuildsAreBounded(t *testing.T) {
	ctx := context.Background()
	live, task := notesLive(t, 6)
	ss := newStates(live, limits{kept: 4, builders: 1, waiting: 1, disk: defaultScratchBytes})
	defer ss.close()
	started, unblock := make(chan int64, 4), make(chan struct{})
	ss.beforeCopy = func(_ context.Context, at int64) {
		started <- at
		<-unblock
	}
	type got struct {
		at  int64
		err error
	}
	results := make(chan got, 2)
	page := func(at int64) {
		_, release, err := ss.at(ctx, task, at)
		if err == nil {
			release()
		}
		results <- got{at, err}
	}
	go page(3)
	if at := <-started; at != 3 {
		t.Fatalf("the builder started %d, want 3", at)
	}
	go page(5) // waits for the builder
	waitFor(t, func() bool {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		return len(ss.order) == 2
	})
	if _, _, err := ss.at(ctx, task, 4); !errors.Is(err, errBusy) || !errors.Is(err, memory.ErrUnavailable) {
		t.Fatalf("a third new position while one builds and one waits: %v, want busy", err)
	}
	close(unblock)
	for range 2 {
		if r := <-results; r.err != nil {
			t.Errorf("the page at %d: %v", r.at, r.err)
		}
	}
	svc, release, err := ss.at(ctx, task, 4)
	if err != nil {
		t.Fatalf("at 4 once the builds ended: %v", err)
	}
	if got, want := stateOf(t, svc), stateOf(t, freshAt(t, live, task, 4)); got != want {
		t.Errorf("the copy at 4 is not a fresh copy's")
	}
	release()
}

// TestStatesCancelABuildNoPageWaits: a page that goes away while its copy
// waits to be built cancels the build (its context ends, nothing stays in
// the scratch folder); a page still waiting keeps a build going; and a
// canceled forward leaves the kept copy it was bringing forward at its
// position, to be used again.
func TestStatesCancelABuildNoPageWaits(t *testing.T) {
	dir := t.TempDir()
	forensics.SetScratchFolder(dir)
	t.Cleanup(func() { forensics.SetScratchFolder("") })
	live, task := notesLive(t, 6)
	ss := newStates(live, keep(4))
	defer ss.close()
	var block atomic.Bool
	entered, ended := make(chan int64, 4), make(chan error, 4)
	ss.beforeCopy = func(ctx context.Context, at int64) {
		if block.Load() {
			entered <- at
			<-ctx.Done() // a build only its context ends
			ended <- ctx.Err()
		}
	}
	base, release, err := ss.at(context.Background(), task, 3)
	if err != nil {
		t.Fatal(err)
	}
	release()
	block.Store(true)
	for _, at := range []int64{5, 2} { // forward from 3, and fresh
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, _, err := ss.at(ctx, task, at)
			done <- err
		}()
		// The build holds the builder's slot before the page goes away:
		// canceled earlier, it might never start, and never reach
		// beforeCopy (its select would see both ready).
		if got := <-entered; got != at {
			t.Fatalf("the build at %d started, want %d", got, at)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("the page at %d that went away: %v", at, err)
		}
		if err := <-ended; !errors.Is(err, context.Canceled) {
			t.Fatalf("the build at %d ended with %v, want canceled", at, err)
		}
	}
	waitFor(t, func() bool {
		ss.mu.Lock()
		defer ss.mu.Unlock()
		return ss.canceled == 2
	})
	block.Store(false)
	again, release, err := ss.at(context.Background(), task, 3)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if again != base {
		t.Error("the copy at 3, whose forward to 5 was canceled, was not kept")
	}
	copies, _ := filepath.Glob(filepath.Join(dir, "pid-*", "copy-*"))
	if len(copies) != 1 {
		t.Errorf("%d copies in the scratch folder, want the one at 3: %v", len(copies), copies)
	}
	if got, want := stateOf(t, again), stateOf(t, freshAt(t, live, task, 3)); got != want {
		t.Errorf("the copy at 3 moved in the canceled forward")
	}
}

// TestStatesDiskIsBounded: the copies' files stay within the bound: a new
// copy evicts an unused kept one to fit, and a copy that cannot fit even
// alone fails as too large, leaving nothing behind.
func TestStatesDiskIsBounded(t *testing.T) {
	ctx := context.Background()
	live, task := notesLive(t, 6)
	ss := newStates(live, limits{kept: 4, builders: 1, waiting: 1, disk: 150})
	defer ss.close()
	ss.sizeOf = func(*forensics.ScratchDB) int64 { return 100 }
	first, release, err := ss.at(ctx, task, 5)
	if err != nil {
		t.Fatal(err)
	}
	release()
	second, release, err := ss.at(ctx, task, 3)
	if err != nil {
		t.Fatal(err)
	}
	release()
	if _, err := first.LastPosition(ctx); err == nil {
		t.Error("the copy at 5 is still open: two copies of 100 bytes under a bound of 150")
	}
	if _, err := second.LastPosition(ctx); err != nil {
		t.Errorf("the copy at 3: %v", err)
	}
	ss.sizeOf = func(*forensics.ScratchDB) int64 { return 200 }
	if _, _, err := ss.at(ctx, task, 2); !errors.Is(err, memory.ErrTooLarge) {
		t.Fatalf("a copy of 200 bytes under a bound of 150: %v, want too large", err)
	}
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if len(ss.order) != 0 {
		t.Errorf("%d copies kept after a copy too large for the bound evicted the rest, want none", len(ss.order))
	}
}

// waitFor waits until cond holds (it is set by another goroutine this
// test started, not by time passing).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for !cond() {
		runtime.Gosched()
	}
}

// TestStatesForgetAnErasedTask: the copies of an erased task's history are
// closed and removed, one in use when its page releases it, and another
// task's are kept; an Inspector does it for its service's erasures.
func TestStatesForgetAnErasedTask(t *testing.T) {
	ctx := context.Background()
	live, task := notesLive(t, 6)
	other, err := live.Attach(ctx, memory.AttachRequest{SessionKey: "/s/other.jsonl"}, "")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		args, _ := json.Marshal(map[string]string{"path": "b.md", "text": fmt.Sprint(i)})
		if _, err := live.CallTool(ctx, "notes_write_file", memory.CallContext{TaskID: other.TaskID, Agent: other.Agent}, args, ""); err != nil {
			t.Fatal(err)
		}
	}
	in := New(Config{Service: live})
	defer in.Close()
	ss := in.states
	get := func(task string, at int64) (*memory.Service, func()) {
		t.Helper()
		svc, release, err := ss.at(ctx, task, at)
		if err != nil {
			t.Fatalf("%s at %d: %v", task, at, err)
		}
		return svc, release
	}
	held, holdRelease := get(task, 6)
	kept, release := get(task, 5) // before 6: a copy of its own
	release()
	otherCopy, release := get(other.TaskID, 8)
	release()
	if _, err := live.EraseTask(ctx, task, "", memory.EraseOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kept.LastPosition(ctx); err == nil {
		t.Error("a kept copy of the erased task is still open")
	}
	if _, err := held.LastPosition(ctx); err != nil {
		t.Errorf("a copy in use was closed under its page: %v", err)
	}
	holdRelease()
	if _, err := held.LastPosition(ctx); err == nil {
		t.Error("the copy in use is still open after its page released it")
	}
	if _, err := otherCopy.LastPosition(ctx); err != nil {
		t.Errorf("another task's copy was closed: %v", err)
	}
	ss.mu.Lock()
	for _, st := range ss.order {
		if st.task == task {
			t.Errorf("a copy of the erased task at %d is kept", st.at)
		}
	}
	ss.mu.Unlock()
}
