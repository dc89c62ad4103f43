// Package eventlog is memoryd's append-only event log in SQLite.
//
// A Store has one writer connection and a reader pool, and holds the events
// of the catalog in package events. Appends check an expected stream version
// and apply each event through the store's Projector in the same
// transaction, so an event and the projection rows it implies commit
// together or not at all.
package eventlog

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/memoryd/memoryd/internal/atrest"
	"github.com/memoryd/memoryd/internal/eventlog/eventsdb"
	"github.com/memoryd/memoryd/internal/events"
)

// Errors returned by the store. Callers compare with errors.Is.
var (
	// ErrConflict means the stream is not at the expected version, or an
	// event with the same id, position or stream version already exists.
	ErrConflict = errors.New("conflict")
	// ErrUnavailable means the database is busy past its wait, full, or
	// closed. Nothing was written.
	ErrUnavailable = errors.New("storage unavailable")
	// ErrNotEmpty means an import found events already in the database.
	ErrNotEmpty = errors.New("database is not empty")
)

// errClosed is the error of a write or a read once the store is closed.
// Its writer and its reader connections refuse alike.
var errClosed = fmt.Errorf("%w: the store is closed", ErrUnavailable)

// AnyVersion as an expected version skips the stream version check.
const AnyVersion int64 = -1

// Options configure a Store.
type Options struct {
	// Projector applies every appended or imported event, and checks
	// every imported one, in the transaction that stores it. Required.
	Projector Projector
	// Now is the clock for recorded_at and event ids. It defaults to time.Now.
	Now func() time.Time
	// Synchronous is "full", the default, "normal", or "off" for scratch
	// databases that can be rebuilt. See docs/durability.md.
	Synchronous string
	// BusyTimeout bounds how long a statement waits for a lock. It defaults
	// to 5s.
	BusyTimeout time.Duration
	// Readers is how many connections read transactions keep. It defaults
	// to 4×GOMAXPROCS and at least 8, because a read holds its connection
	// for the whole tool call and concurrent calls outnumber the cores.
	// See docs/performance.md.
	Readers int
	// WriterPragmas are extra pragmas for the writer connection, such as a
	// max_page_count that bounds the database size.
	WriterPragmas []string
	// Warnf reports problems that do not stop the open, such as a database
	// file that other users can access. If nil, they are not reported.
	Warnf func(format string, args ...any)
	// Sealer is the key of a database encrypted at rest
	// (docs/encryption.md). A database that is encrypted needs it, and
	// one that is not ignores it, unless Encrypt is set.
	Sealer *atrest.Sealer
	// Encrypt makes a new database encrypted at rest with Sealer's key. A
	// database that holds plain events is refused with ErrNotEncrypted.
	Encrypt bool
}

// Store is the event log. It is safe for concurrent use.
type Store struct {
	writer    *sql.DB
	reader    *sql.DB
	engine    engine
	projector Projector
	now       func() time.Time

	entropy io.Reader // used by the writer goroutine only

	readConns *readConns
	readStmts *stmtCache
	walIndex  *walIndex      // CommitStamp's source; nil on PostgreSQL
	file      string         // the database's file; "" on PostgreSQL
	sealer    *atrest.Sealer // nil unless the database is encrypted at rest
	// wconn is the writer's connection, taken from writer by writerConn.
	// Only the writer goroutine uses it.
	wconn *keptConn

	writes chan *writeRequest
	// next is a request to be committed alone, taken while a batch was
	// gathered. Only the writer goroutine uses it.
	next  *writeRequest
	quit  chan struct{}
	done  chan struct{}
	close sync.Once

	// tip is what the committed log ends with, so that an append need not
	// ask. Only the writer goroutine uses it.
	tip logTip
	// erased says that the batch's transaction erased a task, so the
	// writer ends the erasure's scrubbing once it ends. Only the writer
	// goroutine uses it.
	erased bool
}

// logTip is the end of the committed log as the writer knows it.
// It holds the last position and the versions of the streams it has met.
// A commit that fails, or one by another process, makes the writer forget it.
type logTip struct {
	last        int64            // -1 when unknown
	versions    map[string]int64 // a stream missing is looked up
	dataVersion int64            // PRAGMA data_version when last checked
	// epoch counts the times the writer forgot the tip or erased a task:
	// what a caller learned of the log and the projections in a
	// transaction of the same epoch was changed by nothing but this
	// store's appends since (Tx.Epoch).
	epoch int64
}

