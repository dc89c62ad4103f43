package projections

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// Each agent's rendered entry texts are kept in chunks, in the order the
// entries were recorded. The open chunk has one history_open_texts row per
// entry, and each sealed chunk is one immutable history_chunks row holding
// the texts concatenated. A search reads a few large rows instead of one
// row per entry.

// ChurnTables are the tables whose rows a long write transaction inserts
// and deletes again: each entry's text waits in history_open_texts until
// its chunk seals, in the same transaction when an import records many.
var ChurnTables = []string{"history_open_texts"}

// chunkSealBytes is the size at which the open chunk is sealed.
// A chunk holds at least this many bytes, and one entry may make it larger.
const chunkSealBytes = 64 << 10

// chunkEntry is one entry of a sealed chunk, with where its text is in the
// chunk's data and the code-point offsets of its breaks.
type chunkEntry struct {
	ID     string `json:"id"`
	Offset int    `json:"o"`
	Bytes  int    `json:"n"`
	Breaks []int  `json:"b,omitempty"`
}

// textPlace is where an entry's text is stored.
type textPlace struct {
	chunk, offset, bytes int64
}

// placeText appends an entry's text to its agent's open chunk, sealing the
// chunk once it holds chunkSealBytes. An empty text is stored nowhere.
func placeText(ctx context.Context, q projectionsdb.Querier, taskID, agent, entryID, text, breaks string) (textPlace, error) {
	if text == "" {
		return textPlace{}, nil
	}
	// The open chunk follows the last sealed one; its size is the end of
	// its last text.
	sealed, err := q.LastChunkNo(ctx, projectionsdb.LastChunkNoParams{TaskID: taskID, Agent: agent})
	if err != nil {
		return textPlace{}, err
	}
	size, err := q.OpenTextsEnd(ctx, projectionsdb.OpenTextsEndParams{TaskID: taskID, Agent: agent})
	if err != nil {
		return textPlace{}, err
	}
	place := textPlace{chunk: sealed + 1, offset: size, bytes: int64(len(text))}
	if err := q.InsertOpenText(ctx, projectionsdb.InsertOpenTextParams{
		TaskID: taskID, Agent: agent, TextOffset: place.offset, EntryID: entryID, Breaks: breaks, Text: []byte(text),
	}); err != nil {
		return textPlace{}, err
	}
	if size+place.bytes >= chunkSealBytes {
		return place, sealChunk(ctx, q, taskID, agent, place.chunk)
	}
	return place, nil
}

// sealChunk moves the open texts of an agent into one history_chunks row.
func sealChunk(ctx context.Context, q projectionsdb.Querier, taskID, agent string, chunkNo int64) error {
	rows, err := q.OpenTexts(ctx, projectionsdb.OpenTextsParams{TaskID: taskID, Agent: agent})
	if err != nil {
		return err
	}
	var data []byte
	entries := make([]chunkEntry, len(rows))
	for i, r := range rows {
		if int(r.TextOffset) != len(data) {
			return fmt.Errorf("open chunk %d of %s%s: text at %d, expected %d", chunkNo, taskID, agent, r.TextOffset, len(data))
		}
		entries[i] = chunkEntry{ID: r.EntryID, Offset: len(data), Bytes: len(r.Text)}
		if err := json.Unmarshal([]byte(r.Breaks), &entries[i].Breaks); err != nil {
			return err
		}
		data = append(data, r.Text...)
	}
	table, err := json.Marshal(entries)
	if err != nil {
		return err
	}
	if err := q.InsertChunk(ctx, projectionsdb.InsertChunkParams{
		TaskID: taskID, Agent: agent, ChunkNo: chunkNo, Bloom: trigramBloom(trigramHashOf(q), data),
		Entries: string(table), Data: data,
	}); err != nil {
		return err
	}
	return q.DeleteOpenTexts(ctx, projectionsdb.DeleteOpenTextsParams{TaskID: taskID, Agent: agent})
}

