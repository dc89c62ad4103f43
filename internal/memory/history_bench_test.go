package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/sessiongen"
	"github.com/memoryd/memoryd/internal/tools"
)

// syncBatches syncs a linear session in requests of at most maxBytes of
// entries each, every request moving the branch to its last entry, as a
// client under the body limit would.
func syncBatches(tb testing.TB, s *Service, cc CallContext, sess sessiongen.Session, maxBytes int) {
	tb.Helper()
	done := 0
	for _, batch := range sessiongen.Batches(sess.Entries, maxBytes) {
		done += len(batch)
		if _, err := histSyncErr(s, cc, batch, sess.Branch[:done], nil); err != nil {
			tb.Fatalf("sync batch ending at entry %d: %v", done, err)
		}
	}
}

// BenchmarkSync1000Entries syncs 1,000 generated entries (about 5 MB) in
// one request into a fresh agent.
func BenchmarkSync1000Entries(b *testing.B) {
	s := mustOpenService(b)
	large := sessiongen.Large(8 << 20)
	entries := large.Entries[:1000] // Large is linear: a prefix is a branch
	branch := large.Branch[:1000]
	size := 0
	for _, e := range entries {
		size += len(e)
	}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cc := mustAttach(b, s, fmt.Sprintf("/bench/sync-%d.jsonl", i))
		b.StartTimer()
		res, err := histSyncErr(s, cc, entries, branch, nil)
		if err != nil || res.Stored != 1000 {
			b.Fatalf("sync: %+v %v", res, err)
		}
	}
	b.ReportMetric(float64(b.N*len(entries))/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkSearch50MB searches a 50 MB session, synced once in setup in
// requests of at most 8 MB: for a needle in one item, one in nearly every
// item (in both orders, and with a role filter that few of its matches
// pass), and a two-byte needle that no filter can skip and no item holds.
func BenchmarkSearch50MB(b *testing.B) {
	s := mustOpenService(b)
	cc := mustAttach(b, s, "/bench/large.jsonl")
	start := time.Now()
	sess := sessiongen.Large(50 << 20)
	generated := time.Since(start)
	syncBatches(b, s, cc, sess, 8<<20)
	b.Logf("setup: %d entries, %.1f MB: generated in %v, synced in %v", len(sess.Entries), float64(sess.Bytes())/(1<<20),
		generated.Round(time.Millisecond), (time.Since(start) - generated).Round(time.Millisecond))
	for _, c := range []struct {
		name, args string
		hits       int // exactly 0 or 1, else at least
	}{
		{"rare needle", fmt.Sprintf(`{"query":%q}`, sessiongen.LargeRareNeedle), 1},
		{"common needle", fmt.Sprintf(`{"query":%q}`, sessiongen.LargeCommonNeedle), defaultHistorySearchLimit},
		{"common needle recent first", fmt.Sprintf(`{"query":%q,"recent_first":true}`, sessiongen.LargeCommonNeedle), defaultHistorySearchLimit},
		{"common needle role user", fmt.Sprintf(`{"query":%q,"role":"user"}`, sessiongen.LargeCommonNeedle), defaultHistorySearchLimit},
		{"two-byte needle nowhere", `{"query":"#!"}`, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			args := json.RawMessage(c.args)
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				res, err := s.CallTool(context.Background(), "history_search_contents", cc, args, "")
				if err != nil {
					b.Fatal(err)
				}
				d := res.Details.(tools.HistorySearchContentsDetails)
				if got := d.NReturned + d.Omitted; c.hits <= 1 && got != c.hits || c.hits > 1 && got < c.hits {
					b.Fatalf("%d hits", got)
				}
			}
		})
	}
}