// maxTipStreams bounds logTip.versions, which starts over when full.
const maxTipStreams = 1 << 16

func (t *logTip) forget() { *t = logTip{last: -1, dataVersion: t.dataVersion, epoch: t.epoch + 1} }

// merge records what a committed transaction wrote.
func (t *logTip) merge(last int64, versions map[string]int64) {
	t.last = last
	if len(versions) > maxTipStreams {
		t.versions = nil // too many to keep; looked up again when needed
		return
	}
	if len(t.versions)+len(versions) > maxTipStreams {
		t.versions = nil
	}
	if t.versions == nil {
		t.versions = make(map[string]int64, len(versions))
	}
	for stream, v := range versions {
		t.versions[stream] = v
	}
}

// Open opens the log in the database db names and applies the
// migrations. A postgres:// URL opens a PostgreSQL database that other
// servers may share; any other name is an SQLite file, created with mode
// 0600 if needed.
func Open(ctx context.Context, db string, opts Options) (*Store, error) {
	return OpenAt(ctx, ParseLocation(db), opts)
}

// OpenAt opens the log at loc and applies the migrations.
func OpenAt(ctx context.Context, loc Location, opts Options) (*Store, error) {
	if opts.Projector == nil {
		return nil, errors.New("events: Options.Projector is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Readers <= 0 {
		opts.Readers = max(8, 4*runtime.GOMAXPROCS(0))
	}
	return openAt(ctx, loc, opts)
}

// newStore starts the store's writer over its two pools.
func newStore(writer, reader *sql.DB, opts Options, e engine, wal *walIndex) *Store {
	s := &Store{
		writer:    writer,
		reader:    reader,
		engine:    e,
		projector: opts.Projector,
		sealer:    opts.Sealer,
		now:       opts.Now,
		entropy:   ulid.Monotonic(rand.Reader, 0),
		writes:    make(chan *writeRequest),

		readConns: newReadConns(reader, opts.Readers),
		readStmts: newStmtCache(reader),
		walIndex:  wal,
		quit:      make(chan struct{}),
		done:      make(chan struct{}),
		tip:       logTip{last: -1},
	}
	if s.sealer != nil {
		sealedPools.Store(reader, s.sealer)
		sealedPools.Store(writer, s.sealer)
	}
	go s.writeLoop()
	return s
}

// Close waits for the writes in progress, stops the writer and closes both
// connection pools. A WAL checkpoint runs on the last writer connection's
// close. Updates after Close return ErrUnavailable.
func (s *Store) Close() error {
	var err error
	s.close.Do(func() {
		close(s.quit)
		<-s.done
		s.readConns.close()
		s.readStmts.close()
		err = errors.Join(s.reader.Close(), s.writer.Close())
		sealedPools.Delete(s.reader)
		sealedPools.Delete(s.writer)
		if s.walIndex != nil {
			s.walIndex.close() // after the connections; see walIndex
		}
	})
	return err
}

// Reader returns the read-only connection pool, for projection queries.
func (s *Store) Reader() *sql.DB { return s.reader }

// queries runs queries on the reader pool, outside any read transaction,
// through its prepared statements, marked with the store's engine.
func (s *Store) queries() DBTX { return s.wrap(s.readStmts.queries()) }

// Now returns the store's clock reading.
func (s *Store) Now() time.Time { return s.now() }

// Tx is a write transaction, the single place events are appended.
type Tx struct {
	s         *Store
	db        DBTX
	q         eventsdb.Querier
	requestID string
	last      int64 // last position, -1 until read
	// proj is the projector's state of the transaction, shared by the
	// batch's requests.
	proj      TxProjection
	deferring bool // this request told proj to defer
	// versions are the stream versions this request has written, and batch
	// those the batch's earlier successful requests wrote. Both stand over
	// s.tip, the committed log, until the batch commits.
	versions, batch map[string]int64
}

// Epoch changes whenever the log or the projections may have changed by
// other means than this store's appends since an earlier transaction: a
// commit by another connection or server, a failed commit, an erasure. A
// caller that keeps what it read in one transaction, such as that an agent
// is registered, may trust it in a later one of the same epoch.
func (t *Tx) Epoch() int64 { return t.s.tip.epoch }

// DB returns the transaction's queries, to read projections consistently
// with the events about to be appended.
func (t *Tx) DB() DBTX { return t.db }

// StreamVersion returns the current version of stream, or 0 if it has no events.
func (t *Tx) StreamVersion(ctx context.Context, stream string) (int64, error) {
	if v, ok := t.versions[stream]; ok {
		return v, nil
	}
	if v, ok := t.batch[stream]; ok {
		return v, nil
	}
	if v, ok := t.s.tip.versions[stream]; ok {
		return v, nil
	}
	v, err := t.q.StreamVersion(ctx, stream)
	if err == nil && v > 0 {
		// Nothing in this batch has written the stream so far, or it would
		// be in versions or batch, so this is its committed version.
		t.s.tip.merge(t.s.tip.last, map[string]int64{stream: v})
	}
	return v, err
}

// Append appends evs to stream and applies each to the projections.
// It returns ErrConflict when stream is not at expectedVersion.
func (t *Tx) Append(ctx context.Context, stream string, expectedVersion int64, evs ...events.Pending) ([]events.Event, error) {
	version, err := t.StreamVersion(ctx, stream)
	if err != nil {
		return nil, err
	}
	if expectedVersion != AnyVersion && version != expectedVersion { // AnyVersion skips the check
		return nil, fmt.Errorf("%w: stream %s is at version %d, expected %d", ErrConflict, stream, version, expectedVersion)
	}
	if _, err := t.Position(ctx); err != nil {
		return nil, err
	}
	now := t.s.now().UTC()
	out := make([]events.Event, 0, len(evs))
	for _, p := range evs {
		entry, ok := events.Lookup(p.Type)
		if !ok {
			return nil, fmt.Errorf("%w: %q", events.ErrUnknownEvent, p.Type)
		}
		if pl, ok := p.Data.(events.Payload); !ok || pl.EventType() != p.Type {
			return nil, fmt.Errorf("eventlog: a %s event with a %T payload (events.NewPending makes them agree)", p.Type, p.Data)
		}
		data, err := events.MarshalData(p.Data)
		if err != nil {
			return nil, fmt.Errorf("marshal %s: %w", p.Type, err)
		}
		id, err := ulid.New(ulid.Timestamp(now), t.s.entropy)
		if err != nil {
			return nil, fmt.Errorf("event id: %w", err)
		}
		version++
		ev := events.Event{
			Position:      t.last + 1,
			ID:            id.String(),
			Stream:        stream,
			StreamVersion: version,
			Type:          p.Type,
			Schema:        entry.Schema,
			RecordedAt:    now.Format(events.TimeFormat),
			Data:          data,
			RequestID:     t.requestID,
		}
		if err := t.insert(ctx, ev); err != nil {
			return nil, err
		}
		out = append(out, ev)
	}
	return out, nil
}

// insert writes ev at its own position and applies it.
func (t *Tx) insert(ctx context.Context, ev events.Event) error {
	err := t.q.InsertEvent(ctx, eventsdb.InsertEventParams{
		Position:      ev.Position,
		ID:            ev.ID,
		Stream:        ev.Stream,
		StreamVersion: ev.StreamVersion,
		TaskID:        ev.TaskID(),
		Type:          ev.Type,
		Schema:        int64(ev.Schema),
		RecordedAt:    ev.RecordedAt,
		Data:          string(ev.Data),
		RequestID:     ev.RequestID,
	})
	if err != nil {
		return classify(err)
	}
	if err := t.proj.Apply(ctx, t.db, ev); err != nil {
		return fmt.Errorf("apply %s at %d: %w", ev.Type, ev.Position, err)
	}
	t.last = ev.Position
	if t.versions == nil {
		t.versions = map[string]int64{}
	}
	t.versions[ev.Stream] = ev.StreamVersion
	return nil
}

// LastPosition returns the position of the newest event, or 0 when empty.
func (s *Store) LastPosition(ctx context.Context) (int64, error) {
	p, err := queriesOf(s.queries()).LastPosition(ctx)
	return p, classify(err)
}

// Filter selects events to read.
type Filter struct {
	After  int64  // positions greater than this
	Until  int64  // positions at most this; 0 for no bound
	TaskID string // only this task's streams; empty for all
	Stream string // only this stream; empty for all; takes precedence over TaskID
	Limit  int    // page size
	Only   Only   // only these types, with TaskID or Stream
	Path   string // the note's path, with Stream and OnlyNote
}

// Only narrows a read to the event types one reader needs, so the others
// are skipped by SQLite instead of being read and decoded.
type Only int

const (
	// OnlyAll reads every type.
	OnlyAll Only = iota
	// OnlyNote reads one note's note.written and note.appended events.
	// It needs Stream, the note owner's, and Path.
	OnlyNote
	// OnlyFenced reads every event the checkpoint fence folds, which is all
	// but the notes, history and audit events. It needs Stream.
	OnlyFenced
	// OnlyNotes reads the note.written and note.appended events of every
	// note. It needs Stream.
	OnlyNotes
	// WithoutNotes reads all but the notes and audit events, which is what
	// the history and the fence are made of. It needs TaskID.
	WithoutNotes
)

// Read returns one page of events in position order.
func (s *Store) Read(ctx context.Context, f Filter) ([]events.Event, error) {
	return readEvents(ctx, s.queries(), f)
}

func readEvents(ctx context.Context, db eventsdb.DBTX, f Filter) ([]events.Event, error) {
	until := f.Until
	if until <= 0 {
		until = 1<<63 - 1
	}
	limit := int64(f.Limit)
	if limit <= 0 {
		limit = 500
	}
	q := queriesOf(db)
	var rows []eventsdb.Event
	var err error
	switch {
	case f.Stream != "" && f.Only == OnlyFenced:
		rows, err = q.StreamLifecycleEventsAfter(ctx, eventsdb.StreamLifecycleEventsAfterParams{Stream: f.Stream, After: f.After, Until: until, MaxEvents: limit})
	case f.Stream != "" && f.Only == OnlyNote:
		rows, err = q.NoteEventsAfter(ctx, eventsdb.NoteEventsAfterParams{Stream: f.Stream, After: f.After, Until: until, Path: f.Path, MaxEvents: limit})
	case f.Stream != "" && f.Only == OnlyNotes:
		rows, err = q.StreamNotesAfter(ctx, eventsdb.StreamNotesAfterParams{Stream: f.Stream, After: f.After, Until: until, MaxEvents: limit})
	case f.Stream != "":
		rows, err = q.StreamEventsAfter(ctx, eventsdb.StreamEventsAfterParams{Stream: f.Stream, After: f.After, Until: until, MaxEvents: limit})
	case f.TaskID != "" && f.Only == WithoutNotes:
		rows, err = q.TaskEventsWithoutNotesAfter(ctx, eventsdb.TaskEventsWithoutNotesAfterParams{TaskID: f.TaskID, After: f.After, Until: until, MaxEvents: limit})
	case f.TaskID != "":
		rows, err = q.TaskEventsAfter(ctx, eventsdb.TaskEventsAfterParams{TaskID: f.TaskID, After: f.After, Until: until, MaxEvents: limit})
	default:
		rows, err = q.EventsAfter(ctx, eventsdb.EventsAfterParams{After: f.After, Until: until, MaxEvents: limit})
	}
	if err != nil {
		return nil, classify(err)
	}
	return toEvents(rows), nil
}

func toEvents(rows []eventsdb.Event) []events.Event {
	out := make([]events.Event, len(rows))
	for i, r := range rows {
		out[i] = events.Event{
			Position: r.Position, ID: r.ID, Stream: r.Stream, StreamVersion: r.StreamVersion,
			Type: r.Type, Schema: int(r.Schema), RecordedAt: r.RecordedAt,
			Data: json.RawMessage(r.Data), RequestID: r.RequestID,
		}
	}
	return out
}

// EventAt returns the event at a position on db, a transaction or pool of
// a store; sql.ErrNoRows when there is none.
func EventAt(ctx context.Context, db DBTX, position int64) (events.Event, error) {
	row, err := queriesOf(db).EventAt(ctx, position)
	if errors.Is(err, sql.ErrNoRows) {
		return events.Event{}, err
	}
	if err != nil {
		return events.Event{}, classify(err)
	}
	return toEvents([]eventsdb.Event{row})[0], nil
}

// StreamCallsBefore returns at most limit audit.tool_called events of a
// stream at positions before before, newest first.
func (s *Store) StreamCallsBefore(ctx context.Context, stream string, before int64, limit int) ([]events.Event, error) {
	rows, err := queriesOf(s.queries()).StreamCallsBefore(ctx, eventsdb.StreamCallsBeforeParams{Stream: stream, Before: before, MaxEvents: int64(limit)})
	if err != nil {
		return nil, classify(err)
	}
	return toEvents(rows), nil
}

// BranchChangeFrom returns the position of a stream's first
// history.branch_changed at or after position from, or 0 if there is none.
func (s *Store) BranchChangeFrom(ctx context.Context, stream string, from int64) (int64, error) {
	p, err := queriesOf(s.queries()).StreamBranchChangeFrom(ctx, eventsdb.StreamBranchChangeFromParams{Stream: stream, FromPosition: from})
	return p, classify(err)
}

// NoteSize is a note as of a position, folded from its events.
type NoteSize struct {
	Path      string
	Revisions int64 // its writes and appends
	Updated   int64 // the position of the last
	Bytes     int64 // its size
}

// NoteSizes folds the note events of a stream in (after, until] for the
// notes at paths: how many there are of each, the last one's position,
// and the note's size after them, as if a note started empty at after. A
// path with no event there is left out.
func (s *Store) NoteSizes(ctx context.Context, stream string, after, until int64, paths []string) ([]NoteSize, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	list, err := json.Marshal(paths)
	if err != nil {
		return nil, err
	}
	rows, err := queriesOf(s.queries()).StreamNoteSizes(ctx, eventsdb.StreamNoteSizesParams{Stream: stream, After: after, Until: until, Paths: string(list)})
	if err != nil {
		return nil, classify(err)
	}
	out := make([]NoteSize, len(rows))
	for i, r := range rows {
		out[i] = NoteSize(r)
	}
	return out, nil
}

// StreamBounds returns the first and last positions of a stream and its
// number of events, up to position until. The positions are 0 when it has none.
func (s *Store) StreamBounds(ctx context.Context, stream string, until int64) (first, last, n int64, err error) {
	if until <= 0 { // no bound
		until = 1<<63 - 1
	}
	b, err := queriesOf(s.queries()).StreamBounds(ctx, eventsdb.StreamBoundsParams{Stream: stream, Until: until})
	if err != nil {
		return 0, 0, 0, classify(err)
	}
	return b.FirstPosition, b.LastPosition, b.Events, nil
}

// Each calls fn for every event matching f in position order, reading
// pages of f.Limit events.
func (s *Store) Each(ctx context.Context, f Filter, fn func(events.Event) error) error {
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	for {
		page, err := s.Read(ctx, f)
		if err != nil {
			return err
		}
		for _, ev := range page {
			if err := fn(ev); err != nil {
				return err
			}
		}
		if len(page) < f.Limit {
			return nil
		}
		f.After = page[len(page)-1].Position
	}
}

// classify maps the engines' errors to the store's error vocabulary.
func classify(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrConflict) || errors.Is(err, ErrUnavailable) {
		return err // classified already
	}
	for _, d := range engines {
		if c, ok := d.classify(err); ok {
			return c
		}
	}
	if errors.Is(err, sql.ErrConnDone) || errors.Is(err, sql.ErrTxDone) || isDBClosed(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// isDBClosed reports whether err is database/sql's unexported error for a
// closed *sql.DB, which means the store is shutting down.
func isDBClosed(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "sql: database is closed" {
			return true
		}
	}
	return false
}

// Read returns one page of events as this transaction sees them.
func (t *Tx) Read(ctx context.Context, f Filter) ([]events.Event, error) {
	return readEvents(ctx, t.db, f)
}

// DeferProjections lets the projector defer its projection writes until
// FlushProjections. It suits imports and rebuilds, where nothing but the
// projector reads the projections, so a projection row is written once
// instead of once per event.
func (t *Tx) DeferProjections() {
	t.deferring = true
	t.proj.Defer()
}

// FlushProjections writes out what the projector has deferred and ends the
// deferral. The request's later events are applied as they come.
func (t *Tx) FlushProjections(ctx context.Context) error {
	if !t.deferring {
		return nil
	}
	t.deferring = false
	return t.proj.Flush(ctx, t.db)
}

// Projection returns the projector's state of this transaction, which
// the projector's package asserts to its own type.
func (t *Tx) Projection() TxProjection { return t.proj }

// Reapply applies ev through the projector again without appending it.
// Projection rebuilds are made of it.
func (t *Tx) Reapply(ctx context.Context, ev events.Event) error {
	return t.proj.Apply(ctx, t.db, ev)
}

// Position returns the position of the newest event this transaction sees,
// its own appends included.
func (t *Tx) Position(ctx context.Context) (int64, error) {
	if t.last < 0 {
		var err error
		if t.last, err = t.q.LastPosition(ctx); err != nil {
			t.last = -1
			return 0, err
		}
	}
	return t.last, nil
}

// PositionIn returns the newest position that db sees, which is the
// position a read in that connection or transaction reads at.
func PositionIn(ctx context.Context, db eventsdb.DBTX) (int64, error) {
	p, err := queriesOf(db).LastPosition(ctx)
	return p, classify(err)
}
