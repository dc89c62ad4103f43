package api

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestSyncDeltaOverHTTP: the delta form of POST /v1/history/sync as a
// client sends it: a delta from the revision the last sync returned
// applies; a stale one is 409 conflict with details.reason "stale_base"
// and the branch's revision; the whole branch then recovers; an unknown
// field of the delta is refused as in any body.
func TestSyncDeltaOverHTTP(t *testing.T) {
	ts, cc := hostileEnv(t) // e1 synced whole: revision 1
	ctx, _ := json.Marshal(cc)
	entry := func(id, parent string) string {
		return `{"type":"message","id":"` + id + `","parentId":"` + parent + `","timestamp":"2026-12-02T10:00:01.000Z","message":{"role":"user","content":"turn ` + id + `","timestamp":2}}`
	}
	var res struct {
		Revision  int64  `json:"revision"`
		Stored    int    `json:"stored"`
		Unchanged int    `json:"unchanged"`
		WindowID  string `json:"window_id"`
	}
	ts.mustJSON(t, "POST", "/v1/history/sync", `{"context":`+string(ctx)+`,"entries":[`+entry("e2", "e1")+`],"delta":{"base_revision":1,"keep":1,"append":["e2"]}}`, &res)
	if res.Revision != 2 || res.Stored != 1 || res.WindowID != "w1" {
		t.Fatalf("delta: %+v", res)
	}
	before := ts.position(t)
	st, h, b := ts.send(t, ts.request(t, "POST", "/v1/history/sync", `{"context":`+string(ctx)+`,"entries":[`+entry("e3", "e2")+`],"delta":{"base_revision":1,"keep":1,"append":["e3"]}}`))
	env := checkError(t, "a stale delta", st, h, b, http.StatusConflict, "conflict")
	if env.Error.Details["reason"] != "stale_base" || env.Error.Details["revision"] != float64(2) || env.Error.Details["length"] != float64(2) {
		t.Fatalf("stale delta details %v, want reason stale_base, revision 2, length 2", env.Error.Details)
	}
	if ts.position(t) != before {
		t.Fatal("the stale delta wrote events")
	}
	ts.mustJSON(t, "POST", "/v1/history/sync", `{"context":`+string(ctx)+`,"entries":[`+entry("e3", "e2")+`],"branch":["e1","e2","e3"]}`, &res)
	if res.Revision != 3 || res.Stored != 1 {
		t.Fatalf("the whole branch after the conflict: %+v", res)
	}
	st, h, b = ts.send(t, ts.request(t, "POST", "/v1/history/sync", `{"context":`+string(ctx)+`,"entries":[],"delta":{"base_revision":3,"keep":3,"append":[],"length":3}}`))
	checkError(t, "an unknown field of the delta", st, h, b, http.StatusBadRequest, "invalid_argument")
}
