package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/projections"
)

// concPiece is a whole line a concurrent writer appends.
func concPiece(writer string, i int) string {
	return fmt.Sprintf("<%s-%03d %s>\n", writer, i, strings.Repeat("x", 5+i%11))
}

var concPieceLine = regexp.MustCompile(`^<[a-z0-9]+-[0-9]{3} x+>$`)

// concLines splits content into lines, failing on anything that is not a
// whole piece.
func concLines(tb testing.TB, what, content string) []string {
	tb.Helper()
	if content == "" {
		return nil
	}
	if !strings.HasSuffix(content, "\n") {
		tb.Errorf("%s: content ends inside a piece: ...%q", what, content[max(0, len(content)-30):])
	}
	lines := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
	for _, l := range lines {
		if !concPieceLine.MatchString(l) {
			tb.Errorf("%s: line %q is not a whole piece", what, l)
		}
	}
	return lines
}

// TestConcurrentRetriesOfOneCallID: several agents append to one note,
// and every call is sent three times at once (a host retrying while the
// first attempt is still running), racing a fourth request that reuses the
// call_id with other text. For each call_id exactly one text lands, once:
// if the retried call is first, every attempt gets the first attempt's
// result and the other text is a conflict; if the other text is first,
// every attempt of the retried call is a conflict.
func TestConcurrentRetriesOfOneCallID(t *testing.T) {
	const calls, attempts = 12, 3
	s := mustOpenService(t)
	root := mustAttach(t, s, "conc/retries")
	agents := []CallContext{root,
		mustAttachChild(t, s, root.TaskID, "conc/retries/a", "alpha"),
		mustAttachChild(t, s, root.TaskID, "conc/retries/b", "beta")}
	before := lastPosition(t, s)

	type outcome struct {
		res []byte
		err error
	}
	var wg sync.WaitGroup
	type callCase struct {
		id, text, other string
		attempts        []outcome
		otherOut        outcome
	}
	var cases []*callCase
	for _, cc := range agents {
		name := strings.ReplaceAll(strings.TrimPrefix(cc.Agent, "/root"), "/", "")
		if name == "" {
			name = "root"
		}
		for i := range calls {
			c := cc
			c.CallID = fmt.Sprintf("toolu_%s_%d", name, i)
			k := &callCase{id: c.CallID, text: concPiece(name, i), other: concPiece("imp"+name, i), attempts: make([]outcome, attempts)}
			cases = append(cases, k)
			send := func(text string, out *outcome) {
				defer wg.Done()
				res, err := call(t, s, c, "notes_append_to_file", args("path", "/root/notes/shared.md", "text", text))
				out.err = err
				out.res, _ = json.Marshal(res)
			}
			for j := range attempts {
				wg.Add(1)
				go send(k.text, &k.attempts[j])
			}
			wg.Add(1)
			go send(k.other, &k.otherOut)
		}
	}
	wg.Wait()
	var want []string
	otherWon := 0
	for _, k := range cases {
		switch {
		case k.otherOut.err == nil:
			otherWon++
			want = append(want, strings.TrimSuffix(k.other, "\n"))
			for j, a := range k.attempts {
				if !errors.Is(a.err, ErrConflict) {
					t.Errorf("%s attempt %d after the other text landed: %v, want conflict", k.id, j, a.err)
				}
			}
		case errors.Is(k.otherOut.err, ErrConflict):
			want = append(want, strings.TrimSuffix(k.text, "\n"))
			for j, a := range k.attempts {
				if a.err != nil {
					t.Errorf("%s attempt %d: %v", k.id, j, a.err)
				} else if string(a.res) != string(k.attempts[0].res) {
					t.Errorf("%s: attempt %d answered %s, attempt 0 %s", k.id, j, a.res, k.attempts[0].res)
				}
			}
		default:
			t.Errorf("%s with other text: %v, want success or conflict", k.id, k.otherOut.err)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	got := concLines(t, "shared.md", readText(t, s, root, "shared.md"))
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("shared.md has %d lines, want each of the %d calls once:\n%q", len(got), len(want), got)
	}
	if n := lastPosition(t, s) - before; n != int64(len(want)) {
		t.Errorf("%d events for %d calls", n, len(want))
	}
	t.Logf("%d call ids, %d won by the other text", len(cases), otherWon)
}

// concEntry is a Pi message entry whose text names its agent.
func concEntry(id, parent, text string) json.RawMessage {
	var p any
	if parent != "" {
		p = parent
	}
	b, _ := json.Marshal(map[string]any{"type": "message", "id": id, "parentId": p, "timestamp": "2026-12-02T10:00:00.000Z",
		"message": map[string]any{"role": "user", "content": text, "timestamp": 1}})
	return b
}

// TestConcurrentSyncsOfDifferentAgents: four agents in two tasks sync
// growing branches at once, with the same entry ids but their own
// content. Each ends with exactly its own branch, revisions 1..n with
// no gap, and its items show only its own text. Two syncs of one agent
// with the same expected_revision race: exactly one wins.
func TestConcurrentSyncsOfDifferentAgents(t *testing.T) {
	const entries = 40
	s := mustOpenService(t)
	ctx := context.Background()
	a := mustAttach(t, s, "conc/sync/a")
	b := mustAttach(t, s, "conc/sync/b")
	agents := []CallContext{a, mustAttachChild(t, s, a.TaskID, "conc/sync/a/w", "worker"),
		b, mustAttachChild(t, s, b.TaskID, "conc/sync/b/w", "worker")}
	marker := func(k int) string { return fmt.Sprintf("agent%d", k) }
	ids := make([]string, entries)
	for i := range ids {
		ids[i] = fmt.Sprintf("e%04d", i)
	}
	var wg sync.WaitGroup
	syncs := make([]int, len(agents))
	for k, cc := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rev := int64(0)
			for done := 0; done < entries; {
				n := min(entries-done, 1+(done+k)%4)
				var batch []json.RawMessage
				for i := done; i < done+n; i++ {
					parent := ""
					if i > 0 {
						parent = ids[i-1]
					}
					batch = append(batch, concEntry(ids[i], parent, fmt.Sprintf("%s says %d", marker(k), i)))
				}
				branch := slices.Clone(ids[:done+n])
				r := rev
				res, err := s.Sync(ctx, SyncRequest{Context: cc, Entries: batch, Branch: &branch, ExpectedRevision: &r}, "")
				if err != nil {
					t.Errorf("agent %d: sync to %d: %v", k, done+n, err)
					return
				}
				if res.Revision != rev+1 || res.Stored != n {
					t.Errorf("agent %d: sync to %d: %+v, want revision %d and %d stored", k, done+n, res, rev+1, n)
				}
				rev = res.Revision
				done += n
				syncs[k]++
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	r := projections.NewReader(s.Store().Reader())
	for k, cc := range agents {
		got, err := r.BranchIDs(ctx, cc.TaskID, cc.Agent)
		if err != nil || !slices.Equal(got, ids) {
			t.Errorf("agent %d: branch %v (%v), want its %d entries", k, got, err, entries)
		}
		rev, _, err := r.Branch(ctx, cc.TaskID, cc.Agent)
		if err != nil || rev != int64(syncs[k]) {
			t.Errorf("agent %d: revision %d (%v) after %d syncs", k, rev, err, syncs[k])
		}
		for _, id := range ids {
			text, _, err := r.ItemText(ctx, cc.TaskID, cc.Agent, id)
			if err != nil || !strings.HasPrefix(text, marker(k)+" says ") {
				t.Errorf("agent %d: item %s is %q (%v): another agent's entry?", k, id, text, err)
			}
		}
		for j := range agents {
			res := mustCall(t, s, cc, "history_search_contents", args("query", marker(j)+" says", "limit", 200))
			n := int(detailsMap(t, res)["n_returned"].(float64)) + int(detailsMap(t, res)["omitted"].(float64))
			if want := map[bool]int{true: entries, false: 0}[j == k]; n != want {
				t.Errorf("agent %d finds %d items of agent %d, want %d", k, n, j, want)
			}
		}
	}

	// Racing syncs of one agent at one expected revision.
	cc := agents[1]
	rev, _, err := r.Branch(ctx, cc.TaskID, cc.Agent)
	if err != nil {
		t.Fatal(err)
	}
	const racers = 6
	errs := make([]error, racers)
	for i := range racers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("race%d", i)
			branch := append(slices.Clone(ids), id)
			errs[i] = func() error {
				_, err := s.Sync(ctx, SyncRequest{Context: cc, Entries: []json.RawMessage{concEntry(id, ids[entries-1], "racer")},
					Branch: &branch, ExpectedRevision: &rev}, "")
				return err
			}()
		}()
	}
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, ErrConflict):
			t.Errorf("racer %d: %v, want nil or conflict", i, err)
		}
	}
	if wins != 1 {
		t.Errorf("%d racing syncs at revision %d won, want exactly 1", wins, rev)
	}
	got, err := r.BranchIDs(ctx, cc.TaskID, cc.Agent)
	if err != nil || len(got) != entries+1 {
		t.Errorf("branch after the race: %d entries (%v), want %d", len(got), err, entries+1)
	}
	stored := 0
	for i := range racers {
		if found, err := r.StoredEntries(ctx, cc.TaskID, cc.Agent, []string{fmt.Sprintf("race%d", i)}); err != nil {
			t.Fatal(err)
		} else if len(found) > 0 {
			stored++
		}
	}
	if stored != 1 {
		t.Errorf("%d racers' entries stored, want only the winner's", stored)
	}
}

