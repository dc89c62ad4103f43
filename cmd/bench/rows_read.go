package main

import (
	"context"
	"fmt"
	"time"
)

// readBody is a read8 request, a notes_read_file of the ~4 KB note.
func (b *bench) readBody() []byte {
	return b.toolBody(b.notesTask, `{"path":"bench/read8.md"}`)
}

// read8Loop has 8 clients read the note through p back to back for dur.
func (b *bench) read8Loop(ctx context.Context, p *proc, dur time.Duration) (loopResult, error) {
	return loop(ctx, 8, dur, func(ctx context.Context, _ int) error {
		_, err := b.cl.post(ctx, p.url+"/v1/tools/notes_read_file", b.readBody(), false)
		return err
	})
}

// measureRead8 pairs 8 clients reading the note through memoryd with the
// same requests to the bare server answering with memoryd's bytes.
func (b *bench) measureRead8(ctx context.Context, rep repetition) (sample, error) {
	var f, c loopResult
	var cpuF, cpuC float64
	read := func(p *proc, out *loopResult, cpu *float64) func() error {
		return func() (err error) {
			*cpu, err = cpuOf(p.pid(), func() (err error) {
				*out, err = b.read8Loop(ctx, p, b.cfg.dur)
				return err
			})
			return err
		}
	}
	if err := rep.pair(read(b.notes, &f, &cpuF), read(b.bare, &c, &cpuC)); err != nil {
		return sample{}, err
	}
	s := sample{fig: f.rate(), ceil: c.rate(), ratio: f.rate() / c.rate()}
	s.add("memoryd p50 (s)", percentile(f.lat, 50).Seconds())
	s.add("memoryd p99 (s)", percentile(f.lat, 99).Seconds())
	s.add("bare p50 (s)", percentile(c.lat, 50).Seconds())
	s.add("memoryd CPU per read (s)", cpuF/float64(f.calls))
	s.add("bare server CPU per request (s)", cpuC/float64(c.calls))
	b.logf("read8: memoryd %s req/s, bare %s req/s", num(f.rate(), 0), num(c.rate(), 0))
	return s, nil
}

func (b *bench) read8Notes() string {
	return fmt.Sprintf("memoryd: 8 goroutines POSTing `notes_read_file` `{\"path\":\"bench/read8.md\"}` (a new call_id each) of a ~4 KB note (a %s-byte response) for %s. "+
		"Ceiling: a bare net/http server in its own process (`bench %s`) that reads the request body and answers with the exact bytes memoryd "+
		"returned (application/json), driven by the same 8-goroutine loop with the same requests (a new call_id each). req/s; ratio = figure / ceiling.",
		num(float64(b.readBytes), 0), b.cfg.dur.String(), bareVerb)
}
