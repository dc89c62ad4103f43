package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// measure runs one repetition of row: its figure and its ceiling, in the
// order figFirst says.
func (b *bench) measure(ctx context.Context, row string, rep int, figFirst bool) error {
	r := b.result(row)
	pair := func(fig, ceil func() error) error {
		first, second := fig, ceil
		if !figFirst {
			first, second = ceil, fig
		}
		if err := first(); err != nil {
			return err
		}
		return second()
	}
	switch row {
	case "append16":
		var f, c loopResult
		var cpu float64
		err := pair(func() (err error) {
			cpu, err = cpuOf(b.notes.pid(), func() (err error) {
				f, err = loop(ctx, 16, b.cfg.dur, func(ctx context.Context, client int) error {
					_, err := b.cl.post(ctx, b.notes.url+"/v1/tools/notes_append_to_file", b.appendBody(client), false)
					return err
				})
				return err
			})
			return err
		}, func() (err error) {
			c, err = rawWrite(ctx, filepath.Join(b.scratch, "raw-append16.db"), 1000, b.cfg.dur)
			return err
		})
		if err != nil {
			return err
		}
		// The bound and the durable reference: the same requests to a bare
		// net/http server and to one that only stores each durably, after
		// the pair (their order does not change between repetitions).
		var bare, durable loopResult
		if b.bareAppend != nil {
			for _, to := range []struct {
				p   *proc
				res *loopResult
			}{{b.bareAppend, &bare}, {b.durableAppend, &durable}} {
				if *to.res, err = loop(ctx, 16, b.cfg.dur, func(ctx context.Context, client int) error {
					_, err := b.cl.post(ctx, to.p.url+"/v1/tools/notes_append_to_file", b.appendBody(client), false)
					return err
				}); err != nil {
					return err
				}
			}
		}
		r.fig, r.ceil, r.ratio = append(r.fig, f.rate()), append(r.ceil, c.rate()), append(r.ratio, f.rate()/c.rate())
		if b.bareAppend != nil {
			r.add("bound: bare net/http, same requests (req/s)", bare.rate())
			r.add("bound: bare net/http / ceiling (×)", bare.rate()/c.rate())
			r.add("durable reference: net/http + group commit, one row a request (req/s)", durable.rate())
			r.add("durable reference / ceiling (×)", durable.rate()/c.rate())
			r.add("memoryd / durable reference (×)", f.rate()/durable.rate())
		}
		r.add("memoryd append latency p50 (s)", percentile(f.lat, 50).Seconds())
		r.add("memoryd append latency p99 (s)", percentile(f.lat, 99).Seconds())
		r.add("raw 1000-row transaction p50 (s)", percentile(c.lat, 50).Seconds())
		r.add("memoryd CPU per append (s)", cpu/float64(f.calls))
		r.add("memoryd CPU use (cores)", cpu/f.elapsed.Seconds())
		b.logf("append16: memoryd %s appends/s, raw %s rows/s", num(f.rate(), 0), num(c.rate(), 0))

	case "append1":
		var f, c loopResult
		var cpu float64
		err := pair(func() (err error) {
			cpu, err = cpuOf(b.notes.pid(), func() (err error) {
				f, err = loop(ctx, 1, b.cfg.dur, func(ctx context.Context, _ int) error {
					_, err := b.cl.post(ctx, b.notes.url+"/v1/tools/notes_append_to_file", b.appendBody(16), false)
					return err
				})
				return err
			})
			return err
		}, func() (err error) {
			c, err = rawWrite(ctx, filepath.Join(b.scratch, "raw-append1.db"), 1, b.cfg.dur)
			return err
		})
		if err != nil {
			return err
		}
		fp50, cp50 := percentile(f.lat, 50).Seconds(), percentile(c.lat, 50).Seconds()
		r.fig, r.ceil, r.ratio = append(r.fig, fp50), append(r.ceil, cp50), append(r.ratio, fp50/cp50)
		r.add("memoryd p99 (s)", percentile(f.lat, 99).Seconds())
		r.add("raw p99 (s)", percentile(c.lat, 99).Seconds())
		r.add("memoryd appends/s", f.rate())
		r.add("raw transactions/s", c.rate())
		r.add("memoryd CPU per append (s)", cpu/float64(f.calls))
		b.logf("append1: memoryd p50 %s (p99 %s), raw p50 %s (p99 %s)", ms(fp50), ms(percentile(f.lat, 99).Seconds()),
			ms(cp50), ms(percentile(c.lat, 99).Seconds()))

	case "search-rare", "search-common", "search-everywhere":
		needle := map[string]string{"search-rare": b.rare, "search-common": b.common, "search-everywhere": b.everywhere}[row]
		// Warm: the page cache of a VM may have dropped the databases
		// since the last repetition (the replay row writes gigabytes).
		if _, err := b.searchMemoryd(ctx, needle); err != nil {
			return err
		}
		if _, err := b.searchCeiling(ctx, needle); err != nil {
			return err
		}
		var f, c time.Duration
		var cpu float64
		err := pair(func() (err error) {
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
			return err
		}
		b.searchedAt = rep
		r.fig, r.ceil, r.ratio = append(r.fig, f.Seconds()), append(r.ceil, c.Seconds()), append(r.ratio, c.Seconds()/f.Seconds())
		r.add("memoryd GB/s", float64(b.textBytes)/1e9/f.Seconds())
		r.add("GLOB GB/s", float64(b.textBytes)/1e9/c.Seconds())
		r.add("memoryd CPU during the search, counted in 10 ms ticks (s)", cpu)
		b.logf("%s: memoryd %s, GLOB %s", row, ms(f.Seconds()), ms(c.Seconds()))

	case "rss":
		if b.searchedAt != rep { // rss alone: serve the searches first
			for _, needle := range []string{b.rare, b.common} {
				if _, err := b.searchMemoryd(ctx, needle); err != nil {
					return err
				}
			}
		}
		hwm, rss, err := procMemory(b.hist.pid())
		if err != nil {
			return err
		}
		r.fig = append(r.fig, float64(hwm)/1e6)
		r.add("VmRSS (MB)", float64(rss)/1e6)
		b.logf("rss: VmHWM %s, VmRSS %s", mb(hwm), mb(rss))

	case "replay":
		var f, c time.Duration
		var printed string
		err := pair(func() (err error) {
			f, printed, err = b.replayMemoryd(ctx, rep)
			syncFS() // untimed: the next half does not pay this one's writeback
			return err
		}, func() error {
			n, took, err := rawReplay(ctx, b.logPath, filepath.Join(b.scratch, "raw-replay.db"))
			if err == nil && n != b.cfg.events {
				err = fmt.Errorf("raw replay inserted %d events, want %d", n, b.cfg.events)
			}
			c = took
			return err
		})
		if err != nil {
			return err
		}
		// The replays wrote gigabytes: flush them now, so that the
		// kernel's writeback does not take CPU from the row measured next.
		syncFS()
		n := float64(b.cfg.events)
		r.fig, r.ceil, r.ratio = append(r.fig, n/f.Seconds()), append(r.ceil, n/c.Seconds()), append(r.ratio, c.Seconds()/f.Seconds())
		r.add("memoryd replay wall time (s)", f.Seconds())
		r.add("raw wall time (s)", c.Seconds())
		r.printed = append(r.printed, printed)
		b.logf("replay: memoryd %s events/s (%v), raw %s events/s (%v)", num(n/f.Seconds(), 0), f.Round(time.Millisecond),
			num(n/c.Seconds(), 0), c.Round(time.Millisecond))

	case "read8":
		var f, c loopResult
		var cpuF, cpuC float64
		read := func(p *proc, out *loopResult, cpu *float64) func() error {
			return func() (err error) {
				*cpu, err = cpuOf(p.pid(), func() (err error) {
					*out, err = loop(ctx, 8, b.cfg.dur, func(ctx context.Context, _ int) error {
						_, err := b.cl.post(ctx, p.url+"/v1/tools/notes_read_file", b.readBody(), false)
						return err
					})
					return err
				})
				return err
			}
		}
		if err := pair(read(b.notes, &f, &cpuF), read(b.bare, &c, &cpuC)); err != nil {
			return err
		}
		r.fig, r.ceil, r.ratio = append(r.fig, f.rate()), append(r.ceil, c.rate()), append(r.ratio, f.rate()/c.rate())
		r.add("memoryd p50 (s)", percentile(f.lat, 50).Seconds())
		r.add("memoryd p99 (s)", percentile(f.lat, 99).Seconds())
		r.add("bare p50 (s)", percentile(c.lat, 50).Seconds())
		r.add("memoryd CPU per read (s)", cpuF/float64(f.calls))
		r.add("bare server CPU per request (s)", cpuC/float64(c.calls))
		b.logf("read8: memoryd %s req/s, bare %s req/s", num(f.rate(), 0), num(c.rate(), 0))

	case "startup":
		p, err := b.startMemoryd(ctx, "memoryd(startup)", b.replayed)
		if err != nil {
			return err
		}
		pos, err := b.cl.health(ctx, p.url)
		took := time.Since(p.started)
		listened := p.listened.Sub(p.started)
		if serr := p.stop(); err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		if pos != int64(b.cfg.events) {
			return fmt.Errorf("memoryd on the replayed database reports position %d, want %d", pos, b.cfg.events)
		}
		r.fig = append(r.fig, took.Seconds())
		r.add("exec to the listening line (s)", listened.Seconds())
		b.logf("startup: %s (listening line after %s)", ms(took.Seconds()), ms(listened.Seconds()))
	}
	return nil
}

// procMemory returns VmHWM and VmRSS of process pid in bytes.
func procMemory(pid int) (hwm, rss int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmHWM" && k != "VmRSS") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/%d/status %s: %w", pid, k, err)
		}
		if k == "VmHWM" {
			hwm = kb << 10
		} else {
			rss = kb << 10
		}
	}
	if hwm == 0 || rss == 0 {
		return 0, 0, fmt.Errorf("/proc/%d/status has no VmHWM and VmRSS", pid)
	}
	return hwm, rss, sc.Err()
}

// cpuSeconds is the user+system CPU time process pid has used so far
// (from /proc/<pid>/stat, in clock ticks of 1/100 s).
func cpuSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:])) // f[0] is the state, field 3 of stat
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	return float64(utime+stime) / 100, nil
}

// cpuOf runs fn and returns the CPU seconds process pid used meanwhile.
func cpuOf(pid int, fn func() error) (float64, error) {
	before, err := cpuSeconds(pid)
	if err != nil {
		return 0, err
	}
	if err := fn(); err != nil {
		return 0, err
	}
	after, err := cpuSeconds(pid)
	return after - before, err
}
