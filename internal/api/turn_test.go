package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/memory"
)

// turnEntry is a Pi message entry of the given role.
func turnEntry(id, role string) map[string]any {
	return map[string]any{"type": "message", "id": id, "parentId": nil, "timestamp": "2026-12-02T10:00:00.000Z",
		"message": map[string]any{"role": role, "content": "text of " + id, "timestamp": 1}}
}

// turnSyncBody is a sync body without the context: entries and the delta
// from base (the branch at revision base) to base plus ids.
func turnSyncBody(base int64, keep int, ids ...string) map[string]any {
	entries := make([]any, 0, len(ids))
	for _, id := range ids {
		role := "assistant"
		if strings.HasPrefix(id, "tr") {
			role = "toolResult"
		}
		entries = append(entries, turnEntry(id, role))
	}
	return map[string]any{"entries": entries, "delta": map[string]any{"base_revision": base, "keep": keep, "append": ids}}
}

// turnEvents returns the task's events after position as type and data,
// the task id replaced, so that two databases' logs compare.
func turnEvents(tb testing.TB, a lcAgent, after int64) []string {
	tb.Helper()
	res := a.s.okJSON(tb, "GET", fmt.Sprintf("/v1/events?task_id=%s&after=%d&limit=500", a.cc.TaskID, after), nil)
	var out []string
	for _, e := range res["events"].([]any) {
		ev := e.(map[string]any)
		data, err := json.Marshal(ev["data"])
		if err != nil {
			tb.Fatal(err)
		}
		out = append(out, ev["type"].(string)+" "+strings.ReplaceAll(string(data), a.cc.TaskID, "TASK"))
	}
	return out
}

// turnAgents attaches one agent on each of two new databases (of the
// engine under test).
func turnAgents(t *testing.T) (old, combined lcAgent) {
	old = lcOpen(t, "", memory.OpenOptions{}).attach(t, "turn-old")
	combined = lcOpen(t, "", memory.OpenOptions{}).attach(t, "turn-new")
	return old, combined
}

