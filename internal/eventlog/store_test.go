package eventlog

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/events"
)

// recordingApply is an applyFunc that writes one row per event into a
// table of its own (made by openStore), so tests can see that projection
// writes commit and roll back with their events.
func recordingApply(ctx context.Context, db DBTX, ev events.Event) error {
	_, err := db.ExecContext(ctx, `INSERT INTO test_applied (position, type) VALUES (?, ?)`, ev.Position, ev.Type)
	return err
}

// testClock advances 1 ms per reading; safe for concurrent use.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Millisecond)
	return c.t
}

func openStore(tb testing.TB, apply applyFunc) *Store {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "memory.db")
	raw, err := sql.Open("sqlite", FileURI(path, nil))
	if err != nil {
		tb.Fatal(err)
	}
	_, err = raw.Exec(`CREATE TABLE test_applied (position INTEGER PRIMARY KEY, type TEXT NOT NULL)`)
	raw.Close()
	if err != nil {
		tb.Fatal(err)
	}
	clock := &testClock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	s, err := Open(context.Background(), path, Options{Projector: testProjector{apply: apply}, Now: clock.now})
	if err != nil {
		tb.Fatalf("open: %v", err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}

func lastPosition(tb testing.TB, s *Store) int64 {
	tb.Helper()
	p, err := s.LastPosition(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func readAll(tb testing.TB, s *Store) []events.Event {
	tb.Helper()
	var out []events.Event
	if err := s.Each(context.Background(), Filter{Limit: 3}, func(ev events.Event) error {
		out = append(out, ev)
		return nil
	}); err != nil {
		tb.Fatal(err)
	}
	return out
}

func appendOne(tb testing.TB, s *Store, stream string, expected int64, typ string, data any) ([]events.Event, error) {
	tb.Helper()
	var out []events.Event
	err := s.Update(context.Background(), "req-"+stream, func(tx *Tx) error {
		var err error
		out, err = tx.Append(context.Background(), stream, expected, events.Pending{Type: typ, Data: data})
		return err
	})
	return out, err
}

func note(task, agent, text string) events.NoteAppended {
	return events.NoteAppended{TaskID: task, Agent: agent, Path: "a.md", Text: text, By: agent}
}

func appliedCount(tb testing.TB, s *Store) int64 {
	tb.Helper()
	var n int64
	if err := s.Reader().QueryRow(`SELECT count(*) FROM test_applied`).Scan(&n); err != nil {
		tb.Fatal(err)
	}
	return n
}

func TestAppendPositionsAndVersions(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, recordingApply)
	a, b := events.Stream("01TASKA", "/root"), events.Stream("01TASKB", "/root/reviewer")
	if p := lastPosition(t, s); p != 0 {
		t.Fatalf("empty store at position %d", p)
	}
	var returned []events.Event
	for i, step := range []struct {
		stream   string
		expected int64
		n        int
	}{
		{a, 0, 1}, {a, 1, 2}, {b, 0, 1}, {a, AnyVersion, 1}, {b, 1, 3},
	} {
		err := s.Update(ctx, fmt.Sprintf("req-%d", i), func(tx *Tx) error {
			pend := make([]events.Pending, step.n)
			for j := range pend {
				pend[j] = events.Pending{Type: events.TypeNoteAppended, Data: note(events.StreamTask(step.stream), "/root", fmt.Sprint(i, j))}
			}
			evs, err := tx.Append(ctx, step.stream, step.expected, pend...)
			if err != nil {
				return err
			}
			if len(evs) != step.n {
				t.Errorf("step %d: %d events returned, want %d", i, len(evs), step.n)
			}
			returned = append(returned, evs...)
			return nil
		})
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	// One transaction appending to two streams.
	err := s.Update(ctx, "req-both", func(tx *Tx) error {
		for _, st := range []string{a, b, a} {
			evs, err := tx.Append(ctx, st, AnyVersion, events.Pending{Type: events.TypeNoteAppended, Data: note("t", "/root", "both")})
			if err != nil {
				return err
			}
			returned = append(returned, evs...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	got := readAll(t, s)
	if !reflect.DeepEqual(got, returned) {
		t.Fatalf("read back differs from appended:\n got %+v\nwant %+v", got, returned)
	}
	wantVersions := map[string][]int64{a: {1, 2, 3, 4, 5, 6}, b: {1, 2, 3, 4, 5}}
	versions := map[string][]int64{}
	seen := map[string]bool{}
	for i, ev := range got {
		if ev.Position != int64(i+1) {
			t.Errorf("event %d has position %d", i, ev.Position)
		}
		versions[ev.Stream] = append(versions[ev.Stream], ev.StreamVersion)
		if seen[ev.ID] || len(ev.ID) != 26 {
			t.Errorf("event %d: id %q duplicate or not a ULID", ev.Position, ev.ID)
		}
		seen[ev.ID] = true
		if i > 0 && ev.ID <= got[i-1].ID {
			t.Errorf("event ids not increasing: %s after %s", ev.ID, got[i-1].ID)
		}
		if ev.Schema != 1 || ev.Type != events.TypeNoteAppended || !strings.HasPrefix(ev.RequestID, "req-") {
			t.Errorf("event %d envelope %+v", ev.Position, ev)
		}
		if _, err := time.Parse(events.TimeFormat, ev.RecordedAt); err != nil {
			t.Errorf("recorded_at %q: %v", ev.RecordedAt, err)
		}
	}
	if !reflect.DeepEqual(versions, wantVersions) {
		t.Errorf("stream versions %v, want %v", versions, wantVersions)
	}
	if p := lastPosition(t, s); p != int64(len(got)) {
		t.Errorf("LastPosition %d, want %d", p, len(got))
	}
	if n := appliedCount(t, s); n != int64(len(got)) {
		t.Errorf("applier ran for %d events, want %d", n, len(got))
	}

	// Filters: after, until, task.
	page, err := s.Read(ctx, Filter{After: 2, Until: 5, Limit: 10})
	if err != nil || len(page) != 3 || page[0].Position != 3 || page[2].Position != 5 {
		t.Errorf("Read after 2 until 5: %v %+v", err, page)
	}
	page, err = s.Read(ctx, Filter{TaskID: "01TASKB", Limit: 2})
	if err != nil || len(page) != 2 || page[0].Stream != b || page[1].Stream != b {
		t.Errorf("Read task B: %v %+v", err, page)
	}
	if got[0].TaskID() != "01TASKA" {
		t.Errorf("TaskID() = %q", got[0].TaskID())
	}
}

func TestAppendConflictWritesNothing(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, recordingApply)
	a, b := events.Stream("01TASKA", "/root"), events.Stream("01TASKB", "/root")
	for v := range int64(2) {
		if _, err := appendOne(t, s, a, v, events.TypeNoteAppended, note("01TASKA", "/root", "x")); err != nil {
			t.Fatal(err)
		}
	}
	for _, expected := range []int64{0, 1, 3, 10} {
		err := s.Update(ctx, "", func(tx *Tx) error {
			// A successful append earlier in the same transaction must be
			// rolled back too.
			if _, err := tx.Append(ctx, b, AnyVersion, events.Pending{Type: events.TypeNoteAppended, Data: note("01TASKB", "/root", "y")}); err != nil {
				return err
			}
			_, err := tx.Append(ctx, a, expected, events.Pending{Type: events.TypeNoteAppended, Data: note("01TASKA", "/root", "z")})
			return err
		})
		if !errors.Is(err, ErrConflict) {
			t.Fatalf("expected version %d: err %v, want ErrConflict", expected, err)
		}
		if p := lastPosition(t, s); p != 2 {
			t.Fatalf("after a conflict the log is at %d, want 2", p)
		}
		if n := appliedCount(t, s); n != 2 {
			t.Fatalf("after a conflict the applier rows are %d, want 2", n)
		}
	}
	// fn's own error rolls back too, and is returned unchanged.
	boom := errors.New("boom")
	err := s.Update(ctx, "", func(tx *Tx) error {
		if _, err := tx.Append(ctx, a, 2, events.Pending{Type: events.TypeNoteAppended, Data: note("01TASKA", "/root", "w")}); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatalf("Update returned %v, want fn's error", err)
	}
	// An unknown type is refused.
	if _, err := appendOne(t, s, a, AnyVersion, "note.deleted", note("01TASKA", "/root", "x")); !errors.Is(err, events.ErrUnknownEvent) {
		t.Fatalf("unknown type: %v", err)
	}
	// An applier failure rolls back the event.
	failing := openStore(t, func(ctx context.Context, db DBTX, ev events.Event) error {
		if ev.Position == 2 {
			return errors.New("applier failed")
		}
		return recordingApply(ctx, db, ev)
	})
	if _, err := appendOne(t, failing, a, 0, events.TypeNoteAppended, note("01TASKA", "/root", "1")); err != nil {
		t.Fatal(err)
	}
	if _, err := appendOne(t, failing, a, 1, events.TypeNoteAppended, note("01TASKA", "/root", "2")); err == nil {
		t.Fatal("applier error not returned")
	}
	if p := lastPosition(t, failing); p != 1 {
		t.Fatalf("after an applier failure the log is at %d, want 1", p)
	}
	if p := lastPosition(t, s); p != 2 {
		t.Fatalf("log at %d, want 2", p)
	}
	// The stream is still usable at its real version.
	if evs, err := appendOne(t, s, a, 2, events.TypeNoteAppended, note("01TASKA", "/root", "ok")); err != nil || evs[0].Position != 3 || evs[0].StreamVersion != 3 {
		t.Fatalf("append after conflicts: %v %+v", err, evs)
	}
}

func TestConcurrentAppendOneWins(t *testing.T) {
	s := openStore(t, recordingApply)
	stream := events.Stream("01TASKA", "/root")
	if _, err := appendOne(t, s, stream, 0, events.TypeNoteAppended, note("01TASKA", "/root", "base")); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	start := make(chan struct{})
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, errs[i] = appendOne(t, s, stream, 1, events.TypeNoteAppended, note("01TASKA", "/root", fmt.Sprint(i)))
		}()
	}
	close(start)
	wg.Wait()
	wins := 0
	for i, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, ErrConflict):
			t.Errorf("goroutine %d: %v, want nil or ErrConflict", i, err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d appends won, want exactly 1", wins)
	}
	if evs := readAll(t, s); len(evs) != 2 || evs[1].StreamVersion != 2 {
		t.Fatalf("log after the race: %+v", evs)
	}

	// Appends to different streams with AnyVersion all succeed, gapless.
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st := events.Stream(fmt.Sprintf("01TASK%d", i), "/root")
			for j := range 3 {
				if _, err := appendOne(t, s, st, int64(j), events.TypeNoteAppended, note("t", "/root", "p")); err != nil {
					t.Errorf("stream %s: %v", st, err)
				}
			}
		}()
	}
	wg.Wait()
	for i, ev := range readAll(t, s) {
		if ev.Position != int64(i+1) {
			t.Fatalf("position %d at index %d: not gapless", ev.Position, i)
		}
	}
	if p := lastPosition(t, s); p != 2+3*n {
		t.Fatalf("log at %d, want %d", p, 2+3*n)
	}
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// fill sets every exported field of v (recursively) to a distinct
// non-zero value, with strings that need JSON escaping.
func fill(tb testing.TB, v reflect.Value, path string, counter *int64) {
	tb.Helper()
	*counter++
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			if f.IsExported() {
				fill(tb, v.Field(i), path+"."+f.Name, counter)
			}
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("%s#%d <&> \"é\"\n\t😀", path, *counter))
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(*counter)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(*counter))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(*counter) + 0.25)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(tb, v.Elem(), path, counter)
	case reflect.Slice:
		if v.Type() == rawMessageType {
			s, _ := events.MarshalData(fmt.Sprintf("%s <&> é", path))
			v.SetBytes([]byte(`{"k":` + string(s) + `,"n":[1,2.5,null,true]}`))
			return
		}
		s := reflect.MakeSlice(v.Type(), 2, 2)
		for i := range 2 {
			fill(tb, s.Index(i), fmt.Sprintf("%s[%d]", path, i), counter)
		}
		v.Set(s)
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		k := reflect.New(v.Type().Key()).Elem()
		fill(tb, k, path+".key", counter)
		e := reflect.New(v.Type().Elem()).Elem()
		fill(tb, e, path+".value", counter)
		m.SetMapIndex(k, e)
		v.Set(m)
	default:
		tb.Fatalf("%s: fill does not know %s; extend the test", path, v.Kind())
	}
}

