package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// preloadLine is the message memoryd logs at info when its background load
// of the history chunk filters has ended.
const preloadLine = `"msg":"loaded the history chunk filters"`

// measureFirstSearch pairs the first search of a memoryd started on the
// history database with a later search on the same server.
func (b *bench) measureFirstSearch(ctx context.Context, rep repetition) (sample, error) {
	db := filepath.Join(b.scratch, "history.db")
	// A first server is asked the rare needle as soon as /healthz answers,
	// racing the background load of the chunk filters.
	atOnce, _, _, err := b.firstSearch(ctx, db, false)
	if err != nil {
		return sample{}, err
	}
	// A second is asked once its log says the load has ended.
	first, later, loaded, err := b.firstSearch(ctx, db, true)
	if err != nil {
		return sample{}, err
	}
	s := sample{fig: first.Seconds(), ceil: later.Seconds(), ratio: first.Seconds() / later.Seconds()}
	s.add("chunk filters loaded, after the start (s)", loaded.Seconds())
	s.add("first search sent as soon as /healthz answers (s)", atOnce.Seconds())
	b.logf("%s: first search %s, later %s, at once %s; filters loaded %s after the start",
		rep.row, ms(first.Seconds()), ms(later.Seconds()), ms(atOnce.Seconds()), ms(loaded.Seconds()))
	return s, nil
}

// firstSearch starts a memoryd on db and times its first and a later search
// for the rare needle. loaded is when the filters' load ended, from the start.
func (b *bench) firstSearch(ctx context.Context, db string, waitLoad bool) (first, later, loaded time.Duration, err error) {
	args := []string{b.bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--log-level", "info"}
	args = append(args, strings.Fields(b.cfg.serverFlags)...)
	p, err := startProc(ctx, "memoryd(first search)", args, b.memorydEnv("MEMORYD_TOKEN="+b.token), nopWriter{})
	if err != nil {
		return 0, 0, 0, err
	}
	defer func() {
		if serr := p.stop(); err == nil {
			err = serr
		}
	}()
	if _, err := b.cl.health(ctx, p.url); err != nil {
		return 0, 0, 0, err
	}
	if waitLoad { // wait for the end of the filters' load too
		line, err := p.log.await(ctx, preloadLine, 2*time.Minute)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("memoryd(first search): %w", err)
		}
		var l struct {
			DurationMS float64 `json:"duration_ms"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			return 0, 0, 0, fmt.Errorf("memoryd(first search): the load's log line %q: %w", line, err)
		}
		loaded = time.Duration(l.DurationMS * float64(time.Millisecond))
	}
	if first, err = b.searchOn(ctx, p.url, b.rare); err != nil {
		return 0, 0, 0, err
	}
	if later, err = b.searchOn(ctx, p.url, b.rare); err != nil {
		return 0, 0, 0, err
	}
	return first, later, loaded, nil
}

func (b *bench) firstSearchNotes() string {
	return fmt.Sprintf("A memoryd started on the history database (as after a restart), its log at info; once its log says the background load of "+
		"the history chunk filters has ended, one `history_search_contents` `{\"query\":%q,\"limit\":20}` over HTTP, timed by the client: "+
		"the figure. Ceiling: the next, identical search on the same server. Ratio = figure / ceiling: the first search of a started "+
		"memoryd should cost what later ones do, give or take what any first query of a new process costs (memoryd warms each reader "+
		"connection with a search that reads no chunk before it logs the load's end, but the needle's pages are not in SQLite's cache yet), hence ≤ 2× rather than 1×. Beside it, a search sent by a fresh server's first client as soon as /healthz answers "+
		"(it races the load: what it needs and the load has not read yet, it reads itself), and when the load ended, from the start "+
		"(its own duration_ms, logged). Each repetition starts both servers and stops them.", b.rare)
}

// nopWriter drops the first-search servers' request log.
type nopWriter struct{}

func (nopWriter) Write(p []byte) (int, error) { return len(p), nil }
