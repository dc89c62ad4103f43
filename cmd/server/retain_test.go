package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
	"github.com/memoryd/memoryd/internal/retention"
)

// testClock is a clock a test sets: the service's recorded_at and the
// time retention weighs. No test of retention reads the wall clock.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// retainT0 is when the tests' tasks begin.
var retainT0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// day is retainT0 and n days.
func day(n int) time.Time { return retainT0.Add(time.Duration(n) * retention.Day) }

// retainTask attaches a new task whose root writes a note, at the clock's
// time, and returns its id.
func retainTask(t *testing.T, svc *memory.Service, key string) string {
	t.Helper()
	ctx := context.Background()
	root, err := svc.Attach(ctx, memory.AttachRequest{SessionKey: "retain-" + key, SessionID: "id-" + key}, "")
	if err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]string{"path": "plan.md", "text": "the plan of " + key})
	if _, err := svc.CallTool(ctx, "notes_write_file", memory.CallContext{TaskID: root.TaskID, Agent: root.Agent, CallID: "call-" + key}, args, ""); err != nil {
		t.Fatal(err)
	}
	return root.TaskID
}

// runAt runs the program with the clock's time as the service's, and
// returns its stdout, stderr and error.
func runAt(clock *testClock, args ...string) (string, string, error) {
	var stdout, stderr bytes.Buffer
	ctx := withTestHooks(context.Background(), testHooks{now: clock.now})
	err := run(ctx, args, func(string) string { return "" }, strings.NewReader(""), &stdout, &stderr)
	return stdout.String(), stderr.String(), err
}

// mustRunAt is runAt, which must succeed.
func mustRunAt(t *testing.T, clock *testClock, args ...string) (string, string) {
	t.Helper()
	out, errOut, err := runAt(clock, args...)
	if err != nil {
		t.Fatalf("memoryd %s: %v\n%s\n%s", strings.Join(args, " "), err, out, errOut)
	}
	return out, errOut
}

// retainTasks are the tasks of TestRetain, by what their policy makes of
// them at day 100 under a global 90d.
type retainTasks struct {
	old, shorter, forever, longer, recent, read string
}

// plantRetainTasks creates, on db, tasks whose last activity and policy
// differ: at day 100 under 90d only old (day 0) and shorter (its own 7d,
// last active on day 80) are due; forever and longer (365d) were last
// active on day 0 and are kept by their own policies, recent (day 80) and
// read (an audited read on day 85) by the global one.
func plantRetainTasks(t *testing.T, db string, clock *testClock) retainTasks {
	t.Helper()
	clock.set(retainT0)
	svc := memorytest.OpenAt(t, db, memory.OpenOptions{Now: clock.now, AuditCalls: true})
	var ts retainTasks
	ts.old = retainTask(t, svc, "old")
	ts.forever = retainTask(t, svc, "forever")
	ts.longer = retainTask(t, svc, "longer")
	ts.read = retainTask(t, svc, "read")
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}
	// The verb records a task's own policy, as the route does.
	mustRunAt(t, clock, "retain", ts.forever, "forever", "--db", db)
	mustRunAt(t, clock, "retain", ts.longer, "365d", "--db", db)
	if out, _ := mustRunAt(t, clock, "retain", ts.longer, "365d", "--db", db); !strings.Contains(out, `"changed": false`) {
		t.Errorf("the same policy again: %s", out)
	}

	clock.set(day(80))
	svc = memorytest.OpenAt(t, db, memory.OpenOptions{Now: clock.now, AuditCalls: true})
	ts.recent = retainTask(t, svc, "recent")
	ts.shorter = retainTask(t, svc, "shorter")
	if _, err := svc.SetTaskRetention(context.Background(), ts.shorter, "7D", ""); err != nil {
		t.Fatal(err)
	}
	if err := svc.Close(); err != nil { // flushes the audit of the writes, at day 80
		t.Fatal(err)
	}
	clock.set(day(85))
	svc = memorytest.OpenAt(t, db, memory.OpenOptions{Now: clock.now, AuditCalls: true})
	args, _ := json.Marshal(map[string]string{"path": "plan.md"})
	if _, err := svc.CallTool(context.Background(), "notes_read_file", memory.CallContext{TaskID: ts.read, Agent: "/root", CallID: "read-85"}, args, ""); err != nil {
		t.Fatal(err)
	}
	if err := svc.Close(); err != nil { // flushes the read's audit record, at day 85
		t.Fatal(err)
	}
	return ts
}

