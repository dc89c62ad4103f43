package inspector

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

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
	ss := newStates(live, 4)
	get := func(at int64) (*memory.Service, func()) {
		t.Helper()
		svc, release, err := ss.at(ctx, at)
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
	if p, err := first.LastPosition(ctx); err != nil || p != 7 {
		t.Errorf("the copy at 7 ends at %d (%v)", p, err)
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
	if _, _, err := ss.at(ctx, 2); err == nil {
		t.Error("a closed inspector copied a state")
	}
}