// BenchmarkReadItem pages through the largest tool result of a 4 MB
// session with the default read budget (12,000 characters a page).
func BenchmarkReadItem(b *testing.B) {
	s := mustOpenService(b)
	cc := mustAttach(b, s, "/bench/read.jsonl")
	sess := sessiongen.Large(4 << 20)
	syncBatches(b, s, cc, sess, 8<<20)
	id := sess.Marks["big"]
	first := mustCall(b, s, cc, "history_read_item", fmt.Sprintf(`{"window_id":"w1","item_id":%q}`, id))
	total := first.Details.(tools.HistoryReadItemDetails).NChars
	b.ReportAllocs()
	b.ResetTimer()
	off := 0
	for i := 0; i < b.N; i++ {
		res, err := s.CallTool(context.Background(), "history_read_item", cc,
			json.RawMessage(fmt.Sprintf(`{"window_id":"w1","item_id":%q,"offset_chars":%d}`, id, off)), "")
		if err != nil {
			b.Fatal(err)
		}
		d := res.Details.(tools.HistoryReadItemDetails)
		if d.EndChars <= d.OffsetChars {
			b.Fatalf("empty page at %d of %d", off, total)
		}
		off = d.EndChars % total
	}
}

// longBranchTurns is the length of the branch of
// BenchmarkSyncOneOnLongBranch: as many entries as the 1 GB history of
// cmd/bench has.
const longBranchTurns = 190_606

// BenchmarkSyncOneOnLongBranch: the sync of every turn of a long session,
// one new entry at the end of a branch of longBranchTurns, with the
// branch whole (as the Pi extension sent it before the delta form) and as
// a delta from the last revision (as it sends it now). Only the sync is
// timed: each turn's entry is made by hand, not by a Builder's Session
// (which copies the whole tree).
func BenchmarkSyncOneOnLongBranch(b *testing.B) {
	s := mustOpenService(b)
	cc := mustAttach(b, s, "/bench/long-branch.jsonl")
	gen := sessiongen.NewBuilder(3)
	for i := range longBranchTurns {
		gen.UserText(fmt.Sprintf("turn %d", i))
	}
	sess := gen.Session()
	var revision int64
	for start := 0; start < len(sess.Entries); start += MaxSyncEntries {
		end := min(start+MaxSyncEntries, len(sess.Entries))
		res, err := histSyncErr(s, cc, sess.Entries[start:end], sess.Branch[:end], nil)
		if err != nil {
			b.Fatal(err)
		}
		revision = res.Revision
	}
	branch := sess.Branch
	turn := func(form string, i int) (json.RawMessage, string) {
		id := fmt.Sprintf("%s%07d", form, i)
		entry := fmt.Sprintf(`{"type":"message","id":%q,"parentId":%q,"timestamp":"2027-01-01T00:00:00.000Z","message":{"role":"user","content":"one more turn %d","timestamp":1798761600000}}`,
			id, branch[len(branch)-1], i)
		branch = append(branch, id)
		return json.RawMessage(entry), id
	}
	b.Run("whole", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			entry, id := turn("w", i)
			res, err := histSyncErr(s, cc, []json.RawMessage{entry}, branch, nil)
			if err != nil || res.Stored != 1 {
				b.Fatalf("sync %s: %+v %v", id, res, err)
			}
			revision = res.Revision
		}
	})
	b.Run("delta", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			entry, id := turn("d", i)
			res, err := deltaSync(s, cc, []json.RawMessage{entry}, revision, int64(len(branch)-1), []string{id})
			if err != nil || res.Stored != 1 || res.Revision != revision+1 {
				b.Fatalf("sync %s: %+v %v", id, res, err)
			}
			revision = res.Revision
		}
	})
}

// hostileBranchLength is the length of the branches of
// BenchmarkAppendDuringHostileSync: about as many ids as a 6.7 MiB
// request carries.
const hostileBranchLength = 650_000