// TestRetain: under a global 90d at day 100, the dry run lists exactly the
// tasks due (an old task; a recent one whose own 7d is shorter) and
// erases nothing; --apply then erases exactly those, each through the
// erasure forget makes, its task.erased saying that retention made it;
// the tasks kept by a longer policy of their own, by forever, by recent
// activity or by an audited read are untouched, event for event; the log
// verifies and imports, and an import refuses a retention erasure whose
// last activity is not the task's.
func TestRetain(t *testing.T) {
	dir := t.TempDir()
	db := memorytest.NewDatabase(t)
	clock := &testClock{}
	ts := plantRetainTasks(t, db, clock)
	before := fxLines(t, writeExport(t, dir, "before.jsonl", db))

	clock.set(day(100))
	out, errOut := mustRunAt(t, clock, "retain", "--dry-run", "--retain", "90d", "--db", db)
	var plan memory.RetentionPlan
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Now != day(100).Format(events.TimeFormat) || plan.Policy != "90d" || plan.Tasks != 6 || len(plan.Due) != 2 {
		t.Fatalf("dry run: %s", out)
	}
	old, shorter := plan.Due[0], plan.Due[1]
	if old.TaskID != ts.old || old.Source != "global" || old.Retain != "90d" || old.LastActivity != retainT0.Format(events.TimeFormat) ||
		old.DueAt != day(90).Format(events.TimeFormat) {
		t.Errorf("dry run, the old task: %+v", old)
	}
	if shorter.TaskID != ts.shorter || shorter.Source != "task" || shorter.Retain != "7d" || shorter.DueAt != day(87).Format(events.TimeFormat) {
		t.Errorf("dry run, the task with a shorter policy: %+v", shorter)
	}
	if !strings.Contains(errOut, "would erase task "+ts.old) || !strings.Contains(errOut, "2 of 6 tasks due; nothing erased") {
		t.Errorf("dry run's stderr:\n%s", errOut)
	}
	if after := fxLines(t, writeExport(t, dir, "dry.jsonl", db)); !slices.Equal(after, before) {
		t.Fatal("the dry run changed the log")
	}
	// Without a global policy, only the task with a period of its own.
	out, _ = mustRunAt(t, clock, "retain", "--dry-run", "--db", db)
	if err := json.Unmarshal([]byte(out), &plan); err != nil || plan.Policy != "off" || len(plan.Due) != 1 || plan.Due[0].TaskID != ts.shorter {
		t.Errorf("dry run without --retain: %s", out)
	}

	out, errOut = mustRunAt(t, clock, "retain", "--apply", "--retain", "90d", "--db", db)
	var res memory.RetentionRun
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Erased) != 2 || res.Erased[0].TaskID != ts.old || res.Erased[1].TaskID != ts.shorter || len(res.Skipped)+len(res.Failed) != 0 {
		t.Fatalf("apply: %s", out)
	}
	for _, id := range []string{ts.old, ts.shorter} {
		if !strings.Contains(errOut, "retain: erased task "+id+" at position") {
			t.Errorf("apply's stderr does not say it erased %s:\n%s", id, errOut)
		}
	}

	// The log: two erasures more, the erased tasks' events tombstones, every
	// other task's events byte for byte as before.
	after := fxLines(t, writeExport(t, dir, "after.jsonl", db))
	if len(after) != len(before)+2 {
		t.Fatalf("%d events after, %d before", len(after), len(before))
	}
	erased := map[string]bool{ts.old: true, ts.shorter: true}
	for i, line := range after[:len(before)] {
		ev, _ := events.DecodeEnvelope([]byte(line))
		if erased[ev.TaskID()] != (ev.Type == events.TypeEventErased) {
			t.Errorf("position %d: %s", i+1, line)
		}
		if !erased[ev.TaskID()] && line != before[i] {
			t.Errorf("another task's event changed:\n%s\n%s", before[i], line)
		}
	}
	for i, want := range []memory.RetentionDue{old, shorter} {
		ev, err := events.DecodeEnvelope([]byte(after[len(before)+i]))
		if err != nil {
			t.Fatal(err)
		}
		p, err := events.Decode(ev)
		if err != nil {
			t.Fatal(err)
		}
		e := p.(*events.TaskErased)
		if ev.Type != events.TypeTaskErased || ev.Schema != 2 || e.TaskID != want.TaskID || e.Retention == nil ||
			*e.Retention != (events.ErasedByRetention{Retain: want.Retain, Source: want.Source, LastActivity: want.LastActivity}) {
			t.Errorf("the erasure of %s: %s", want.TaskID, after[len(before)+i])
		}
	}
	fxMust(t, "verify", "--db", db)
	if _, _, err := fxRun(t, nil, "verify", "--db", db, "--erased", ts.old, "--grep", "the plan of old"); err != nil {
		t.Errorf("verify --erased: %v", err)
	}
	// Nothing is due any more; an erased task's policy is not found.
	out, _ = mustRunAt(t, clock, "retain", "--dry-run", "--retain", "90d", "--db", db)
	if err := json.Unmarshal([]byte(out), &plan); err != nil || len(plan.Due) != 0 || plan.Tasks != 4 {
		t.Errorf("dry run after: %s", out)
	}
	if _, _, err := runAt(clock, "retain", ts.old, "30d", "--db", db); err == nil || fxExit(err) != 1 || !strings.Contains(err.Error(), "erased already") {
		t.Errorf("retain of an erased task: %v", err)
	}

	// The log imports and replays, and an import refuses a retention
	// erasure whose last activity is not its task's latest event.
	imported := memorytest.NewDatabase(t)
	fxMust(t, "import", "--db", imported, dir+"/after.jsonl")
	fxMust(t, "verify", "--db", imported)
	fxMust(t, "replay", dir+"/after.jsonl")
	last := after[len(before)]
	forged := strings.Replace(last, `"last_activity":"`+old.LastActivity+`"`, `"last_activity":"2024-01-01T00:00:00.000Z"`, 1)
	if forged == last {
		t.Fatalf("no last_activity in %s", last)
	}
	bad := append(append([]string{}, after[:len(before)]...), forged)
	badFile := dir + "/forged.jsonl"
	writeLines(t, badFile, bad)
	if _, _, err := fxRun(t, nil, "import", "--db", memorytest.NewDatabase(t), badFile); err == nil || !strings.Contains(err.Error(), "retention.last_activity") {
		t.Errorf("import of a forged retention erasure: %v", err)
	}
}