// ItemText returns the rendered text of an entry and the code-point
// offsets of its breaks.
func (r *Reader) ItemText(ctx context.Context, taskID, agent, entryID string) (string, []int, error) {
	row, err := r.q.HistoryEntryText(ctx, projectionsdb.HistoryEntryTextParams{TaskID: taskID, Agent: agent, EntryID: entryID})
	if err != nil {
		return "", nil, notFound(err)
	}
	var breaks []int
	if err := json.Unmarshal([]byte(row.Breaks), &breaks); err != nil {
		return "", nil, err
	}
	if row.TextBytes == 0 {
		return "", breaks, nil
	}
	text, err := r.q.ChunkText(ctx, projectionsdb.ChunkTextParams{
		Start: row.TextOffset + 1, NBytes: row.TextBytes, TaskID: taskID, Agent: agent, ChunkNo: row.TextChunk,
	})
	if errors.Is(err, sql.ErrNoRows) { // not sealed yet
		text, err = r.q.OpenText(ctx, projectionsdb.OpenTextParams{TaskID: taskID, Agent: agent, TextOffset: row.TextOffset})
	}
	if err != nil {
		return "", nil, notFound(err)
	}
	if int64(len(text)) != row.TextBytes {
		return "", nil, fmt.Errorf("text of entry %s: %d bytes stored, %d expected", entryID, len(text), row.TextBytes)
	}
	return string(text), breaks, nil
}

// SearchTexts calls fn with the id of every entry of an agent whose text
// contains query as a literal, case-sensitive substring, in the order the
// entries were recorded. Entries off the current branch count too. A match
// never spans two entries nor a break of its entry. The scan stops at fn's
// first error.
func (r *Reader) SearchTexts(ctx context.Context, taskID, agent, query string, fn func(entryID string) error) error {
	if query == "" {
		return errors.New("search: empty query")
	}
	m := newLiteral(query)
	// Only the sealed chunks the Bloom filters pass are read and checked.
	candidates, _, _, err := r.candidateChunks(ctx, taskID, agent, bloomProbes(trigramHashOf(r.q), []byte(query)), false)
	if err != nil {
		return err
	}
	for _, no := range candidates {
		c, err := r.q.ChunkData(ctx, projectionsdb.ChunkDataParams{TaskID: taskID, Agent: agent, ChunkNo: no})
		if err != nil {
			return err
		}
		if err := searchChunk(c.Entries, c.Data, m, fn); err != nil {
			return fmt.Errorf("chunk %d of %s%s: %w", no, taskID, agent, err)
		}
	}
	return r.searchOpen(ctx, taskID, agent, m, fn)
}

// searchOpen reports the entries of an agent's open chunk that contain m,
// in the order they were recorded.
func (r *Reader) searchOpen(ctx context.Context, taskID, agent string, m *literal, fn func(entryID string) error) error {
	open, err := r.q.OpenTexts(ctx, projectionsdb.OpenTextsParams{TaskID: taskID, Agent: agent})
	if err != nil {
		return err
	}
	for _, t := range open {
		if m.index(t.Text) < 0 {
			continue
		}
		var breaks []int
		if err := json.Unmarshal([]byte(t.Breaks), &breaks); err != nil {
			return err
		}
		if !m.matchAvoidingBreaks(t.Text, breaks) {
			continue
		}
		if err := fn(t.EntryID); err != nil {
			return err
		}
	}
	return nil
}

// candidateChunks returns the sealed chunks of an agent whose Bloom filter
// has every probe bit, and the number of the last sealed chunk. With lazy it
// may return them unchecked, and each must then be checked against its
// full filter when it is read.
func (r *Reader) candidateChunks(ctx context.Context, taskID, agent string, probes []byte, lazy bool) (chunks []int64, sealed int64, checked bool, err error) {
	sealed, err = r.q.LastChunkNo(ctx, projectionsdb.LastChunkNoParams{TaskID: taskID, Agent: agent})
	if err != nil {
		return nil, 0, false, err
	}
	if r.filters != nil && len(probes) > 0 {
		// The chunks the folded filters pass, checked against their full
		// filters in SQL.
		passed, ok, err := r.filters.candidates(ctx, r.q, taskID, agent, sealed, probes)
		if err != nil {
			return nil, 0, false, err
		}
		if ok {
			if len(passed) == 0 {
				return nil, sealed, true, nil
			}
			if lazy && len(passed) > lazyCheckAbove {
				// A search that stops early checks only the chunks it reads.
				return passed, sealed, false, nil
			}
			chunks, err := r.q.CandidateChunksAmong(ctx, projectionsdb.CandidateChunksAmongParams{
				TaskID: taskID, Agent: agent, ChunkNos: marshalChunkNos(passed), Probes: probes,
			})
			return chunks, sealed, true, err
		}
	}
	chunks, err = r.q.CandidateChunks(ctx, projectionsdb.CandidateChunksParams{TaskID: taskID, Agent: agent, Probes: probes})
	return chunks, sealed, true, err
}

