package api

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
	"github.com/memoryd/memoryd/internal/projections"
)

// storageState is what a request that fails must leave as it was.
type storageState struct {
	position int64
	digest   []projections.TableDigest
}

func storageStateOf(tb testing.TB, store *eventlog.Store) storageState {
	tb.Helper()
	ctx := context.Background()
	p, err := store.LastPosition(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	d, err := projections.Digest(ctx, store)
	if err != nil {
		tb.Fatal(err)
	}
	return storageState{p, d}
}

func (a storageState) same(b storageState) bool {
	return a.position == b.position && reflect.DeepEqual(a.digest, b.digest)
}

// pageCount is the database's size in pages.
func pageCount(tb testing.TB, store *eventlog.Store) int64 {
	tb.Helper()
	var n int64
	if err := store.Reader().QueryRow(`PRAGMA page_count`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

// TestDiskFull: with the database capped (max_page_count), writes fill
// it until they fail. A write that does not fit is answered 503
// unavailable with the error envelope and writes nothing (log position and
// every projection unchanged), under concurrent writers too (every 200 is
// stored, every 503 is absent); reads keep working; after a restart with
// room again the same writes succeed and the projections still equal a
// rebuild of the log.
func TestDiskFull(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "memory.db")
	// The size of a migrated database, plus a little room.
	ts, closeFn := startServer(t, serverOptions{dbPath: dbPath})
	base := pageCount(t, ts.store)
	closeFn()
	ts, closeFn = startServer(t, serverOptions{dbPath: dbPath, open: memory.OpenOptions{WriterPragmas: []string{fmt.Sprintf("max_page_count(%d)", base+40)}}})
	cc := ts.attach(t, "/sessions/full.jsonl")

	// Concurrent writers append unique chunks until the database is full.
	chunk := func(w, i int) string {
		return fmt.Sprintf("<w%d-%04d>", w, i) + strings.Repeat("z", 6000) + "\n"
	}
	const writers = 4
	var wg sync.WaitGroup
	type result struct {
		w, i, status int
		body         string
	}
	results := make(chan result, 10000)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 500; i++ {
				c := cc
				c.CallID = fmt.Sprintf("toolu_%d_%d", w, i)
				st, h, b := ts.send(t, ts.request(t, "POST", "/v1/tools/notes_append_to_file",
					toolBody(t, c, fmt.Sprintf(`{"path":"w%d.md","text":%q}`, w, chunk(w, i)))))
				results <- result{w, i, st, string(b)}
				if st != http.StatusOK {
					checkError(t, "append to a full database", st, h, b, http.StatusServiceUnavailable, "unavailable")
					return
				}
			}
		}()
	}
	wg.Wait()
	close(results)
	acked := map[string]bool{}
	refused := 0
	for r := range results {
		switch r.status {
		case http.StatusOK:
			acked[fmt.Sprintf("<w%d-%04d>", r.w, r.i)] = true
		case http.StatusServiceUnavailable:
			refused++
			for _, bad := range []string{"SQLITE", "sql", "full (13)", "database or disk"} {
				if strings.Contains(r.body, bad) {
					t.Errorf("503 body leaks %q: %s", bad, r.body)
				}
			}
		}
	}
	if refused == 0 || len(acked) == 0 {
		t.Fatalf("%d writes acknowledged, %d refused: the cap did not bite", len(acked), refused)
	}
	checkChunks := func(ts *testServer, what string, want map[string]bool) {
		t.Helper()
		r := projections.NewReader(ts.store.Reader())
		found := map[string]bool{}
		for w := range writers {
			n, err := r.Note(context.Background(), cc.TaskID, "/root", fmt.Sprintf("w%d.md", w))
			if err != nil {
				continue
			}
			if n.Bytes != int64(len(n.Content)) {
				t.Errorf("%s: w%d.md bytes %d, content %d", what, w, n.Bytes, len(n.Content))
			}
			for _, line := range strings.Split(strings.TrimSuffix(n.Content, "\n"), "\n") {
				tok, rest, _ := strings.Cut(line, "z")
				if found[tok] || rest != strings.Repeat("z", 5999) {
					t.Errorf("%s: w%d.md has a broken or repeated chunk %q…", what, w, tok)
				}
				found[tok] = true
			}
		}
		if !reflect.DeepEqual(found, want) {
			t.Errorf("%s: the notes hold %d chunks, want exactly the %d acknowledged", what, len(found), len(want))
		}
	}
	checkChunks(ts, "full", acked)

	// Full: a write fails whole and changes nothing; reads work.
	before := storageStateOf(t, ts.store)
	for _, rt := range []route{
		{"POST", "/v1/tools/notes_write_file", toolBody(t, cc, `{"path":"big.md","text":"`+strings.Repeat("y", 200000)+`"}`)},
		{"POST", "/v1/sessions/attach", `{"session_key":"/sessions/another.jsonl","session_id":"` + strings.Repeat("s", 100000) + `"}`},
	} {
		st, h, b := ts.send(t, ts.request(t, rt.method, rt.path, rt.body))
		checkError(t, rt.path+" when full", st, h, b, http.StatusServiceUnavailable, "unavailable")
		if after := storageStateOf(t, ts.store); !after.same(before) {
			t.Errorf("%s failed with 503 but changed the database: position %d → %d", rt.path, before.position, after.position)
		}
	}
	if st, b := ts.tool(t, "notes_list_files_by_prefix", cc, `{}`); st != http.StatusOK {
		t.Errorf("read while full: %d %s", st, b)
	}

	// Room again: reopen without the cap.
	closeFn()
	ts, _ = startServer(t, serverOptions{dbPath: dbPath})
	checkChunks(ts, "after reopening", acked)
	if after := storageStateOf(t, ts.store); !after.same(before) {
		t.Errorf("reopening changed the database")
	}
	c := cc
	c.CallID = "toolu_after"
	if st, b := ts.tool(t, "notes_write_file", c, `{"path":"big.md","text":"`+strings.Repeat("y", 200000)+`"}`); st != http.StatusOK {
		t.Fatalf("write after space returned: %d %s", st, b)
	}
	// The refused calls' call ids were not used up: their retry lands.
	for w := range writers {
		c := cc
		i := 0
		for acked[fmt.Sprintf("<w%d-%04d>", w, i)] {
			i++
		}
		c.CallID = fmt.Sprintf("toolu_%d_%d", w, i)
		if st, b := ts.tool(t, "notes_append_to_file", c, fmt.Sprintf(`{"path":"w%d.md","text":%q}`, w, chunk(w, i))); st != http.StatusOK {
			t.Errorf("retry of the refused %s: %d %s", c.CallID, st, b)
		}
		acked[fmt.Sprintf("<w%d-%04d>", w, i)] = true
	}
	checkChunks(ts, "after the retries", acked)
	checkRebuild(t, ts.store)
}

