package projections

import (
	"database/sql"
	"errors"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// ErrNotFound: no such row in the projection.
var ErrNotFound = errors.New("not found")

// Reader answers queries over the projections, through the reader pool or
// inside a write transaction.
type Reader struct {
	q  projectionsdb.Querier
	tx *txState // the write transaction's state (TxReader), or nil
	// readPosition is the log position this reader's snapshot reads at,
	// learnt by AgentWithState and its combined forms (-1 until then).
	readPosition int64
	// filters, when set, finds a search's candidate chunks (UseChunkFilters).
	filters *ChunkFilters
	// noteCache, when set, answers AgentWithNote (UseNoteCache) for
	// stamp; fromCache says it did.
	noteCache *NoteCache
	stamp     eventlog.CommitStamp
	fromCache bool
}

// NewReader returns a Reader over db, an *sql.DB or *sql.Tx, or the
// PostgreSQL store's DBTX (queriesOf).
func NewReader(db projectionsdb.DBTX) *Reader {
	return &Reader{q: queriesOf(db), readPosition: -1}
}

// UseChunkFilters makes SearchTexts find its candidate chunks through f,
// which must serve the database the reader reads. For read transactions
// only: f learns what the reader sees, and a write transaction may seal a
// chunk it then rolls back.
func (r *Reader) UseChunkFilters(f *ChunkFilters) { r.filters = f }

// ReadPosition returns the log position the reader's queries read at, if
// a query already learnt it (AgentWithState and its combined forms do, at
// no extra cost). Only meaningful when the reader is over one transaction.
func (r *Reader) ReadPosition() (int64, bool) { return r.readPosition, r.readPosition >= 0 }

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}
