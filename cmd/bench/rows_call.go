package main

import (
	"context"
	"fmt"
	"path/filepath"
)

// The per-call overhead rows pair one client's p50 latency through memoryd
// with the p50 of a bare net/http server in its own process. The bare server
// gets the same bodies from the same keep-alive client over loopback, and
// answers with the bytes memoryd answers. This floor is an HTTP round trip
// that does nothing, and the ratio is what a call costs above it.

// callPair pairs one client sending body to memoryd's path with the same
// client sending it to floor, in the repetition's order.
func (b *bench) callPair(ctx context.Context, rep repetition, path string, floor *proc, body func() []byte) (sample, error) {
	var f, c loopResult
	var cpuF, cpuC float64
	call := func(p *proc, out *loopResult, cpu *float64) func() error {
		return func() (err error) {
			*cpu, err = cpuOf(p.pid(), func() (err error) {
				*out, err = loop(ctx, 1, b.cfg.dur, func(ctx context.Context, _ int) error {
					_, err := b.cl.post(ctx, p.url+path, body(), false)
					return err
				})
				return err
			})
			return err
		}
	}
	if err := rep.pair(call(b.notes, &f, &cpuF), call(floor, &c, &cpuC)); err != nil {
		return sample{}, err
	}
	fp50, cp50 := percentile(f.lat, 50).Seconds(), percentile(c.lat, 50).Seconds()
	s := sample{fig: fp50, ceil: cp50, ratio: fp50 / cp50}
	s.add("memoryd p99 (s)", percentile(f.lat, 99).Seconds())
	s.add("bare p99 (s)", percentile(c.lat, 99).Seconds())
	s.add("memoryd p50 − bare p50 (s)", fp50-cp50)
	s.add("memoryd CPU per call (s)", cpuF/float64(f.calls))
	s.add("bare server CPU per call (s)", cpuC/float64(c.calls))
	b.logf("%s: memoryd p50 %s, bare p50 %s", rep.row, ms(fp50), ms(cp50))
	return s, nil
}

// measureAppend1HTTP pairs one client appending through memoryd with the
// same requests to the bare server answering with an append response, and
// then times one raw insert per FULL transaction. A durable append pays at
// least the round trip and such a commit, so their sum is the ceiling.
func (b *bench) measureAppend1HTTP(ctx context.Context, rep repetition) (sample, error) {
	s, err := b.callPair(ctx, rep, "/v1/tools/notes_append_to_file", b.bareAppend, func() []byte { return b.appendBody(16) })
	if err != nil {
		return s, err
	}
	raw, err := rawWrite(ctx, filepath.Join(b.scratch, "raw-append1-http.db"), 1, b.cfg.dur)
	if err != nil {
		return s, err
	}
	floor, rp50 := s.ceil, percentile(raw.lat, 50).Seconds()
	s.ceil = floor + rp50
	s.ratio = s.fig / s.ceil
	s.add("bare round trip p50 (s)", floor)
	s.add("raw SQLite, one insert a FULL transaction, p50 (s)", rp50)
	s.add("memoryd / bare round trip (×)", s.fig/floor)
	return s, nil
}

func (b *bench) append1HTTPNotes() string {
	return fmt.Sprintf("memoryd: one client appending sequentially (as in append1: a new call_id each, durable, synchronous=FULL) for %s; figure = p50 of the HTTP round trip. "+
		"Ceiling: the least a durable append over HTTP can take here, the sum of two p50s: the same client sending the same requests for %s to `bench %s` "+
		"(its own process), which reads each body and answers with the bytes of one memoryd append response (%s bytes), storing nothing; and, after that pair, "+
		"the raw SQLite loop of append1's ceiling (one insert per FULL transaction, BEGIN…COMMIT timed) for %s. Ratio = figure / ceiling (lower is better): "+
		"what an append costs above a round trip and one durable commit. The two parts and the figure against the round trip alone are given beside it.",
		b.cfg.dur, b.cfg.dur, bareVerb, num(float64(b.appendBytes), 0), b.cfg.dur)
}

// measureRead1HTTP pairs one client reading the read8 note through
// memoryd with the same requests to the bare server answering with
// memoryd's bytes.
func (b *bench) measureRead1HTTP(ctx context.Context, rep repetition) (sample, error) {
	return b.callPair(ctx, rep, "/v1/tools/notes_read_file", b.bare, b.readBody)
}

func (b *bench) read1HTTPNotes() string {
	return fmt.Sprintf("memoryd: one client POSTing `notes_read_file` `{\"path\":\"bench/read8.md\"}` (a new call_id each; the read8 note, a %s-byte response) "+
		"sequentially for %s; figure = p50 of the HTTP round trip. Floor: the same client sending the same requests for %s to read8's bare server (`bench %s`), "+
		"which answers with the exact bytes memoryd returned; p50. Ratio = figure / floor (lower is better).",
		num(float64(b.readBytes), 0), b.cfg.dur, b.cfg.dur, bareVerb)
}
