package forensics_test

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
)

// checkReadsOf collects the audit of evs and replays them with their
// reads re-executed.
func checkReadsOf(t *testing.T, evs []events.Event) forensics.ReadCheck {
	t.Helper()
	next := func() forensics.Next {
		i := 0
		return func() (events.Event, bool, error) {
			if i == len(evs) {
				return events.Event{}, false, nil
			}
			i++
			return events.Decoded(evs[i-1]), true, nil
		}
	}
	audit, _, err := forensics.CollectAudit(next())
	if err != nil {
		t.Fatal(err)
	}
	store, err := forensics.Open(t.Context(), filepath.Join(t.TempDir(), "replay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	check, err := forensics.Replay(t.Context(), store, next(), forensics.ReplayOptions{Audit: audit})
	if err != nil {
		t.Fatal(err)
	}
	return check
}

// TestCheckReadsWithDigestedArguments: in a log whose write audits keep
// their text as size and digest (schema 2), replay --check-reads still
// re-executes every read exactly and still catches a read whose result
// changed; a read whose arguments were too long to keep whole is reported
// as unverifiable, not passed.
func TestCheckReadsWithDigestedArguments(t *testing.T) {
	h := newHarness(t)
	root := h.attach(sessionKey("digested"), nil, &memory.BudgetInput{NotesMaxFileBytes: ptr[int64](64)})
	child := h.attach(sessionKey("digested-child"), &memory.TaskRef{TaskID: root.TaskID, AgentName: "child"}, nil)
	h.ok(root, "w1", "notes_write_file", `{"path":"plan.md","text":"goal: <ship> & \"test\"\nnext: 😀\n"}`)
	h.ok(child, "w2", "notes_append_to_file", `{"path":"/root/notes/plan.md","text":"child was here\n"}`)
	h.fails(root, "w3", "notes_append_to_file", `{"path":"plan.md","text":"`+strings.Repeat("x", 4_000_000)+`"}`, "too_large")
	h.ok(root, "", "notes_read_file", `{"path":"plan.md"}`)
	h.ok(child, "", "notes_read_file", `{"path":"/root/notes/plan.md","start_line":2}`)
	h.ok(root, "", "notes_search_contents", `{"query":"child"}`)
	h.ok(root, "", "notes_list_files_by_prefix", `{}`)
	h.fails(root, "", "notes_read_file", `{"path":"missing.md"}`, "not_found")
	h.svc.StopAudit() // flush the read audit

	var evs []events.Event
	if err := h.store.Each(h.ctx, eventlog.Filter{Limit: 1000}, func(ev events.Event) error {
		evs = append(evs, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	read, call := -1, -1 // the event and index of the first audited notes_read_file that succeeded
	for i, ev := range evs {
		if ev.Type != events.TypeToolCalled {
			continue
		}
		var batch events.ToolCalled
		if err := json.Unmarshal(ev.Data, &batch); err != nil {
			t.Fatal(err)
		}
		for j, rec := range batch.Calls {
			switch rec.Tool {
			case "notes_write_file", "notes_append_to_file":
				if bytes.Contains(rec.Arguments, []byte("text")) || rec.ElidedArguments["text"].SHA256 == "" {
					t.Errorf("the audit of a write holds its text: %s", ev.Data)
				}
			case "notes_read_file":
				if read < 0 && rec.Outcome == "ok" {
					read, call = i, j
				}
			}
		}
	}
	check := checkReadsOf(t, evs)
	if check.Checked != 5 || check.Skipped != 0 || len(check.Mismatches) != 0 || len(check.Unverifiable) != 0 {
		t.Fatalf("check reads %+v, want 5 reads checked and nothing else", check)
	}

	// A read whose result changed is still caught.
	tampered := append([]events.Event(nil), evs...)
	var batch events.ToolCalled
	if err := json.Unmarshal(evs[read].Data, &batch); err != nil {
		t.Fatal(err)
	}
	batch.Calls[call].ResultDigest = strings.Repeat("0", 64)
	data, err := json.Marshal(batch)
	if err != nil {
		t.Fatal(err)
	}
	tampered[read].Data = data
	check = checkReadsOf(t, tampered)
	if len(check.Mismatches) != 1 || check.Mismatches[0].Position != evs[read].Position || check.Mismatches[0].Call != call || check.Checked != 5 {
		t.Errorf("check reads of the tampered log %+v, want one mismatch at %d, call %d", check, evs[read].Position, call)
	}

	// A read with a query too long to keep whole cannot be re-executed.
	h2 := newHarness(t)
	cc := h2.attach(sessionKey("long-query"), nil, nil)
	h2.ok(cc, "", "notes_search_contents", `{"query":"`+strings.Repeat("q", 5000)+`"}`)
	h2.ok(cc, "", "notes_search_contents", `{"query":"q"}`)
	h2.svc.StopAudit()
	evs = evs[:0]
	if err := h2.store.Each(h2.ctx, eventlog.Filter{Limit: 1000}, func(ev events.Event) error {
		evs = append(evs, ev)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	check = checkReadsOf(t, evs)
	if check.Checked != 1 || len(check.Unverifiable) != 1 || check.Unverifiable[0].Tool != "notes_search_contents" {
		t.Errorf("check reads %+v, want one read checked and the long one unverifiable", check)
	}
}

// TestCheckReadsOfOldAuditRecords: a committed log of schema 1 audit
// records, whose writes hold their text in their arguments, still
// replays with every read checked and nothing unverifiable.
func TestCheckReadsOfOldAuditRecords(t *testing.T) {
	const name = "cross-agent-notes"
	lr, done := openScenarioLog(t, name)
	old := 0
	for {
		ev, ok, err := lr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if ev.Type == events.TypeToolCalled && ev.Schema == 1 && bytes.Contains(ev.Data, []byte(`"tool":"notes_write_file","arguments":{"path"`)) {
			old++
		}
	}
	done()
	if old == 0 {
		t.Fatalf("%s holds no schema 1 audit record of a write with its text", name)
	}
	_, check := replayChecked(t, name)
	if check.Checked == 0 || len(check.Mismatches) != 0 || len(check.Unverifiable) != 0 {
		t.Errorf("check reads of %s: %+v", name, check)
	}
}