// TestTurnSameEventsAsSeparateCalls drives two agents through the same
// model turns: one with the requests the Pi extension made before
// POST /v1/lifecycle/turn (a sync before the model call, usage, admit, a
// sync at the tool result), which old extensions still make, the other
// with turn requests. Both logs hold the same events in the same order,
// and the answers agree.
func TestTurnSameEventsAsSeparateCalls(t *testing.T) {
	old, combined := turnAgents(t)
	p0, q0 := old.s.position(t), combined.s.position(t)
	// The user's message, whole, on both.
	first := map[string]any{"entries": []any{turnEntry("u1", "user")}, "branch": []string{"u1"}}
	old.mustRun(t, lcStep{path: "/v1/history/sync", body: first})
	combined.mustRun(t, lcStep{path: "/v1/history/sync", body: first})

	usage := func(used int64) map[string]any { return map[string]any{"tokens_used": used, "context_window": 100000} }
	admit := func(k int) map[string]any {
		return map[string]any{"call_id": fmt.Sprintf("c%d", k), "tool_name": "read", "arguments": map[string]any{"path": "x"}}
	}
	// Turn k: the tool result of turn k-1 synced before the model call
	// (none in turn 1), the usage of the answer, the admit of its one tool
	// call, the answer synced at the tool result's message_end.
	rev, length := int64(1), 1
	var heldAnswer map[string]any // the previous answer's sync, held by the turn client until its next request
	for k := 1; k <= 4; k++ {
		used := int64(1000 * k)
		var syncs []any
		if heldAnswer != nil {
			syncs = append(syncs, heldAnswer)
		}
		if k > 1 {
			tr := turnSyncBody(rev, length, fmt.Sprintf("tr%d", k-1))
			old.mustRun(t, lcStep{path: "/v1/history/sync", body: tr})
			syncs = append(syncs, tr)
			rev, length = rev+1, length+1
		}
		if k == 3 {
			// Turn 3's usage and admit travel together with the syncs.
			res := combined.s.okJSON(t, "POST", "/v1/lifecycle/turn", map[string]any{"context": combined.cc, "syncs": syncs, "usage": usage(used), "admit": admit(k)})
			if res["admit"].(map[string]any)["allow"] != true || len(res["syncs"].([]any)) != len(syncs) {
				t.Fatalf("turn %d: %v", k, res)
			}
		} else {
			res := combined.s.okJSON(t, "POST", "/v1/lifecycle/turn", map[string]any{"context": combined.cc, "syncs": syncs, "usage": usage(used)})
			if _, ok := res["admit"]; ok {
				t.Fatalf("turn %d: an admit not asked for: %v", k, res)
			}
			combined.mustRun(t, lcStep{path: "/v1/lifecycle/admit", body: admit(k)})
		}
		old.mustRun(t, lcStep{path: "/v1/lifecycle/usage", body: usage(used)}, lcStep{path: "/v1/lifecycle/admit", body: admit(k)})
		answer := turnSyncBody(rev, length, fmt.Sprintf("a%d", k))
		old.mustRun(t, lcStep{path: "/v1/history/sync", body: answer})
		heldAnswer = answer
		rev, length = rev+1, length+1
	}
	// The usage that makes the reminder due: the admit is not run, the host
	// delivers the reminder first and then admits, as before.
	res := combined.s.okJSON(t, "POST", "/v1/lifecycle/turn", map[string]any{"context": combined.cc, "syncs": []any{heldAnswer}, "usage": usage(80000), "admit": admit(5)})
	if u := res["usage"].(map[string]any); u["due"] != "reminder" {
		t.Fatalf("usage: %v", u)
	}
	if _, ok := res["admit"]; ok {
		t.Fatalf("admitted before the due reminder was delivered: %v", res)
	}
	combined.mustRun(t, lcDelivered("reminder", "w1"), lcStep{path: "/v1/lifecycle/admit", body: admit(5)})
	old.mustRun(t, lcStep{path: "/v1/lifecycle/usage", body: usage(80000)}, lcDelivered("reminder", "w1"), lcStep{path: "/v1/lifecycle/admit", body: admit(5)})

	want, got := turnEvents(t, old, p0), turnEvents(t, combined, q0)
	if !slices.Equal(want, got) {
		t.Errorf("events differ:\nseparate calls:\n%s\nturn requests:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
	if len(want) < 10 {
		t.Errorf("only %d events: %v", len(want), want)
	}
	if a, b := old.rawState(t), combined.rawState(t); strings.ReplaceAll(a, old.cc.TaskID, "T") != strings.ReplaceAll(b, combined.cc.TaskID, "T") {
		t.Errorf("states differ:\n%s\n%s", a, b)
	}
}

// TestTurnErrors: a part that fails answers as its own route would, and
// nothing of the turn is done; a stale delta is the sync's conflict.
func TestTurnErrors(t *testing.T) {
	_, a := turnAgents(t)
	a.mustRun(t, lcStep{path: "/v1/history/sync", body: map[string]any{"entries": []any{turnEntry("u1", "user")}, "branch": []string{"u1"}}})
	code, res := a.run(t, lcStep{path: "/v1/lifecycle/turn", body: map[string]any{"syncs": []any{turnSyncBody(7, 1, "a1")}}})
	if code != http.StatusConflict || res["error"].(map[string]any)["details"].(map[string]any)["reason"] != memory.SyncReasonStaleBase {
		t.Fatalf("stale delta: %d %v", code, res)
	}
	p := a.s.position(t)
	code, res = a.run(t, lcStep{path: "/v1/lifecycle/turn", body: map[string]any{"syncs": []any{turnSyncBody(1, 1, "a1")}, "usage": map[string]any{"tokens_used": -1}}})
	if code != http.StatusBadRequest {
		t.Fatalf("bad usage: %d %v", code, res)
	}
	code, res = a.run(t, lcStep{path: "/v1/lifecycle/turn", body: map[string]any{"syncs": []any{turnSyncBody(1, 1, "a1"), turnSyncBody(1, 2, "tr1")}, "usage": map[string]any{"tokens_used": 5}}})
	if code != http.StatusConflict {
		t.Fatalf("a second sync stale: %d %v", code, res)
	}
	if got := a.eventTypes(t, p); len(got) != 0 {
		t.Errorf("a failed turn appended %v", got)
	}
	code, res = a.run(t, lcStep{path: "/v1/lifecycle/turn", body: map[string]any{"admit": map[string]any{"call_id": "c1"}}})
	if code != http.StatusBadRequest {
		t.Fatalf("admit without tool_name: %d %v", code, res)
	}
	code, res = a.run(t, lcStep{path: "/v1/lifecycle/turn", body: map[string]any{"syncs": make([]any, memory.MaxTurnSyncs+1)}})
	if code != http.StatusBadRequest {
		t.Fatalf("too many syncs: %d %v", code, res)
	}
	// Nothing asked, nothing done.
	if res := a.s.okJSON(t, "POST", "/v1/lifecycle/turn", map[string]any{"context": a.cc}); len(res["syncs"].([]any)) != 0 {
		t.Errorf("empty turn: %v", res)
	}
}
