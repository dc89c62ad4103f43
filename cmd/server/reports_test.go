package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/events"
)

// TestReplayCheckReadsSaysWhatItSkipped: replay --check-reads counts the
// audited calls it does not re-execute (skipped) and lists them by tool
// with the reason (skipped_calls): in a scenario log, exactly its audited
// writes, counted here from the log itself.
func TestReplayCheckReadsSaysWhatItSkipped(t *testing.T) {
	log := fxLog("fenced-checkpoint-retry")
	want := map[string]int{}
	for _, ev := range fxEvents(t, log) {
		if ev.Type != events.TypeToolCalled {
			continue
		}
		for _, rec := range fxDecode[events.ToolCalled](t, ev).Calls {
			switch rec.Tool {
			case "notes_write_file", "notes_append_to_file", "new_context":
				want[rec.Tool]++
			}
		}
	}
	if len(want) == 0 {
		t.Fatalf("%s has no audited write: pick a log that has", log)
	}
	cr, _ := fxJSON(t, fxMust(t, "replay", log, "--check-reads"))["check_reads"].(map[string]any)
	calls, ok := cr["skipped_calls"].([]any)
	if !ok {
		t.Fatalf("check_reads %v has no skipped_calls list", cr)
	}
	got, total := map[string]int{}, 0
	for _, c := range calls {
		c, _ := c.(map[string]any)
		tool, _ := c["tool"].(string)
		n, _ := c["calls"].(float64)
		if reason, _ := c["reason"].(string); !strings.Contains(reason, "write") {
			t.Errorf("skipped %v: the reason does not say it is a write", c)
		}
		got[tool] += int(n)
		total += int(n)
	}
	if len(got) != len(want) {
		t.Errorf("skipped_calls %v, want by tool %v", calls, want)
	}
	for tool, n := range want {
		if got[tool] != n {
			t.Errorf("skipped_calls gives %s %d, the log has %d audited calls of it", tool, got[tool], n)
		}
	}
	if cr["skipped"] != float64(total) {
		t.Errorf("skipped %v, but skipped_calls add up to %d", cr["skipped"], total)
	}
}

// TestImportSessionNamesItsWindows: import-session prints the window its
// attach found as attached_window_id and the one its entries end in as
// current_window_id (the session's compaction moved it on), not a bare
// window_id beside them.
func TestImportSessionNamesItsWindows(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "session.jsonl")
	if err := os.WriteFile(file, []byte(strings.Join(fxSession, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := fxJSON(t, fxMust(t, "import-session", "--db", filepath.Join(dir, "memory.db"), file))
	if res["attached_window_id"] != "w1" || res["current_window_id"] != "w2" {
		t.Errorf("import-session printed %v, want attached_window_id w1 and current_window_id w2", res)
	}
	if _, ok := res["window_id"]; ok {
		t.Errorf("import-session printed a bare window_id: %v", res)
	}
}

// TestProgressRate: a progress line shows no rate before a second has
// passed (the first batch over almost no time made billions a second),
// then the items done over the time since it began, in the verb's noun.
func TestProgressRate(t *testing.T) {
	var buf bytes.Buffer
	start := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	report, done := newProgressBar(&buf, "import-session", "entries", 10000, func() time.Time { return start })
	report(1024)
	done()
	if out := buf.String(); !strings.Contains(out, "import-session") || strings.Contains(out, "/s") {
		t.Errorf("the first progress line %q: want its description and no rate", out)
	}
	for _, tc := range []struct {
		n       int64
		elapsed time.Duration
		want    string
	}{
		{1024, 0, "replay"},
		{1 << 30, 999 * time.Millisecond, "replay"},
		{4096, 2 * time.Second, "replay: 2048 events/s"},
		{200000, 16 * time.Second, "replay: 12500 events/s"},
	} {
		if got := progressLabel("replay", "events", tc.n, tc.elapsed); got != tc.want {
			t.Errorf("progressLabel(%d in %s) = %q, want %q", tc.n, tc.elapsed, got, tc.want)
		}
	}
}
