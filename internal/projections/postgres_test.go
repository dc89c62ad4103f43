package projections

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/eventlog/eventsdb"
	"github.com/memoryd/memoryd/internal/eventlog/eventspg"
	"github.com/memoryd/memoryd/internal/pgtest"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
	"github.com/memoryd/memoryd/migrations"
)

// testPostgresDB returns a new, migrated database on the PostgreSQL
// server of the tests (skipped without one).
func testPostgresDB(t *testing.T) *sql.DB { return pgtest.OpenMigrated(t) }

// pgTestDB is a PostgreSQL pool marked as the PostgreSQL store marks its
// DBTX values, so that queriesOf picks the PostgreSQL queries.
type pgTestDB struct{ *sql.DB }

func (pgTestDB) Engine() eventlog.Engine { return eventlog.Postgres }

// sqliteDB returns a migrated SQLite database in the test's folder.
func sqliteDB(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "q.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := migrations.Up(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestPostgresBloomHas: memoryd_bloom_has, the PostgreSQL function, is
// bloomHas: on random filters with probes that pass and probes that do
// not, and on malformed input (NULL, filters of other sizes, an odd last
// byte, bits past the filter), which passes.
func TestPostgresBloomHas(t *testing.T) {
	ctx := context.Background()
	db := testPostgresDB(t)
	rng := rand.New(rand.NewPCG(23, 1))
	randBytes := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	type pair struct{ filter, probes []byte }
	var cases []pair
	for range 300 {
		// A filter of real trigrams, probes of needles in it and not.
		data := randBytes(1 + rng.IntN(3000))
		f := trigramBloom(trigramBit, data)
		i := rng.IntN(len(data))
		j := min(len(data), i+rng.IntN(20))
		cases = append(cases,
			pair{f, bloomProbes(trigramBit, data[i:j])},
			pair{f, bloomProbes(trigramBit, randBytes(3+rng.IntN(10)))},
			pair{f, randBytes(rng.IntN(9))}, // any bits, odd lengths, bits past the filter
		)
	}
	for _, n := range []int{0, 1, 2047, 2049, 4096} {
		cases = append(cases, pair{randBytes(n), bloomProbes(trigramBit, []byte("needle"))})
	}
	full := make([]byte, bloomBytes)
	for i := range full {
		full[i] = 0xff
	}
	cases = append(cases,
		pair{nil, nil}, pair{nil, bloomProbes(trigramBit, []byte("abc"))}, pair{make([]byte, bloomBytes), nil},
		pair{make([]byte, bloomBytes), []byte{0xff, 0xff}}, // bit 65535: past the filter
		pair{make([]byte, bloomBytes), []byte{0x00, 0x40}}, // bit 16384: just past it
		pair{make([]byte, bloomBytes), []byte{0xff, 0x3f}}, // bit 16383: the last one, unset
		pair{full, []byte{0xff, 0x3f, 0x00}},               // set, then an odd byte
		pair{make([]byte, bloomBytes), []byte{0x01}},       // one byte: no probe
	)
	var passed, failed int
	for _, c := range cases {
		want := bloomHas(c.filter, c.probes)
		var got bool
		if err := db.QueryRowContext(ctx, "SELECT memoryd_bloom_has($1, $2)", c.filter, c.probes).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("memoryd_bloom_has(%d bytes, %x) = %v, bloomHas = %v", len(c.filter), c.probes, got, want)
		}
		if want {
			passed++
		} else {
			failed++
		}
	}
	if passed < 100 || failed < 100 {
		t.Fatalf("the cases are lopsided: %d pass, %d fail", passed, failed)
	}
}

// querierCall is one call of a projectionsdb.Querier method, and how
// its result is compared (unordered: the query has no ORDER BY).
type querierCall struct {
	method    string
	run       func(ctx context.Context, q projectionsdb.Querier) (any, error)
	unordered bool
}

