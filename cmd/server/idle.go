package main

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"
)

// idleWatch ends a server that answered no authenticated request for a
// while (--idle-exit): the Pi extension starts memoryd as a shared
// background service and sends an authenticated heartbeat while a session
// is open, so the service stops that long after the last session ended.
// Only requests that passed the token check (or the inspector's session
// check) count: a stranger's refused requests, or a web page's fetch of
// /healthz, do not keep it running. A request in flight is never idle
// time: the clock starts when the last one finishes.
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

// request brackets one authenticated request: it begins it and returns
// its end (api.Config.Activity).
func (w *idleWatch) request() (done func()) {
	w.begin()
	return w.end
}

// begin and end bracket one request.
func (w *idleWatch) begin() {
	w.active.Add(1)
	w.touch()
}

func (w *idleWatch) end() {
	w.touch()
	w.active.Add(-1)
}

// idleFor is how long no request has been running (0 while one runs).
func (w *idleWatch) idleFor() time.Duration {
	if w.active.Load() > 0 {
		return 0
	}
	return w.now().Sub(time.Unix(0, w.last.Load()))
}

// run calls stop once the server was idle for limit, checking every tick;
// it returns when ctx ends or after stopping.
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

// idleTick is how often the idle time is checked: a tenth of the limit,
// between 10 ms and 10 s.
func idleTick(limit time.Duration) time.Duration {
	return min(max(limit/10, 10*time.Millisecond), 10*time.Second)
}
