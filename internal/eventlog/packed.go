package eventlog

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/memoryd/memoryd/internal/eventlog/eventsdb"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/zpack"
)

// packedQueries compresses the payload of each history.entry_recorded
// event into events.packed, above the sealing (ciphertext does not
// compress), and keeps in events.data only the members task_id, agent and
// entry_id, which is all the log's SQL may read of it. It returns every
// payload as it was recorded, byte for byte (docs/performance.md).
// Other events, and events written before, are stored whole in data
// with packed empty.
type packedQueries struct {
	eventsdb.Querier
}

// entryKeys are the plain members an entry's event keeps in data.
type entryKeys struct {
	TaskID  string `json:"task_id"`
	Agent   string `json:"agent"`
	EntryID string `json:"entry_id"`
}

func (q packedQueries) InsertEvent(ctx context.Context, arg eventsdb.InsertEventParams) error {
	if arg.Type == events.TypeHistoryEntryRecorded && len(arg.Packed) == 0 {
		var k entryKeys
		if err := json.Unmarshal([]byte(arg.Data), &k); err != nil {
			return fmt.Errorf("%w: %v", events.ErrInvalidEvent, err)
		}
		keys, err := json.Marshal(k)
		if err != nil {
			return err
		}
		// Kept whole when compressing would not save: a tiny entry.
		if packed := zpack.Pack([]byte(arg.Data)); len(packed)+len(keys) < len(arg.Data) {
			arg.Data, arg.Packed = string(keys), packed
		}
	}
	if arg.Packed == nil {
		arg.Packed = []byte{} // not NULL
	}
	return q.Querier.InsertEvent(ctx, arg)
}

// unpackEvents puts back in data the payload of each row stored packed.
func unpackEvents(rows []eventsdb.Event, err error) ([]eventsdb.Event, error) {
	if err != nil {
		return nil, err
	}
	for i := range rows {
		if len(rows[i].Packed) == 0 {
			continue
		}
		plain, err := zpack.Unpack(rows[i].Packed)
		if err != nil {
			return nil, fmt.Errorf("event at %d: %w", rows[i].Position, err)
		}
		rows[i].Data, rows[i].Packed = string(plain), nil
	}
	return rows, nil
}

func (q packedQueries) EventAt(ctx context.Context, position int64) (eventsdb.Event, error) {
	row, err := q.Querier.EventAt(ctx, position)
	if err != nil {
		return row, err
	}
	rows, err := unpackEvents([]eventsdb.Event{row}, nil)
	if err != nil {
		return eventsdb.Event{}, err
	}
	return rows[0], nil
}

func (q packedQueries) EventsAfter(ctx context.Context, arg eventsdb.EventsAfterParams) ([]eventsdb.Event, error) {
	return unpackEvents(q.Querier.EventsAfter(ctx, arg))
}

func (q packedQueries) NoteEventsAfter(ctx context.Context, arg eventsdb.NoteEventsAfterParams) ([]eventsdb.Event, error) {
	return unpackEvents(q.Querier.NoteEventsAfter(ctx, arg))
}

func (q packedQueries) StreamCallsBefore(ctx context.Context, arg eventsdb.StreamCallsBeforeParams) ([]eventsdb.Event, error) {
	return unpackEvents(q.Querier.StreamCallsBefore(ctx, arg))
}

func (q packedQueries) StreamEventsAfter(ctx context.Context, arg eventsdb.StreamEventsAfterParams) ([]eventsdb.Event, error) {
	return unpackEvents(q.Querier.StreamEventsAfter(ctx, arg))
}

func (q packedQueries) StreamLifecycleEventsAfter(ctx context.Context, arg eventsdb.StreamLifecycleEventsAfterParams) ([]eventsdb.Event, error) {
	return unpackEvents(q.Querier.StreamLifecycleEventsAfter(ctx, arg))
}

func (q packedQueries) StreamNotesAfter(ctx context.Context, arg eventsdb.StreamNotesAfterParams) ([]eventsdb.Event, error) {
	return unpackEvents(q.Querier.StreamNotesAfter(ctx, arg))
}

func (q packedQueries) TaskErasures(ctx context.Context, taskID string) ([]eventsdb.Event, error) {
	return unpackEvents(q.Querier.TaskErasures(ctx, taskID))
}

func (q packedQueries) TaskEventsAfter(ctx context.Context, arg eventsdb.TaskEventsAfterParams) ([]eventsdb.Event, error) {
	return unpackEvents(q.Querier.TaskEventsAfter(ctx, arg))
}

func (q packedQueries) TaskEventsWithoutNotesAfter(ctx context.Context, arg eventsdb.TaskEventsWithoutNotesAfterParams) ([]eventsdb.Event, error) {
	return unpackEvents(q.Querier.TaskEventsWithoutNotesAfter(ctx, arg))
}
