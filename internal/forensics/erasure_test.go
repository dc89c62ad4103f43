package forensics_test

import (
	"bytes"
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
	"github.com/memoryd/memoryd/internal/projections"
)

// exportAll is svc's whole log as JSON lines.
func exportAll(t *testing.T, svc *memory.Service) []string {
	t.Helper()
	var buf bytes.Buffer
	if err := forensics.Export(context.Background(), svc, "", 0, &buf, nil); err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

// replayLines replays a log into a new database of the tests' engine with
// its audited reads checked, and returns it with the check.
func replayLines(t *testing.T, lines []string) (*memory.Service, forensics.ReadCheck) {
	t.Helper()
	ctx := context.Background()
	log := strings.Join(lines, "\n") + "\n"
	audit, _, err := forensics.CollectAudit(forensics.NewLogReader(strings.NewReader(log)).Next)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := forensics.Open(ctx, memorytest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	check, err := forensics.Replay(ctx, svc, forensics.NewLogReader(strings.NewReader(log)).Next, forensics.ReplayOptions{Audit: audit})
	if err != nil {
		t.Fatal(err)
	}
	return svc, check
}

// taskDigests fingerprints each task's projection rows.
func taskDigests(t *testing.T, svc *memory.Service, tasks []string) map[string][]projections.TableDigest {
	t.Helper()
	out := map[string][]projections.TableDigest{}
	for _, task := range tasks {
		d, err := projections.TaskDigest(context.Background(), svc.Store(), task)
		if err != nil {
			t.Fatal(err)
		}
		out[task] = d
	}
	return out
}

// TestErasureKeepsOtherTasks: every scenario run into one memory, then two
// of its tasks erased. The other tasks' projection rows are the same, live
// and in a replay of the log, as before the erasures (their digests
// unchanged); their events are byte for byte the same lines; every audited
// read of theirs re-executes to the same result at its position in the
// erased log; the replay's projections equal the live ones; verify is
// clean; and the erased tasks' rows are gone.
func TestErasureKeepsOtherTasks(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	for _, sc := range scenarios {
		sc.run(h)
	}
	h.svc.StopAudit() // every audit record written
	list, err := h.svc.Tasks(ctx, 0, memory.TasksMaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []string
	for _, task := range list.Tasks {
		tasks = append(tasks, task.TaskID)
	}
	sort.Strings(tasks)
	if len(tasks) < 4 {
		t.Fatalf("%d tasks", len(tasks))
	}
	before := exportAll(t, h.svc)
	liveBefore := taskDigests(t, h.svc, tasks)
	replayedBefore, checkBefore := replayLines(t, before)
	if len(checkBefore.Mismatches) != 0 || checkBefore.Checked == 0 {
		t.Fatalf("the log before: %+v", checkBefore)
	}
	if got := taskDigests(t, replayedBefore, tasks); !reflect.DeepEqual(got, liveBefore) {
		t.Fatal("a replay's task digests differ from the live ones before any erasure")
	}

	erased := map[string]bool{tasks[0]: true, tasks[2]: true}
	for _, task := range []string{tasks[2], tasks[0]} {
		if _, err := h.svc.EraseTask(ctx, task, "", memory.EraseOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	after := exportAll(t, h.svc)
	if len(after) != len(before)+2 {
		t.Fatalf("%d events after, %d before", len(after), len(before))
	}
	for i, line := range before {
		ev, err := events.DecodeEnvelope([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if !erased[ev.TaskID()] && after[i] != line {
			t.Errorf("another task's event changed:\n%s\n%s", line, after[i])
		}
	}
	replayed, check := replayLines(t, after)
	if len(check.Mismatches) != 0 || len(check.Unverifiable) != 0 {
		t.Errorf("the erased log's audited reads: %+v", check)
	}
	if check.Checked == 0 || check.Checked >= checkBefore.Checked {
		t.Errorf("%d reads checked after, %d before: the erased tasks' are gone, the others' checked", check.Checked, checkBefore.Checked)
	}
	live := taskDigests(t, h.svc, tasks)
	again := taskDigests(t, replayed, tasks)
	for _, task := range tasks {
		if erased[task] {
			for _, d := range live[task] {
				if d.Rows != 0 {
					t.Errorf("erased task %s keeps %d rows in %s", task, d.Rows, d.Table)
				}
			}
			continue
		}
		if !reflect.DeepEqual(live[task], liveBefore[task]) {
			t.Errorf("task %s: its live projection rows changed", task)
		}
		if !reflect.DeepEqual(again[task], liveBefore[task]) {
			t.Errorf("task %s: its replayed projection rows changed", task)
		}
	}
	sumLive, err := forensics.Summarize(ctx, h.svc)
	if err != nil {
		t.Fatal(err)
	}
	sumReplay, err := forensics.Summarize(ctx, replayed)
	if err != nil {
		t.Fatal(err)
	}
	if sumLive.Digest != sumReplay.Digest || sumLive.Events != int64(len(after)) || sumLive.Tasks != int64(len(tasks)-2) {
		t.Errorf("live %+v, replayed %+v", sumLive, sumReplay)
	}
	scratch, cleanup, err := forensics.Scratch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	diffs, violations, err := forensics.Verify(ctx, h.svc, scratch, 3)
	if err != nil || len(diffs) != 0 || len(violations) != 0 {
		t.Errorf("verify: %v %+v %+v", err, diffs, violations)
	}
	for task := range erased {
		rep, err := forensics.VerifyErased(ctx, h.svc, task, nil)
		if err != nil || !rep.Clean || rep.Events.Other != 0 || len(rep.Erasures) != 1 {
			t.Errorf("verify --erased %s: %v %+v", task, err, rep)
		}
	}
}

// TestVerifyErasedFindsMentionsInPackedEntries: a history entry of another
// task that names an erased task is a mention, though its payload is stored
// compressed (events.packed), where SQL cannot see it.
func TestVerifyErasedFindsMentionsInPackedEntries(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	gone := h.attach("/sessions/gone.jsonl", nil, nil)
	h.sync(gone, func() *piSession { s := newPiSession("g"); s.user("to be forgotten"); return s }())
	if _, err := h.svc.EraseTask(ctx, gone.TaskID, "", memory.EraseOptions{}); err != nil {
		t.Fatal(err)
	}
	if rep, err := forensics.VerifyErased(ctx, h.svc, gone.TaskID, nil); err != nil || !rep.Clean {
		t.Fatalf("verify --erased before any mention: %v %+v", err, rep)
	}
	kept := h.attach("/sessions/kept.jsonl", nil, nil)
	s := newPiSession("k")
	s.user("the task " + gone.TaskID + " was erased; " + strings.Repeat("a line that compresses well. ", 100))
	h.sync(kept, s)
	var packed int64
	if err := h.svc.Store().Reader().QueryRowContext(ctx,
		"SELECT count(*) FROM events WHERE task_id = $1 AND type = 'history.entry_recorded' AND length(packed) > 0", kept.TaskID).Scan(&packed); err != nil {
		t.Fatal(err)
	}
	if packed != 1 {
		t.Fatalf("%d packed entries: the test needs the mention compressed", packed)
	}
	rep, err := forensics.VerifyErased(ctx, h.svc, gone.TaskID, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Clean || len(rep.Mentions) != 1 {
		t.Fatalf("verify --erased missed the mention in a packed entry: %+v", rep)
	}
}

// TestVerifyErasedGrepLooksInsideCompressedValues: on a plain database a
// text the erased task held, now in another task's history, is stored
// compressed (its entry's event packed, its sealed chunk's text), where
// no SQL search sees it; verify --erased opens them.
func TestVerifyErasedGrepLooksInsideCompressedValues(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	label := " (compressed)"
	if h.svc.Store().Sealer() != nil { // at rest, the same values are sealed
		label = " (sealed)"
	}
	gone := h.attach("/sessions/gone.jsonl", nil, nil)
	h.sync(gone, func() *piSession { s := newPiSession("g"); s.user("QXZ-SECRET-881"); return s }())
	if _, err := h.svc.EraseTask(ctx, gone.TaskID, "", memory.EraseOptions{}); err != nil {
		t.Fatal(err)
	}
	kept := h.attach("/sessions/kept.jsonl", nil, nil)
	s := newPiSession("k")
	s.user("QXZ-SECRET-881 again; " + strings.Repeat("a line that compresses well. ", 100))
	s.user(strings.Repeat("filler that seals the chunk. ", 3000)) // past the 64 KiB a chunk seals at
	h.sync(kept, s)
	rep, err := forensics.VerifyErased(ctx, h.svc, gone.TaskID, []string{"QXZ-SECRET-881"})
	if err != nil {
		t.Fatal(err)
	}
	rows := rep.Grep[0].Rows
	if rep.Clean || rows["events"+label] != 1 || rows["history_chunks"+label] != 1 {
		t.Fatalf("verify --erased did not find the text inside the compressed entry and chunk: rows %v, problems %v", rows, rep.Problems)
	}
}