// checkRebuild rebuilds the projections from the log into a fresh
// database and compares them with the live ones.
func checkRebuild(t *testing.T, live *eventlog.Store) {
	t.Helper()
	ctx := context.Background()
	scratch := memorytest.OpenAt(t, filepath.Join(t.TempDir(), "rebuilt.db"), memory.OpenOptions{Synchronous: "off"}).Store()
	var page []events.Event
	after := int64(0)
	if _, err := scratch.Import(ctx, func() (events.Event, bool, error) {
		if len(page) == 0 {
			var err error
			if page, err = live.Read(ctx, eventlog.Filter{After: after, Limit: 1000}); err != nil || len(page) == 0 {
				return events.Event{}, false, err
			}
			after = page[len(page)-1].Position
		}
		ev := page[0]
		page = page[1:]
		return ev, true, nil
	}); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	diffs, err := projections.Diff(ctx, live, scratch, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(diffs) > 0 {
		t.Errorf("live projections differ from a rebuild of the log: %+v", diffs)
	}
}

// TestStorageBusy: another connection holds the write lock (BEGIN
// IMMEDIATE) on the database file. A write waits BusyTimeout, then is
// answered 503 unavailable and writes nothing; reads are not blocked (WAL);
// once the lock is released the same write succeeds.
func TestStorageBusy(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "memory.db")
	const busy = 150 * time.Millisecond
	ts, _ := startServer(t, serverOptions{dbPath: dbPath, open: memory.OpenOptions{BusyTimeout: busy}})
	cc := ts.attach(t, "/sessions/busy.jsonl")
	cc.CallID = "toolu_busy"
	write := toolBody(t, cc, `{"path":"a.md","text":"written after the lock\n"}`)

	other, err := sql.Open("sqlite", eventlog.FileURI(dbPath, url.Values{"_pragma": {"busy_timeout(0)"}}))
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	ctx := context.Background()
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	before := storageStateOf(t, ts.store)
	for _, rt := range []route{
		{"POST", "/v1/tools/notes_append_to_file", write},
		{"POST", "/v1/sessions/attach", `{"session_key":"/sessions/busy-2.jsonl"}`},
		{"POST", "/v1/lifecycle/usage", `{"context":{"task_id":"` + cc.TaskID + `","agent":"/root"},"tokens_used":10}`},
	} {
		start := time.Now()
		st, h, b := ts.send(t, ts.request(t, rt.method, rt.path, rt.body))
		checkError(t, rt.path+" while locked", st, h, b, http.StatusServiceUnavailable, "unavailable")
		if d := time.Since(start); d < busy {
			t.Errorf("%s: refused after %v, before the %v busy timeout", rt.path, d, busy)
		}
		if strings.Contains(string(b), "SQLITE") || strings.Contains(string(b), "locked") {
			t.Errorf("%s: 503 body leaks the cause: %s", rt.path, b)
		}
	}
	if st, b := ts.tool(t, "notes_list_files_by_prefix", cc, `{}`); st != http.StatusOK {
		t.Errorf("read while another connection holds the write lock: %d %s", st, b)
	}
	if after := storageStateOf(t, ts.store); !after.same(before) {
		t.Errorf("refused writes changed the database: position %d → %d", before.position, after.position)
	}

	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	if st, b := ts.do(t, "POST", "/v1/tools/notes_append_to_file", write); st != http.StatusOK {
		t.Fatalf("write after the lock was released: %d %s", st, b)
	}
	n, err := projections.NewReader(ts.store.Reader()).Note(ctx, cc.TaskID, "/root", "a.md")
	if err != nil || n.Content != "written after the lock\n" || n.Revision != 1 {
		t.Errorf("note after the retry: %+v %v, want one write", n, err)
	}
}

