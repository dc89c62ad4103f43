package forensics

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/events"
)

// TestReadAhead checks that a reader reading ahead returns what a plain
// reader returns, event by event, with the same lines and errors, and that
// stopping it early ends its goroutine.
func TestReadAhead(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 2000; i++ {
		if i%7 == 0 {
			b.WriteString("\n  \n") // blank lines count but hold no event
		}
		if i == 1500 {
			b.WriteString("{not json}\n")
		}
		fmt.Fprintf(&b, `{"position":%d,"id":"e%d","stream":"t/root","stream_version":%d,"type":"note.appended","schema":1,"recorded_at":"2026-12-02T10:00:00.000Z","data":{}}`+"\n", i, i, i)
	}
	log := b.String()
	type step struct {
		pos  int64
		ok   bool
		err  string
		line int
	}
	read := func(lr *LogReader, n int) []step {
		var out []step
		for range n {
			ev, ok, err := lr.Next()
			s := step{pos: ev.Position, ok: ok, line: lr.Line()}
			if err != nil {
				s.err = err.Error()
			}
			out = append(out, s)
			if !ok {
				break
			}
		}
		return out
	}
	for _, logText := range []string{log, log[:strings.Index(log, "{not json}")] + "\n\n"} {
		want := read(NewLogReader(strings.NewReader(logText)), 1<<20)
		lr := NewLogReader(strings.NewReader(logText))
		stop := lr.ReadAhead()
		got := read(lr, 1<<20)
		stop()
		if len(got) != len(want) {
			t.Fatalf("read ahead: %d steps, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("step %d: %+v, want %+v", i, got[i], want[i])
			}
		}
		last := want[len(want)-1]
		if last.ok || last.line == 0 {
			t.Fatalf("the log does not end as expected: %+v", last)
		}
	}
	// Stopped early, with batches still to come: Next reports the end,
	// and the line of the last event read stays.
	lr := NewLogReader(strings.NewReader(log))
	stop := lr.ReadAhead()
	got := read(lr, 10)
	if len(got) != 10 || !got[9].ok {
		t.Fatalf("first events: %+v", got)
	}
	stop()
	stop() // a second stop is harmless
	if _, ok, err := lr.Next(); ok || err != nil || lr.Line() != got[9].line {
		t.Fatalf("Next after stop: ok %v, err %v, line %d (want %d)", ok, err, lr.Line(), got[9].line)
	}
}

// TestReadAheadDoesNotWaitForInput: a log read from a pipe that stays open
// (stdin) neither delays a caller that stops before reading anything, nor
// one that stops while the goroutine waits for more input.
func TestReadAheadDoesNotWaitForInput(t *testing.T) {
	within := func(what string, fn func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { fn(); close(done) }()
		select {
		case <-done:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: still waiting after 60 s", what)
		}
	}
	pr, pw := io.Pipe()
	defer pw.Close()
	lr := NewLogReader(pr)
	stop := lr.ReadAhead()
	within("stop before any Next", stop)

	pr2, pw2 := io.Pipe()
	defer pw2.Close()
	go func() { // more than a batch, then the pipe stays open
		for i := 1; i <= 300; i++ {
			fmt.Fprintf(pw2, `{"position":%d,"id":"e%d","stream":"t/root","stream_version":%d,"type":"note.appended","schema":1,"recorded_at":"2026-12-02T10:00:00.000Z","data":{}}`+"\n", i, i, i)
		}
	}()
	lr = NewLogReader(pr2)
	stop = lr.ReadAhead()
	var ev events.Event
	within("the first event", func() { ev, _, _ = lr.Next() })
	if ev.Position != 1 {
		t.Fatalf("first event at %d", ev.Position)
	}
	within("stop while the goroutine waits for input", stop)
}
