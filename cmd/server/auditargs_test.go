package main

import (
	"strings"
	"testing"
)

// TestReplayCheckReadsUnverifiable: an audited read whose record keeps its
// arguments as size and digest (too long to keep whole) is listed under
// check_reads.unverifiable and fails the check (exit 1): it was not run
// again, so it did not pass.
func TestReplayCheckReadsUnverifiable(t *testing.T) {
	log := fxLog("fenced-checkpoint-retry")
	lines := fxLines(t, log)
	evs := fxEvents(t, log)
	at, rec := fxFirstAuditedRead(t, log)
	digested := `"arguments":null,"arguments_digest":{"bytes":5000,"sha256":"` + strings.Repeat("a", 64) + `"}`
	lines[at] = strings.Replace(lines[at], `"arguments":`+string(rec.Arguments), digested, 1)
	if lines[at] == fxLines(t, log)[at] {
		t.Fatal("the edit changed nothing")
	}
	out, _, err := fxRun(t, nil, "replay", fxWriteLines(t, lines), "--check-reads")
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "could not be re-executed") {
		t.Fatalf("replay --check-reads of a log with a digested read: %v (exit %d)", err, exitCode(err))
	}
	cr, _ := fxJSON(t, out)["check_reads"].(map[string]any)
	us, _ := cr["unverifiable"].([]any)
	if len(us) != 1 || len(cr["mismatches"].([]any)) != 0 {
		t.Fatalf("check_reads %v, want the digested read unverifiable and no mismatch", cr)
	}
	if u := us[0].(map[string]any); u["position"] != float64(evs[at].Position) || u["tool"] != "notes_read_file" {
		t.Errorf("unverifiable %v, want position %d", u, evs[at].Position)
	}
}