// sample returns a fully filled payload of a catalog entry.
func sample(tb testing.TB, e events.CatalogEntry) any {
	v := e.New()
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		tb.Fatalf("%s: New returns %T, want a pointer to a struct", e.Type, v)
	}
	var n int64
	fill(tb, rv.Elem(), e.Type, &n)
	return v
}

func TestCatalog(t *testing.T) {
	name := regexp.MustCompile(`^[a-z]+\.[a-z_]+$`)
	seen := map[string]bool{}
	for _, e := range events.Catalog {
		if !name.MatchString(e.Type) {
			t.Errorf("type %q is not namespace.past_tense", e.Type)
		}
		if seen[e.Type] {
			t.Errorf("type %q listed twice", e.Type)
		}
		seen[e.Type] = true
		if e.Schema < 1 {
			t.Errorf("%s: schema %d", e.Type, e.Schema)
		}
		if a, b := e.New(), e.New(); a == b {
			t.Errorf("%s: New returns the same value twice", e.Type)
		}
	}
	// Released names are frozen.
	for _, typ := range []string{"task.created", "agent.registered", "agent.reattached", "note.written", "note.appended"} {
		if !seen[typ] {
			t.Errorf("released event type %q is missing from the catalog", typ)
		}
	}
}

// TestCatalogRoundTrip appends a filled sample of every catalog type, reads
// it back, decodes it and compares.
func TestCatalogRoundTrip(t *testing.T) {
	s := openStore(t, nil)
	stream := events.Stream("01TASKA", "/root")
	want := map[string]any{}
	for i, e := range events.Catalog {
		v := sample(t, e)
		want[e.Type] = v
		if _, err := appendOne(t, s, stream, int64(i), e.Type, v); err != nil {
			t.Fatalf("append %s: %v", e.Type, err)
		}
	}
	evs := readAll(t, s)
	if len(evs) != len(events.Catalog) {
		t.Fatalf("%d events, want %d", len(evs), len(events.Catalog))
	}
	for _, ev := range evs {
		got, err := events.Decode(ev)
		if err != nil {
			t.Errorf("decode %s: %v", ev.Type, err)
			continue
		}
		if !reflect.DeepEqual(got, want[ev.Type]) {
			t.Errorf("%s does not round-trip:\n got %+v\nwant %+v", ev.Type, got, want[ev.Type])
		}
		data, err := events.MarshalData(want[ev.Type])
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ev.Data, data) {
			t.Errorf("%s: stored data %s, want %s", ev.Type, ev.Data, data)
		}
		if bytes.Contains(ev.Data, []byte(`\u003c`)) || bytes.Contains(ev.Data, []byte(`\u0026`)) {
			t.Errorf("%s: data escapes HTML: %s", ev.Type, ev.Data)
		}
	}

	// The JSON-lines envelope round-trips byte for byte.
	var buf bytes.Buffer
	if err := events.WriteJSONLines(&buf, evs); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != len(evs) {
		t.Fatalf("%d lines for %d events", len(lines), len(evs))
	}
	for i, line := range lines {
		var ev events.Event
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if !reflect.DeepEqual(ev, evs[i]) {
			t.Errorf("line %d: %+v, want %+v", i+1, ev, evs[i])
		}
		var again bytes.Buffer
		if err := events.WriteJSONLines(&again, []events.Event{ev}); err != nil || again.String() != line+"\n" {
			t.Errorf("line %d re-encodes as %s", i+1, again.String())
		}
	}

	// Decode refuses unknown types and newer or invalid schemas.
	ev := evs[0]
	for _, bad := range []events.Event{
		{Type: "note.deleted", Schema: 1, Data: ev.Data},
		{Type: ev.Type, Schema: 2, Data: ev.Data},
		{Type: ev.Type, Schema: 0, Data: ev.Data},
	} {
		if _, err := events.Decode(bad); !errors.Is(err, events.ErrUnknownEvent) {
			t.Errorf("Decode(%s schema %d): %v, want ErrUnknownEvent", bad.Type, bad.Schema, err)
		}
	}
}

