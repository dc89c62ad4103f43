package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/memory"
)

// TestRefusedAppendsAuditNoBody: with the read audit on, appends of 4 MB
// to a full note are refused with 413 and each adds an audit event of
// well under 1 KB to GET /v1/events: the path, and the text as its size
// and digest.
func TestRefusedAppendsAuditNoBody(t *testing.T) {
	ts, _ := startServer(t, serverOptions{open: memory.OpenOptions{AuditCalls: true}})
	var res attachResponse
	ts.mustJSON(t, "POST", "/v1/sessions/attach", `{"session_key":"audit-body","budget":{"notes_max_file_bytes":10}}`, &res)
	cc := memory.CallContext{TaskID: res.TaskID, Agent: res.Agent}
	if st, b := ts.tool(t, "notes_write_file", cc, `{"path":"full.md","text":"0123456789"}`); st != http.StatusOK {
		t.Fatalf("write: %d %s", st, b)
	}
	const appends = 3
	text := strings.Repeat("x", 4_000_000)
	for range appends {
		st, h, b := ts.send(t, ts.request(t, "POST", "/v1/tools/notes_append_to_file", toolBody(t, cc, fmt.Sprintf(`{"path":"full.md","text":%q}`, text))))
		checkError(t, "4 MB append to a full note", st, h, b, http.StatusRequestEntityTooLarge, "too_large")
	}
	ts.svc.StopAudit() // flush the audit

	var page struct {
		Events []events.Event `json:"events"`
	}
	ts.mustJSON(t, "GET", "/v1/events?limit=100", "", &page)
	n := 0
	for _, ev := range page.Events {
		var batch events.ToolCalled
		if ev.Type != events.TypeToolCalled {
			continue
		}
		if err := json.Unmarshal(ev.Data, &batch); err != nil {
			t.Fatal(err)
		}
		if len(ev.Data) >= 1024*len(batch.Calls) {
			t.Errorf("audit of %d calls in %d bytes: %.300s", len(batch.Calls), len(ev.Data), ev.Data)
		}
		for _, rec := range batch.Calls {
			if rec.Tool != "notes_append_to_file" {
				continue
			}
			n++
			if rec.Outcome != "too_large" || rec.ElidedArguments["text"].Bytes != 4_000_000 {
				t.Errorf("audit of a refused 4 MB append: %+v", rec)
			}
		}
	}
	if n != appends {
		t.Errorf("%d audit events of the appends, want %d", n, appends)
	}
}