// lazyCheckAbove is how many chunks passing the folded filters are checked
// against their full filters in one query. Past it, each is checked when a
// search reads it.
const lazyCheckAbove = 64

// searchChunk reports the entries of one sealed chunk that contain m.
func searchChunk(table string, data []byte, m *literal, fn func(entryID string) error) error {
	var entries []chunkEntry // decoded at the first match
	next := 0                // the first entry not reported or skipped
	pos := 0
	for pos < len(data) {
		i := m.index(data[pos:])
		if i < 0 {
			return nil
		}
		start := pos + i
		if entries == nil {
			if err := json.Unmarshal([]byte(table), &entries); err != nil {
				return err
			}
		}
		for next < len(entries) && entries[next].Offset+entries[next].Bytes <= start {
			next++
		}
		if next == len(entries) {
			return fmt.Errorf("match at %d is outside its entries", start)
		}
		e := entries[next]
		end := e.Offset + e.Bytes
		if start+len(m.needle) > end {
			// The match runs into the next entry. Look again inside this
			// entry past the match start, then in the next ones.
			if j := m.index(data[start+1 : end]); j >= 0 {
				pos = start + 1 + j
				continue
			}
			pos = end
			next++
			continue
		}
		if len(e.Breaks) == 0 || m.matchAvoidingBreaks(data[start:end], shiftBreaks(data[e.Offset:start], e.Breaks)) {
			if err := fn(e.ID); err != nil {
				return err
			}
		}
		pos = end
		next++
	}
	return nil
}

// literal finds a needle in byte slices. It anchors on the needle's byte
// that byteRank finds rarest, so a needle whose first byte is common still
// skips through the text at the speed of bytes.IndexByte.
type literal struct {
	needle []byte
	anchor byte // needle[at]
	at     int
}

func newLiteral(query string) *literal {
	m := &literal{needle: []byte(query)}
	for i := 1; i < len(m.needle); i++ {
		if byteRank(m.needle[i]) < byteRank(m.needle[m.at]) {
			m.at = i
		}
	}
	m.anchor = m.needle[m.at]
	return m
}

// byteRank orders bytes by how common they are in logs, code and prose.
// Higher is more common, and only the order matters.
func byteRank(b byte) int {
	const common = " etaoinsrhldcumfpgwybvk.,:/-_=()ETAOINSRHLDCUMFPGWYBVK0123456789\n\"'"
	if i := strings.IndexByte(common, b); i >= 0 {
		return 1000 - i
	}
	return 0 // everything else is rare
}

// index returns the byte offset of the first match in hay, or -1.
func (m *literal) index(hay []byte) int {
	if m.at == 0 {
		return bytes.Index(hay, m.needle)
	}
	n := len(m.needle)
	pos := m.at // the anchor of a match at i is at i+m.at
	for pos < len(hay) {
		j := bytes.IndexByte(hay[pos:], m.anchor)
		if j < 0 {
			return -1
		}
		i := pos + j - m.at
		if i+n > len(hay) {
			return -1
		}
		if bytes.Equal(hay[i:i+n], m.needle) {
			return i
		}
		pos += j + 1
	}
	return -1
}

// matchAvoidingBreaks reports whether text holds a match that contains
// none of the sorted code-point offsets breaks.
func (m *literal) matchAvoidingBreaks(text []byte, breaks []int) bool {
	n := utf8.RuneCount(m.needle)
	cp, at := 0, 0 // code-point offset of byte offset at
	for {
		i := m.index(text[at:])
		if i < 0 {
			return false
		}
		cp += utf8.RuneCount(text[at : at+i])
		at += i
		if j, _ := slices.BinarySearch(breaks, cp); j == len(breaks) || breaks[j] >= cp+n {
			return true
		}
		_, w := utf8.DecodeRune(text[at:])
		cp++
		at += w
	}
}

// shiftBreaks returns breaks relative to the end of skipped, a prefix of
// the text they belong to, dropping those inside it.
func shiftBreaks(skipped []byte, breaks []int) []int {
	n := utf8.RuneCount(skipped)
	i, _ := slices.BinarySearch(breaks, n)
	out := make([]int, len(breaks)-i)
	for k, b := range breaks[i:] {
		out[k] = b - n
	}
	return out
}
