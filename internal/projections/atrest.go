package projections

import (
	"context"
	"fmt"

	"github.com/memoryd/memoryd/internal/atrest"
	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// On a database encrypted at rest (docs/encryption.md) the projections'
// texts are sealed by sealedQueries, on the way in and out: a note's
// parts, the open and sealed chunks of
// rendered history text, and a note call's result. Names, paths, ids,
// sizes, positions and times stay plain, so that the SQL that finds rows
// runs as it is. A chunk's Bloom filter is built with the key's trigram
// hash, so it says nothing of the text without the key.

// The places a text is sealed for (atrest.Sealer's tag).
const (
	tagNotePart  = "note_parts.text"
	tagOpenText  = "history_open_texts.text"
	tagChunkData = "history_chunks.data"
	tagCallRes   = "note_calls.result"
)

// sealedColumns are the columns sealedQueries seals, each by its tag,
// which is its table.column, and whether it is sealed as text: what
// Digest, Diff and HiddenHolding open.
var sealedColumns = map[string]bool{tagNotePart: false, tagOpenText: false, tagChunkData: false, tagCallRes: true}

// sealedQueries seals and opens the sealed columns of the projections.
// Chunk data reaches it compressed (packedQueries, above it), since
// ciphertext does not compress.
type sealedQueries struct {
	projectionsdb.Querier
	s *atrest.Sealer
}

// trigramHashOf returns the trigram hash of q's search filters: keyed on
// a database encrypted at rest, else trigramBit.
func trigramHashOf(q projectionsdb.Querier) func(a, b, c byte) uint32 {
	if pq, ok := q.(packedQueries); ok {
		q = pq.Querier
	}
	if sq, ok := q.(sealedQueries); ok {
		return func(a, b, c byte) uint32 { return sq.s.TrigramHash(a, b, c) >> (32 - bloomBitsLog) }
	}
	return trigramBit
}

func (q sealedQueries) open(tag string, sealed []byte) ([]byte, error) {
	plain, err := q.s.Open(tag, sealed)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tag, err)
	}
	return plain, nil
}

func (q sealedQueries) openString(tag, sealed string) (string, error) {
	plain, err := q.s.OpenString(tag, sealed)
	if err != nil {
		return "", fmt.Errorf("%s: %w", tag, err)
	}
	return string(plain), nil
}

func (q sealedQueries) InsertNotePart(ctx context.Context, arg projectionsdb.InsertNotePartParams) error {
	arg.Text = q.s.Seal(tagNotePart, arg.Text)
	return q.Querier.InsertNotePart(ctx, arg)
}

func (q sealedQueries) InsertOpenText(ctx context.Context, arg projectionsdb.InsertOpenTextParams) error {
	arg.Text = q.s.Seal(tagOpenText, arg.Text)
	return q.Querier.InsertOpenText(ctx, arg)
}

func (q sealedQueries) InsertChunk(ctx context.Context, arg projectionsdb.InsertChunkParams) error {
	arg.Data = q.s.Seal(tagChunkData, arg.Data)
	return q.Querier.InsertChunk(ctx, arg)
}

func (q sealedQueries) InsertNoteCall(ctx context.Context, arg projectionsdb.InsertNoteCallParams) error {
	arg.Result = q.s.SealString(tagCallRes, []byte(arg.Result))
	return q.Querier.InsertNoteCall(ctx, arg)
}

func (q sealedQueries) GetAgentWithStateAndNote(ctx context.Context, arg projectionsdb.GetAgentWithStateAndNoteParams) ([]projectionsdb.GetAgentWithStateAndNoteRow, error) {
	rows, err := q.Querier.GetAgentWithStateAndNote(ctx, arg)
	for i := range rows {
		if err != nil {
			break
		}
		if rows[i].PartText != "" { // no note, or no part: nothing sealed
			var b []byte
			b, err = q.open(tagNotePart, []byte(rows[i].PartText))
			rows[i].PartText = string(b)
		}
	}
	return rows, err
}

func (q sealedQueries) GetAgentWithStateAndNoteWrite(ctx context.Context, arg projectionsdb.GetAgentWithStateAndNoteWriteParams) (projectionsdb.GetAgentWithStateAndNoteWriteRow, error) {
	row, err := q.Querier.GetAgentWithStateAndNoteWrite(ctx, arg)
	if err == nil && row.Result != "" { // no call: no result
		row.Result, err = q.openString(tagCallRes, row.Result)
	}
	return row, err
}

func (q sealedQueries) NoteWithParts(ctx context.Context, arg projectionsdb.NoteWithPartsParams) ([]projectionsdb.NoteWithPartsRow, error) {
	rows, err := q.Querier.NoteWithParts(ctx, arg)
	for i := range rows {
		if err != nil {
			break
		}
		if rows[i].Text != "" {
			var b []byte
			b, err = q.open(tagNotePart, []byte(rows[i].Text))
			rows[i].Text = string(b)
		}
	}
	return rows, err
}

func (q sealedQueries) NoteParts(ctx context.Context, arg projectionsdb.NotePartsParams) ([][]byte, error) {
	parts, err := q.Querier.NoteParts(ctx, arg)
	for i := range parts {
		if err != nil {
			break
		}
		parts[i], err = q.open(tagNotePart, parts[i])
	}
	return parts, err
}

func (q sealedQueries) NotePartsUnder(ctx context.Context, arg projectionsdb.NotePartsUnderParams) ([]projectionsdb.NotePartsUnderRow, error) {
	rows, err := q.Querier.NotePartsUnder(ctx, arg)
	for i := range rows {
		if err != nil {
			break
		}
		rows[i].Text, err = q.open(tagNotePart, rows[i].Text)
	}
	return rows, err
}

func (q sealedQueries) OpenTexts(ctx context.Context, arg projectionsdb.OpenTextsParams) ([]projectionsdb.OpenTextsRow, error) {
	rows, err := q.Querier.OpenTexts(ctx, arg)
	for i := range rows {
		if err != nil {
			break
		}
		rows[i].Text, err = q.open(tagOpenText, rows[i].Text)
	}
	return rows, err
}

func (q sealedQueries) OpenText(ctx context.Context, arg projectionsdb.OpenTextParams) ([]byte, error) {
	text, err := q.Querier.OpenText(ctx, arg)
	if err != nil {
		return nil, err
	}
	return q.open(tagOpenText, text)
}

// OpenTextsEnd: SQL adds the sealed length of the last text to its
// offset, which is atrest.Overhead more than the text's (0: none).
func (q sealedQueries) OpenTextsEnd(ctx context.Context, arg projectionsdb.OpenTextsEndParams) (int64, error) {
	end, err := q.Querier.OpenTextsEnd(ctx, arg)
	if err != nil || end == 0 {
		return end, err
	}
	return end - atrest.Overhead, nil
}

func (q sealedQueries) ChunkData(ctx context.Context, arg projectionsdb.ChunkDataParams) (projectionsdb.ChunkDataRow, error) {
	row, err := q.Querier.ChunkData(ctx, arg)
	if err == nil {
		row.Data, err = q.open(tagChunkData, row.Data)
	}
	return row, err
}

func (q sealedQueries) ChunkDataIfCandidate(ctx context.Context, arg projectionsdb.ChunkDataIfCandidateParams) (projectionsdb.ChunkDataIfCandidateRow, error) {
	row, err := q.Querier.ChunkDataIfCandidate(ctx, arg)
	if err == nil {
		row.Data, err = q.open(tagChunkData, row.Data)
	}
	return row, err
}
