package main

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// idleWatch stops a server that answered no authenticated request for the
// --idle-exit period. Only authenticated requests count, so a stranger
// cannot keep it running. The clock starts when the last request ends.
type idleWatch struct {
	active atomic.Int64 // requests being handled
	last   atomic.Int64 // unix nanoseconds of the last request's start or end
	now    func() time.Time
}

func newIdleWatch(now func() time.Time) *idleWatch {
	w := &idleWatch{now: now}
	w.touch()
	return w
}

func (w *idleWatch) touch() { w.last.Store(w.now().UnixNano()) }

// request begins one authenticated request and returns its end. It is the
// server's api.Config.Activity.
func (w *idleWatch) request() (done func()) {
	w.begin()
	return w.end
}

// begin marks the start of a request.
func (w *idleWatch) begin() {
	w.active.Add(1)
	w.touch()
}

// end marks the end of a request.
func (w *idleWatch) end() {
	w.touch()
	w.active.Add(-1)
}

// idleFor returns how long no request has been running.
func (w *idleWatch) idleFor() time.Duration {
	if w.active.Load() > 0 {
		return 0 // a request in flight is never idle time
	}
	return w.now().Sub(time.Unix(0, w.last.Load()))
}

// run calls stop once the server was idle for limit, checking every tick.
// It returns when ctx ends or after stopping.
func (w *idleWatch) run(ctx context.Context, limit, tick time.Duration, log *slog.Logger, stop func()) {
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if d := w.idleFor(); d >= limit {
				log.Info("idle: no request for the --idle-exit period, shutting down", "idle_exit", limit.String())
				stop()
				return
			}
		}
	}
}

// idleTick returns how often the idle time is checked, a tenth of the
// limit within bounds.
func idleTick(limit time.Duration) time.Duration {
	return min(max(limit/10, 10*time.Millisecond), 10*time.Second)
}
