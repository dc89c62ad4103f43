package eventlog_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/memoryd/memoryd/internal/eventlog/eventsdb"
	"github.com/memoryd/memoryd/internal/eventlog/eventspg"
	"github.com/memoryd/memoryd/internal/pgtest"
	"github.com/memoryd/memoryd/migrations"
)

// TestPostgresEventQueries runs every query of eventsdb (SQLite) and its
// counterpart in eventspg (PostgreSQL) on the same log, and compares what
// they return (converted to eventsdb's types: the conversions compile only
// while both packages' structs agree). It checks that every query is run.
// It is skipped unless MEMORYD_TEST_POSTGRES names a PostgreSQL server.
func TestPostgresEventQueries(t *testing.T) {
	ctx := context.Background()
	pg := testPostgresDB(t)
	lite, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "e.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	if err := migrations.Up(ctx, lite); err != nil {
		t.Fatal(err)
	}
	lq, pq := eventsdb.New(lite), eventspg.New(pg)

	types := []string{"task.created", "agent.registered", "note.written", "history.entry_recorded", "note.appended", "agent.checkpointed", "history.branch_changed", "audit.tool_called"}
	// Note texts with escaped NULs (which PostgreSQL's JSON functions
	// refuse), an escaped backslash before "u0000", and both.
	texts := []string{`x\u0000y`, `\\u0000`, `a\\\u0000\u0000b`, `plain`}
	streams := []string{"t1/root", "t1/root/Émile", "t2/root", "t1/root/B"}
	version := map[string]int64{}
	for p := int64(1); p <= 40; p++ {
		stream := streams[p%int64(len(streams))]
		version[stream]++
		task := stream[:2]
		ev := eventsdb.InsertEventParams{Position: p, ID: "e" + string(rune('A'+p)), Stream: stream, StreamVersion: version[stream], TaskID: task,
			Type: types[p%int64(len(types))], Schema: 1, RecordedAt: "2025-01-01T00:00:00Z", RequestID: "r",
			Data: fmt.Sprintf(`{"task_id":%q,"agent":"/root","path":"%s.md","text":"%s"}`, task, []string{"a", "é"}[p%2], texts[p%int64(len(texts))]), Packed: []byte{}}
		if p%7 == 0 { // as a compressed entry's: bytes no text could be
			ev.Packed = []byte("\x28\xb5\x2f\xfd\x00packed")
		}
		if err := lq.InsertEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if err := pq.InsertEvent(ctx, eventspg.InsertEventParams(ev)); err != nil {
			t.Fatal(err)
		}
	}
	// A stream of note writes and appends mixed, for StreamNoteSizes.
	noteLog := []struct{ typ, path, text string }{
		{"note.appended", "a.md", `x\u0000y`}, {"note.written", "é.md", "plain"}, {"note.appended", "a.md", "é"},
		{"note.written", "a.md", `a\\\u0000\u0000b`}, {"note.appended", "a.md", `\ud83d\ude00`}, {"note.appended", "é.md", "q"},
		{"note.written", "b \"c\".md", "zz"}, {"note.appended", "a.md", `\\u0000`},
	}
	for i, n := range noteLog {
		p := int64(41 + i)
		ev := eventsdb.InsertEventParams{Position: p, ID: fmt.Sprintf("n%d", i), Stream: "t3/root", StreamVersion: int64(i + 1), TaskID: "t3",
			Type: n.typ, Schema: 1, RecordedAt: "2025-01-01T00:00:00Z", RequestID: "r",
			Data: fmt.Sprintf(`{"task_id":"t3","agent":"/root","path":%q,"text":"%s"}`, n.path, n.text), Packed: []byte{}}
		if err := lq.InsertEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
		if err := pq.InsertEvent(ctx, eventspg.InsertEventParams(ev)); err != nil {
			t.Fatal(err)
		}
	}
	// An empty packed scans as nil from SQLite and as empty from PostgreSQL.
	event := func(e eventspg.Event) eventsdb.Event {
		if len(e.Packed) == 0 {
			e.Packed = nil
		}
		return eventsdb.Event(e)
	}
	events := func(pg []eventspg.Event) []eventsdb.Event {
		out := make([]eventsdb.Event, len(pg))
		for i, e := range pg {
			out[i] = event(e)
		}
		return out
	}
	type result struct {
		v   any
		err error
	}
	called := map[string]bool{"InsertEvent": true, "WithTx": true}
	check := func(name string, l, p result) {
		t.Helper()
		called[name] = true
		if l.err != nil || p.err != nil {
			t.Fatalf("%s: SQLite %v, PostgreSQL %v", name, l.err, p.err)
		}
		if !reflect.DeepEqual(l.v, p.v) {
			t.Errorf("%s:\nSQLite     %#v\nPostgreSQL %#v", name, l.v, p.v)
		}
	}
	one := func(v any, err error) result { return result{v, err} }
	noteEvents := 0

	check("LastPosition", one(lq.LastPosition(ctx)), one(pq.LastPosition(ctx)))
	check("CountEvents", one(lq.CountEvents(ctx)), one(pq.CountEvents(ctx)))
	for _, pos := range []int64{5, 7} { // 7: packed
		l, lerr := lq.EventAt(ctx, pos)
		p, perr := pq.EventAt(ctx, pos)
		check("EventAt", result{l, lerr}, result{event(p), perr})
	}
	for _, s := range []string{"t1/root/Émile", "none"} {
		check("StreamVersion", one(lq.StreamVersion(ctx, s)), one(pq.StreamVersion(ctx, s)))
		la := eventsdb.StreamBoundsParams{Stream: s, Until: 30}
		lb, lerr := lq.StreamBounds(ctx, la)
		pb, perr := pq.StreamBounds(ctx, eventspg.StreamBoundsParams(la))
		check("StreamBounds", result{lb, lerr}, result{eventsdb.StreamBoundsRow(pb), perr})
	}
	{
		a := eventsdb.EventsAfterParams{After: 3, Until: 30, MaxEvents: 10}
		l, lerr := lq.EventsAfter(ctx, a)
		p, perr := pq.EventsAfter(ctx, eventspg.EventsAfterParams(a))
		check("EventsAfter", result{l, lerr}, result{events(p), perr})
	}
	{
		a := eventsdb.TaskEventsAfterParams{TaskID: "t1", After: 3, Until: 30, MaxEvents: 10}
		l, lerr := lq.TaskEventsAfter(ctx, a)
		p, perr := pq.TaskEventsAfter(ctx, eventspg.TaskEventsAfterParams(a))
		check("TaskEventsAfter", result{l, lerr}, result{events(p), perr})
	}
	{
		a := eventsdb.TaskEventsWithoutNotesAfterParams{TaskID: "t1", After: 0, Until: 30, MaxEvents: 10}
		l, lerr := lq.TaskEventsWithoutNotesAfter(ctx, a)
		p, perr := pq.TaskEventsWithoutNotesAfter(ctx, eventspg.TaskEventsWithoutNotesAfterParams(a))
		check("TaskEventsWithoutNotesAfter", result{l, lerr}, result{events(p), perr})
	}
	{
		a := eventsdb.StreamNotesAfterParams{Stream: "t1/root", After: 0, Until: 40, MaxEvents: 10}
		l, lerr := lq.StreamNotesAfter(ctx, a)
		p, perr := pq.StreamNotesAfter(ctx, eventspg.StreamNotesAfterParams(a))
		check("StreamNotesAfter", result{l, lerr}, result{events(p), perr})
	}
	{
		a := eventsdb.StreamEventsAfterParams{Stream: "t1/root", After: 0, Until: 40, MaxEvents: 4}
		l, lerr := lq.StreamEventsAfter(ctx, a)
		p, perr := pq.StreamEventsAfter(ctx, eventspg.StreamEventsAfterParams(a))
		check("StreamEventsAfter", result{l, lerr}, result{events(p), perr})
	}
	for _, path := range []string{"a.md", "é.md", "none.md"} {
		for _, stream := range streams {
			a := eventsdb.NoteEventsAfterParams{Stream: stream, After: 0, Until: 40, Path: path, MaxEvents: 100}
			l, lerr := lq.NoteEventsAfter(ctx, a)
			p, perr := pq.NoteEventsAfter(ctx, eventspg.NoteEventsAfterParams(a))
			check("NoteEventsAfter", result{l, lerr}, result{events(p), perr})
			if path != "none.md" && len(l) > 0 {
				noteEvents += len(l)
			}
		}
	}
	if noteEvents == 0 {
		t.Error("NoteEventsAfter found no event on either engine: the test checks nothing")
	}
	{
		a := eventsdb.StreamCallsBeforeParams{Stream: "t1/root", Before: 35, MaxEvents: 3}
		l, lerr := lq.StreamCallsBefore(ctx, a)
		p, perr := pq.StreamCallsBefore(ctx, eventspg.StreamCallsBeforeParams(a))
		check("StreamCallsBefore", result{l, lerr}, result{events(p), perr})
	}
	{
		a := eventsdb.StreamLifecycleEventsAfterParams{Stream: "t1/root/B", After: 0, Until: 40, MaxEvents: 100}
		l, lerr := lq.StreamLifecycleEventsAfter(ctx, a)
		p, perr := pq.StreamLifecycleEventsAfter(ctx, eventspg.StreamLifecycleEventsAfterParams(a))
		check("StreamLifecycleEventsAfter", result{l, lerr}, result{events(p), perr})
	}
	found := false
	for _, a := range []eventsdb.StreamBranchChangeFromParams{{Stream: "t2/root", FromPosition: 0}, {Stream: "t2/root", FromPosition: 7},
		{Stream: "t2/root", FromPosition: 39}, {Stream: "t1/root", FromPosition: 0}} {
		l, lerr := lq.StreamBranchChangeFrom(ctx, a)
		p, perr := pq.StreamBranchChangeFrom(ctx, eventspg.StreamBranchChangeFromParams(a))
		check("StreamBranchChangeFrom", result{l, lerr}, result{p, perr})
		found = found || l > 0
	}
	if !found {
		t.Error("StreamBranchChangeFrom found no branch change on either engine: the test checks nothing")
	}
	// StreamNoteSizes: each engine's fold equals a fold of the decoded events in Go.
	for _, until := range []int64{42, 44, 45, 48} {
		a := eventsdb.StreamNoteSizesParams{Stream: "t3/root", After: 40, Until: until, Paths: `["a.md","é.md","b \"c\".md","none.md"]`}
		want := map[string]eventsdb.StreamNoteSizesRow{}
		for i, n := range noteLog[:until-40] {
			var text string
			if err := json.Unmarshal([]byte(`"`+n.text+`"`), &text); err != nil {
				t.Fatal(err)
			}
			r := want[n.path]
			if n.typ == "note.written" {
				r.Bytes = 0
			}
			r.Path, r.Revisions, r.Updated, r.Bytes = n.path, r.Revisions+1, int64(41+i), r.Bytes+int64(len(text))
			want[n.path] = r
		}
		l, lerr := lq.StreamNoteSizes(ctx, a)
		p, perr := pq.StreamNoteSizes(ctx, eventspg.StreamNoteSizesParams(a))
		byPath := func(rows []eventsdb.StreamNoteSizesRow) map[string]eventsdb.StreamNoteSizesRow {
			m := map[string]eventsdb.StreamNoteSizesRow{}
			for _, r := range rows {
				m[r.Path] = r
			}
			return m
		}
		pr := make([]eventsdb.StreamNoteSizesRow, len(p))
		for i, r := range p {
			pr[i] = eventsdb.StreamNoteSizesRow(r)
		}
		check("StreamNoteSizes", result{byPath(l), lerr}, result{byPath(pr), perr})
		if got := byPath(l); !reflect.DeepEqual(got, want) {
			t.Errorf("StreamNoteSizes until %d:\ngot  %v\nwant %v", until, got, want)
		}
	}
	// The erasure's: counts before and after tombstoning task t1, and an
	// erasure event to find.
	counts := func(a eventsdb.TaskEventCountsParams) {
		t.Helper()
		l, lerr := lq.TaskEventCounts(ctx, a)
		p, perr := pq.TaskEventCounts(ctx, eventspg.TaskEventCountsParams(a))
		check("TaskEventCounts", result{l, lerr}, result{eventsdb.TaskEventCountsRow(p), perr})
	}
	tomb := `{"erased_by":60}`
	counts(eventsdb.TaskEventCountsParams{Tombstone: tomb, TaskID: "t1", Before: 60})
	{
		a := eventsdb.EraseTaskEventsParams{Tombstone: tomb, TaskID: "t1"}
		l, lerr := lq.EraseTaskEvents(ctx, a)
		p, perr := pq.EraseTaskEvents(ctx, eventspg.EraseTaskEventsParams(a))
		check("EraseTaskEvents", result{l, lerr}, result{p, perr})
		if l == 0 {
			t.Error("EraseTaskEvents made no tombstone: the test checks nothing")
		}
	}
	for _, a := range []eventsdb.TaskEventCountsParams{{Tombstone: tomb, TaskID: "t1", Before: 60}, {Tombstone: tomb, TaskID: "t1", Before: 20},
		{Tombstone: `{"erased_by":61}`, TaskID: "t1", Before: 60}, {Tombstone: tomb, TaskID: "t2", Before: 60}} {
		counts(a)
	}
	for _, a := range []eventsdb.TaskLastRecordedBeforeParams{{TaskID: "t1", Before: 60}, {TaskID: "t1", Before: 20}, {TaskID: "t2", Before: 60}} {
		l, lerr := lq.TaskLastRecordedBefore(ctx, a)
		p, perr := pq.TaskLastRecordedBefore(ctx, eventspg.TaskLastRecordedBeforeParams(a))
		check("TaskLastRecordedBefore", result{l, lerr}, result{p, perr})
	}
	for _, db := range []interface {
		InsertEvent(context.Context, eventsdb.InsertEventParams) error
	}{lq, pgInsert{pq}} {
		if err := db.InsertEvent(ctx, eventsdb.InsertEventParams{Position: 60, ID: "erasure", Stream: "t1/root", StreamVersion: 99, TaskID: "t1",
			Type: "task.erased", Schema: 1, RecordedAt: "2025-01-01T00:00:00Z", Data: `{"task_id":"t1","events":10}`, Packed: []byte{}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, task := range []string{"t1", "t2"} {
		l, lerr := lq.TaskErasures(ctx, task)
		p, perr := pq.TaskErasures(ctx, task)
		check("TaskErasures", result{l, lerr}, result{events(p), perr})
		if task == "t1" && len(l) != 1 {
			t.Errorf("TaskErasures of t1: %d erasures, want 1", len(l))
		}
	}
	// MarkAtRest writes nothing into a database that holds events, on
	// either engine (an encrypted one is made before its first event).
	{
		a := eventsdb.MarkAtRestParams{Scheme: "s", KeyCheck: "k"}
		check("MarkAtRest", result{nil, lq.MarkAtRest(ctx, a)}, result{nil, pq.MarkAtRest(ctx, eventspg.MarkAtRestParams(a))})
		l, lerr := lq.AtRest(ctx)
		p, perr := pq.AtRest(ctx)
		pr := make([]eventsdb.AtRest, len(p))
		for i, r := range p {
			pr[i] = eventsdb.AtRest(r)
		}
		check("AtRest", result{l, lerr}, result{pr, perr})
		if len(l) != 0 {
			t.Errorf("MarkAtRest marked a database that holds events: %v", l)
		}
	}
	qt := reflect.TypeFor[*eventsdb.Queries]()
	for i := range qt.NumMethod() {
		if m := qt.Method(i).Name; !called[m] {
			t.Errorf("%s is not run: add it to the test", m)
		}
	}
}

// testPostgresDB returns a new, migrated database on the PostgreSQL
// server of the tests (skipped without one).
func testPostgresDB(t *testing.T) *sql.DB { return pgtest.OpenMigrated(t) }

// pgInsert inserts through PostgreSQL's queries with eventsdb's params.
type pgInsert struct{ q *eventspg.Queries }

func (p pgInsert) InsertEvent(ctx context.Context, a eventsdb.InsertEventParams) error {
	return p.q.InsertEvent(ctx, eventspg.InsertEventParams(a))
}
