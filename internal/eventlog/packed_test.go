package eventlog

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/atrest"
	"github.com/memoryd/memoryd/internal/eventlog/eventsdb"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/zpack"
)

// TestEntryEventsPacked: a history entry's event is stored with its
// payload compressed in packed and only its keys in data, plain or
// encrypted at rest, and every read returns the payload byte for byte as
// recorded; a small one and other events are stored whole; an erasure
// leaves nothing in packed.
func TestEntryEventsPacked(t *testing.T) {
	for _, sealed := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "sealed"}[sealed], func(t *testing.T) {
			ctx := context.Background()
			opts := Options{Projector: testProjector{apply: func(context.Context, DBTX, events.Event) error { return nil }}}
			if sealed {
				key, err := atrest.ParseKey(strings.Repeat("ab", 32))
				if err != nil {
					t.Fatal(err)
				}
				if opts.Sealer, err = atrest.New(key); err != nil {
					t.Fatal(err)
				}
				opts.Encrypt = true
			}
			s, err := Open(ctx, filepath.Join(t.TempDir(), "memory.db"), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			big := json.RawMessage(`{"type":"message","id":"e1","message":{"role":"user","content":"` + strings.Repeat("hé llo ", 2000) + `"}}`)
			small := json.RawMessage(`{"type":"x","id":"e2"}`)
			err = s.Update(ctx, "", func(tx *Tx) error {
				_, err := tx.Append(ctx, "t1/root", AnyVersion,
					events.Pending{Type: events.TypeTaskCreated, Data: events.TaskCreated{TaskID: "t1", SessionKey: "k"}},
					events.Pending{Type: events.TypeHistoryEntryRecorded, Data: events.HistoryEntryRecorded{TaskID: "t1", Agent: "/root", EntryID: "e1", Entry: big}},
					events.Pending{Type: events.TypeHistoryEntryRecorded, Data: events.HistoryEntryRecorded{TaskID: "t1", Agent: "/root", EntryID: "e2", Entry: small}})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			evs := readAll(t, s)
			if len(evs) != 3 {
				t.Fatalf("%d events", len(evs))
			}
			for i, want := range []json.RawMessage{nil, big, small} {
				if want == nil {
					continue
				}
				var p events.HistoryEntryRecorded
				if err := json.Unmarshal(evs[i].Data, &p); err != nil || !bytes.Equal(p.Entry, want) {
					t.Fatalf("event %d reads %.80s, %v", i+1, evs[i].Data, err)
				}
				at, err := EventAt(ctx, s.Reader(), evs[i].Position)
				if err != nil || !bytes.Equal(at.Data, evs[i].Data) {
					t.Fatalf("EventAt(%d) = %.80s, %v", evs[i].Position, at.Data, err)
				}
			}
			stored := func(pos int64) (string, []byte) {
				var data string
				var packed []byte
				if err := s.Reader().QueryRowContext(ctx, "SELECT data, packed FROM events WHERE position = ?", pos).Scan(&data, &packed); err != nil {
					t.Fatal(err)
				}
				return data, packed
			}
			data, packed := stored(evs[1].Position)
			if len(packed) == 0 || len(packed) > len(big)/4 || strings.Contains(data, "hé llo") {
				t.Fatalf("the big entry is stored as %d bytes of data, %d packed", len(data), len(packed))
			}
			if !sealed && (data != `{"task_id":"t1","agent":"/root","entry_id":"e1"}` || !zpack.Packed(packed)) {
				t.Fatalf("the big entry's data: %s", data)
			}
			if got, err := StoredData(s.Reader(), data, packed); err != nil || !bytes.Equal(got, evs[1].Data) {
				t.Fatalf("StoredData = %.80s, %v", got, err)
			}
			if _, packed := stored(evs[2].Position); len(packed) != 0 {
				t.Fatalf("the small entry is packed in %d bytes", len(packed))
			}
			err = s.Update(ctx, "", func(tx *Tx) error {
				_, err := queriesOf(tx.DB()).EraseTaskEvents(ctx, eventsdb.EraseTaskEventsParams{Tombstone: `{"erased_by":9}`, TaskID: "t1"})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if _, packed := stored(evs[1].Position); len(packed) != 0 {
				t.Fatalf("an erased entry keeps %d bytes in packed", len(packed))
			}
		})
	}
}
