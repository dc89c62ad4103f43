package eventlog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/memoryd/memoryd/internal/atrest"
	"github.com/memoryd/memoryd/internal/eventlog/eventsdb"
	"github.com/memoryd/memoryd/internal/events"
)

// A database encrypted at rest (docs/encryption.md) has a row in at_rest
// naming the scheme and its key's check value. Its events' payloads are
// sealed by the queries below, on the way in and out, so the rest of the
// log, the projections' SQL and every caller see them plain.

var (
	// ErrKeyNeeded means the database is encrypted at rest and no key was
	// given.
	ErrKeyNeeded = errors.New("the database is encrypted at rest, and no key was given")
	// ErrWrongKey means the key given is not the database's.
	ErrWrongKey = errors.New("the encryption key given is not the database's")
	// ErrNotEncrypted means encryption was asked of a database that holds
	// events stored plain.
	ErrNotEncrypted = errors.New("the database holds events stored without encryption, and is not encrypted after the fact")
)

// eventsTag is where an event's payload is sealed (atrest.Sealer's tag),
// packedTag where its compressed copy is.
const (
	eventsTag = "events.data"
	packedTag = "events.packed"
)

// openAtRest returns the sealer the database's events are sealed with, or
// nil when it is not encrypted at rest. With opts.Encrypt a new database
// is made encrypted with opts.Sealer's key. It runs on the writer pool
// once the migrations are applied.
func openAtRest(ctx context.Context, q eventsdb.Querier, opts Options) (*atrest.Sealer, error) {
	if opts.Encrypt {
		if opts.Sealer == nil {
			return nil, fmt.Errorf("%w: encryption at rest was asked for without a key", ErrKeyNeeded)
		}
		if err := q.MarkAtRest(ctx, eventsdb.MarkAtRestParams{Scheme: atrest.Scheme, KeyCheck: opts.Sealer.Check()}); err != nil {
			return nil, classify(err)
		}
	}
	rows, err := q.AtRest(ctx)
	if err != nil {
		return nil, classify(err)
	}
	switch {
	case len(rows) == 0 && opts.Encrypt:
		return nil, ErrNotEncrypted
	case len(rows) == 0:
		return nil, nil
	case len(rows) > 1 || rows[0].Scheme != atrest.Scheme:
		return nil, fmt.Errorf("the database is encrypted at rest with a scheme this build does not know (%q)", rows[0].Scheme)
	case opts.Sealer == nil:
		return nil, ErrKeyNeeded
	case rows[0].KeyCheck != opts.Sealer.Check():
		return nil, ErrWrongKey
	}
	return opts.Sealer, nil
}

// Sealer returns the sealer of a store encrypted at rest, or nil.
func (s *Store) Sealer() *atrest.Sealer { return s.sealer }

// sealedPools maps the connection pools of the open stores encrypted at
// rest to their sealers, so that a query on Store.Reader opens what it
// reads as one in a transaction does.
var sealedPools sync.Map // *sql.DB → *atrest.Sealer

// SealerOf returns the sealer of a connection, transaction or pool of a
// store encrypted at rest, such as Tx.DB, ReadTx.DB or Store.Reader, or nil.
func SealerOf(db DBTX) *atrest.Sealer {
	switch db := db.(type) {
	case engineDB:
		return db.sealer
	case *sql.DB:
		if s, ok := sealedPools.Load(db); ok {
			return s.(*atrest.Sealer)
		}
	}
	return nil
}

// wrap marks db with the store's engine and, on a database encrypted at
// rest, its sealer.
func (s *Store) wrap(db DBTX) DBTX {
	w := s.engine.wrap(db)
	if s.sealer == nil {
		return w
	}
	return engineDB{DBTX: db, engine: EngineOf(w), sealer: s.sealer}
}

// sealedQueries seals the payload of every event it inserts and opens
// that of every event it reads.
type sealedQueries struct {
	eventsdb.Querier
	s *atrest.Sealer
}

func (q sealedQueries) InsertEvent(ctx context.Context, arg eventsdb.InsertEventParams) error {
	sealed, err := q.s.SealJSON(eventsTag, []byte(arg.Data))
	if err != nil {
		return fmt.Errorf("%w: %v", events.ErrInvalidEvent, err)
	}
	arg.Data = string(sealed)
	if len(arg.Packed) > 0 {
		arg.Packed = q.s.Seal(packedTag, arg.Packed)
	}
	return q.Querier.InsertEvent(ctx, arg)
}

// open opens the payloads of rows in place.
func (q sealedQueries) open(rows []eventsdb.Event, err error) ([]eventsdb.Event, error) {
	if err != nil {
		return nil, err
	}
	for i := range rows {
		plain, err := q.s.OpenJSON(eventsTag, []byte(rows[i].Data))
		if err != nil {
			return nil, fmt.Errorf("event at %d: %w", rows[i].Position, err)
		}
		rows[i].Data = string(plain)
		if len(rows[i].Packed) > 0 {
			if rows[i].Packed, err = q.s.Open(packedTag, rows[i].Packed); err != nil {
				return nil, fmt.Errorf("event at %d: %w", rows[i].Position, err)
			}
		}
	}
	return rows, nil
}

