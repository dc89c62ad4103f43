package eventlog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/pgtest"
)

// eraseLog appends to s a log of two tasks, A (two agents) and B, whose
// events interleave, and erases task A. It returns the log before and
// after the erasure, and the erasure's event.
func eraseLog(t *testing.T, s *Store) (before, after []events.Event, erasure events.Event) {
	t.Helper()
	ctx := context.Background()
	a, child, b := events.Stream("01TASKA", "/root"), events.Stream("01TASKA", "/root/child"), events.Stream("01TASKB", "/root")
	add := func(stream string, p events.Payload) {
		t.Helper()
		if err := s.Update(ctx, "req-"+stream, func(tx *Tx) error {
			_, err := tx.Append(ctx, stream, AnyVersion, events.NewPending(p))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	add(a, events.TaskCreated{TaskID: "01TASKA", SessionKey: "secret-key-a"})
	add(b, events.TaskCreated{TaskID: "01TASKB", SessionKey: "key-b"})
	add(a, note("01TASKA", "/root", "SECRET of A"))
	add(b, note("01TASKB", "/root", "text of B"))
	add(child, note("01TASKA", "/root/child", "SECRET of A's child"))
	add(a, note("01TASKA", "/root", "more SECRET"))
	before = readAll(t, s)
	if err := s.UpdateAlone(ctx, "req-erase", func(tx *Tx) error {
		erased, err := tx.EraseTask(ctx, "01TASKA", a, func(n int64) events.Pending {
			return events.NewPending(events.TaskErased{TaskID: "01TASKA", Events: n})
		})
		if err == nil && erased.Tombstoned != 4 {
			err = fmt.Errorf("%d events erased, want 4", erased.Tombstoned)
		}
		erasure = erased.Erasure
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return before, readAll(t, s), erasure
}

// checkErased checks that after is before with task A's events turned into
// tombstones in place and the erasure appended.
func checkErased(t *testing.T, before, after []events.Event, erasure events.Event) {
	t.Helper()
	if len(after) != len(before)+1 || erasure.Position != int64(len(after)) {
		t.Fatalf("%d events after, %d before, the erasure at %d", len(after), len(before), erasure.Position)
	}
	for i, ev := range after[:len(before)] {
		old := before[i]
		if ev.TaskID() != "01TASKA" {
			if fmt.Sprint(ev) != fmt.Sprint(old) {
				t.Errorf("task B's event changed: %+v, was %+v", ev, old)
			}
			continue
		}
		if ev.Type != events.TypeEventErased || ev.Schema != 1 || string(ev.Data) != fmt.Sprintf(`{"erased_by":%d}`, erasure.Position) ||
			ev.RequestID != "" || ev.Position != old.Position || ev.ID != old.ID || ev.Stream != old.Stream ||
			ev.StreamVersion != old.StreamVersion || ev.RecordedAt != old.RecordedAt {
			t.Errorf("a tombstone %+v of %+v", ev, old)
		}
	}
	last := after[len(after)-1]
	if last.Type != events.TypeTaskErased || last.Stream != "01TASKA/root" || last.StreamVersion != 4 || string(last.Data) != `{"task_id":"01TASKA","events":4}` {
		t.Errorf("the erasure: %+v", last)
	}
	for _, ev := range after {
		if strings.Contains(string(ev.Data), "SECRET") || strings.Contains(string(ev.Data), "secret") {
			t.Errorf("the log holds the task's content: %+v", ev)
		}
	}
}

// TestEraseTask: an erasure turns a task's events into tombstones in place,
// appends task.erased at the next version of the stream given, and leaves
// the other task's events as they were; the erased log imports, and the
// rules of an import refuse tombstones and erasures that no erasure made.
func TestEraseTask(t *testing.T) {
	s := openStore(t, recordingApply)
	before, after, erasure := eraseLog(t, s)
	checkErased(t, before, after, erasure)
	checkErasureImports(t, after, func() *Store { return openStore(t, recordingApply) })
	erasures, err := s.TaskErasures(context.Background(), "01TASKA")
	if err != nil || len(erasures) != 1 || erasures[0].Position != erasure.Position {
		t.Errorf("TaskErasures: %+v %v", erasures, err)
	}
	if all, tombs, err := s.TaskEvents(context.Background(), "01TASKA"); err != nil || all != 5 || tombs != 4 {
		t.Errorf("TaskEvents: %d %d %v", all, tombs, err)
	}
}

// checkErasureImports imports the erased log into a fresh store, then
// refuses each altered copy of it.
func checkErasureImports(t *testing.T, after []events.Event, fresh func() *Store) {
	t.Helper()
	ctx := context.Background()
	if n, err := fresh().Import(ctx, iterate(after)); err != nil || n != int64(len(after)) {
		t.Fatalf("import of the erased log: %d %v", n, err)
	}
	erasure := after[len(after)-1]
	first := 0 // task A's first tombstone
	for after[first].TaskID() != "01TASKA" {
		first++
	}
	for _, tc := range []struct {
		name string
		edit func(evs []events.Event) []events.Event
		want string
	}{
		{"tombstone data", func(evs []events.Event) []events.Event {
			evs[first].Data = []byte(fmt.Sprintf(`{"erased_by": %d}`, erasure.Position))
			return evs
		}, "is not a tombstone's"},
		{"tombstone naming an earlier position", func(evs []events.Event) []events.Event {
			evs[first].Data = events.Tombstone(evs[first].Position)
			return evs
		}, "is not a position after"},
		{"tombstone with a request id", func(evs []events.Event) []events.Event {
			evs[first].RequestID = "req-1"
			return evs
		}, "keeps no request id"},
		{"tombstone with more data", func(evs []events.Event) []events.Event {
			evs[first].Data = []byte(fmt.Sprintf(`{"erased_by":%d,"text":"x"}`, erasure.Position))
			return evs
		}, "text"},
		{"erasure with a live event before it", func(evs []events.Event) []events.Event {
			return append(evs[:len(evs)-1:len(evs)-1], events.Event{Position: erasure.Position, ID: erasure.ID, Stream: "01TASKB/root",
				StreamVersion: 3, Type: events.TypeTaskErased, Schema: 1, RecordedAt: erasure.RecordedAt, Data: []byte(`{"task_id":"01TASKB","events":0}`)})
		}, "are not tombstones"},
		{"erasure counting more", func(evs []events.Event) []events.Event {
			evs[len(evs)-1].Data = []byte(`{"task_id":"01TASKA","events":5}`)
			return evs
		}, "events is 5, but 4 tombstone(s)"},
		{"the erased task created again", func(evs []events.Event) []events.Event {
			return append(evs, events.Event{Position: erasure.Position + 1, ID: "01M8V34Q8CZZZZZZZZZZZZZZZZ", Stream: "01TASKA/root",
				StreamVersion: 5, Type: events.TypeTaskCreated, Schema: 1, RecordedAt: erasure.RecordedAt,
				Data: []byte(`{"task_id":"01TASKA","session_key":"k"}`)})
		}, "its id is not used again"},
		{"erasure on another task's stream", func(evs []events.Event) []events.Event {
			evs[len(evs)-1].Stream = "01TASKB/root"
			evs[len(evs)-1].StreamVersion = 3
			return evs
		}, "not the agent of its stream"},
	} {
		evs := make([]events.Event, len(after))
		for i, ev := range after {
			ev.Data = append([]byte(nil), ev.Data...)
			evs[i] = ev
		}
		_, err := fresh().Import(ctx, iterate(tc.edit(evs)))
		if !errors.Is(err, events.ErrInvalidEvent) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an invalid event saying %q", tc.name, err, tc.want)
		}
	}
	// A prefix of the log, cut between the tombstones and their erasure,
	// imports: tombstones name a later position.
	if _, err := fresh().Import(ctx, iterate(after[:len(after)-1])); err != nil {
		t.Errorf("a prefix before the erasure: %v", err)
	}
}

// TestEraseTaskOverwritesFreedSpace: on SQLite, the transaction of an
// erasure overwrites the free pages, then the pages it frees, with zeros,
// and ends with the writer back on secure_delete FAST; its scrub empties
// the WAL.
func TestEraseTaskOverwritesFreedSpace(t *testing.T) {
	s := openStore(t, nil)
	ctx := context.Background()
	big := strings.Repeat("SECRET-PAGE ", 4000) // overflow pages
	stream := events.Stream("01TASKA", "/root")
	if err := s.Update(ctx, "", func(tx *Tx) error {
		_, err := tx.Append(ctx, stream, AnyVersion, events.NewPending(events.TaskCreated{TaskID: "01TASKA", SessionKey: "k"}),
			events.NewPending(note("01TASKA", "/root", big)))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// Free pages that held the text, as a deleted row's left behind.
	raw, err := sql.Open("sqlite", FileURI(s.File(), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{"CREATE TABLE junk (t TEXT)", "INSERT INTO junk VALUES ('" + big + "')", "DELETE FROM junk", "DROP TABLE junk"} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	var free int64
	raw.QueryRow("PRAGMA freelist_count").Scan(&free)
	if free == 0 {
		t.Fatal("no free page to overwrite")
	}
	var erased Erased
	if err := s.UpdateAlone(ctx, "", func(tx *Tx) error {
		var err error
		erased, err = tx.EraseTask(ctx, "01TASKA", stream, func(n int64) events.Pending {
			return events.NewPending(events.TaskErased{TaskID: "01TASKA", Events: n})
		})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if erased.FreePagesZeroed != free {
		t.Errorf("%d free pages zeroed, want %d", erased.FreePagesZeroed, free)
	}
	scrub, err := s.Scrub(ctx, nil, ScrubOptions{})
	if err != nil || !scrub.WALTruncated || !scrub.SecureDelete || scrub.WALBytes != 0 {
		t.Fatalf("scrub: %+v %v", scrub, err)
	}
	var hits int64
	if err := raw.QueryRow("SELECT count(*) FROM sqlite_dbpage WHERE instr(data, CAST('SECRET-PAGE' AS BLOB)) > 0").Scan(&hits); err != nil {
		t.Fatal(err)
	}
	if hits != 0 {
		t.Errorf("%d pages still hold the erased text", hits)
	}
	var mode int64
	if err := s.Update(ctx, "", func(tx *Tx) error { return tx.DB().QueryRowContext(ctx, "PRAGMA secure_delete").Scan(&mode) }); err != nil || mode != 2 {
		t.Errorf("the writer's secure_delete after the erasure: %d %v, want 2 (FAST)", mode, err)
	}
}

// TestPostgresEraseTask: the same erasure on PostgreSQL, whose scrub
// rewrites the log's table with VACUUM FULL.
func TestPostgresEraseTask(t *testing.T) {
	open := func() *Store {
		s, err := Open(context.Background(), pgtest.NewDatabase(t), Options{Projector: testProjector{}})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s := open()
	before, after, erasure := eraseLog(t, s)
	checkErased(t, before, after, erasure)
	scrub, err := s.Scrub(context.Background(), nil, ScrubOptions{})
	if err != nil || scrub.Engine != Postgres || len(scrub.Vacuumed) != 1 || scrub.Vacuumed[0] != "events" || len(scrub.Left) == 0 {
		t.Errorf("scrub: %+v %v", scrub, err)
	}
	checkErasureImports(t, after, open)
}

// TestUpdateAloneIsABatchOfItsOwn: a request of UpdateAlone waiting among
// others is committed in a transaction of its own, and the others are
// committed together as before, every one of them.
func TestUpdateAloneIsABatchOfItsOwn(t *testing.T) {
	s := openStore(t, nil)
	ctx := context.Background()
	started, release := make(chan struct{}), make(chan struct{})
	go s.Update(ctx, "", func(tx *Tx) error { close(started); <-release; return nil })
	<-started
	var mu sync.Mutex
	batches := map[uintptr][]string{} // requests by the batch (its versions map) they were in
	var wg sync.WaitGroup
	for i := range 9 {
		name := fmt.Sprint("r", i)
		run := s.Update
		if i == 4 {
			name, run = "alone", s.UpdateAlone
		}
		wg.Go(func() {
			err := run(ctx, "", func(tx *Tx) error {
				mu.Lock()
				b := reflect.ValueOf(tx.batch).Pointer()
				batches[b] = append(batches[b], name)
				mu.Unlock()
				_, err := tx.Append(ctx, events.Stream("01T"+name, "/root"), AnyVersion, events.NewPending(events.TaskCreated{TaskID: "01T" + name, SessionKey: name}))
				return err
			})
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	// The others mostly queue behind the first meanwhile; on a loaded
	// machine some come later, in batches of their own, which is no fault:
	// only the lone request's batch is checked.
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	n := 0
	for _, names := range batches {
		n += len(names)
		if slices.Contains(names, "alone") && len(names) != 1 {
			t.Errorf("the lone request shared its batch: %q", names)
		}
	}
	if len(batches) < 2 {
		t.Errorf("%d batches, want the lone one and the others': %v", len(batches), batches)
	}
	if n != 9 || lastPosition(t, s) != 9 {
		t.Errorf("%d requests ran, the log ends at %d", n, lastPosition(t, s))
	}
}

// TestScrubWaitsForReaders: a reader holding an older snapshot keeps the
// WAL from being truncated; Scrub tries for as long as it is told, then
// says what is left, and truncates it once the reader is gone.
func TestScrubWaitsForReaders(t *testing.T) {
	s := openStore(t, nil)
	ctx := context.Background()
	stream := events.Stream("01TASKA", "/root")
	if _, err := appendOne(t, s, stream, AnyVersion, events.TypeTaskCreated, events.TaskCreated{TaskID: "01TASKA", SessionKey: "k"}); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", FileURI(s.File(), nil))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	reader, err := raw.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	if err := reader.QueryRow("SELECT count(*) FROM events").Scan(&n); err != nil { // its snapshot starts
		t.Fatal(err)
	}
	if err := s.UpdateAlone(ctx, "", func(tx *Tx) error {
		_, err := tx.EraseTask(ctx, "01TASKA", stream, func(n int64) events.Pending {
			return events.NewPending(events.TaskErased{TaskID: "01TASKA", Events: n})
		})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	scrub, err := s.Scrub(ctx, nil, ScrubOptions{Wait: 300 * time.Millisecond})
	if err != nil || scrub.WALTruncated || scrub.WALBytes == 0 || len(scrub.Left) != 1 || !strings.Contains(scrub.Left[0], "readers held it") {
		t.Errorf("scrub with a reader: %+v %v", scrub, err)
	}
	if waited := time.Since(start); waited < 300*time.Millisecond {
		t.Errorf("the scrub waited %s, told 300ms", waited)
	}
	reader.Rollback()
	if scrub, err = s.Scrub(ctx, nil, ScrubOptions{Wait: time.Second}); err != nil || !scrub.WALTruncated || scrub.WALBytes != 0 || len(scrub.Left) != 0 {
		t.Errorf("scrub after the reader: %+v %v", scrub, err)
	}
}
