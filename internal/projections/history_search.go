package projections

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"github.com/memoryd/memoryd/internal/projections/projectionsdb"
)

// knownMatchesLimit is how many matching entries SearchItems looks up one
// by one once it has searched every candidate chunk. Beyond byEntryLimit,
// ItemsOf walks the branch anyway.
const knownMatchesLimit = byEntryLimit

// searchFirstPage is the first page of a search's walk of the branch,
// since a needle found in most items needs only a few dozen of them.
const searchFirstPage = 64

// SearchItems calls fn in branch order with the items of an agent's current
// branch below branch index end that pass keep and whose text contains
// query. With recentFirst, the newest come first. It stops at fn's first
// false or error, and keep sees each item before its text is checked. See
// docs/search.md.
func (r *Reader) SearchItems(ctx context.Context, taskID, agent string, end int64, query string, recentFirst bool,
	keep func(Item) bool, fn func(Item) (bool, error)) error {
	if query == "" {
		return errors.New("search: empty query")
	}
	probes := bloomProbes(trigramHashOf(r.q), []byte(query))
	candidates, sealed, checked, err := r.candidateChunks(ctx, taskID, agent, probes, true)
	if err != nil {
		return err
	}
	s := &textSearch{r: r, taskID: taskID, agent: agent, m: newLiteral(query), matches: map[int64]map[string]bool{}}
	if !checked {
		s.probes = probes
	}
	s.open = sealed + 1
	s.candidate = make(map[int64]bool, len(candidates)+1)
	for _, no := range candidates {
		s.candidate[no] = true
	}
	s.candidate[s.open] = true
	// Search the candidate chunks in the order that follows the output,
	// until all are searched or more than knownMatchesLimit entries matched.
	order := append(candidates, s.open) // ascending
	if recentFirst {
		slices.Reverse(order)
	}
	for len(order) > 0 && s.found <= knownMatchesLimit {
		if err := s.search(ctx, order[0]); err != nil {
			return err
		}
		order = order[1:]
	}
	if len(order) == 0 && s.found <= knownMatchesLimit {
		// A rare needle, whose matching entries are all known.
		var ids []string
		for _, set := range s.matches {
			for id := range set {
				ids = append(ids, id)
			}
		}
		items, err := r.ItemsOf(ctx, taskID, agent, end, ids)
		if err != nil {
			return err
		}
		if recentFirst {
			slices.Reverse(items)
		}
		for _, it := range items {
			if !keep(it) {
				continue
			}
			if more, err := fn(it); err != nil || !more {
				return err
			}
		}
		return nil
	}
	// A common needle. Walk the branch in output order and check each item
	// kept against the matches of the chunk holding its text.
	return r.walkItems(ctx, taskID, agent, end, recentFirst, true, searchFirstPage, func(it Item) (bool, error) {
		if !keep(it) {
			return true, nil
		}
		ok, err := s.has(ctx, it)
		if err != nil || !ok {
			return err == nil, err
		}
		return fn(it)
	})
}

// textSearch is one SearchItems, with the matching entries of the chunks
// searched so far.
type textSearch struct {
	r             *Reader
	taskID, agent string
	m             *literal
	open          int64          // the open chunk's number, the last sealed + 1
	candidate     map[int64]bool // chunks that may hold the needle
	probes        []byte         // if set, the candidates' full filters are checked as they are read
	matches       map[int64]map[string]bool
	found         int // entries in matches
}

// search finds the matching entries of chunk no, open or sealed.
func (s *textSearch) search(ctx context.Context, no int64) error {
	set := map[string]bool{}
	add := func(id string) error {
		set[id] = true
		return nil
	}
	var err error
	if no == s.open {
		err = s.r.searchOpen(ctx, s.taskID, s.agent, s.m, add)
	} else {
		var c projectionsdb.ChunkDataRow
		read := true // false when its full filter lacks a probe
		if s.probes != nil {
			var row projectionsdb.ChunkDataIfCandidateRow
			row, err = s.r.q.ChunkDataIfCandidate(ctx, projectionsdb.ChunkDataIfCandidateParams{
				TaskID: s.taskID, Agent: s.agent, ChunkNo: no, Probes: s.probes})
			c = projectionsdb.ChunkDataRow(row)
			if errors.Is(err, sql.ErrNoRows) {
				read, err = false, nil
			}
		} else {
			c, err = s.r.q.ChunkData(ctx, projectionsdb.ChunkDataParams{TaskID: s.taskID, Agent: s.agent, ChunkNo: no})
		}
		if err == nil && read {
			if err = searchChunk(c.Entries, c.Data, s.m, add); err != nil {
				err = fmt.Errorf("chunk %d of %s%s: %w", no, s.taskID, s.agent, err)
			}
		}
	}
	if err != nil {
		return err
	}
	s.matches[no] = set
	s.found += len(set)
	return nil
}

// has reports whether a placed item of the walk matches.
func (s *textSearch) has(ctx context.Context, it Item) (bool, error) {
	no := it.textChunk
	if it.textBytes == 0 {
		return false, nil // no text, stored nowhere
	}
	if no > s.open {
		return false, fmt.Errorf("entry %s of %s%s: text in chunk %d, past the open chunk %d", it.EntryID, s.taskID, s.agent, no, s.open)
	}
	if !s.candidate[no] {
		return false, nil
	}
	set, ok := s.matches[no]
	if !ok {
		if err := s.search(ctx, no); err != nil {
			return false, err
		}
		set = s.matches[no]
	}
	return set[it.EntryID], nil
}