// TestPostgresQuerier runs every projectionsdb.Querier method on a small
// fixture through the PostgreSQL adapter (queriesOf over a PostgreSQL
// DBTX) and through SQLite's queries, and compares what they return: the
// same rows, values and errors. It checks that every method is called.
func TestPostgresQuerier(t *testing.T) {
	ctx := context.Background()
	pg := pgTestDB{testPostgresDB(t)}
	lite := sqliteDB(t)
	// The queries under packedQueries: the SQL of each engine as it is.
	pq, ok := queriesOf(pg).(packedQueries).Querier.(pgQueries)
	if !ok {
		t.Fatalf("queriesOf(a PostgreSQL DBTX) is %T, want pgQueries under packedQueries", queriesOf(pg))
	}
	lq := queriesOf(lite).(packedQueries).Querier
	if _, ok := lq.(*projectionsdb.Queries); !ok {
		t.Fatalf("queriesOf(SQLite's *sql.DB) is %T, want *projectionsdb.Queries", lq)
	}
	if q, ok := queriesOf(pg.DB).(packedQueries).Querier.(pgQueries); !ok {
		t.Fatalf("queriesOf(PostgreSQL's *sql.DB) is %T, want pgQueries", q)
	}

	// The log the projections' reads join: each agent's stream, and the
	// branch change whose keep LastBranchChangeKeep reads. A NUL in JSON
	// (\u0000) is in the data as SQLite's queries and PostgreSQL's see it.
	evs := []eventsdb.InsertEventParams{
		{Position: 1, ID: "e1", Stream: "t1/root", StreamVersion: 1, TaskID: "t1", Type: "task.created", Schema: 1, RecordedAt: "2025-01-01T00:00:01Z", Data: `{}`},
		{Position: 2, ID: "e2", Stream: "t1/root", StreamVersion: 2, TaskID: "t1", Type: "agent.registered", Schema: 1, RecordedAt: "2025-01-01T00:00:02Z", Data: `{"session_key":"k\u00e9","budget":{"context_window":null,"max_tool_output_chars":9}}`},
		{Position: 3, ID: "e3", Stream: "t1/root/Émile", StreamVersion: 1, TaskID: "t1", Type: "agent.registered", Schema: 1, RecordedAt: "2025-01-01T00:00:03Z", Data: `{}`},
		{Position: 4, ID: "e4", Stream: "t2/root", StreamVersion: 1, TaskID: "t2", Type: "task.created", Schema: 1, RecordedAt: "2025-01-01T00:00:04Z", Data: `{}`},
		{Position: 5, ID: "e5", Stream: "t2/root", StreamVersion: 2, TaskID: "t2", Type: "agent.registered", Schema: 1, RecordedAt: "2025-01-01T00:00:05Z", Data: `{}`},
		{Position: 6, ID: "e6", Stream: "t1/root", StreamVersion: 3, TaskID: "t1", Type: "history.branch_changed", Schema: 1, RecordedAt: "2025-01-01T00:00:06Z", Data: `{"task_id":"t1","agent":"/root","revision":2,"keep":2,"append":["h3"],"length":3}`},
		{Position: 7, ID: "e7", Stream: "t1/root", StreamVersion: 4, TaskID: "t1", Type: "note.written", Schema: 1, RecordedAt: "2025-01-01T00:00:07Z", Data: `{"text":"a\u003cb"}`, RequestID: "r7"},
		// A re-attach and a branch switch after them, for the reads as of a
		// position. Their identifiers may be escaped but never hold U+0000
		// (attach and sync refuse it), which PostgreSQL's ->> would refuse.
		{Position: 8, ID: "e8", Stream: "t1/root", StreamVersion: 5, TaskID: "t1", Type: "agent.reattached", Schema: 1, RecordedAt: "2025-01-01T00:00:08Z", Data: `{"session_id":"s\u00e9","budget":{"context_window":1000,"max_tool_output_chars":7}}`},
		{Position: 9, ID: "e9", Stream: "t1/root", StreamVersion: 6, TaskID: "t1", Type: "history.branch_changed", Schema: 1, RecordedAt: "2025-01-01T00:00:09Z", Data: `{"task_id":"t1","agent":"/root","revision":3,"keep":1,"append":["h\u00e9"],"length":2}`},
	}
	for _, ev := range evs {
		ev.Packed = []byte{}
		if err := eventsdb.New(lite).InsertEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if err := eventspg.New(pg).InsertEvent(ctx, eventspg.InsertEventParams(ev)); err != nil {
			t.Fatal(err)
		}
	}

	text := []byte("héllo\x00world: a note's text may hold NUL\n")
	chunk := []byte("first entry text|second entry, with ünïcode|third")
	probes := func(needle string) []byte { return bloomProbes(trigramBit, []byte(needle)) }
	calls := []querierCall{
		// Writes.
		exec("InsertTask", func(ctx context.Context, q projectionsdb.Querier) error {
			if err := q.InsertTask(ctx, projectionsdb.InsertTaskParams{TaskID: "t1", RootSession: "s1", CreatedAt: "2025-01-01T00:00:01Z", Position: 1}); err != nil {
				return err
			}
			return q.InsertTask(ctx, projectionsdb.InsertTaskParams{TaskID: "t2", RootSession: "s2", CreatedAt: "2025-01-01T00:00:04Z", Position: 4})
		}),
		exec("InsertAgent", func(ctx context.Context, q projectionsdb.Querier) error {
			for _, a := range []projectionsdb.InsertAgentParams{
				{TaskID: "t1", Agent: "/root", SessionKey: "k1", SessionID: "s1", SessionFile: "/f1", Budget: `{"a":1}`, Position: 2},
				{TaskID: "t1", Agent: "/root/Émile", ParentAgent: "/root", SessionKey: "k2", Budget: `{}`, Position: 3},
				{TaskID: "t2", Agent: "/root", SessionKey: "k3", Budget: `{}`, Position: 5},
			} {
				if err := q.InsertAgent(ctx, a); err != nil {
					return err
				}
			}
			return nil
		}),
		exec("UpdateAgentSession", func(ctx context.Context, q projectionsdb.Querier) error {
			return q.UpdateAgentSession(ctx, projectionsdb.UpdateAgentSessionParams{SessionID: "s1b", SessionFile: "/f1b", Budget: `{"a":2}`, TaskID: "t1", Agent: "/root"})
		}),
		exec("UpsertAgentState", func(ctx context.Context, q projectionsdb.Querier) error {
			if err := q.UpsertAgentState(ctx, projectionsdb.UpsertAgentStateParams{TaskID: "t1", Agent: "/root", State: `{"s":1}`, Position: 2}); err != nil {
				return err
			}
			return q.UpsertAgentState(ctx, projectionsdb.UpsertAgentStateParams{TaskID: "t1", Agent: "/root", State: `{"s":2}`, Position: 6})
		}),
		exec("InsertNote", func(ctx context.Context, q projectionsdb.Querier) error {
			// Paths whose byte order is not a locale's: upper case first, é after z.
			for _, p := range []string{"b.md", "B.md", "é/x.md", "z.md", "é/y.md"} {
				if err := q.InsertNote(ctx, projectionsdb.InsertNoteParams{TaskID: "t1", Agent: "/root", Path: p, Bytes: 3, Revision: 1,
					CreatedAt: "c", UpdatedAt: "u", CreatedPosition: 7, UpdatedPosition: 7, Parts: 1}); err != nil {
					return err
				}
			}
			return nil
		}),
		exec("InsertNotePart", func(ctx context.Context, q projectionsdb.Querier) error {
			for i, part := range [][]byte{text[:5], text[5:], {}} {
				if err := q.InsertNotePart(ctx, projectionsdb.InsertNotePartParams{TaskID: "t1", Agent: "/root", Path: "é/x.md", Part: int64(2 - i), Text: part}); err != nil {
					return err
				}
			}
			return q.InsertNotePart(ctx, projectionsdb.InsertNotePartParams{TaskID: "t1", Agent: "/root", Path: "b.md", Part: 0, Text: []byte("abc")})
		}),
		exec("UpdateNote", func(ctx context.Context, q projectionsdb.Querier) error {
			return q.UpdateNote(ctx, projectionsdb.UpdateNoteParams{Bytes: int64(len(text)), Revision: 3, Parts: 3, UpdatedAt: "u2", UpdatedPosition: 7, TaskID: "t1", Agent: "/root", Path: "é/x.md"})
		}),
		exec("InsertNoteCall", func(ctx context.Context, q projectionsdb.Querier) error {
			return q.InsertNoteCall(ctx, projectionsdb.InsertNoteCallParams{TaskID: "t1", Agent: "/root", CallID: "c1", RequestKey: "rk", Result: `{"ok":true}`, Position: 7})
		}),
		exec("InsertHistoryEntry", func(ctx context.Context, q projectionsdb.Querier) error {
			for i, id := range []string{"h1", "h2", "h3"} {
				if err := q.InsertHistoryEntry(ctx, projectionsdb.InsertHistoryEntryParams{TaskID: "t1", Agent: "/root", EntryID: id, Item: int64(i), Role: "user",
					RawRole: "user", NChars: 10, Images: int64(i), CallsOnly: 0, ToolCallID: "tc" + id, ToolName: "read", Compaction: 0, Control: 1, MarkedWindow: "w1",
					Position: 6, TextChunk: int64(1 - i/2), TextOffset: int64(i * 17), TextBytes: 16, Calls: `[]`, Breaks: `[0]`}); err != nil {
					return err
				}
			}
			return nil
		}),
		exec("InsertOpenText", func(ctx context.Context, q projectionsdb.Querier) error {
			return q.InsertOpenText(ctx, projectionsdb.InsertOpenTextParams{TaskID: "t1", Agent: "/root", TextOffset: 0, EntryID: "h3", Breaks: `[0]`, Text: []byte("open\x00text")})
		}),
		exec("InsertChunk", func(ctx context.Context, q projectionsdb.Querier) error {
			for no := int64(1); no <= 3; no++ {
				data := append(chunk, byte('0'+no))
				if err := q.InsertChunk(ctx, projectionsdb.InsertChunkParams{TaskID: "t1", Agent: "/root", ChunkNo: no, Bloom: trigramBloom(trigramBit, data), Entries: `[]`, Data: data}); err != nil {
					return err
				}
			}
			return nil
		}),
		exec("UpsertHistoryBranch", func(ctx context.Context, q projectionsdb.Querier) error {
			if err := q.UpsertHistoryBranch(ctx, projectionsdb.UpsertHistoryBranchParams{TaskID: "t1", Agent: "/root", Revision: 1, Length: 2, Position: 2}); err != nil {
				return err
			}
			return q.UpsertHistoryBranch(ctx, projectionsdb.UpsertHistoryBranchParams{TaskID: "t1", Agent: "/root", Revision: 2, Length: 3, Position: 6})
		}),
		exec("InsertBranchEntry", func(ctx context.Context, q projectionsdb.Querier) error {
			for i, id := range []string{"h1", "h2", "h3"} {
				if err := q.InsertBranchEntry(ctx, projectionsdb.InsertBranchEntryParams{TaskID: "t1", Agent: "/root", BranchIndex: int64(i), EntryID: id, PrefixHash: []byte{byte(i), 0, 0xff}}); err != nil {
					return err
				}
			}
			return nil
		}),
		exec("InsertItem", func(ctx context.Context, q projectionsdb.Querier) error {
			for i, id := range []string{"h1", "h2", "h3"} {
				if err := q.InsertItem(ctx, projectionsdb.InsertItemParams{TaskID: "t1", Agent: "/root", BranchIndex: int64(i), EntryID: id, WindowOrdinal: int64(1 + i/2),
					WindowID: fmt.Sprintf("w%d", 1+i/2), Role: "assistant", RawRole: "assistant", ToolNamespace: "ns", ToolName: "read", ToolCallID: "tc", Hidden: int64(i % 2), NChars: 5, Images: 0}); err != nil {
					return err
				}
			}
			return nil
		}),
		exec("InsertCall", func(ctx context.Context, q projectionsdb.Querier) error {
			for _, c := range []projectionsdb.InsertCallParams{
				{TaskID: "t1", Agent: "/root", BranchIndex: 1, CallID: "cb", ToolName: "write"},
				{TaskID: "t1", Agent: "/root", BranchIndex: 1, CallID: "ca", ToolName: "read"},
				{TaskID: "t1", Agent: "/root", BranchIndex: 1, CallID: "ca", ToolName: "ignored"}, // a conflict: ignored
				{TaskID: "t1", Agent: "/root", BranchIndex: 2, CallID: "ca", ToolName: "grep"},
			} {
				if err := q.InsertCall(ctx, c); err != nil {
					return err
				}
			}
			return nil
		}),
		exec("SetTaskRetain", func(ctx context.Context, q projectionsdb.Querier) error {
			for task, retain := range map[string]string{"t1": "30d", "none": "forever"} {
				n, err := q.SetTaskRetain(ctx, projectionsdb.SetTaskRetainParams{Retain: retain, TaskID: task})
				if err != nil {
					return err
				}
				if want := map[string]int64{"t1": 1}[task]; n != want { // t1 has a row, none has not
					return fmt.Errorf("SetTaskRetain of %s: %d rows, want %d", task, n, want)
				}
			}
			return nil
		}),

		// Reads.
		read("GetTask", func(ctx context.Context, q projectionsdb.Querier) (any, error) { return q.GetTask(ctx, "t1") }),
		read("GetTask", func(ctx context.Context, q projectionsdb.Querier) (any, error) { return q.GetTask(ctx, "nope") }),
		read("GetAgent", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.GetAgent(ctx, projectionsdb.GetAgentParams{TaskID: "t1", Agent: "/root"})
		}),
		read("GetAgentWithState", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.GetAgentWithState(ctx, projectionsdb.GetAgentWithStateParams{TaskID: "t1", Agent: "/root"})
		}),
		read("GetAgentWithState", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.GetAgentWithState(ctx, projectionsdb.GetAgentWithStateParams{TaskID: "t1", Agent: "/root/Émile"}) // no state row
		}),
		read("GetAgentWithStateAndNote", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.GetAgentWithStateAndNote(ctx, projectionsdb.GetAgentWithStateAndNoteParams{NoteAgent: "/root", NotePath: "é/x.md", TaskID: "t1", Agent: "/root"})
		}),
		read("GetAgentWithStateAndNote", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.GetAgentWithStateAndNote(ctx, projectionsdb.GetAgentWithStateAndNoteParams{NoteAgent: "/root", NotePath: "none.md", TaskID: "t1", Agent: "/root"})
		}),
		read("GetAgentWithStateAndNoteWrite", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.GetAgentWithStateAndNoteWrite(ctx, projectionsdb.GetAgentWithStateAndNoteWriteParams{NoteAgent: "/root", NotePath: "é/x.md", CallID: "c1", TaskID: "t1", Agent: "/root"})
		}),
		read("GetAgentWithStateAndNoteWrite", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.GetAgentWithStateAndNoteWrite(ctx, projectionsdb.GetAgentWithStateAndNoteWriteParams{NoteAgent: "/root", NotePath: "new.md", CallID: "c2", TaskID: "t1", Agent: "/root/Émile"})
		}),
		read("AgentBySessionKey", func(ctx context.Context, q projectionsdb.Querier) (any, error) { return q.AgentBySessionKey(ctx, "k2") }),
		read("AgentInAnyTask", func(ctx context.Context, q projectionsdb.Querier) (any, error) { return q.AgentInAnyTask(ctx, "/root") }),
		read("TaskAgents", func(ctx context.Context, q projectionsdb.Querier) (any, error) { return q.TaskAgents(ctx, "t1") }),
		read("TaskAgents", func(ctx context.Context, q projectionsdb.Querier) (any, error) { return q.TaskAgents(ctx, "none") }),
		read("NoteWithParts", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.NoteWithParts(ctx, projectionsdb.NoteWithPartsParams{TaskID: "t1", Agent: "/root", Path: "é/x.md"})
		}),
		read("NoteWithParts", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.NoteWithParts(ctx, projectionsdb.NoteWithPartsParams{TaskID: "t1", Agent: "/root", Path: "z.md"}) // no parts
		}),
		read("NoteParts", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.NoteParts(ctx, projectionsdb.NotePartsParams{TaskID: "t1", Agent: "/root", Path: "é/x.md"})
		}),
		read("NoteSize", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.NoteSize(ctx, projectionsdb.NoteSizeParams{TaskID: "t1", Agent: "/root", Path: "é/x.md"})
		}),
		read("ListNotes", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.ListNotes(ctx, projectionsdb.ListNotesParams{TaskID: "t1", Agent: "/root", PrefixChars: 0, Prefix: ""})
		}),
		read("ListNotes", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.ListNotes(ctx, projectionsdb.ListNotesParams{TaskID: "t1", Agent: "/root", PrefixChars: 2, Prefix: "é/"}) // 2 characters, 3 bytes
		}),
		read("TaskNotes", func(ctx context.Context, q projectionsdb.Querier) (any, error) { return q.TaskNotes(ctx, "t1") }),
		read("NotePartsUnder", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.NotePartsUnder(ctx, projectionsdb.NotePartsUnderParams{TaskID: "t1", Agent: "/root", PrefixChars: 0, Prefix: ""})
		}),
		read("NotePartsUnder", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.NotePartsUnder(ctx, projectionsdb.NotePartsUnderParams{TaskID: "t1", Agent: "/root", PrefixChars: 2, Prefix: "é/"})
		}),
		read("GetHistoryEntry", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.GetHistoryEntry(ctx, projectionsdb.GetHistoryEntryParams{TaskID: "t1", Agent: "/root", EntryID: "h2"})
		}),
		unordered("StoredEntryIDs", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.StoredEntryIDs(ctx, projectionsdb.StoredEntryIDsParams{TaskID: "t1", Agent: "/root", Ids: `["h3","x","h1","h\u0032"]`})
		}),
		read("FirstUnstoredEntry", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.FirstUnstoredEntry(ctx, projectionsdb.FirstUnstoredEntryParams{Ids: `["h1","h2","x","y"]`, TaskID: "t1", Agent: "/root"})
		}),
		read("FirstUnstoredEntry", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.FirstUnstoredEntry(ctx, projectionsdb.FirstUnstoredEntryParams{Ids: `["h1","h2"]`, TaskID: "t1", Agent: "/root"}) // no row
		}),
		read("LastChunkNo", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.LastChunkNo(ctx, projectionsdb.LastChunkNoParams{TaskID: "t1", Agent: "/root"})
		}),
		read("LastChunkNo", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.LastChunkNo(ctx, projectionsdb.LastChunkNoParams{TaskID: "t2", Agent: "/root"})
		}),
		read("OpenTextsEnd", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.OpenTextsEnd(ctx, projectionsdb.OpenTextsEndParams{TaskID: "t1", Agent: "/root"})
		}),
		read("OpenTextsEnd", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.OpenTextsEnd(ctx, projectionsdb.OpenTextsEndParams{TaskID: "t2", Agent: "/root"})
		}),
		read("OpenTexts", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.OpenTexts(ctx, projectionsdb.OpenTextsParams{TaskID: "t1", Agent: "/root"})
		}),
		read("OpenText", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.OpenText(ctx, projectionsdb.OpenTextParams{TaskID: "t1", Agent: "/root", TextOffset: 0})
		}),
		read("ChunkText", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.ChunkText(ctx, projectionsdb.ChunkTextParams{Start: 18, NBytes: 28, TaskID: "t1", Agent: "/root", ChunkNo: 2})
		}),
		read("ChunkText", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.ChunkText(ctx, projectionsdb.ChunkTextParams{Start: 50, NBytes: 100, TaskID: "t1", Agent: "/root", ChunkNo: 2}) // past the end
		}),
		read("ChunkText", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.ChunkText(ctx, projectionsdb.ChunkTextParams{Start: 1, NBytes: 0, TaskID: "t1", Agent: "/root", ChunkNo: 9}) // no chunk
		}),
		read("CandidateChunks", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.CandidateChunks(ctx, projectionsdb.CandidateChunksParams{TaskID: "t1", Agent: "/root", Probes: probes("ünïcode")})
		}),
		read("CandidateChunks", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.CandidateChunks(ctx, projectionsdb.CandidateChunksParams{TaskID: "t1", Agent: "/root", Probes: probes("third3")})
		}),
		read("ChunkData", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.ChunkData(ctx, projectionsdb.ChunkDataParams{TaskID: "t1", Agent: "/root", ChunkNo: 1})
		}),
		read("ChunkDataIfCandidate", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.ChunkDataIfCandidate(ctx, projectionsdb.ChunkDataIfCandidateParams{TaskID: "t1", Agent: "/root", ChunkNo: 1, Probes: probes("second")})
		}),
		read("ChunkDataIfCandidate", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.ChunkDataIfCandidate(ctx, projectionsdb.ChunkDataIfCandidateParams{TaskID: "t1", Agent: "/root", ChunkNo: 1, Probes: probes("zzzqqqxxx")})
		}),
		read("GetHistoryBranch", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.GetHistoryBranch(ctx, projectionsdb.GetHistoryBranchParams{TaskID: "t1", Agent: "/root"})
		}),
		read("BranchEntryIDs", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.BranchEntryIDs(ctx, projectionsdb.BranchEntryIDsParams{TaskID: "t1", Agent: "/root"})
		}),
		read("BranchEntryIDsFrom", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.BranchEntryIDsFrom(ctx, projectionsdb.BranchEntryIDsFromParams{TaskID: "t1", Agent: "/root", FromIndex: 1, MaxCount: 1})
		}),
		unordered("OnBranchBefore", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.OnBranchBefore(ctx, projectionsdb.OnBranchBeforeParams{TaskID: "t1", Agent: "/root", Ids: `["h3","h2","h1","x"]`, BeforeIndex: 2})
		}),
		read("LastBranchChangeKeep", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.LastBranchChangeKeep(ctx, projectionsdb.LastBranchChangeKeepParams{TaskID: "t1", Agent: "/root"})
		}),
		read("LastBranchChangeKeep", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.LastBranchChangeKeep(ctx, projectionsdb.LastBranchChangeKeepParams{TaskID: "t2", Agent: "/root"})
		}),
		read("BranchLengthAt", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.BranchLengthAt(ctx, projectionsdb.BranchLengthAtParams{Stream: "t1/root", At: 7})
		}),
		read("BranchLengthAt", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.BranchLengthAt(ctx, projectionsdb.BranchLengthAtParams{Stream: "t1/root", At: 5}) // before the first
		}),
		read("BranchChangesAfter", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.BranchChangesAfter(ctx, projectionsdb.BranchChangesAfterParams{Stream: "t1/root", After: 2})
		}),
		read("BranchChangesAfter", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.BranchChangesAfter(ctx, projectionsdb.BranchChangesAfterParams{Stream: "t1/root", After: 9}) // none
		}),
		read("BudgetAt", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.BudgetAt(ctx, projectionsdb.BudgetAtParams{Stream: "t1/root", At: 7})
		}),
		read("BudgetAt", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.BudgetAt(ctx, projectionsdb.BudgetAtParams{Stream: "t1/root", At: 9}) // re-attached
		}),
		read("BudgetAt", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.BudgetAt(ctx, projectionsdb.BudgetAtParams{Stream: "t1/root", At: 1}) // not registered
		}),
		read("BranchPrefixHash", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.BranchPrefixHash(ctx, projectionsdb.BranchPrefixHashParams{TaskID: "t1", Agent: "/root", BranchIndex: 2})
		}),
		read("LastItemBefore", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.LastItemBefore(ctx, projectionsdb.LastItemBeforeParams{TaskID: "t1", Agent: "/root", BranchIndex: 2})
		}),
		unordered("WindowIDsBefore", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.WindowIDsBefore(ctx, projectionsdb.WindowIDsBeforeParams{TaskID: "t1", Agent: "/root", BranchIndex: 3})
		}),
		read("CallToolName", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.CallToolName(ctx, projectionsdb.CallToolNameParams{TaskID: "t1", Agent: "/root", CallID: "ca", BranchIndex: 3})
		}),
		read("HistoryWindows", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryWindows(ctx, projectionsdb.HistoryWindowsParams{TaskID: "t1", Agent: "/root", BranchEnd: WholeBranch})
		}),
		read("HistoryWindows", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryWindows(ctx, projectionsdb.HistoryWindowsParams{TaskID: "t1", Agent: "/root", BranchEnd: 2})
		}),
		read("HistoryItemsAfter", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryItemsAfter(ctx, projectionsdb.HistoryItemsAfterParams{TaskID: "t1", Agent: "/root", After: 0, BranchEnd: WholeBranch, MaxItems: 5})
		}),
		read("HistoryItemsAfter", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryItemsAfter(ctx, projectionsdb.HistoryItemsAfterParams{TaskID: "t1", Agent: "/root", After: -1, BranchEnd: 2, MaxItems: 5})
		}),
		read("HistoryItemsBefore", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryItemsBefore(ctx, projectionsdb.HistoryItemsBeforeParams{TaskID: "t1", Agent: "/root", Before: 3, MaxItems: 2})
		}),
		exec("InsertItem", func(ctx context.Context, q projectionsdb.Querier) error { // user requests, one hidden
			for i, id := range []string{"u1", "u2", "u3"} {
				if err := q.InsertItem(ctx, projectionsdb.InsertItemParams{TaskID: "t1", Agent: "/root", BranchIndex: int64(10 + i), EntryID: id, WindowOrdinal: 2,
					WindowID: "w2", Role: "user", RawRole: "user", Hidden: int64(i % 2), NChars: 3}); err != nil {
					return err
				}
			}
			return nil
		}),
		read("NewestUserRequests", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.NewestUserRequests(ctx, projectionsdb.NewestUserRequestsParams{TaskID: "t1", Agent: "/root", MaxItems: 1})
		}),
		read("NewestUserRequests", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			rows, err := q.NewestUserRequests(ctx, projectionsdb.NewestUserRequestsParams{TaskID: "t1", Agent: "/root", MaxItems: 5})
			if err == nil && (len(rows) != 2 || rows[0].EntryID != "u3" || rows[1].EntryID != "u1") {
				return nil, fmt.Errorf("NewestUserRequests: %+v, want u3 then u1", rows)
			}
			return rows, err
		}),
		read("CountUserRequests", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			n, err := q.CountUserRequests(ctx, projectionsdb.CountUserRequestsParams{TaskID: "t1", Agent: "/root"})
			if err == nil && n != 2 {
				return nil, fmt.Errorf("CountUserRequests: %d, want 2", n)
			}
			return n, err
		}),
		read("HistoryItemPlacesAfter", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryItemPlacesAfter(ctx, projectionsdb.HistoryItemPlacesAfterParams{TaskID: "t1", Agent: "/root", After: -1, BranchEnd: WholeBranch, MaxItems: 5})
		}),
		read("HistoryItemPlacesAfter", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryItemPlacesAfter(ctx, projectionsdb.HistoryItemPlacesAfterParams{TaskID: "t1", Agent: "/root", After: 0, BranchEnd: 2, MaxItems: 5})
		}),
		read("HistoryItemPlacesBefore", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryItemPlacesBefore(ctx, projectionsdb.HistoryItemPlacesBeforeParams{TaskID: "t1", Agent: "/root", Before: 9, MaxItems: 2})
		}),
		read("HistoryCallsBetween", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryCallsBetween(ctx, projectionsdb.HistoryCallsBetweenParams{TaskID: "t1", Agent: "/root", Low: 0, High: 2})
		}),
		read("HistoryCallsAt", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryCallsAt(ctx, projectionsdb.HistoryCallsAtParams{TaskID: "t1", Agent: "/root", BranchIndex: 1})
		}),
		read("HistoryItemByEntry", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryItemByEntry(ctx, projectionsdb.HistoryItemByEntryParams{TaskID: "t1", Agent: "/root", EntryID: "h2"})
		}),
		read("HistoryEntryText", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryEntryText(ctx, projectionsdb.HistoryEntryTextParams{TaskID: "t1", Agent: "/root", EntryID: "h3"})
		}),
		read("HistoryEntryPosition", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryEntryPosition(ctx, projectionsdb.HistoryEntryPositionParams{TaskID: "t1", Agent: "/root", EntryID: "h1"})
		}),
		read("GetAgentState", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.GetAgentState(ctx, projectionsdb.GetAgentStateParams{TaskID: "t1", Agent: "/root"})
		}),
		read("ChunkFilters", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.ChunkFilters(ctx, projectionsdb.ChunkFiltersParams{TaskID: "t1", Agent: "/root", After: 1, Until: 3})
		}),
		read("ChunkAgents", func(ctx context.Context, q projectionsdb.Querier) (any, error) { return q.ChunkAgents(ctx) }),
		read("CandidateChunksAmong", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.CandidateChunksAmong(ctx, projectionsdb.CandidateChunksAmongParams{TaskID: "t1", Agent: "/root", ChunkNos: `[3,1,7]`, Probes: probes("first")})
		}),
		read("TasksByActivity", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.TasksByActivity(ctx, projectionsdb.TasksByActivityParams{Before: 100, MaxTasks: 10})
		}),
		read("TasksByActivity", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.TasksByActivity(ctx, projectionsdb.TasksByActivityParams{Before: 7, MaxTasks: 1})
		}),
		read("TasksForRetention", func(ctx context.Context, q projectionsdb.Querier) (any, error) { return q.TasksForRetention(ctx) }),
		read("TaskForRetention", func(ctx context.Context, q projectionsdb.Querier) (any, error) { return q.TaskForRetention(ctx, "t1") }),
		read("TaskForRetention", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.TaskForRetention(ctx, "none")
		}),
		read("AgentsOfTasks", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.AgentsOfTasks(ctx, `["t2","t1","none"]`)
		}),

		// Deletes, and what they leave.
		exec("DeleteNoteParts", func(ctx context.Context, q projectionsdb.Querier) error {
			return q.DeleteNoteParts(ctx, projectionsdb.DeleteNotePartsParams{TaskID: "t1", Agent: "/root", Path: "é/x.md"})
		}),
		read("NoteParts", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.NoteParts(ctx, projectionsdb.NotePartsParams{TaskID: "t1", Agent: "/root", Path: "é/x.md"})
		}),
		exec("DeleteOpenTexts", func(ctx context.Context, q projectionsdb.Querier) error {
			return q.DeleteOpenTexts(ctx, projectionsdb.DeleteOpenTextsParams{TaskID: "t1", Agent: "/root"})
		}),
		read("OpenTexts", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.OpenTexts(ctx, projectionsdb.OpenTextsParams{TaskID: "t1", Agent: "/root"})
		}),
		exec("DeleteBranchEntriesFrom", func(ctx context.Context, q projectionsdb.Querier) error {
			return q.DeleteBranchEntriesFrom(ctx, projectionsdb.DeleteBranchEntriesFromParams{TaskID: "t1", Agent: "/root", BranchIndex: 1})
		}),
		read("BranchEntryIDs", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.BranchEntryIDs(ctx, projectionsdb.BranchEntryIDsParams{TaskID: "t1", Agent: "/root"})
		}),
		exec("DeleteItemsFrom", func(ctx context.Context, q projectionsdb.Querier) error {
			return q.DeleteItemsFrom(ctx, projectionsdb.DeleteItemsFromParams{TaskID: "t1", Agent: "/root", BranchIndex: 2})
		}),
		exec("DeleteCallsFrom", func(ctx context.Context, q projectionsdb.Querier) error {
			return q.DeleteCallsFrom(ctx, projectionsdb.DeleteCallsFromParams{TaskID: "t1", Agent: "/root", BranchIndex: 2})
		}),
		read("HistoryItemPlacesAfter", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryItemPlacesAfter(ctx, projectionsdb.HistoryItemPlacesAfterParams{TaskID: "t1", Agent: "/root", After: -1, BranchEnd: WholeBranch, MaxItems: 5})
		}),
		read("HistoryCallsBetween", func(ctx context.Context, q projectionsdb.Querier) (any, error) {
			return q.HistoryCallsBetween(ctx, projectionsdb.HistoryCallsBetweenParams{TaskID: "t1", Agent: "/root", Low: 0, High: 9})
		}),
	}

	called := map[string]bool{}
	for i, c := range calls {
		called[c.method] = true
		lv, lerr := c.run(ctx, lq)
		pv, perr := c.run(ctx, pq)
		if lerr != nil && !errors.Is(lerr, sql.ErrNoRows) {
			t.Fatalf("#%d %s on SQLite: %v", i, c.method, lerr)
		}
		if perr != nil && !errors.Is(perr, sql.ErrNoRows) {
			t.Fatalf("#%d %s on PostgreSQL: %v", i, c.method, perr)
		}
		if (lerr == nil) != (perr == nil) {
			t.Errorf("#%d %s: SQLite's error %v, PostgreSQL's %v", i, c.method, lerr, perr)
			continue
		}
		lv, pv = emptyBytesAsNil(lv), emptyBytesAsNil(pv)
		if c.unordered {
			lv, pv = sortedRows(lv), sortedRows(pv)
		}
		if !reflect.DeepEqual(lv, pv) {
			t.Errorf("#%d %s:\nSQLite     %#v\nPostgreSQL %#v", i, c.method, lv, pv)
		}
	}

	// Digest, Count and Diff (raw SQL, digest.go) read the same rows
	// from both engines, to the byte.
	ld, err := digest(ctx, source{db: lite})
	if err != nil {
		t.Fatal(err)
	}
	pd, err := digest(ctx, source{db: pg.DB})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ld, pd) {
		t.Errorf("Digest:\nSQLite     %v\nPostgreSQL %v", ld, pd)
	}
	lc, err := Count(ctx, lite)
	if err != nil {
		t.Fatal(err)
	}
	pc, err := Count(ctx, pg.DB)
	if err != nil || lc != pc {
		t.Errorf("Count: SQLite %+v, PostgreSQL %+v, %v", lc, pc, err)
	}
	if diffs, err := diff(ctx, source{db: lite}, source{db: pg.DB}, 3); err != nil || len(diffs) > 0 {
		t.Errorf("Diff(SQLite, PostgreSQL): %+v, %v", diffs, err)
	}

	querier := reflect.TypeFor[projectionsdb.Querier]()
	for i := range querier.NumMethod() {
		if m := querier.Method(i).Name; !called[m] {
			t.Errorf("%s is not called: add it to the fixture", m)
		}
	}
}