// writeLines writes lines, each ended by a newline, to path.
func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestRetainServe: a serving memoryd with --retain 90d erases at its start
// what is due by its clock and keeps the rest; a task's own policy set
// through the route is an event and its activity; the next pass, at a tick
// with the clock moved on, erases the task under its own policy; each
// erasure is in the server's log. The clock and the ticks are the test's:
// nothing waits on the wall clock.
func TestRetainServe(t *testing.T) {
	dir := t.TempDir()
	db := memorytest.NewDatabase(t)
	clock := &testClock{t: retainT0}
	svc := memorytest.OpenAt(t, db, memory.OpenOptions{Now: clock.now})
	old := retainTask(t, svc, "old")
	clock.set(day(50))
	kept := retainTask(t, svc, "kept")
	if err := svc.Close(); err != nil {
		t.Fatal(err)
	}

	clock.set(day(100))
	ticks := make(chan time.Time)
	passes := make(chan memory.RetentionRun, 4)
	ctx := withTestHooks(context.Background(), testHooks{now: clock.now, retainTicks: ticks,
		retainPass: func(run memory.RetentionRun, err error) {
			if err != nil {
				t.Errorf("a retention pass: %v", err)
			}
			passes <- run
		}})
	getenv := env(map[string]string{"HOME": dir})
	s := startRunIn(t, ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--retain", "90d"}, getenv)
	token, err := existingToken(getenv, db)
	if err != nil {
		t.Fatal(err)
	}
	first := <-passes
	if len(first.Erased) != 1 || first.Erased[0].TaskID != old || first.Erased[0].Source != "global" || first.Tasks != 2 {
		t.Fatalf("the pass at the start: %+v", first)
	}

	// The route: a policy of the task's own, a clear error for a bad one
	// and for an unknown or erased task, and the token required.
	var set memory.TaskRetention
	if code := s.call(t, token, http.MethodPut, "/v1/tasks/"+kept+"/retention", `{"retain":"30d"}`, &set); code != http.StatusOK ||
		!set.Changed || set.Retain != "30d" || set.Position == 0 {
		t.Fatalf("PUT retention: %d %+v", code, set)
	}
	for _, tc := range []struct {
		task, body string
		code       int
	}{
		{kept, `{"retain":"30 days"}`, http.StatusBadRequest},
		{kept, `{"retain":"30d","other":1}`, http.StatusBadRequest},
		{old, `{"retain":"30d"}`, http.StatusNotFound},
		{"no-such-task", `{"retain":"forever"}`, http.StatusNotFound},
	} {
		if code := s.call(t, token, http.MethodPut, "/v1/tasks/"+tc.task+"/retention", tc.body, nil); code != tc.code {
			t.Errorf("PUT %s %s: %d, want %d", tc.task, tc.body, code, tc.code)
		}
	}
	if code := s.call(t, "", http.MethodPut, "/v1/tasks/"+kept+"/retention", `{"retain":"1h"}`, nil); code != http.StatusUnauthorized {
		t.Errorf("PUT without the token: %d", code)
	}
	// Setting it was activity: nothing is due at day 100, and at day 131 the
	// task's own 30d is.
	var plan memory.RetentionPlan
	if code := s.call(t, token, http.MethodGet, "/v1/retention", "", &plan); code != http.StatusOK || len(plan.Due) != 0 || plan.Policy != "90d" {
		t.Errorf("GET /v1/retention at day 100: %d %+v", code, plan)
	}
	clock.set(day(131))
	if code := s.call(t, token, http.MethodGet, "/v1/retention", "", &plan); code != http.StatusOK || len(plan.Due) != 1 || plan.Due[0].Source != "task" {
		t.Errorf("GET /v1/retention at day 131: %d %+v", code, plan)
	}
	ticks <- day(131)
	second := <-passes
	if len(second.Erased) != 1 || second.Erased[0].TaskID != kept || second.Erased[0].Retain != "30d" || second.Erased[0].Source != "task" {
		t.Fatalf("the pass at day 131: %+v", second)
	}
	if err := s.stop(t); err != nil {
		t.Fatal(err)
	}
	logged := s.stderr.String()
	for _, id := range []string{old, kept} {
		if !strings.Contains(logged, `"msg":"retention: task erased","task_id":"`+id+`"`) {
			t.Errorf("the server's log does not say it erased %s:\n%s", id, logged)
		}
	}
	fxMust(t, "verify", "--db", db)
}