// hostileBranches returns branches that are refused only once all their
// ids have been checked: one of ids never synced, one whose last id
// repeats its first.
func hostileBranches() (unknown, duplicate []string) {
	unknown = make([]string, hostileBranchLength)
	for i := range unknown {
		unknown[i] = fmt.Sprintf("h%07d", i)
	}
	duplicate = slices.Clone(unknown)
	duplicate[len(duplicate)-1] = duplicate[0]
	return unknown, duplicate
}

// BenchmarkAppendDuringHostileSync: one client's note appends, one after
// the other, in a task of its own, while three other clients sync
// 650,000-id branches that are refused (ids never synced, a duplicate
// id at the end), over and over. "quiet" is the same appends with no
// sync running. The reported max-ms is the slowest append.
func BenchmarkAppendDuringHostileSync(b *testing.B) {
	unknown, duplicate := hostileBranches()
	for _, hostile := range []int{0, 3} {
		name := "quiet"
		if hostile > 0 {
			name = "hostile"
		}
		b.Run(name, func(b *testing.B) {
			s := mustOpenService(b)
			cc := mustAttach(b, s, "/bench/appender.jsonl")
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			refused := make([]int, hostile)
			for h := range hostile {
				hc := mustAttach(b, s, fmt.Sprintf("/bench/hostile-%d.jsonl", h))
				branch := unknown
				if h%2 == 1 {
					branch = duplicate
				}
				wg.Go(func() {
					for ctx.Err() == nil {
						_, err := s.Sync(ctx, SyncRequest{Context: hc, Entries: []json.RawMessage{}, Branch: &branch}, "")
						if !errors.Is(err, ErrInvalidArgument) && ctx.Err() == nil {
							b.Errorf("hostile sync: %v, want invalid_argument", err)
							return
						}
						refused[h]++
					}
				})
			}
			var slowest time.Duration
			b.ResetTimer()
			for i := range b.N {
				cc.CallID = fmt.Sprintf("toolu_bench%d", i)
				args := fmt.Sprintf(`{"path":"bench/%d.md","text":"- appended line %d of the benchmark\n"}`, i/1000, i)
				start := time.Now()
				if _, err := s.CallTool(ctx, "notes_append_to_file", cc, json.RawMessage(args), ""); err != nil {
					b.Fatal(err)
				}
				slowest = max(slowest, time.Since(start))
			}
			b.StopTimer()
			cancel()
			wg.Wait()
			b.ReportMetric(float64(slowest.Microseconds())/1000, "max-ms")
			if hostile > 0 {
				b.ReportMetric(float64(sum(refused))/float64(b.N), "refused/op")
			}
		})
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// BenchmarkFirstSearchAfterOpen: the first search of a 50 MB history
// after the database is opened (a rare needle, so that loading the chunk
// filters is most of it), without the preload and with it finished (the
// server's case once it has been up for the load's time). Only the
// search is timed.
func BenchmarkFirstSearchAfterOpen(b *testing.B) {
	path := filepath.Join(b.TempDir(), "memory.db")
	s := mustOpenAt(b, path, testOptions())
	cc := mustAttach(b, s, "/bench/first-search.jsonl")
	syncBatches(b, s, cc, sessiongen.Large(50<<20), 8<<20)
	s.Close()
	args := json.RawMessage(fmt.Sprintf(`{"query":%q}`, sessiongen.LargeRareNeedle))
	for _, preload := range []bool{false, true} {
		b.Run(fmt.Sprintf("preload=%v", preload), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				opts := testOptions()
				opts.PreloadChunkFilters = preload
				s, err := Open(context.Background(), path, opts)
				if err != nil {
					b.Fatal(err)
				}
				if preload {
					<-s.preload.done
				}
				b.StartTimer()
				res, err := s.CallTool(context.Background(), "history_search_contents", cc, args, "")
				b.StopTimer()
				if err != nil || res.Details.(tools.HistorySearchContentsDetails).NReturned != 1 {
					b.Fatalf("search: %v", err)
				}
				s.Close()
				b.StartTimer()
			}
		})
	}
}
