package projections

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
	"github.com/memoryd/memoryd/internal/zpack"
)

// TestChunksCompressed: a chunk written through the projections' queries
// is stored compressed and reads back whole and in slices; a chunk stored
// plain, as before compression, reads the same.
func TestChunksCompressed(t *testing.T) {
	ctx := context.Background()
	store, err := eventlog.Open(ctx, filepath.Join(t.TempDir(), "memory.db"), eventlog.Options{Projector: Projector{}})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	text := []byte(strings.Repeat("héllo, history text; ", 4000))
	err = store.Update(ctx, "", func(tx *eventlog.Tx) error {
		q := queriesOf(tx.DB())
		if err := q.InsertChunk(ctx, projectionsdb.InsertChunkParams{TaskID: "t1", Agent: "/root", ChunkNo: 1, Bloom: []byte{0}, Entries: "[]", Data: text}); err != nil {
			return err
		}
		plain := projectionsdb.New(tx.DB()) // as an older memoryd wrote it
		return plain.InsertChunk(ctx, projectionsdb.InsertChunkParams{TaskID: "t1", Agent: "/root", ChunkNo: 2, Bloom: []byte{0}, Entries: "[]", Data: text})
	})
	if err != nil {
		t.Fatal(err)
	}
	var stored []byte
	if err := store.Reader().QueryRowContext(ctx, "SELECT data FROM history_chunks WHERE chunk_no = 1").Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if !zpack.Packed(stored) || len(stored) >= len(text)/10 {
		t.Fatalf("chunk 1 is stored in %d bytes for %d of text", len(stored), len(text))
	}
	for _, no := range []int64{1, 2} {
		q := queriesOf(store.Reader())
		row, err := q.ChunkData(ctx, projectionsdb.ChunkDataParams{TaskID: "t1", Agent: "/root", ChunkNo: no})
		if err != nil || !bytes.Equal(row.Data, text) {
			t.Fatalf("chunk %d: %d bytes, %v", no, len(row.Data), err)
		}
		for _, c := range []struct{ start, n int64 }{{1, 5}, {3, 100}, {int64(len(text)) - 2, 10}, {int64(len(text)) + 5, 3}} {
			got, err := q.ChunkText(ctx, projectionsdb.ChunkTextParams{Start: c.start, NBytes: c.n, TaskID: "t1", Agent: "/root", ChunkNo: no})
			from := min(c.start-1, int64(len(text)))
			want := text[from:min(from+c.n, int64(len(text)))]
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("chunk %d from %d, %d bytes: %q, %v; want %q", no, c.start, c.n, got, err, want)
			}
		}
	}
}