// TestDiskFullHistorySync: history syncs that seal text chunks fill a
// capped database until one fails. The failing sync is answered 503 and
// writes nothing (no entry, no chunk, no branch change); what was
// acknowledged is searchable; after a restart with room the refused batch
// syncs, every synced entry is found, and the projections equal a rebuild
// of the log.
func TestDiskFullHistorySync(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "memory.db")
	ts, closeFn := startServer(t, serverOptions{dbPath: dbPath})
	base := pageCount(t, ts.store)
	closeFn()
	ts, closeFn = startServer(t, serverOptions{dbPath: dbPath, open: memory.OpenOptions{WriterPragmas: []string{fmt.Sprintf("max_page_count(%d)", base+120)}}})
	cc := ts.attach(t, "/sessions/history-full.jsonl")

	// Batches of entries of about 40 KB each, every one with a unique
	// marker: two batches seal a 64 KiB chunk.
	type entry struct{ id, marker string }
	var all []entry
	batch := func(b int) (string, []entry) {
		var raws []string
		var es []entry
		for i := range 4 {
			e := entry{id: fmt.Sprintf("e%03d%d", b, i), marker: fmt.Sprintf("<marker-%03d-%d>", b, i)}
			parent := "null"
			if n := len(all) + len(es); n > 0 {
				prev := all
				if len(es) > 0 {
					prev = append(slices.Clone(all), es...)
				}
				parent = fmt.Sprintf("%q", prev[n-1].id)
			}
			raws = append(raws, fmt.Sprintf(`{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-12-03T10:00:00.000Z","message":{"role":"user","content":%q}}`,
				e.id, parent, e.marker+" "+strings.Repeat("q", 10000)))
			es = append(es, e)
		}
		var branch []string
		for _, e := range append(slices.Clone(all), es...) {
			branch = append(branch, fmt.Sprintf("%q", e.id))
		}
		ctx, _ := json.Marshal(cc)
		return fmt.Sprintf(`{"context":%s,"entries":[%s],"branch":[%s]}`, ctx, strings.Join(raws, ","), strings.Join(branch, ",")), es
	}
	var refused string
	var refusedEntries []entry
	for b := 0; b < 100; b++ {
		body, es := batch(b)
		before := storageStateOf(t, ts.store)
		st, h, resp := ts.send(t, ts.request(t, "POST", "/v1/history/sync", body))
		if st == http.StatusOK {
			all = append(all, es...)
			continue
		}
		checkError(t, "sync into a full database", st, h, resp, http.StatusServiceUnavailable, "unavailable")
		if after := storageStateOf(t, ts.store); !after.same(before) {
			t.Fatalf("a refused sync changed the database: position %d → %d", before.position, after.position)
		}
		refused, refusedEntries = body, es
		break
	}
	if refused == "" || len(all) < 8 {
		t.Fatalf("%d entries synced and none refused: the cap did not bite where chunks are sealed", len(all))
	}
	var chunks int
	if err := ts.store.Reader().QueryRow(`SELECT count(*) FROM history_chunks`).Scan(&chunks); err != nil || chunks == 0 {
		t.Fatalf("%d sealed chunks (%v) before the database filled", chunks, err)
	}
	t.Logf("%d entries synced in %d sealed chunks before a sync was refused", len(all), chunks)
	found := func(ts *testServer, e entry) bool {
		st, b := ts.tool(t, "history_search_contents", cc, fmt.Sprintf(`{"query":%q}`, e.marker))
		if st != http.StatusOK {
			t.Fatalf("search %s: %d %s", e.marker, st, b)
		}
		return strings.Contains(string(b), `"item_id":"`+e.id+`"`)
	}
	for _, e := range all {
		if !found(ts, e) {
			t.Errorf("acknowledged entry %s is not found while the database is full", e.id)
		}
	}
	if found(ts, refusedEntries[0]) {
		t.Errorf("an entry of the refused sync is found")
	}

	closeFn()
	ts, _ = startServer(t, serverOptions{dbPath: dbPath})
	if st, b := ts.do(t, "POST", "/v1/history/sync", refused); st != http.StatusOK {
		t.Fatalf("the refused sync after space returned: %d %s", st, b)
	}
	for _, e := range append(all, refusedEntries...) {
		if !found(ts, e) {
			t.Errorf("entry %s is not found after the retry", e.id)
		}
	}
	checkRebuild(t, ts.store)
}
