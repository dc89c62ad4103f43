package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
)

// TestForgetOverHTTP: POST /v1/tasks/{task_id}/forget, with the token and
// a JSON body, erases the task while its agent goes on calling tools, the
// audit on: the answer says what was erased, nothing of the task is read
// or recorded after it (a call's audit record queued before it included),
// the log keeps only tombstones and the erasure of the task, the other
// task is untouched, and the projections equal a rebuild of the log. A
// second erasure, an unknown task and a bad id are refused.
func TestForgetOverHTTP(t *testing.T) {
	ts, _ := startServer(t, serverOptions{open: memory.OpenOptions{AuditCalls: true}})
	const secret = "FORGET-ME-7c2d9e"
	a := ts.attach(t, "/sessions/forget-a.jsonl")
	b := ts.attach(t, "/sessions/forget-b.jsonl")
	for _, cc := range []memory.CallContext{a, b} {
		if st, body := ts.tool(t, "notes_write_file", cc, fmt.Sprintf(`{"path":"plan.md","text":"%s of %s"}`, secret, cc.TaskID)); st != 200 {
			t.Fatalf("write: %d %s", st, body)
		}
	}
	bBefore := taskEvents(t, ts, b.TaskID)

	// a's agent reads and searches for the secret while it is erased.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var refused atomic.Int64
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				cc := a
				cc.CallID = fmt.Sprintf("call-%d-%d", i, n)
				tool, args := "notes_read_file", `{"path":"plan.md"}`
				if n%2 == 1 {
					tool, args = "history_search_contents", fmt.Sprintf(`{"query":%q}`, secret)
				}
				st, body := ts.tool(t, tool, cc, args)
				if st != 200 {
					refused.Add(1)
					if bytes.Contains(body, []byte(secret)) {
						t.Errorf("a refusal holds the secret: %s", body)
					}
				}
			}
		}()
	}
	var res memory.Erasure
	ts.mustJSON(t, "POST", "/v1/tasks/"+a.TaskID+"/forget", `{}`, &res)
	for refused.Load() < 20 { // calls after the erasure, refused
	}
	close(stop)
	wg.Wait()
	if res.TaskID != a.TaskID || res.Events == 0 || res.Rows["notes"] != 1 || res.Rows["tasks"] != 1 ||
		len(res.Agents) != 1 || res.Agents[0] != "/root" || res.Scrub.Engine == "" {
		t.Errorf("the answer: %+v", res)
	}
	// The audit records waiting at the erasure are written or dropped.
	ts.svc.StopAudit()

	for _, ev := range taskEvents(t, ts, a.TaskID) {
		switch {
		case ev.Position == res.Position && ev.Type == events.TypeTaskErased:
		case ev.Position < res.Position && ev.Type == events.TypeEventErased && string(ev.Data) == string(events.Tombstone(res.Position)):
		default:
			t.Errorf("an event of the erased task: %+v", ev)
		}
		if bytes.Contains(ev.Data, []byte(secret)) {
			t.Errorf("the log holds the secret: %+v", ev)
		}
	}
	after := taskEvents(t, ts, b.TaskID)
	for i, ev := range bBefore { // later ones are the audit's
		if i >= len(after) || fmt.Sprint(after[i]) != fmt.Sprint(ev) {
			t.Errorf("task b's event %+v changed", ev)
		}
	}
	if st, body := ts.tool(t, "notes_read_file", b, `{"path":"plan.md"}`); st != 200 || !bytes.Contains(body, []byte(secret)) {
		t.Errorf("task b's note: %d %s", st, body)
	}
	if l := ts.getTasks(t, ""); len(l.Tasks) != 1 || l.Tasks[0].TaskID != b.TaskID {
		t.Errorf("tasks after the erasure: %+v", l)
	}
	scratch, cleanup, err := forensics.Scratch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	diffs, violations, err := forensics.Verify(context.Background(), ts.svc, scratch, 3)
	if err != nil || len(diffs) != 0 || len(violations) != 0 {
		t.Errorf("verify: %v %+v %+v", err, diffs, violations)
	}
	rep, err := forensics.VerifyErased(context.Background(), ts.svc, a.TaskID, []string{secret + " of " + a.TaskID})
	if err != nil || !rep.Clean {
		t.Errorf("verify --erased: %v %+v", err, rep)
	}

	for _, tc := range []struct {
		path, body string
		status     int
		message    string
	}{
		{"/v1/tasks/" + a.TaskID + "/forget", `{}`, 404, fmt.Sprintf("task %s was erased already, at position %d", a.TaskID, res.Position)},
		{"/v1/tasks/01NOSUCHTASK/forget", `{}`, 404, "no task 01NOSUCHTASK"},
		{"/v1/tasks/" + b.TaskID + "/forget", `{"vacuum":"yes"}`, 400, "vacuum"},
		{"/v1/tasks/" + b.TaskID + "/forget", `{"vacum":true}`, 400, "vacum"},
		{"/v1/tasks/" + strings.Repeat("T", 300) + "/forget", `{}`, 400, "task_id must be a task id"},
	} {
		st, hdr, body := ts.send(t, ts.request(t, "POST", tc.path, tc.body))
		env := checkError(t, tc.path+" "+tc.body, st, hdr, body, tc.status, map[int]string{400: memory.CodeInvalidArgument, 404: memory.CodeNotFound}[tc.status])
		if !strings.Contains(env.Error.Message, tc.message) {
			t.Errorf("%s %s: %q, want %q in it", tc.path, tc.body, env.Error.Message, tc.message)
		}
	}
	// No body, or not JSON: refused before anything is erased.
	req := ts.request(t, "POST", "/v1/tasks/"+b.TaskID+"/forget", "")
	if st, _, body := ts.send(t, req); st != http.StatusUnsupportedMediaType {
		t.Errorf("no body: %d %s", st, body)
	}
	if l := ts.getTasks(t, ""); len(l.Tasks) != 1 {
		t.Errorf("a refused erasure erased: %+v", l)
	}
}