func (q sealedQueries) EventAt(ctx context.Context, position int64) (eventsdb.Event, error) {
	row, err := q.Querier.EventAt(ctx, position)
	if err != nil {
		return row, err
	}
	rows, err := q.open([]eventsdb.Event{row}, nil)
	if err != nil {
		return eventsdb.Event{}, err
	}
	return rows[0], nil
}

// StoredData returns an event's payload from what its columns data and
// packed hold on db's store, opened and decompressed as the log's queries
// return it: for SQL of other packages that joins the events (projections'
// Digest).
func StoredData(db DBTX, data string, packed []byte) ([]byte, error) {
	row := []eventsdb.Event{{Data: data, Packed: packed}}
	var err error
	if s := SealerOf(db); s != nil {
		if row, err = (sealedQueries{s: s}).open(row, nil); err != nil {
			return nil, err
		}
	}
	if row, err = unpackEvents(row, nil); err != nil {
		return nil, err
	}
	return []byte(row[0].Data), nil
}

func (q sealedQueries) EventsAfter(ctx context.Context, arg eventsdb.EventsAfterParams) ([]eventsdb.Event, error) {
	return q.open(q.Querier.EventsAfter(ctx, arg))
}

func (q sealedQueries) NoteEventsAfter(ctx context.Context, arg eventsdb.NoteEventsAfterParams) ([]eventsdb.Event, error) {
	return q.open(q.Querier.NoteEventsAfter(ctx, arg))
}

func (q sealedQueries) StreamCallsBefore(ctx context.Context, arg eventsdb.StreamCallsBeforeParams) ([]eventsdb.Event, error) {
	return q.open(q.Querier.StreamCallsBefore(ctx, arg))
}

func (q sealedQueries) StreamEventsAfter(ctx context.Context, arg eventsdb.StreamEventsAfterParams) ([]eventsdb.Event, error) {
	return q.open(q.Querier.StreamEventsAfter(ctx, arg))
}

func (q sealedQueries) StreamLifecycleEventsAfter(ctx context.Context, arg eventsdb.StreamLifecycleEventsAfterParams) ([]eventsdb.Event, error) {
	return q.open(q.Querier.StreamLifecycleEventsAfter(ctx, arg))
}

func (q sealedQueries) StreamNotesAfter(ctx context.Context, arg eventsdb.StreamNotesAfterParams) ([]eventsdb.Event, error) {
	return q.open(q.Querier.StreamNotesAfter(ctx, arg))
}

func (q sealedQueries) TaskErasures(ctx context.Context, taskID string) ([]eventsdb.Event, error) {
	return q.open(q.Querier.TaskErasures(ctx, taskID))
}

func (q sealedQueries) TaskEventsAfter(ctx context.Context, arg eventsdb.TaskEventsAfterParams) ([]eventsdb.Event, error) {
	return q.open(q.Querier.TaskEventsAfter(ctx, arg))
}

func (q sealedQueries) TaskEventsWithoutNotesAfter(ctx context.Context, arg eventsdb.TaskEventsWithoutNotesAfterParams) ([]eventsdb.Event, error) {
	return q.open(q.Querier.TaskEventsWithoutNotesAfter(ctx, arg))
}

// StreamNoteSizes folds the note events in Go: a sealed payload keeps its
// path readable to SQL but not its text, whose size the fold adds up.
func (q sealedQueries) StreamNoteSizes(ctx context.Context, arg eventsdb.StreamNoteSizesParams) ([]eventsdb.StreamNoteSizesRow, error) {
	var paths []string
	if err := json.Unmarshal([]byte(arg.Paths), &paths); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, p := range paths {
		want[p] = true
	}
	sizes := map[string]*eventsdb.StreamNoteSizesRow{}
	var order []string
	after := arg.After
	for {
		page, err := q.StreamNotesAfter(ctx, eventsdb.StreamNotesAfterParams{Stream: arg.Stream, After: after, Until: arg.Until, MaxEvents: 1000})
		if err != nil {
			return nil, err
		}
		for _, ev := range page {
			var p struct {
				Path string `json:"path"`
				Text string `json:"text"`
			}
			if err := json.Unmarshal([]byte(ev.Data), &p); err != nil {
				return nil, fmt.Errorf("event at %d: %w", ev.Position, err)
			}
			if !want[p.Path] {
				continue
			}
			r := sizes[p.Path]
			if r == nil {
				r = &eventsdb.StreamNoteSizesRow{Path: p.Path}
				sizes[p.Path] = r
				order = append(order, p.Path)
			}
			r.Revisions++
			r.Updated = ev.Position
			if ev.Type == events.TypeNoteWritten {
				r.Bytes = 0
			}
			r.Bytes += int64(len(p.Text))
		}
		if len(page) < 1000 {
			break
		}
		after = page[len(page)-1].Position
	}
	out := make([]eventsdb.StreamNoteSizesRow, 0, len(order))
	for _, p := range order {
		out = append(out, *sizes[p])
	}
	return out, nil
}
