package main

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// loopResult is what a timed loop did.
type loopResult struct {
	calls   int
	elapsed time.Duration
	lat     []time.Duration // every call's latency, sorted
}

func (r loopResult) rate() float64 { return float64(r.calls) / r.elapsed.Seconds() }

// loop runs clients goroutines, each calling op in sequence until dur has
// passed, and times every call. The first error stops every client and is
// returned.
func loop(ctx context.Context, clients int, dur time.Duration, op func(ctx context.Context, client int) error) (loopResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		res      loopResult
	)
	start := time.Now()
	deadline := start.Add(dur)
	for c := range clients {
		wg.Go(func() {
			var lat []time.Duration
			for {
				t := time.Now()
				if !t.Before(deadline) {
					break
				}
				if err := op(ctx, c); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("client %d: %w", c, err)
						cancel()
					}
					mu.Unlock()
					return
				}
				lat = append(lat, time.Since(t))
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	if firstErr != nil {
		return res, firstErr
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	res.calls = len(res.lat)
	if res.calls == 0 {
		return res, fmt.Errorf("no call completed in %v", dur)
	}
	slices.Sort(res.lat)
	return res, nil
}

// percentile returns the p-th percentile of sorted durations, p from 0 to 100.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// spread is the median, min and max of a series.
type spread struct{ med, lo, hi float64 }

func spreadOf(xs []float64) spread {
	if len(xs) == 0 {
		return spread{math.NaN(), math.NaN(), math.NaN()}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return spread{med, s[0], s[len(s)-1]}
}

// format writes "median [min–max]" with f, or just the median for one value.
// A unit all three share is written once, at the end.
func (s spread) format(f func(float64) string) string {
	if s.lo == s.hi {
		return f(s.med)
	}
	med, lo, hi := f(s.med), f(s.lo), f(s.hi)
	if lo == hi {
		return med
	}
	if i := strings.IndexByte(med, ' '); i > 0 {
		unit := med[i:]
		if strings.HasSuffix(lo, unit) && strings.HasSuffix(hi, unit) {
			return fmt.Sprintf("%s [%s–%s]%s", med[:i], strings.TrimSuffix(lo, unit), strings.TrimSuffix(hi, unit), unit)
		}
	}
	return fmt.Sprintf("%s [%s–%s]", med, lo, hi)
}

// num formats x with thousands separators and the given decimals.
func num(x float64, decimals int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "n/a"
	}
	s := strconv.FormatFloat(math.Abs(x), 'f', decimals, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if x < 0 {
		b.WriteByte('-')
	}
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

// sig formats x with about three significant digits.
func sig(x float64) string {
	switch ax := math.Abs(x); {
	case ax >= 100:
		return num(x, 0)
	case ax >= 10:
		return num(x, 1)
	case ax >= 1:
		return num(x, 2)
	default:
		return num(x, 3)
	}
}

// ms formats seconds as milliseconds, or microseconds below 1 ms.
func ms(seconds float64) string {
	if seconds == 0 {
		return "0"
	}
	if seconds < 1e-3 {
		return sig(seconds*1e6) + " µs"
	}
	return sig(seconds*1e3) + " ms"
}

// rate formats a rate in unit, such as "req/s".
func rate(unit string) func(float64) string {
	return func(x float64) string { return num(x, 0) + " " + unit }
}

// mb formats bytes as MB of 10^6 bytes.
func mb(n int64) string { return sig(float64(n)/1e6) + " MB" }

// megabytes formats x, already in MB.
func megabytes(x float64) string { return sig(x) + " MB" }