// exportLog builds a log of every catalog type over three streams and
// returns its events. Its payloads follow the payload rules
// (CheckPayload): a task.created is on its task's root stream. It leaves
// out the erasure's types, which only Tx.EraseTask makes (erase_test.go).
func exportLog(tb testing.TB) []events.Event {
	tb.Helper()
	s := openStore(tb, nil)
	streams := []string{events.Stream("01TASKA", "/root"), events.Stream("01TASKA", "/root/reviewer"), events.Stream("01TASKB", "/root")}
	for i := range 3 {
		for j, e := range events.Catalog {
			if e.Type == events.TypeEventErased || e.Type == events.TypeTaskErased {
				continue
			}
			st := streams[(i+j)%len(streams)]
			if e.Type == events.TypeTaskCreated || e.Type == events.TypeTaskRetentionSet {
				st = events.Stream(events.StreamTask(st), "/root")
			}
			if _, err := appendOne(tb, s, st, AnyVersion, e.Type, conform(sample(tb, e), st)); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return readAll(tb, s)
}

// conform makes a filled sample follow the payload rules for stream: its
// task and agent are the stream's, its addresses and note path valid, its
// branch length adds up.
func conform(v any, stream string) any {
	task := events.StreamTask(stream)
	agent := strings.TrimPrefix(stream, task)
	parent := ""
	if agent != "/root" {
		parent = "/root"
	}
	rv := reflect.ValueOf(v).Elem()
	for name, val := range map[string]string{"TaskID": task, "Agent": agent, "By": agent, "ParentAgent": parent, "Path": "dir/a.md", "EntryID": "entry-1"} {
		if f := rv.FieldByName(name); f.IsValid() && f.Kind() == reflect.String {
			f.SetString(val)
		}
	}
	if b, ok := v.(*events.HistoryBranchChanged); ok {
		b.Length = b.Keep + int64(len(b.Append))
	}
	if r, ok := v.(*events.TaskRetentionSet); ok {
		r.Retain = "30d"
	}
	return v
}

func iterate(evs []events.Event) func() (events.Event, bool, error) {
	i := 0
	return func() (events.Event, bool, error) {
		if i == len(evs) {
			return events.Event{}, false, nil
		}
		i++
		return evs[i-1], true, nil
	}
}

func TestImport(t *testing.T) {
	ctx := context.Background()
	log := exportLog(t)
	s := openStore(t, recordingApply)
	n, err := s.Import(ctx, iterate(log))
	if err != nil || n != int64(len(log)) {
		t.Fatalf("import: %d, %v", n, err)
	}
	if got := readAll(t, s); !reflect.DeepEqual(got, log) {
		t.Fatalf("imported log differs:\n got %+v\nwant %+v", got, log)
	}
	if n := appliedCount(t, s); n != int64(len(log)) {
		t.Errorf("applier ran %d times, want %d", n, len(log))
	}
	// Appending after an import continues the log.
	evs, err := appendOne(t, s, log[0].Stream, AnyVersion, events.TypeNoteAppended, note("01TASKA", "/root", "after"))
	var version int64
	for _, ev := range log {
		if ev.Stream == log[0].Stream {
			version = ev.StreamVersion
		}
	}
	if err != nil || evs[0].Position != int64(len(log))+1 || evs[0].StreamVersion != version+1 {
		t.Fatalf("append after import: %v %+v", err, evs)
	}

	// A non-empty store refuses an import and keeps its events.
	before := lastPosition(t, s)
	if _, err := s.Import(ctx, iterate(log)); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("import into a non-empty store: %v, want ErrNotEmpty", err)
	}
	if _, err := s.Import(ctx, iterate(nil)); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("empty import into a non-empty store: %v, want ErrNotEmpty", err)
	}
	if p := lastPosition(t, s); p != before {
		t.Fatalf("refused import changed the log to %d", p)
	}

	// An empty log imports nothing.
	if n, err := openStore(t, nil).Import(ctx, iterate(nil)); n != 0 || err != nil {
		t.Fatalf("empty import: %d %v", n, err)
	}
}

