package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// deltaSync syncs entries and the branch as a delta from base.
func deltaSync(s *Service, cc CallContext, entries []json.RawMessage, base, keep int64, appendIDs []string) (SyncResult, error) {
	return s.Sync(context.Background(), SyncRequest{Context: cc, Entries: entries,
		Delta: &SyncDelta{BaseRevision: &base, Keep: &keep, Append: appendIDs}}, "")
}

// sharedPrefix is the length of the longest common prefix of a and b.
func sharedPrefix(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// wantStaleBase checks that err is the conflict of a stale delta, naming
// the branch's revision.
func wantStaleBase(tb testing.TB, err error, revision int64) {
	tb.Helper()
	histWantErr(tb, err, ErrConflict)
	var e *Error
	errors.As(err, &e)
	if e.Details["reason"] != SyncReasonStaleBase || e.Details["revision"] != revision {
		tb.Fatalf("conflict details %v, want reason %q and revision %d", e.Details, SyncReasonStaleBase, revision)
	}
}

// agentLog is the events of a store from position from on: position,
// stream, type and data (the ids and times of the events differ between
// two stores).
func agentLog(tb testing.TB, s *Service, from int64) []string {
	tb.Helper()
	var out []string
	err := s.Store().Each(context.Background(), eventlog.Filter{}, func(ev events.Event) error {
		if ev.Position >= from {
			out = append(out, fmt.Sprintf("%d %s %s %s", ev.Position, ev.Stream, ev.Type, ev.Data))
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// twinServices returns two services whose logs start with the same attach
// of one root session (the second imports the first's log), so that
// their task ids and positions are the same.
func twinServices(t *testing.T) (a, b *Service, cc CallContext) {
	t.Helper()
	ctx := context.Background()
	a = mustOpenService(t)
	cc = mustAttach(t, a, "/home/u/.pi/agent/sessions/twin.jsonl")
	var log []events.Event
	if err := a.Store().Each(ctx, eventlog.Filter{}, func(ev events.Event) error {
		log = append(log, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	b = mustOpenAt(t, filepath.Join(t.TempDir(), "twin.db"), testOptions())
	i := 0
	if _, err := b.store.Import(ctx, func() (events.Event, bool, error) {
		if i == len(log) {
			return events.Event{}, false, nil
		}
		i++
		return log[i-1], true, nil
	}); err != nil {
		t.Fatal(err)
	}
	return a, b, cc
}

// TestSyncDeltaMatchesWhole: for random edits of a session tree (turns
// appended, compactions, switches to another branch, forks from any
// entry, cuts back to an ancestor, syncs with nothing new, retries), a
// client sending deltas and one sending the whole branch get the same
// answers, and their stores the same log and the same projections. The
// delta client sometimes keeps less than it could: memoryd records the
// longest shared prefix either way.
func TestSyncDeltaMatchesWhole(t *testing.T) {
	for seed := range uint64(4) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			whole, delta, cc := twinServices(t)
			start := lastPosition(t, whole)
			r := rand.New(rand.NewPCG(seed, 21))
			b := sessiongen.NewBuilder(seed)
			var all []string // every entry id of the tree
			var sent int     // entries sent so far
			var lastBranch []string
			var revision int64
			for step := range 60 {
				var op string
				switch k := r.IntN(10); {
				case k < 4 || len(all) == 0:
					op = "append"
					for range 1 + r.IntN(3) {
						if r.IntN(3) == 0 {
							c, res := b.Call("notes_read_file", map[string]any{"path": "a.md"}, fmt.Sprintf("result %d", step))
							all = append(all, c, res)
						} else {
							all = append(all, b.UserText(fmt.Sprintf("step %d: turn text %d", step, r.IntN(1000))))
						}
					}
				case k == 4:
					op = "compaction"
					all = append(all, b.Compaction(fmt.Sprintf("summary %d", step), b.Leaf(), 1000))
				case k == 5:
					op = "fork" // from any entry of the tree, with a new turn
					b.Checkout(all[r.IntN(len(all))])
					all = append(all, b.UserText(fmt.Sprintf("step %d: fork", step)))
				case k == 6:
					op = "switch" // to another entry of the tree, nothing new
					b.Checkout(all[r.IntN(len(all))])
				case k == 7 && len(lastBranch) > 1:
					op = "cut" // back to an ancestor on the branch
					b.Checkout(lastBranch[r.IntN(len(lastBranch)-1)])
				default:
					op = "none"
				}
				sess := b.Session()
				entries, branch := sess.Entries[sent:], sess.Branch
				sent = len(sess.Entries)
				wantRes, err := histSyncErr(whole, cc, entries, branch, nil)
				if err != nil {
					t.Fatalf("step %d (%s): whole sync: %v", step, op, err)
				}
				keep := sharedPrefix(lastBranch, branch)
				if keep > 0 && r.IntN(4) == 0 {
					keep -= 1 + r.IntN(keep) // a client that keeps less than it could
				}
				got, err := deltaSync(delta, cc, entries, revision, int64(keep), slices.Clone(branch[keep:]))
				if err != nil {
					t.Fatalf("step %d (%s): delta sync (base %d, keep %d of %d, append %d): %v", step, op, revision, keep, len(lastBranch), len(branch)-keep, err)
				}
				if got != wantRes {
					t.Fatalf("step %d (%s): delta answered %+v, the whole form %+v", step, op, got, wantRes)
				}
				if r.IntN(5) == 0 { // both retried: nothing more is recorded
					again, err := histSyncErr(whole, cc, entries, branch, nil)
					if err != nil {
						t.Fatalf("step %d: whole retry: %v", step, err)
					}
					againDelta, err := deltaSync(delta, cc, entries, revision, int64(keep), slices.Clone(branch[keep:]))
					if err != nil {
						t.Fatalf("step %d (%s): delta retry: %v", step, op, err)
					}
					if again != againDelta || again.Revision != wantRes.Revision || again.Stored != 0 {
						t.Fatalf("step %d (%s): retries answered %+v (delta) and %+v (whole), after %+v", step, op, againDelta, again, wantRes)
					}
				}
				lastBranch, revision = slices.Clone(branch), got.Revision
			}
			if a, b := agentLog(t, whole, start), agentLog(t, delta, start); !slices.Equal(a, b) {
				t.Fatalf("the logs differ:\nwhole %d events\ndelta %d events\nfirst whole %v\nfirst delta %v", len(a), len(b), a[:min(3, len(a))], b[:min(3, len(b))])
			}
			if a, b := projectionDigest(t, whole), projectionDigest(t, delta); !reflect.DeepEqual(a, b) {
				t.Fatalf("the projections differ:\nwhole %v\ndelta %v", a, b)
			}
		})
	}
}

// projectionDigest fingerprints every projection of s.
func projectionDigest(tb testing.TB, s *Service) []projections.TableDigest {
	tb.Helper()
	d, err := projections.Digest(context.Background(), s.Store())
	if err != nil {
		tb.Fatal(err)
	}
	return d
}

// deltaFixture is an agent with a linear branch of n turns synced whole.
func deltaFixture(t *testing.T, n int) (*Service, CallContext, *sessiongen.Builder, []string, int64) {
	t.Helper()
	s := mustOpenService(t)
	cc := mustAttach(t, s, "/home/u/.pi/agent/sessions/delta.jsonl")
	b := sessiongen.NewBuilder(5)
	for i := range n {
		b.UserText(fmt.Sprintf("turn %d", i))
	}
	sess := b.Session()
	res := histSync(t, s, cc, sess)
	return s, cc, b, sess.Branch, res.Revision
}

// TestSyncDeltaStaleBase: a delta from a revision that is not the
// branch's (older, unknown, or with a keep longer than the branch) is a
// conflict that says to send the whole branch, and writes nothing.
func TestSyncDeltaStaleBase(t *testing.T) {
	s, cc, b, branch, rev := deltaFixture(t, 5)
	id := b.UserText("one more")
	entry := b.Session().Entries[len(branch):]
	if _, err := deltaSync(s, cc, entry, rev, int64(len(branch)), []string{id}); err != nil {
		t.Fatal(err)
	}
	before := lastPosition(t, s)
	id2 := b.UserText("and another")
	entry2 := b.Session().Entries[len(branch)+1:]
	for _, c := range []struct {
		name       string
		base, keep int64
	}{
		{"an older revision (not the one just before)", rev - 1, 5},
		{"the revision before, asking for another branch", rev, 6},
		{"a revision memoryd never had", rev + 7, 6},
		{"the current revision, keeping more than the branch has", rev + 1, 9},
	} {
		_, err := deltaSync(s, cc, entry2, c.base, c.keep, []string{id2})
		wantStaleBase(t, err, rev+1)
		if got := lastPosition(t, s); got != before {
			t.Fatalf("%s: the refused delta wrote events (position %d, was %d)", c.name, got, before)
		}
	}
	// An agent whose branch never changed is at revision 0.
	other := mustAttach(t, s, "/home/u/.pi/agent/sessions/delta-other.jsonl")
	_, err := deltaSync(s, other, nil, 3, 0, nil)
	wantStaleBase(t, err, 0)
}

// TestSyncDeltaLostClient: a client that lost track (it restarted, or
// another sync moved the branch) gets the conflict, sends the whole
// branch, and goes on with deltas from the revision that answered.
func TestSyncDeltaLostClient(t *testing.T) {
	s, cc, b, branch, rev := deltaFixture(t, 8)
	// Another client of the agent moves the branch back three turns.
	if _, err := histSyncErr(s, cc, nil, branch[:5], nil); err != nil {
		t.Fatal(err)
	}
	id := b.UserText("after the restart")
	sess := b.Session()
	_, err := deltaSync(s, cc, sess.Entries[len(branch):], rev, int64(len(branch)), []string{id})
	wantStaleBase(t, err, rev+1)
	res, err := histSyncErr(s, cc, sess.Entries[len(branch):], sess.Branch, nil)
	if err != nil || res.Revision != rev+2 || res.Stored != 1 {
		t.Fatalf("the whole branch after the conflict: %+v, %v", res, err)
	}
	id2 := b.UserText("and on")
	sess = b.Session()
	res2, err := deltaSync(s, cc, sess.Entries[len(sess.Entries)-1:], res.Revision, int64(len(sess.Branch)-1), []string{id2})
	if err != nil || res2.Revision != res.Revision+1 || res2.Stored != 1 {
		t.Fatalf("a delta from the whole sync's revision: %+v, %v", res2, err)
	}
	wantBranch(t, s, cc, sess.Branch)
}

// wantBranch checks the agent's current branch.
func wantBranch(tb testing.TB, s *Service, cc CallContext, want []string) {
	tb.Helper()
	got, err := projections.NewReader(s.Store().Reader()).BranchIDs(context.Background(), cc.TaskID, cc.Agent)
	if err != nil || !slices.Equal(got, want) {
		tb.Fatalf("branch of %d ids (%v), want %d", len(got), err, len(want))
	}
}

// TestSyncDeltaRetry: a delta retried after it succeeded answers as a
// retried whole sync does (the same revision, nothing stored, nothing
// recorded); retried after another change it is stale.
func TestSyncDeltaRetry(t *testing.T) {
	s, cc, b, branch, rev := deltaFixture(t, 6)
	b.Checkout(branch[3]) // a switch: keep 4, two new entries
	x, y := b.UserText("x"), b.UserText("y")
	entries := b.Session().Entries[len(branch):]
	first, err := deltaSync(s, cc, entries, rev, 4, []string{x, y})
	if err != nil || first.Revision != rev+1 || first.Stored != 2 {
		t.Fatalf("delta: %+v, %v", first, err)
	}
	at := lastPosition(t, s)
	for _, keep := range []int64{4, 2} { // the same delta; one that kept less
		again, err := deltaSync(s, cc, entries, rev, keep, append(slices.Clone(branch[keep:4]), x, y))
		if err != nil || again.Revision != first.Revision || again.Stored != 0 || again.Unchanged != 2 {
			t.Fatalf("retry keeping %d: %+v, %v", keep, again, err)
		}
	}
	if got := lastPosition(t, s); got != at {
		t.Fatalf("the retries recorded events (position %d, was %d)", got, at)
	}
	// Not a retry: from the same base, another branch.
	_, err = deltaSync(s, cc, nil, rev, 4, []string{x})
	wantStaleBase(t, err, rev+1)
	// After one more change, the first delta is stale.
	if _, err := deltaSync(s, cc, nil, rev+1, 5, nil); err != nil {
		t.Fatal(err)
	}
	_, err = deltaSync(s, cc, entries, rev, 4, []string{x, y})
	wantStaleBase(t, err, rev+2)
}

// TestSyncDeltaSwitchAndCompaction: a delta that switches branch at its
// middle and appends a compaction, and one that cuts back before it, give
// the branch and windows the whole form gives.
func TestSyncDeltaSwitchAndCompaction(t *testing.T) {
	s, cc, b, branch, rev := deltaFixture(t, 10)
	b.Checkout(branch[6])
	c := b.Compaction("switched and compacted", branch[6], 1000)
	u := b.UserText("in the new window")
	sess := b.Session()
	res, err := deltaSync(s, cc, sess.Entries[len(branch):], rev, 7, []string{c, u})
	if err != nil || res.WindowID != "w2" || res.Revision != rev+1 {
		t.Fatalf("switch with a compaction: %+v, %v", res, err)
	}
	wantBranch(t, s, cc, sess.Branch)
	d := detailsMap(t, mustCall(t, s, cc, "history_list_windows", `{}`))
	if n := num(t, d["n_returned"]); n != 2 {
		t.Fatalf("%d windows after the compaction, want 2", n)
	}
	items := ids(t, mustCall(t, s, cc, "history_list_items", `{"window_id":"w1","limit":200}`))
	if len(items) != 7 || items[6] != branch[6] {
		t.Fatalf("window w1 holds %v, want the 7 kept turns", items)
	}
	// Back before the compaction: one window again.
	res, err = deltaSync(s, cc, nil, res.Revision, 3, nil)
	if err != nil || res.WindowID != "w1" {
		t.Fatalf("cut back: %+v, %v", res, err)
	}
	wantBranch(t, s, cc, branch[:3])
	// The old branch back, whole again, as a delta from the cut.
	res, err = deltaSync(s, cc, nil, res.Revision, 3, slices.Clone(branch[3:]))
	if err != nil || res.Stored != 0 {
		t.Fatalf("the old branch again: %+v, %v", res, err)
	}
	wantBranch(t, s, cc, branch)
}

// TestSyncDeltaRefusals: a delta that could never apply is
// invalid_argument, and writes nothing.
func TestSyncDeltaRefusals(t *testing.T) {
	s, cc, b, branch, rev := deltaFixture(t, 4)
	newID := b.UserText("new")
	entry := b.Session().Entries[len(branch):]
	neg, ok := int64(-1), rev
	before := lastPosition(t, s)
	for _, c := range []struct {
		name string
		req  SyncRequest
	}{
		{"branch and delta", SyncRequest{Context: cc, Branch: &branch, Delta: &SyncDelta{BaseRevision: &ok, Keep: &ok}}},
		{"expected_revision and delta", SyncRequest{Context: cc, ExpectedRevision: &ok, Delta: &SyncDelta{BaseRevision: &ok, Keep: &ok}}},
		{"no base_revision", SyncRequest{Context: cc, Delta: &SyncDelta{Keep: &ok}}},
		{"no keep", SyncRequest{Context: cc, Delta: &SyncDelta{BaseRevision: &ok}}},
		{"a negative keep", SyncRequest{Context: cc, Delta: &SyncDelta{BaseRevision: &ok, Keep: &neg}}},
		{"an id twice", SyncRequest{Context: cc, Entries: entry, Delta: &SyncDelta{BaseRevision: &ok, Keep: ptr(int64(4)), Append: []string{newID, newID}}}},
		{"an id of the kept prefix", SyncRequest{Context: cc, Entries: entry, Delta: &SyncDelta{BaseRevision: &ok, Keep: ptr(int64(3)), Append: []string{newID, branch[1]}}}},
		{"an id never synced", SyncRequest{Context: cc, Delta: &SyncDelta{BaseRevision: &ok, Keep: ptr(int64(4)), Append: []string{"nope"}}}},
		{"an empty id", SyncRequest{Context: cc, Delta: &SyncDelta{BaseRevision: &ok, Keep: ptr(int64(4)), Append: []string{""}}}},
	} {
		_, err := s.Sync(context.Background(), c.req, "")
		if !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("%s: %v, want invalid_argument", c.name, err)
		}
		if got := lastPosition(t, s); got != before {
			t.Fatalf("%s: the refused delta wrote events", c.name)
		}
	}
}

// TestSyncDeltaBranchMovedBeforeTheWriter: a delta checked at a snapshot
// whose branch another sync moves before the delta's turn at the writer is
// stale there (and writes nothing); the same delta sent twice at once
// records one change, the second answering as a retry.
func TestSyncDeltaBranchMovedBeforeTheWriter(t *testing.T) {
	var between func()
	s := mustOpenServiceWith(t, serviceOptions{syncToWriter: func() {
		if f := between; f != nil {
			between = nil
			f()
		}
	}})
	cc := mustAttach(t, s, "/home/u/.pi/agent/sessions/moved.jsonl")
	b := sessiongen.NewBuilder(11)
	for i := range 5 {
		b.UserText(fmt.Sprintf("turn %d", i))
	}
	sess := b.Session()
	rev := histSync(t, s, cc, sess).Revision
	id := b.UserText("one more")
	entry := b.Session().Entries[5:]

	between = func() { // another client cuts the branch back
		if _, err := histSyncErr(s, cc, nil, sess.Branch[:2], nil); err != nil {
			t.Errorf("the other sync: %v", err)
		}
	}
	before := lastPosition(t, s)
	_, err := deltaSync(s, cc, entry, rev, 5, []string{id})
	wantStaleBase(t, err, rev+1)
	if got := lastPosition(t, s); got != before+1 {
		t.Fatalf("position %d, want %d (the other sync's change only)", got, before+1)
	}

	rev++
	between = func() { // the same delta, sent again meanwhile, gets there first
		if _, err := deltaSync(s, cc, entry, rev, 2, []string{id}); err != nil {
			t.Errorf("the first copy: %v", err)
		}
	}
	res, err := deltaSync(s, cc, entry, rev, 2, []string{id})
	if err != nil || res.Revision != rev+1 || res.Stored != 0 || res.Unchanged != 1 {
		t.Fatalf("the second copy: %+v, %v", res, err)
	}
	wantBranch(t, s, cc, append(slices.Clone(sess.Branch[:2]), id))
}