func exec(method string, run func(context.Context, projectionsdb.Querier) error) querierCall {
	return querierCall{method: method, run: func(ctx context.Context, q projectionsdb.Querier) (any, error) { return nil, run(ctx, q) }}
}

func read(method string, run func(context.Context, projectionsdb.Querier) (any, error)) querierCall {
	return querierCall{method: method, run: run}
}

func unordered(method string, run func(context.Context, projectionsdb.Querier) (any, error)) querierCall {
	return querierCall{method: method, run: run, unordered: true}
}

// emptyBytesAsNil returns v with every empty []byte in it made nil:
// SQLite's driver returns a zero-length BLOB as nil, PostgreSQL's an empty
// bytea as []byte{}, and nothing reads them differently (the code never
// tests a query's bytes against nil; Digest hashes both as "").
func emptyBytesAsNil(v any) any {
	if v == nil {
		return nil
	}
	return emptyBytesAsNilValue(reflect.ValueOf(v)).Interface()
}

func emptyBytesAsNilValue(v reflect.Value) reflect.Value {
	switch {
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Uint8:
		if v.Len() == 0 {
			return reflect.Zero(v.Type())
		}
	case v.Kind() == reflect.Slice:
		out := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		for i := range v.Len() {
			out.Index(i).Set(emptyBytesAsNilValue(v.Index(i)))
		}
		if v.IsNil() {
			return v
		}
		return out
	case v.Kind() == reflect.Struct:
		out := reflect.New(v.Type()).Elem()
		for i := range v.NumField() {
			out.Field(i).Set(emptyBytesAsNilValue(v.Field(i)))
		}
		return out
	}
	return v
}