// TestReadersSeeWholeNotes: while writers append pieces to notes and
// overwrite another, readers check in one read transaction that every
// listed note's bytes equal the length of its content and that the content
// is whole pieces; tool-level list and search (each its own snapshot)
// never show a half-written file: every size listed is a piece boundary
// of the final content, every search line a whole piece.
func TestReadersSeeWholeNotes(t *testing.T) {
	const writers, per, rewrites = 3, 25, 30
	s := mustOpenSQLite(t)
	ctx := context.Background()
	root := mustAttach(t, s, "conc/readers")
	files := []string{"a.md", "b.md", "dir/c.md"}
	rewrite := func(k int) string { return strings.Repeat(concPiece("v", k), 1+k%7) }

	stop := make(chan struct{})
	var wwg, rwg sync.WaitGroup
	for w := range writers {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			for i := range per {
				p := files[(w+i)%len(files)]
				if _, err := call(t, s, root, "notes_append_to_file", args("path", p, "text", concPiece(fmt.Sprintf("w%d", w), i))); err != nil {
					t.Errorf("append: %v", err)
					return
				}
			}
		}()
	}
	wwg.Add(1)
	go func() {
		defer wwg.Done()
		for k := range rewrites {
			if _, err := call(t, s, root, "notes_write_file", args("path", "whole.md", "text", rewrite(k))); err != nil {
				t.Errorf("write: %v", err)
				return
			}
		}
	}()

	var mu sync.Mutex
	listed := map[string]map[int64]bool{} // path → sizes the list tool showed
	var snapshots atomic.Int64
	checkWhole := func(what, content string) {
		lines := concLines(t, what, content)
		if strings.HasSuffix(what, "whole.md") && len(lines) > 0 {
			var k int
			fmt.Sscanf(lines[0], "<v-%03d", &k)
			if content != rewrite(k) {
				t.Errorf("%s = %q, which no write wrote", what, content)
			}
		}
	}
	rwg.Add(1)
	go func() { // one read transaction per round
		defer rwg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			tx, err := s.Store().BeginRead(ctx)
			if err != nil {
				t.Errorf("begin: %v", err)
				return
			}
			r := projections.NewReader(tx.DB())
			infos, err := r.Notes(ctx, root.TaskID, "/root", "")
			for _, info := range infos {
				if err != nil {
					break
				}
				var n projections.Note
				n, err = r.Note(ctx, root.TaskID, "/root", info.Path)
				if err != nil {
					break
				}
				if info.Bytes != n.Bytes || n.Bytes != int64(len(n.Content)) || info.UpdatedPosition != n.UpdatedPosition {
					t.Errorf("%s in one snapshot: listed %d bytes, row %d bytes, content %d bytes", info.Path, info.Bytes, n.Bytes, len(n.Content))
				}
				checkWhole(info.Path, n.Content)
			}
			tx.Close()
			if err != nil {
				t.Errorf("read: %v", err)
				return
			}
			snapshots.Add(1)
		}
	}()
	rwg.Add(1)
	go func() { // the tools
		defer rwg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			res, err := call(t, s, root, "notes_list_files_by_prefix", `{}`)
			if err != nil {
				t.Errorf("list: %v", err)
				return
			}
			var d struct {
				Files []struct {
					Path  string `json:"path"`
					Bytes int64  `json:"bytes"`
				} `json:"files"`
			}
			b, _ := json.Marshal(res.Details)
			json.Unmarshal(b, &d)
			mu.Lock()
			for _, f := range d.Files {
				if listed[f.Path] == nil {
					listed[f.Path] = map[int64]bool{}
				}
				listed[f.Path][f.Bytes] = true
			}
			mu.Unlock()
			res, err = call(t, s, root, "notes_search_contents", `{"query":"x","max_files":500,"max_matches_per_file":100}`)
			if err != nil {
				t.Errorf("search: %v", err)
				return
			}
			var sd struct {
				Files []struct {
					Path    string `json:"path"`
					Matches []struct {
						Text string `json:"text"`
					} `json:"matches"`
				} `json:"files"`
			}
			b, _ = json.Marshal(res.Details)
			json.Unmarshal(b, &sd)
			for _, f := range sd.Files {
				for _, m := range f.Matches {
					if !concPieceLine.MatchString(m.Text) {
						t.Errorf("search shows %q in %s: not a whole piece", m.Text, f.Path)
					}
				}
			}
		}
	}()
	wwg.Wait()
	close(stop)
	rwg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if snapshots.Load() < 5 {
		t.Errorf("only %d snapshots during the writes", snapshots.Load())
	}
	total := 0
	for _, p := range files {
		final := readText(t, s, root, p)
		total += len(concLines(t, p, final))
		for size := range listed["/root/notes/"+p] {
			// Appends only grow a file: every state is a prefix of the
			// final content, and a whole one ends at a piece boundary.
			if size > int64(len(final)) || (size > 0 && final[size-1] != '\n') {
				t.Errorf("list showed %s with %d bytes: not a whole-piece prefix of its final %d bytes", p, size, len(final))
			}
		}
	}
	if total != writers*per {
		t.Errorf("%d pieces in the files, want %d", total, writers*per)
	}
	for size := range listed["/root/notes/whole.md"] {
		ok := false
		for k := range rewrites {
			ok = ok || int64(len(rewrite(k))) == size
		}
		if !ok {
			t.Errorf("list showed whole.md with %d bytes, the size of no write", size)
		}
	}
	var evs int
	if err := s.Store().Each(ctx, eventlog.Filter{TaskID: root.TaskID}, func(events.Event) error { evs++; return nil }); err != nil {
		t.Fatal(err)
	}
	if want := 2 + writers*per + rewrites; evs != want {
		t.Errorf("%d events, want %d", evs, want)
	}
}