// taskEvents returns every event of a task, through GET /v1/events.
func taskEvents(t *testing.T, ts *testServer, taskID string) []events.Event {
	t.Helper()
	var page struct {
		Events []events.Event `json:"events"`
	}
	ts.mustJSON(t, "GET", "/v1/events?limit=5000&task_id="+taskID, "", &page)
	return page.Events
}

// TestForgetDropsHostCalls: after an erasure (with vacuum, on SQLite) the
// host call bindings of the task's agents are gone, another task's kept;
// the answer holds none of the task's content; the service goes on
// reading and writing the rebuilt file. (internal/memory checks the
// caches.)
func TestForgetDropsHostCalls(t *testing.T) {
	ts, _ := startServer(t, serverOptions{dbPath: sqlitePath(t)})
	a := ts.attach(t, "/sessions/keeps-a.jsonl")
	b := ts.attach(t, "/sessions/keeps-b.jsonl")
	for _, cc := range []memory.CallContext{a, b} {
		if st, body := ts.tool(t, "notes_write_file", cc, `{"path":"n.md","text":"a note"}`); st != 200 {
			t.Fatalf("write: %d %s", st, body)
		}
		for range 2 { // the second read is the cache's
			if st, body := ts.tool(t, "notes_read_file", cc, `{"path":"n.md"}`); st != 200 {
				t.Fatalf("read: %d %s", st, body)
			}
		}
		if err := ts.svc.BindHostCall("host-"+cc.TaskID, cc); err != nil {
			t.Fatal(err)
		}
	}
	var res memory.Erasure
	ts.mustJSON(t, "POST", "/v1/tasks/"+a.TaskID+"/forget", `{"vacuum":true}`, &res)
	if _, err := ts.svc.HostCall("host-" + a.TaskID); err == nil {
		t.Error("the erased task's host call binding is kept")
	}
	if _, err := ts.svc.HostCall("host-" + b.TaskID); err != nil {
		t.Errorf("another task's host call binding: %v", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.Encode(res)
	if bytes.Contains(buf.Bytes(), []byte("a note")) {
		t.Errorf("the answer holds the note: %s", buf.Bytes())
	}
	if !res.Scrub.WALTruncated || res.Scrub.Engine != eventlog.SQLite || len(res.Scrub.Vacuumed) != 1 || res.Scrub.VacuumReason != "asked for" {
		t.Errorf("scrub: %+v", res.Scrub)
	}
	// The file rebuilt under it, the service goes on: reads (the note
	// cache's stamp moved), writes.
	for i := range 3 {
		if st, body := ts.tool(t, "notes_read_file", b, `{"path":"n.md"}`); st != 200 || !bytes.Contains(body, []byte("a note")) {
			t.Fatalf("read after the vacuum: %d %s", st, body)
		}
		if st, body := ts.tool(t, "notes_append_to_file", b, fmt.Sprintf(`{"path":"n.md","text":" %d"}`, i)); st != 200 {
			t.Fatalf("append after the vacuum: %d %s", st, body)
		}
	}
	if st, body := ts.tool(t, "notes_read_file", b, `{"path":"n.md"}`); st != 200 || !bytes.Contains(body, []byte("a note 0 1 2")) {
		t.Errorf("the note after the vacuum: %d %s", st, body)
	}
}
