package eventlog

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
)

// TestImportReportingAppliesBrokenEvents: verify's rebuild imports a log
// whose events break payload rules, as the store that holds them applied
// them, and reports each (the first rule it breaks); what no store could
// have applied still stops it.
func TestImportReportingAppliesBrokenEvents(t *testing.T) {
	ctx := context.Background()
	log := buildLog(append(rulesLog[:len(rulesLog):len(rulesLog)],
		logItem{rootStream, events.TypeNoteAppended, noteData("/root", "../up.md", "x")},
		logItem{rootStream, events.TypeNoteAppended, `{"text":"a","task_id":"01TASKA","agent":"/root","path":"a.md","text":"b","by":"/root","colour":1}`},
		logItem{rootStream, events.TypeNoteAppended, noteData("/root", "a.md", "c")},
	)...)
	s := openStore(t, recordingApply)
	var broken []*events.RuleError
	n, err := s.ImportReporting(ctx, iterate(log), func(re *events.RuleError) { broken = append(broken, re) })
	if err != nil || n != int64(len(log)) || appliedCount(t, s) != n {
		t.Fatalf("ImportReporting: %d events (%d applied), %v; want all %d", n, appliedCount(t, s), err, len(log))
	}
	if len(broken) != 2 || broken[0].Position != 6 || !strings.Contains(broken[0].Rule, `".." segment`) ||
		broken[1].Position != 7 || !strings.Contains(broken[1].Rule, `the key "text" twice`) {
		t.Errorf("reported %+v", broken)
	}
	// A gap stops it, with nothing kept.
	gap := append(log[:3:3], log[4:]...)
	s = openStore(t, recordingApply)
	if _, err := s.ImportReporting(ctx, iterate(gap), func(*events.RuleError) {}); !errors.Is(err, events.ErrInvalidEvent) || lastPosition(t, s) != 0 {
		t.Errorf("ImportReporting of a log with a gap: %v, %d events kept", err, lastPosition(t, s))
	}
}

// TestContinueReportingAppliesTheRest: a store that holds a log up to a
// position takes the rest of it, broken events reported and applied as
// ImportReporting would; the first event must continue the log (a gap or
// a repeat stops it, with nothing of the continuation kept).
func TestContinueReportingAppliesTheRest(t *testing.T) {
	ctx := context.Background()
	log := buildLog(append(rulesLog[:len(rulesLog):len(rulesLog)],
		logItem{rootStream, events.TypeNoteAppended, noteData("/root", "a.md", "a")},
		logItem{rootStream, events.TypeNoteAppended, noteData("/root", "../up.md", "x")},
		logItem{rootStream, events.TypeNoteAppended, noteData("/root", "a.md", "c")},
	)...)
	const q = 4
	s := openStore(t, recordingApply)
	var broken []*events.RuleError
	report := func(re *events.RuleError) { broken = append(broken, re) }
	if n, err := s.ImportReporting(ctx, iterate(log[:q]), report); err != nil || n != q {
		t.Fatalf("ImportReporting up to %d: %d, %v", q, n, err)
	}
	for _, bad := range [][]events.Event{log[q+1:], log[q-1:]} {
		if _, err := s.ContinueReporting(ctx, iterate(bad), report); !errors.Is(err, events.ErrInvalidEvent) || lastPosition(t, s) != q {
			t.Errorf("ContinueReporting from position %d at %d: %v, log ends at %d", bad[0].Position, q, err, lastPosition(t, s))
		}
	}
	n, err := s.ContinueReporting(ctx, iterate(log[q:]), report)
	if err != nil || n != int64(len(log)-q) || appliedCount(t, s) != int64(len(log)) || lastPosition(t, s) != int64(len(log)) {
		t.Fatalf("ContinueReporting: %d events (%d applied, log at %d), %v; want %d more", n, appliedCount(t, s), lastPosition(t, s), err, len(log)-q)
	}
	if len(broken) != 1 || broken[0].Position != 7 || !strings.Contains(broken[0].Rule, `".." segment`) {
		t.Errorf("reported %+v", broken)
	}
}
