package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// handlerExitWait bounds the wait for handlers to return once the grace
// period is over and their connections are closed.
const handlerExitWait = 5 * time.Second

// drain stops an http.Server so that the database can be closed after it.
// Requests in flight get a grace period, then the rest are cut off and
// their handlers waited for, so that none still uses the store.
type drain struct {
	handlers atomic.Int64 // handlers running

	mu    sync.Mutex
	conns map[net.Conn]http.ConnState // connections open, by state

	base           context.Context // every request's context derives from it
	cancelRequests context.CancelFunc
	handlerWait    time.Duration // handlerExitWait but in tests
}

// newDrain returns a drain with nothing installed yet.
func newDrain() *drain {
	base, cancel := context.WithCancel(context.Background())
	return &drain{conns: map[net.Conn]http.ConnState{}, base: base, cancelRequests: cancel, handlerWait: handlerExitWait}
}

// install makes srv's requests countable and cancelable by d.
func (d *drain) install(srv *http.Server) {
	next := srv.Handler
	srv.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.handlers.Add(1)
		defer d.handlers.Add(-1)
		next.ServeHTTP(w, r)
	})
	srv.BaseContext = func(net.Listener) context.Context { return d.base }
	srv.ConnState = func(c net.Conn, st http.ConnState) {
		d.mu.Lock()
		defer d.mu.Unlock()
		switch st {
		case http.StateClosed, http.StateHijacked:
			delete(d.conns, c)
		default:
			d.conns[c] = st
		}
	}
}

// open counts the connections open and, of those, the ones in the middle
// of a request.
func (d *drain) open() (conns, requests int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, st := range d.conns {
		if st == http.StateActive {
			requests++
		}
	}
	return len(d.conns), requests
}

// stop shuts srv down, cutting off what is left after grace, and returns
// once no handler runs. An error means a handler outlived handlerExitWait
// and the store must be left open.
func (d *drain) stop(srv *http.Server, grace time.Duration, log *slog.Logger) error {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	switch err := srv.Shutdown(ctx); {
	case errors.Is(err, context.DeadlineExceeded):
		conns, requests := d.open()
		d.cancelRequests()
		srv.Close()
		log.Warn("shutdown: grace period over, connections closed", "grace", grace.String(),
			"connections", conns, "requests_cut_off", requests)
	case err != nil:
		return fmt.Errorf("shutdown: %w", err)
	}
	deadline := time.Now().Add(d.handlerWait)
	for d.handlers.Load() > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("shutdown: %d request handlers still running %s after their connections were closed; the database is left for the next open to recover", d.handlers.Load(), d.handlerWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}
