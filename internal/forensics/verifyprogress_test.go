package forensics_test

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	"github.com/memoryd/memoryd/internal/forensics"
)

// TestVerifyProgress: VerifyProgress reports the events it has rebuilt
// every 1024 events, then says it compares, and finds a clean log clean.
func TestVerifyProgress(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	var log bytes.Buffer
	if err := forensics.WriteSyntheticLog(&log, 3000); err != nil {
		t.Fatal(err)
	}
	live, err := forensics.Open(ctx, filepath.Join(dir, "live.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	if _, err := forensics.Import(ctx, live, forensics.NewLogReader(&log).Next); err != nil {
		t.Fatal(err)
	}
	scratch, err := forensics.Open(ctx, filepath.Join(dir, "scratch.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer scratch.Close()
	var steps []string
	var counts []int64
	diffs, violations, err := forensics.VerifyProgress(ctx, live, scratch, 3,
		func(n int64) { counts = append(counts, n); steps = append(steps, "rebuilt") },
		func() { steps = append(steps, "comparing") })
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) != 0 || len(violations) != 0 {
		t.Errorf("a synthetic log verifies with differences %v and violations %v", diffs, violations)
	}
	if !slices.Equal(counts, []int64{1024, 2048}) {
		t.Errorf("progress reported %v, want 1024 and 2048 of the 3000 events", counts)
	}
	if !slices.Equal(steps, []string{"rebuilt", "rebuilt", "comparing"}) {
		t.Errorf("steps %v, want the rebuild's progress and then the comparison", steps)
	}
}
