package forensics

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplaySegments: a log replayed in segments much shorter than it
// (and shorter than the gaps between its audited reads) gives the same
// projections and the same read checks as its committed digest says.
func TestReplaySegments(t *testing.T) {
	const name = "long-session-images"
	log := filepath.Join("testdata", "logs", name+".jsonl")
	want, err := os.ReadFile(filepath.Join("testdata", "logs", name+".digest"))
	if err != nil {
		t.Fatal(err)
	}
	for _, segment := range []int64{1, 7, 100} {
		for _, checkReads := range []bool{false, true} {
			ctx := context.Background()
			var audit map[int64][]AuditedCall
			if checkReads {
				f, err := os.Open(log)
				if err != nil {
					t.Fatal(err)
				}
				lr := NewLogReader(f)
				if audit, _, err = CollectAudit(lr.Next); err != nil {
					t.Fatal(lr.AtLine(err))
				}
				f.Close()
			}
			store, err := Open(ctx, filepath.Join(t.TempDir(), "replay.db"))
			if err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(log)
			if err != nil {
				t.Fatal(err)
			}
			lr := NewLogReader(f)
			check, err := Replay(ctx, store, lr.Next, ReplayOptions{Audit: audit, Segment: segment})
			f.Close()
			if err != nil {
				t.Fatal(lr.AtLine(err))
			}
			sum, err := Summarize(ctx, store)
			store.Close()
			if err != nil {
				t.Fatal(err)
			}
			if sum.Digest != strings.TrimSpace(string(want)) {
				t.Errorf("segments of %d (check reads %v): digest %s, want %s", segment, checkReads, sum.Digest, want)
			}
			if checkReads && (check.Checked == 0 || len(check.Mismatches) > 0) {
				t.Errorf("segments of %d: %d reads checked, mismatches %+v", segment, check.Checked, check.Mismatches)
			}
		}
	}
}
