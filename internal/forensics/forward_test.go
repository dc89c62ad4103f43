package forensics_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
)

// TestForwardLogIsAFreshCopy: a copy of a scenario log at Q brought
// forward to P (ForwardLog) has the same projections (their digest) and
// the same log as a fresh copy at P (CopyLog), step after step, by one
// event and by many. An event the step skipped would be missing from
// the log compared, whether or not it changed a projection.
func TestForwardLogIsAFreshCopy(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"fenced-checkpoint-retry", "cross-agent-notes"} {
		t.Run(name, func(t *testing.T) {
			src := openLog(t, name)
			last, err := src.LastPosition(ctx)
			if err != nil {
				t.Fatal(err)
			}
			fwd, err := forensics.Open(ctx, filepath.Join(t.TempDir(), "forward.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer fwd.Close()
			if _, err := forensics.CopyLog(ctx, fwd, src, 3, nil); err != nil {
				t.Fatal(err)
			}
			from := int64(3)
			for _, p := range []int64{4, 5, 17, 18, last / 2, last - 1, last} {
				n, err := forensics.ForwardLog(ctx, fwd, src, p, nil)
				if err != nil || n != p-from {
					t.Fatalf("forward from %d to %d: %d events, %v", from, p, n, err)
				}
				fresh := copyAt(t, src, p)
				gotDigest, gotLog := stateOf(t, fwd)
				wantDigest, wantLog := stateOf(t, fresh)
				if gotDigest != wantDigest {
					t.Errorf("forward from %d to %d: projections digest %s, a fresh copy's %s", from, p, gotDigest, wantDigest)
				}
				if gotLog != wantLog {
					t.Errorf("forward from %d to %d: its log differs from a fresh copy's:\n%s\nwant\n%s", from, p, gotLog, wantLog)
				}
				from = p
			}
			if _, err := forensics.ForwardLog(ctx, fwd, src, 2, nil); !errors.Is(err, events.ErrInvalidEvent) {
				t.Errorf("forward to a position behind the copy: %v", err)
			}
		})
	}
}

// openLog imports testdata/logs/<name>.jsonl into a new database.
func openLog(t *testing.T, name string) *memory.Service {
	t.Helper()
	ctx := context.Background()
	svc, err := forensics.Open(ctx, filepath.Join(t.TempDir(), name+".db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { svc.Close() })
	f, err := os.Open(filepath.Join(logsDir, name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lr := forensics.NewLogReader(f)
	if _, err := forensics.Import(ctx, svc, lr.Next); err != nil {
		t.Fatal(lr.AtLine(err))
	}
	return svc
}

// copyAt is a fresh copy of src's log up to p, closed at the test's end.
func copyAt(t *testing.T, src *memory.Service, p int64) *memory.Service {
	t.Helper()
	svc, cleanup, err := forensics.Scratch(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cleanup)
	if _, err := forensics.CopyLog(context.Background(), svc, src, p, nil); err != nil {
		t.Fatal(err)
	}
	return svc
}

// stateOf is the digest of svc's projections and its exported log.
func stateOf(t *testing.T, svc *memory.Service) (digest, log string) {
	t.Helper()
	ctx := context.Background()
	sum, err := forensics.Summarize(ctx, svc)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := forensics.Export(ctx, svc, "", 0, &b, nil); err != nil {
		t.Fatal(err)
	}
	return sum.Digest, b.String()
}