func TestImportRefusesBadLogs(t *testing.T) {
	ctx := context.Background()
	log := exportLog(t)
	last := len(log) - 1
	edit := func(i int, f func(*events.Event)) []events.Event {
		out := append([]events.Event(nil), log...)
		f(&out[i])
		return out
	}
	drop := func(i int) []events.Event {
		return append(append([]events.Event(nil), log[:i]...), log[i+1:]...)
	}
	// One store sees every failure: none may leave anything behind.
	s := openStore(t, recordingApply)
	for _, tc := range []struct {
		name string
		log  []events.Event
		want error
	}{
		{"gap in positions", drop(last - 1), events.ErrInvalidEvent},
		{"starts after 1", log[1:], events.ErrInvalidEvent},
		{"position repeated", edit(last, func(e *events.Event) { e.Position = int64(last) }), events.ErrInvalidEvent},
		{"bad ulid", edit(last, func(e *events.Event) { e.ID = "not-a-ulid" }), events.ErrInvalidEvent},
		{"ulid overflow", edit(last, func(e *events.Event) { e.ID = "ZZZZZZZZZZZZZZZZZZZZZZZZZZ" }), events.ErrInvalidEvent},
		{"empty id", edit(last, func(e *events.Event) { e.ID = "" }), events.ErrInvalidEvent},
		{"duplicate id", edit(last, func(e *events.Event) { e.ID = log[0].ID }), ErrConflict},
		{"unknown type", edit(last, func(e *events.Event) { e.Type = "note.deleted" }), events.ErrUnknownEvent},
		{"newer schema", edit(last, func(e *events.Event) { e.Schema = 99 }), events.ErrUnknownEvent},
		{"schema 0", edit(last, func(e *events.Event) { e.Schema = 0 }), events.ErrUnknownEvent},
		{"bad stream", edit(last, func(e *events.Event) { e.Stream = "01TASKA" }), events.ErrInvalidEvent},
		{"stream without task", edit(last, func(e *events.Event) { e.Stream = "/root" }), events.ErrInvalidEvent},
		{"stream version gap", edit(last, func(e *events.Event) { e.StreamVersion += 1 }), events.ErrInvalidEvent},
		{"stream version repeated", edit(last, func(e *events.Event) { e.StreamVersion -= 1 }), events.ErrInvalidEvent},
		{"bad recorded_at", edit(last, func(e *events.Event) { e.RecordedAt = "2026-12-02 10:00:00" }), events.ErrInvalidEvent},
		{"data not an object", edit(last, func(e *events.Event) { e.Data = json.RawMessage(`[1]`) }), events.ErrInvalidEvent},
		{"data of the wrong shape", edit(last, func(e *events.Event) { e.Data = json.RawMessage(`{"task_id":7}`) }), events.ErrInvalidEvent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n, err := s.Import(ctx, iterate(tc.log))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if n != 0 {
				t.Errorf("failed import reports %d events", n)
			}
			if p := lastPosition(t, s); p != 0 {
				t.Fatalf("failed import left %d events", p)
			}
			if n := appliedCount(t, s); n != 0 {
				t.Fatalf("failed import left %d applier rows", n)
			}
		})
	}
	// Nothing was written: the clean log still imports.
	if n, err := s.Import(ctx, iterate(log)); err != nil || n != int64(len(log)) {
		t.Fatalf("clean import after the failures: %d %v", n, err)
	}

	t.Run("reader error", func(t *testing.T) {
		s := openStore(t, nil)
		boom := errors.New("line 3: broken")
		i := 0
		_, err := s.Import(ctx, func() (events.Event, bool, error) {
			if i == 2 {
				return events.Event{}, false, boom
			}
			i++
			return log[i-1], true, nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err %v, want the reader's", err)
		}
		if p := lastPosition(t, s); p != 0 {
			t.Fatalf("failed import left %d events", p)
		}
	})
	t.Run("applier error", func(t *testing.T) {
		s := openStore(t, func(ctx context.Context, db DBTX, ev events.Event) error {
			if ev.Position == int64(len(log)) {
				return errors.New("applier failed")
			}
			return recordingApply(ctx, db, ev)
		})
		if _, err := s.Import(ctx, iterate(log)); err == nil {
			t.Fatal("applier error not returned")
		}
		if p := lastPosition(t, s); p != 0 {
			t.Fatalf("failed import left %d events", p)
		}
		if n := appliedCount(t, s); n != 0 {
			t.Fatalf("failed import left %d applier rows", n)
		}
	})
}

