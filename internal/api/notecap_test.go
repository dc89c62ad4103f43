package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestNoteCapOverHTTP: an attach cannot raise notes_max_file_bytes above
// its 1,000,000-byte ceiling (400 invalid_argument naming the field and
// the ceiling), a 3,000,000-byte write is 413, and a child with a lower
// cap writes into the root's note at the root's cap, after which the
// root's own appends still work.
func TestNoteCapOverHTTP(t *testing.T) {
	ts := newTestServer(t, nil)
	for _, raised := range []string{"1000001", "5000000", "9223372036854775807"} {
		body := fmt.Sprintf(`{"session_key":"raise-%s","budget":{"notes_max_file_bytes":%s}}`, raised, raised)
		st, h, b := ts.send(t, ts.request(t, "POST", "/v1/sessions/attach", body))
		env := checkError(t, "attach with cap "+raised, st, h, b, http.StatusBadRequest, "invalid_argument")
		if !strings.Contains(env.Error.Message, "budget.notes_max_file_bytes") || !strings.Contains(env.Error.Message, "1000000") {
			t.Errorf("cap %s: message %q does not name the field and the ceiling", raised, env.Error.Message)
		}
		if env.Error.Details["field"] != "budget.notes_max_file_bytes" || env.Error.Details["limit"] != float64(1_000_000) {
			t.Errorf("cap %s: details %v", raised, env.Error.Details)
		}
	}

	root := ts.attach(t, "cap-root")
	st, h, b := ts.send(t, ts.request(t, "POST", "/v1/tools/notes_write_file",
		toolBody(t, root, fmt.Sprintf(`{"path":"big.md","text":%q}`, strings.Repeat("x", 3_000_000)))))
	env := checkError(t, "3,000,000-byte write", st, h, b, http.StatusRequestEntityTooLarge, "too_large")
	if env.Error.Details["limit"] != float64(1_000_000) {
		t.Errorf("too_large details %v, want limit 1000000", env.Error.Details)
	}

	child := fmt.Sprintf(`{"session_key":"cap-child","task":{"task_id":%q,"agent_name":"child"},"budget":{"notes_max_file_bytes":%s}}`, root.TaskID, "%d")
	st, h, b = ts.send(t, ts.request(t, "POST", "/v1/sessions/attach", fmt.Sprintf(child, 3_000_000)))
	checkError(t, "child attach with cap 3000000", st, h, b, http.StatusBadRequest, "invalid_argument")
	var res attachResponse
	ts.mustJSON(t, "POST", "/v1/sessions/attach", fmt.Sprintf(child, 100), &res)
	cc := root
	cc.Agent = res.Agent
	if st, b := ts.tool(t, "notes_write_file", cc, fmt.Sprintf(`{"path":"/root/notes/fromchild.md","text":%q}`, strings.Repeat("c", 900_000))); st != http.StatusOK {
		t.Fatalf("child's write into the root's note: status %d, body %.300s", st, b)
	}
	if st, b := ts.tool(t, "notes_append_to_file", root, fmt.Sprintf(`{"path":"fromchild.md","text":%q}`, strings.Repeat("r", 100_000))); st != http.StatusOK {
		t.Fatalf("root's append to its own note: status %d, body %.300s", st, b)
	}
	st, h, b = ts.send(t, ts.request(t, "POST", "/v1/tools/notes_append_to_file", toolBody(t, root, `{"path":"fromchild.md","text":"r"}`)))
	env = checkError(t, "root's append past its cap", st, h, b, http.StatusRequestEntityTooLarge, "too_large")
	if d := env.Error.Details; d["bytes"] != float64(1_000_001) || d["limit"] != float64(1_000_000) || d["remaining"] != float64(0) {
		t.Errorf("too_large details %v", d)
	}
}
