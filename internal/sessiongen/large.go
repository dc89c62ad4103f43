package sessiongen

import (
	"bytes"
	"fmt"
	"math/rand/v2"
)

// Needles of Large sessions.
const (
	// LargeRareNeedle occurs in exactly one entry of a Large session, the
	// one marked rare.
	LargeRareNeedle = "ZQX-RARE-NEEDLE-4417"
	// LargeCommonNeedle occurs in nearly every tool result.
	LargeCommonNeedle = "error"
)

// Large returns a session of about sizeBytes bytes of entries, in turns of
// a user request, a bash or read call and its tool result of log lines.
// The same size always gives the same session.
func Large(sizeBytes int) Session {
	r := rand.New(rand.NewPCG(uint64(sizeBytes), 0x1a29e))
	b := NewBuilder(8)
	var buf bytes.Buffer
	size, sinceCompaction, turn, biggest := 0, 0, 0, 0
	rareAt := sizeBytes / 2
	rareDone := false
	for size < sizeBytes {
		turn++
		before := len(b.entries)
		b.UserText(fmt.Sprintf("Step %d: look at the %s %s logs and fix what is wrong 😀.", turn,
			words[r.IntN(len(words))], words[r.IntN(len(words))]))
		id := b.CallID()
		var call Block
		if turn%3 == 0 {
			call = ToolCall(id, "read", map[string]any{"path": fmt.Sprintf("logs/%s-%d.log", words[r.IntN(len(words))], turn)})
		} else {
			call = ToolCall(id, "bash", map[string]any{"command": fmt.Sprintf("tail -n %d /var/log/app/%s.log", 50+r.IntN(400), words[r.IntN(len(words))])})
		}
		b.Assistant(Thinking("Check the log for the failing "+words[r.IntN(len(words))]+"."), Text("Reading the logs."), call)
		buf.Reset()
		n := 1024 + r.IntN(31*1024)
		logText(r, &buf, n)
		rare := !rareDone && size >= rareAt // one tool result near the middle
		if rare {
			buf.WriteString("2026-12-02T10:59:59Z ERROR " + LargeRareNeedle + " checksum mismatch in shard 7\n")
			rareDone = true
		}
		b.ToolResult(id, call.name, false, Text(buf.String()))
		if rare {
			b.Mark("rare")
		}
		if n > biggest {
			biggest = n
			b.Mark("big")
		}
		if turn%4 == 0 {
			b.Assistant(Text(fmt.Sprintf("Turn %d: the %s looks healthy now.", turn, words[r.IntN(len(words))])))
		}
		for _, e := range b.entries[before:] {
			size += len(e)
			sinceCompaction += len(e)
		}
		if sinceCompaction >= 8<<20 && size < sizeBytes { // a Pi-native compaction every 8 MB or so
			b.Compaction(fmt.Sprintf("Turns up to %d: logs inspected, fixes applied.", turn), b.Leaf(), 150000)
			sinceCompaction = 0
		}
	}
	return b.Session()
}