// sortedRows returns v, a slice of rows, sorted by their printed form.
func sortedRows(v any) any {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Slice {
		return v
	}
	rows := make([]reflect.Value, rv.Len())
	for i := range rows {
		rows[i] = rv.Index(i)
	}
	slices.SortFunc(rows, func(a, b reflect.Value) int {
		return strings.Compare(fmt.Sprintf("%#v", a.Interface()), fmt.Sprintf("%#v", b.Interface()))
	})
	out := reflect.MakeSlice(rv.Type(), len(rows), len(rows))
	for i, r := range rows {
		out.Index(i).Set(r)
	}
	return out.Interface()
}

// TestPostgresNotesAsSQLite applies the same note writes and appends
// (empty, multi-byte and NUL texts, overwrites, call ids) through the
// projections to a store on SQLite and one on PostgreSQL: every note
// reads back its text on both, and the two databases' projections have
// the same digest, row for row.
func TestPostgresNotesAsSQLite(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.NewDatabase(t)
	// Both stores record the same times: the digests compare them.
	fixed := func() time.Time { return time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC) }
	lite, err := open(ctx, eventlog.ParseLocation(filepath.Join(t.TempDir(), "memory.db")), eventlog.Options{Synchronous: "off", Now: fixed}, nil, noteFlush{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lite.Close() })
	pg, err := open(ctx, eventlog.ParseLocation(dsn), eventlog.Options{Now: fixed}, nil, noteFlush{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })

	model := map[string]string{}
	ops := randomNoteOps(rand.New(rand.NewPCG(23, 2)), 300, model)
	for _, store := range []*eventlog.Store{lite, pg} {
		registerNoteAgents(t, store)
		appendNoteOps(t, store, ops)
	}
	nul := 0
	for key, want := range model {
		if strings.IndexByte(want, 0) >= 0 {
			nul++
		}
		var agent, path string
		fmt.Sscan(key, &agent, &path)
		for name, store := range map[string]*eventlog.Store{"SQLite": lite, "PostgreSQL": pg} {
			rt, err := store.BeginRead(ctx)
			if err != nil {
				t.Fatal(err)
			}
			n, err := NewReader(rt.DB()).Note(ctx, "t1", agent, path)
			rt.Close()
			if err != nil || n.Content != want || n.Bytes != int64(len(want)) {
				t.Fatalf("%s: %s reads %q (%d bytes), %v; want %q", name, key, n.Content, n.Bytes, err, want)
			}
			// The same through the reader pool (Store.Reader).
			if n, err := NewReader(store.Reader()).Note(ctx, "t1", agent, path); err != nil || n.Content != want {
				t.Fatalf("%s, reader pool: %s reads %q, %v; want %q", name, key, n.Content, err, want)
			}
		}
	}
	if nul == 0 {
		t.Fatal("no note holds a NUL: the test checks nothing about it")
	}
	if l, p := digestOf(t, lite), digestOf(t, pg); l != p {
		t.Errorf("digest: SQLite %s, PostgreSQL %s", l, p)
	}
	if diffs, err := Diff(ctx, lite, pg, 3); err != nil || len(diffs) > 0 {
		t.Errorf("Diff(SQLite, PostgreSQL): %+v, %v", diffs, err)
	}
}
