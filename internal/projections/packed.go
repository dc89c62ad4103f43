package projections

import (
	"bytes"
	"context"
	"fmt"
	"sync"

	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
	"github.com/memoryd/memoryd/internal/zpack"
)

// packedQueries compresses the rendered text of a sealed history chunk
// (history_chunks.data) on the way in, before any sealing below it, and
// decompresses it on the way out (docs/performance.md). Rows
// written before compression read as they are. It keeps the last chunks
// it read, as a search opens its candidate chunks and then cuts its
// results' texts out of the same ones.
type packedQueries struct {
	projectionsdb.Querier
	opened *openedChunks
}

func newPackedQueries(q projectionsdb.Querier) packedQueries {
	return packedQueries{Querier: q, opened: &openedChunks{}}
}

// openedChunks are the last few chunks a packedQueries read. A sealed
// chunk never changes (a rebuild writes the same bytes), so they stay
// right for as long as the queries are used: a request.
type openedChunks struct {
	mu   sync.Mutex
	keys [4]projectionsdb.ChunkDataParams
	rows [4]projectionsdb.ChunkDataRow
	next int
}

func (c *openedChunks) get(k projectionsdb.ChunkDataParams) (projectionsdb.ChunkDataRow, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, key := range c.keys {
		if key == k && c.rows[i].Data != nil {
			return c.rows[i], true
		}
	}
	return projectionsdb.ChunkDataRow{}, false
}

func (c *openedChunks) put(k projectionsdb.ChunkDataParams, row projectionsdb.ChunkDataRow) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.keys[c.next], c.rows[c.next] = k, row
	c.next = (c.next + 1) % len(c.keys)
}

func unpackChunk(data []byte) ([]byte, error) {
	plain, err := zpack.Unpack(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tagChunkData, err)
	}
	return plain, nil
}

func (q packedQueries) InsertChunk(ctx context.Context, arg projectionsdb.InsertChunkParams) error {
	arg.Data = zpack.Pack(arg.Data)
	return q.Querier.InsertChunk(ctx, arg)
}

// ChunkData answers a chunk read before from those kept; its data must
// not be changed.
func (q packedQueries) ChunkData(ctx context.Context, arg projectionsdb.ChunkDataParams) (projectionsdb.ChunkDataRow, error) {
	if row, ok := q.opened.get(arg); ok {
		return row, nil
	}
	row, err := q.Querier.ChunkData(ctx, arg)
	if err == nil {
		if row.Data, err = unpackChunk(row.Data); err == nil {
			q.opened.put(arg, row)
		}
	}
	return row, err
}

func (q packedQueries) ChunkDataIfCandidate(ctx context.Context, arg projectionsdb.ChunkDataIfCandidateParams) (projectionsdb.ChunkDataIfCandidateRow, error) {
	row, err := q.Querier.ChunkDataIfCandidate(ctx, arg)
	if err == nil {
		if row.Data, err = unpackChunk(row.Data); err == nil {
			q.opened.put(projectionsdb.ChunkDataParams{TaskID: arg.TaskID, Agent: arg.Agent, ChunkNo: arg.ChunkNo},
				projectionsdb.ChunkDataRow(row))
		}
	}
	return row, err
}

// ChunkText reads the whole chunk and cuts the text out in Go: SQL cannot
// cut a compressed chunk. start is 1-based, as SQL's substr.
func (q packedQueries) ChunkText(ctx context.Context, arg projectionsdb.ChunkTextParams) ([]byte, error) {
	row, err := q.ChunkData(ctx, projectionsdb.ChunkDataParams{TaskID: arg.TaskID, Agent: arg.Agent, ChunkNo: arg.ChunkNo})
	if err != nil {
		return nil, err
	}
	from := min(max(arg.Start-1, 0), int64(len(row.Data)))
	to := min(from+max(arg.NBytes, 0), int64(len(row.Data)))
	return bytes.Clone(row.Data[from:to]), nil
}
