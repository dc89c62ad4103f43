package main

import (
	"context"
	"fmt"
	"time"
)

// The rows with absolute targets measure the memoryd process itself, its
// memory serving the history and its start-up time.

// measureRSS reads the history server's peak and current resident set
// after the repetition's searches.
func (b *bench) measureRSS(ctx context.Context, rep repetition) (sample, error) {
	if b.searchedAt != rep.n { // no search row ran, so serve the searches first
		for _, needle := range []string{b.rare, b.common} {
			if _, err := b.searchMemoryd(ctx, needle); err != nil {
				return sample{}, err
			}
		}
	}
	hwm, rss, err := procMemory(b.hist.pid())
	if err != nil {
		return sample{}, err
	}
	s := sample{fig: float64(hwm) / 1e6}
	s.add("VmRSS (MB)", float64(rss)/1e6)
	b.logf("rss: VmHWM %s, VmRSS %s", mb(hwm), mb(rss))
	return s, nil
}

func (b *bench) rssNotes() string {
	return "VmHWM (peak resident set) of the restarted memoryd serving the history, read from /proc/<pid>/status after the repetition's searches; " +
		"MB = 10⁶ bytes. The server was restarted after the ingest, so this is the peak of start-up plus serving searches, not of ingesting (the ingest's own peak is under Other figures)."
}

// measureStartup starts memoryd on the replayed database and times it to
// the first 200 from /healthz.
func (b *bench) measureStartup(ctx context.Context, rep repetition) (sample, error) {
	p, err := b.startMemoryd(ctx, "memoryd(startup)", b.replayed)
	if err != nil {
		return sample{}, err
	}
	pos, err := b.cl.health(ctx, p.url)
	took := time.Since(p.started)
	listened := p.listened.Sub(p.started)
	if serr := p.stop(); err == nil {
		err = serr
	}
	if err != nil {
		return sample{}, err
	}
	if pos != int64(b.cfg.events) {
		return sample{}, fmt.Errorf("memoryd on the replayed database reports position %d, want %d", pos, b.cfg.events)
	}
	s := sample{fig: took.Seconds()}
	s.add("exec to the listening line (s)", listened.Seconds())
	b.logf("startup: %s (listening line after %s)", ms(took.Seconds()), ms(listened.Seconds()))
	return s, nil
}

func (b *bench) startupNotes() string {
	return fmt.Sprintf("Time from exec of `memoryd serve` on the replayed %s-event database to the first 200 from `GET /healthz` (polled every 1 ms "+
		"once the listening line is printed); the reported position must equal the event count.", num(float64(b.cfg.events), 0))
}
