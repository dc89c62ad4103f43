package projections

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// TestWindowIDsBefore: the binary search of windowIDsBefore finds the
// same window ids as SQL's DISTINCT over every item before each end, on
// branches of sparse items whose windows have ids of their ordinal or a
// marked one, short and long.
func TestWindowIDsBefore(t *testing.T) {
	ctx := context.Background()
	q := projectionsdb.New(sqliteDB(t))
	rng := rand.New(rand.NewPCG(7, 36))
	for agentNo := range 12 {
		agent := fmt.Sprintf("/root/a%d", agentNo)
		index, ordinal := int64(0), int64(1)
		id := "w1"
		for range rng.IntN(300) {
			index += 1 + rng.Int64N(3) // not every branch entry is an item
			if rng.IntN(8) == 0 {      // a compaction opens the next window
				ordinal++
				id = fmt.Sprintf("w%d", ordinal)
				if rng.IntN(3) == 0 {
					id = fmt.Sprintf("w%d", ordinal+int64(rng.IntN(4))) // marked
				}
			}
			if err := q.InsertItem(ctx, projectionsdb.InsertItemParams{TaskID: "t", Agent: agent, BranchIndex: index, EntryID: fmt.Sprintf("e%d", index),
				WindowOrdinal: ordinal, WindowID: id, Role: "assistant", RawRole: "assistant"}); err != nil {
				t.Fatal(err)
			}
		}
		for end := range index + 2 {
			want, err := q.WindowIDsBefore(ctx, projectionsdb.WindowIDsBeforeParams{TaskID: "t", Agent: agent, BranchIndex: end})
			if err != nil {
				t.Fatal(err)
			}
			got, err := windowIDsBefore(ctx, q, "t", agent, end)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(want)
			slices.Sort(got)
			if !slices.Equal(slices.Compact(got), want) {
				t.Fatalf("%s before %d: %v, want %v", agent, end, got, want)
			}
		}
	}
}
