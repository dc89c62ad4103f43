package sessiongen

import (
	"bytes"
	"math/rand/v2"
	"strconv"
)

// words are the vocabulary of Large's requests and log lines.
var words = []string{
	"worker", "batch", "processed", "in", "ms", "queue", "request", "handler", "cache", "miss", "hit",
	"the", "a", "config", "loaded", "from", "disk", "retry", "timeout", "connection", "reset", "by", "peer",
	"GET", "/api/v1/items", "200", "404", "500", "user", "session", "token", "refreshed", "scheduler",
	"tick", "job", "done", "started", "warning", "slow", "query", "index", "rebuild", "shard", "replica",
	"lag", "commit", "flush", "wal", "checkpoint", "compaction", "ok", "failed", "error", "panic", "goroutine",
}

// logText writes about n bytes of log-like lines to buf.
func logText(r *rand.Rand, buf *bytes.Buffer, n int) {
	start := buf.Len()
	line := 0
	for buf.Len()-start < n {
		line++
		buf.WriteString("2026-12-02T10:")
		buf.WriteString(strconv.Itoa(10 + r.IntN(50)))
		buf.WriteString(":00Z ")
		if line%12 == 0 { // every 12th line is an error
			buf.WriteString("ERROR ")
		} else {
			buf.WriteString("INFO ")
		}
		for k := 6 + r.IntN(10); k > 0; k-- {
			buf.WriteString(words[r.IntN(len(words))])
			buf.WriteByte(' ')
		}
		buf.WriteString(strconv.Itoa(r.IntN(100000)))
		buf.WriteByte('\n')
	}
}
