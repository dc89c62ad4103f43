package main

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

func (b *bench) measureSearchRare(ctx context.Context, rep repetition) (sample, error) {
	return b.measureSearch(ctx, rep, b.rare)
}

func (b *bench) measureSearchCommon(ctx context.Context, rep repetition) (sample, error) {
	return b.measureSearch(ctx, rep, b.common)
}

func (b *bench) measureSearchEverywhere(ctx context.Context, rep repetition) (sample, error) {
	return b.measureSearch(ctx, rep, b.everywhere)
}

// measureSearch pairs one history_search_contents for needle with the
// GLOB scan of the ceiling database, both warmed first.
func (b *bench) measureSearch(ctx context.Context, rep repetition, needle string) (sample, error) {
	// The page cache of a VM may have dropped the databases since the last
	// repetition, as the replay row writes gigabytes.
	if _, err := b.searchMemoryd(ctx, needle); err != nil {
		return sample{}, err
	}
	if _, err := b.searchCeiling(ctx, needle); err != nil {
		return sample{}, err
	}
	var f, c time.Duration
	var cpu float64
	err := rep.pair(func() (err error) {
		cpu, err = cpuOf(b.hist.pid(), func() (err error) {
			f, err = b.searchMemoryd(ctx, needle)
			return err
		})
		return err
	}, func() (err error) {
		c, err = b.searchCeiling(ctx, needle)
		return err
	})
	if err != nil {
		return sample{}, err
	}
	b.searchedAt = rep.n
	s := sample{fig: f.Seconds(), ceil: c.Seconds(), ratio: c.Seconds() / f.Seconds()}
	s.add("memoryd GB/s", float64(b.textBytes)/1e9/f.Seconds())
	s.add("GLOB GB/s", float64(b.textBytes)/1e9/c.Seconds())
	s.add("memoryd CPU during the search, counted in 10 ms ticks (s)", cpu)
	b.logf("%s: memoryd %s, GLOB %s", rep.row, ms(f.Seconds()), ms(c.Seconds()))
	return s, nil
}

func (b *bench) searchRareNotes() string {
	return fmt.Sprintf("memoryd: one `history_search_contents` `{\"query\":%q,\"limit\":20}` over HTTP on the restarted server, timed by the client; "+
		"it must return exactly 1 result (details.n_returned + omitted, and no details.more). Ceiling: `SELECT count(*) FROM t WHERE body GLOB '*…*'` "+
		"over a copy of the same rendered item texts (%s items, %s) in a fresh ceiling.db; it must count 1. "+
		"Both are warm: in every repetition each runs once untimed before the timed runs. Ratio = ceiling time / memoryd time.", b.rare, num(float64(b.textItems), 0), mb(b.textBytes))
}

func (b *bench) searchCommonNotes() string {
	return fmt.Sprintf("As search-rare with the needle %q, which occurs nowhere and whose first byte is the most frequent letter of the text "+
		"(the worst case for first-byte skipping); both must find 0. %s of text scanned.", b.common, mb(b.textBytes))
}

func (b *bench) searchEverywhereNotes() string {
	return fmt.Sprintf("As search-rare with the needle %q, found in nearly every tool result (%s items): the trigram filters skip few chunks, "+
		"so memoryd walks the matches in branch order and stops after the first 20 (details.n_returned + omitted = 20, details.more true), "+
		"reading the chunks that hold them; GLOB reads every row (stopping at the first match in each) and must count the %s items it counted when the ceiling was built.",
		b.everywhere, num(float64(b.everyHits), 0), num(float64(b.everyHits), 0))
}

// searchMemoryd runs history_search_contents for needle and checks the
// count of results against wantHits.
func (b *bench) searchMemoryd(ctx context.Context, needle string) (time.Duration, error) {
	return b.searchOn(ctx, b.hist.url, needle)
}

// searchOn is searchMemoryd on the memoryd at url.
func (b *bench) searchOn(ctx context.Context, url, needle string) (time.Duration, error) {
	args, _ := json.Marshal(map[string]any{"query": needle, "limit": 20})
	body := b.toolBody(b.histTask, string(args))
	var res struct {
		Details struct {
			NReturned *int `json:"n_returned"`
			Omitted   int  `json:"omitted"`
			More      bool `json:"more"`
		} `json:"details"`
	}
	t := time.Now()
	raw, err := b.cl.post(ctx, url+"/v1/tools/history_search_contents", body, true)
	took := time.Since(t)
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(raw, &res); err != nil || res.Details.NReturned == nil {
		return 0, fmt.Errorf("history_search_contents: no details.n_returned (%v): %.200s", err, raw)
	}
	// The search stops after the first 20 matches, and more says the rest
	// exist.
	hits := b.wantHits(needle)
	if got, want := *res.Details.NReturned+res.Details.Omitted, min(hits, 20); got != want || res.Details.More != (hits > 20) {
		return 0, fmt.Errorf("history_search_contents %q: %d results, more %v; want %d of %d", needle, got, res.Details.More, want, hits)
	}
	return took, nil
}

// searchCeiling runs the GLOB scan for needle and checks its count.
func (b *bench) searchCeiling(ctx context.Context, needle string) (time.Duration, error) {
	n, took, err := globCount(ctx, b.ceiling, needle)
	if err != nil {
		return 0, err
	}
	if want := b.wantHits(needle); n != want {
		return 0, fmt.Errorf("GLOB scan of ceiling.db for %q: %d rows, want %d", needle, n, want)
	}
	return took, nil
}

func (b *bench) wantHits(needle string) int {
	switch needle {
	case b.rare:
		return 1
	case b.everywhere:
		return b.everyHits
	}
	return 0
}
