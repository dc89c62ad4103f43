package main

import (
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestServeIdleExit: with --idle-exit, serve stops by itself (exit 0, the
// database closed as on SIGTERM) once no request came for that long, and
// answers requests until then.
func TestServeIdleExit(t *testing.T) {
	db := filepath.Join(t.TempDir(), "memory.db")
	s := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--idle-exit", "300ms"}, env(map[string]string{"MEMORYD_TOKEN": "x"}))
	select {
	case err := <-s.done:
		if err != nil {
			t.Fatalf("serve after --idle-exit: %v; stderr:\n%s", err, s.stderr.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not stop within 20 s of being idle (--idle-exit 300ms); stderr:\n%s", s.stderr.String())
	}
	s.done <- nil // for the cleanup of startRun
	if logLine(t, s.stderr.String(), "idle: no request for the --idle-exit period, shutting down") == nil {
		t.Errorf("no idle log line; stderr:\n%s", s.stderr.String())
	}
	if _, err := http.Get(s.url + "/healthz"); err == nil {
		t.Errorf("%s still answers after the idle exit", s.url)
	}
}

// TestIdleWatch: idle time counts from the end of the last request, never
// while one is in flight (a pending rollover report keeps the service up).
func TestIdleWatch(t *testing.T) {
	var mu sync.Mutex
	now := time.Unix(1000, 0)
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	w := newIdleWatch(clock)
	advance(time.Minute)
	if got := w.idleFor(); got != time.Minute {
		t.Fatalf("idle %s after a minute without requests, want 1m", got)
	}
	w.begin()
	advance(time.Hour)
	if got := w.idleFor(); got != 0 {
		t.Fatalf("idle %s while a request runs, want 0", got)
	}
	w.end()
	advance(time.Second)
	if got := w.idleFor(); got != time.Second {
		t.Fatalf("idle %s a second after the request ended, want 1s", got)
	}
	for _, c := range []struct{ limit, want time.Duration }{{time.Millisecond, 10 * time.Millisecond}, {time.Second, 100 * time.Millisecond}, {time.Hour, 10 * time.Second}} {
		if got := idleTick(c.limit); got != c.want {
			t.Errorf("idleTick(%s) = %s, want %s", c.limit, got, c.want)
		}
	}
}

func TestServeIdleExitNegative(t *testing.T) {
	_, stderr, err := fxRun(t, nil, "serve", "--idle-exit", "-1s")
	if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error()+stderr, "--idle-exit must not be negative") {
		t.Fatalf("serve --idle-exit -1s: %v (exit %d) %s", err, exitCode(err), stderr)
	}
}