// TestConcurrentNoteWritesEqualRebuild: many callers append to and
// overwrite a few shared notes at once, so that one write batch holds
// several writes of one note (the projection remembers a note's row within
// a transaction instead of reading it again). Some calls are retried with
// the same call_id and arguments (they must get the first result back),
// some are refused for size. The projections must equal a rebuild from
// the log, and each note must hold only whole pieces.
func TestConcurrentNoteWritesEqualRebuild(t *testing.T) {
	s := mustOpenService(t)
	root := mustAttach(t, s, "conc/rebuild")
	var wg sync.WaitGroup
	var retried atomic.Int64
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			first := map[string]string{} // call_id -> its first result
			for i := range 30 {
				n := i % 25 // the last five calls are retries of earlier ones
				cc := root
				cc.CallID = fmt.Sprintf("w%d-%d", w, n)
				path := fmt.Sprintf("shared-%d.md", (w+n)%3)
				tool, text := "notes_append_to_file", concPiece(fmt.Sprintf("w%d", w), n)
				switch {
				case n%9 == 4:
					tool = "notes_write_file"
				case n%13 == 7:
					text = strings.Repeat("y", 2_000_000) // over the note cap: refused
				}
				args, _ := json.Marshal(map[string]string{"path": path, "text": text})
				res, err := call(t, s, cc, tool, string(args))
				if err != nil {
					if !errors.Is(err, ErrTooLarge) {
						t.Errorf("%s %s: %v", tool, cc.CallID, err)
					}
					continue
				}
				got, _ := json.Marshal(res.Details)
				if d := detailsMap(t, res); d["revision"].(float64) < 1 || d["bytes"].(float64) < float64(len(text)) {
					t.Errorf("%s %s: result %s", tool, cc.CallID, got)
				}
				if prev, ok := first[cc.CallID]; ok {
					retried.Add(1)
					if prev != string(got) {
						t.Errorf("retry of %s: %s, first %s", cc.CallID, got, prev)
					}
				} else {
					first[cc.CallID] = string(got)
				}
			}
		}()
	}
	wg.Wait()
	if retried.Load() == 0 {
		t.Fatal("no call was retried")
	}
	live := rbDigest(t, s)
	for _, path := range []string{"shared-0.md", "shared-1.md", "shared-2.md"} {
		res := mustCall(t, s, root, "notes_read_file", `{"path":"`+path+`"}`)
		concLines(t, path, detailsMap(t, res)["text"].(string))
	}
	if err := projections.Rebuild(context.Background(), s.Store()); err != nil {
		t.Fatal(err)
	}
	if got := rbDigest(t, s); !slices.EqualFunc(got, live, func(a, b projections.TableDigest) bool { return a == b }) {
		t.Fatalf("projections after a rebuild:\n %+v\nlive:\n %+v", got, live)
	}
}
