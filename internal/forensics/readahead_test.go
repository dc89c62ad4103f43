package forensics

import (
	"fmt"
	"strings"
	"testing"
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
	// Stopped early, with batches still to come: the goroutine ends and
	// Next reports the end.
	lr := NewLogReader(strings.NewReader(log))
	stop := lr.ReadAhead()
	if got := read(lr, 10); len(got) != 10 || !got[9].ok {
		t.Fatalf("first events: %+v", got)
	}
	stop()
	stop() // a second stop is harmless
	if _, ok, err := lr.Next(); ok || err != nil {
		t.Fatalf("Next after stop: ok %v, err %v", ok, err)
	}
}
