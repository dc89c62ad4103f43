package projections

import (
	"database/sql"
	"errors"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// ErrNotFound means there is no such row in the projection.
var ErrNotFound = errors.New("not found")

// Reader answers queries over the projections, through the reader pool or
// inside a write transaction.
type Reader struct {
	q  projectionsdb.Querier
	db projectionsdb.DBTX // for the log's queries (EntryRaw)
	tx *txState           // the write transaction's state for a TxReader, or nil
	// filters, when set, finds a search's candidate chunks.
	filters *ChunkFilters
	// noteCache, when set, answers AgentWithNote for stamp, and fromCache
	// says it did.
	noteCache *NoteCache
	stamp     eventlog.CommitStamp
	fromCache bool
}

// NewReader returns a Reader over db, which is an *sql.DB, an *sql.Tx or
// the PostgreSQL store's DBTX.
func NewReader(db projectionsdb.DBTX) *Reader {
	return &Reader{q: queriesOf(db), db: db}
}

// UseChunkFilters makes SearchTexts find its candidate chunks through f,
// which must serve the database the reader reads. Use it in read
// transactions only, since a write transaction may seal a chunk it then
// rolls back.
func (r *Reader) UseChunkFilters(f *ChunkFilters) { r.filters = f }

func notFound(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return ErrNotFound
	}
	return err
}