func TestClosedStoreIsUnavailable(t *testing.T) {
	s := openStore(t, nil)
	s.Close()
	ctx := context.Background()
	if _, err := s.LastPosition(ctx); !errors.Is(err, ErrUnavailable) {
		t.Errorf("LastPosition on a closed store: %v", err)
	}
	if _, err := s.Read(ctx, Filter{}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Read on a closed store: %v", err)
	}
	if err := s.Update(ctx, "", func(*Tx) error { return nil }); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Update on a closed store: %v", err)
	}
}

func TestOpenOptions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := Open(ctx, filepath.Join(dir, "a.db"), Options{}); err == nil {
		t.Error("Open without a projector succeeded")
	}
	if _, err := Open(ctx, filepath.Join(dir, "b.db"), Options{Projector: testProjector{}, Synchronous: "extra"}); err == nil {
		t.Error("Open with synchronous extra succeeded")
	}
	for _, mode := range []string{"", "full", "NORMAL"} {
		s, err := Open(ctx, filepath.Join(dir, "c.db"), Options{Projector: testProjector{}, Synchronous: mode})
		if err != nil {
			t.Fatalf("synchronous %q: %v", mode, err)
		}
		var journal string
		if err := s.Reader().QueryRow(`PRAGMA journal_mode`).Scan(&journal); err != nil || journal != "wal" {
			t.Errorf("journal_mode %q %v, want wal", journal, err)
		}
		s.Close()
	}
	if _, err := Open(ctx, filepath.Join(dir, "missing", "d.db"), Options{Projector: testProjector{}}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Open in a missing folder: %v, want ErrUnavailable", err)
	}
}

// TestAppendRefusesAPayloadOfAnotherType: an event whose payload is not of
// its type is refused, and nothing is appended.
func TestAppendRefusesAPayloadOfAnotherType(t *testing.T) {
	s := openStore(t, recordingApply)
	for _, data := range []any{note("t1", "/root", "x"), map[string]any{"task_id": "t1"}} {
		if _, err := appendOne(t, s, "t1/root", AnyVersion, events.TypeNoteWritten, data); err == nil || !strings.Contains(err.Error(), "payload") {
			t.Errorf("a note.written with a %T payload: %v, want it refused", data, err)
		}
	}
	if _, err := appendOne(t, s, "t1/root", AnyVersion, events.TypeNoteAppended, note("t1", "/root", "x")); err != nil {
		t.Fatal(err)
	}
	if n := appliedCount(t, s); n != 1 {
		t.Errorf("%d events applied, want the one whose payload is its type's", n)
	}
}
