package memory

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// TestHostileSyncsAreRefusedWithoutTheWriter: syncs of long branches that
// fail a check only their last id or entry reaches (of the request alone,
// or against what is stored) are refused before they queue for the
// writer, so that they cannot hold up the writes of other tasks. The
// writer is held by another transaction while they run: a refusal that
// needed it could not come, and the syncToWriter hook, which counts the
// syncs that go to it, must not run for them. A note append of another task waits
// for the writer meanwhile and succeeds once it is let go; a valid sync
// then goes to the writer (the hook is live) and makes the branch's
// first change since the setup (no refused sync changed it).
func TestHostileSyncsAreRefusedWithoutTheWriter(t *testing.T) {
	ctx := context.Background()
	toWriter := make(chan struct{}, 16)
	s := mustOpenServiceWith(t, serviceOptions{syncToWriter: func() { toWriter <- struct{}{} }})
	victim := mustAttach(t, s, "/test/victim.jsonl")
	appender := mustAttach(t, s, "/test/appender.jsonl")
	gen := sessiongen.NewBuilder(7)
	for i := range 1000 {
		gen.UserText(fmt.Sprintf("turn %d", i))
	}
	sess := gen.Session()
	if res := histSync(t, s, victim, sess); res.Revision != 1 {
		t.Fatalf("setup sync: revision %d", res.Revision)
	}
	if len(toWriter) != 1 {
		t.Fatalf("the setup sync went through syncToWriter %d times, want once", len(toWriter))
	}
	<-toWriter
	reversed := slices.Clone(sess.Branch)
	slices.Reverse(reversed) // shares no prefix with the stored branch: every id is checked
	var changed map[string]any
	if err := json.Unmarshal(sess.Entries[999], &changed); err != nil {
		t.Fatal(err)
	}
	changed["timestamp"] = "2027-01-01T00:00:00.000Z"
	changedRaw, err := json.Marshal(changed)
	if err != nil {
		t.Fatal(err)
	}
	stale := int64(0)

	held, release := make(chan struct{}), make(chan struct{})
	holder := make(chan error, 1)
	go func() {
		holder <- s.store.Update(ctx, "", func(*eventlog.Tx) error {
			close(held)
			<-release
			return nil
		})
	}()
	<-held
	released := false
	releaseWriter := func() {
		if !released {
			released = true
			close(release)
		}
	}
	var syncs sync.WaitGroup
	t.Cleanup(func() { // before the store is closed (cleanups run last first)
		releaseWriter()
		syncs.Wait()
	})
	appended := make(chan error, 1)
	go func() {
		_, err := s.CallTool(ctx, "notes_append_to_file", appender, json.RawMessage(`{"path":"log.md","text":"- a line\n"}`), "")
		appended <- err
	}()

	cases := []struct {
		name     string
		entries  []json.RawMessage
		branch   []string
		revision *int64
		want     error
		message  string
	}{
		{"an id never synced at the end", nil, slices.Concat(reversed, []string{"never-synced"}),
			nil, ErrInvalidArgument, `branch[1000] names entry "never-synced", which was never synced`},
		{"a duplicate id at the end", nil, slices.Concat(reversed, reversed[:1]),
			nil, ErrInvalidArgument, fmt.Sprintf("branch lists entry %q twice (branch[1000])", reversed[0])},
		{"an id too long at the end", nil, slices.Concat(reversed, []string{strings.Repeat("x", 257)}),
			nil, ErrInvalidArgument, "branch[1000] is not an entry id"},
		{"a stored entry re-sent changed", []json.RawMessage{changedRaw}, reversed,
			nil, ErrConflict, "already synced with different content"},
		{"a stale expected_revision", nil, reversed,
			&stale, ErrConflict, "expected_revision is 0 but the branch is at revision 1"},
	}
	type outcome struct {
		i   int
		err error
	}
	outcomes := make(chan outcome, len(cases))
	for i, c := range cases {
		syncs.Go(func() {
			_, err := histSyncErr(s, victim, c.entries, c.branch, c.revision)
			outcomes <- outcome{i, err}
		})
	}
	for range cases {
		select {
		case o := <-outcomes:
			c := cases[o.i]
			histWantErr(t, o.err, c.want)
			if !strings.Contains(o.err.Error(), c.message) {
				t.Errorf("%s: error %q, want it to say %q", c.name, o.err, c.message)
			}
		case <-toWriter:
			t.Fatal("a sync that is refused went to the writer")
		}
	}

	releaseWriter()
	if err := <-holder; err != nil {
		t.Fatalf("the transaction holding the writer: %v", err)
	}
	if err := <-appended; err != nil {
		t.Fatalf("append of another task: %v", err)
	}
	res, err := histSyncErr(s, victim, nil, sess.Branch[:999], nil)
	if err != nil || res.Revision != 2 {
		t.Fatalf("valid sync after the refused ones: %+v, %v; want revision 2", res, err)
	}
	select {
	case <-toWriter:
	default:
		t.Fatal("a valid sync did not go through syncToWriter")
	}
}

// TestSyncRechecksEntriesStoredMeanwhile: an entry stored by another sync
// between a sync's snapshot checks and its turn at the writer is checked
// again against what was stored: the same content is unchanged, other
// content a conflict that stores nothing of the sync.
func TestSyncRechecksEntriesStoredMeanwhile(t *testing.T) {
	gen := sessiongen.NewBuilder(11)
	gen.UserText("first")
	gen.UserText("second")
	sess := gen.Session()
	var other map[string]any
	if err := json.Unmarshal(sess.Entries[1], &other); err != nil {
		t.Fatal(err)
	}
	other["timestamp"] = "2027-01-01T00:00:00.000Z"
	otherRaw, err := json.Marshal(other)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		meanwhile json.RawMessage // what the other sync stores as entry 1
		want      error
	}{
		{"same content", sess.Entries[1], nil},
		{"other content", otherRaw, ErrConflict},
	} {
		t.Run(c.name, func(t *testing.T) {
			var s *Service
			var cc CallContext
			calls := 0
			s = mustOpenServiceWith(t, serviceOptions{syncToWriter: func() {
				if calls++; calls == 1 { // the first sync has checked: another stores entry 1
					if _, err := histSyncErr(s, cc, []json.RawMessage{c.meanwhile}, nil, nil); err != nil {
						t.Errorf("the other sync: %v", err)
					}
				}
			}})
			cc = mustAttach(t, s, "/test/meanwhile.jsonl")
			res, err := histSyncErr(s, cc, sess.Entries, sess.Branch, nil)
			if c.want != nil {
				histWantErr(t, err, c.want)
				if !strings.Contains(err.Error(), "already synced with different content") {
					t.Errorf("error %q", err)
				}
				if stored, err := projections.NewReader(s.store.Reader()).StoredEntries(context.Background(), cc.TaskID, cc.Agent, sess.Branch); err != nil || len(stored) != 1 {
					t.Errorf("stored %v, %v; want entry 1 alone", stored, err)
				}
				return
			}
			if err != nil || res.Stored != 1 || res.Unchanged != 1 || res.Revision != 1 {
				t.Fatalf("sync: %+v, %v; want 1 stored, 1 unchanged, revision 1", res, err)
			}
			if calls != 3 { // the first sync, the other, the first again
				t.Errorf("%d syncs went to the writer, want 3", calls)
			}
		})
	}
}
