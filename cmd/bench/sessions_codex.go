package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Codex keeps about 10,000 tokens of a command's output, some 40 KB.
const codexOutputLimit = 40_000

// codexWriter writes one Codex rollout, a session's thread or a
// sub-agent's, from the captured lines.
type codexWriter struct {
	t       *sessionTemplates
	g       *textGen
	lf      *lineFile
	thread  string
	parent  string // a sub-agent's session thread, "" for a session's own
	spawned string // the sub-agent this thread spawns, if any
	window  string
	turn    string
	cwd     string
	rep     *strings.Replacer
	clock   time.Time
	ordinal int
	seq     int // history_sequence
	tokens  int
	size    int64
	plant   string
	planted bool
	force   bool   // plant in the next tool output
	answer  string // the last turn's answer
}

// v7 is an id in the form of Codex's UUIDv7 ids, at the writer's clock.
func (w *codexWriter) v7() string {
	u, ms := w.g.uuid(), fmt.Sprintf("%012x", w.clock.UnixMilli())
	return ms[:8] + "-" + ms[8:12] + "-7" + u[15:]
}

// newTurn starts a turn: a new turn id in the captured ones' place.
func (w *codexWriter) newTurn() {
	w.turn = w.v7()
	own := w.thread
	pairs := []string{w.t.codexCwd, w.cwd}
	for _, id := range w.t.codexThreadIDs {
		pairs = append(pairs, id, own)
	}
	if w.parent != "" { // a sub-agent's rollout
		pairs = append(pairs, w.t.codexParentID, w.parent, w.t.codexSubID, own)
	} else {
		sub := w.spawned
		if sub == "" {
			sub = own
		}
		pairs = append(pairs, w.t.codexParentID, own, w.t.codexSubID, sub)
	}
	for _, id := range w.t.codexTurnIDs {
		pairs = append(pairs, id, w.turn)
	}
	for _, id := range w.t.codexWindowIDs {
		pairs = append(pairs, id, w.window)
	}
	w.rep = strings.NewReplacer(pairs...)
}

// emit writes the line made of the template of role, with the next
// ordinal and the writer's clock.
func (w *codexWriter) emit(role string, set func(m, p map[string]any)) {
	w.clock = w.clock.Add(time.Duration(20+w.g.r.IntN(4000)) * time.Millisecond)
	w.lf.line(w.t.codex[role].fill(w.rep, func(m map[string]any) {
		m["timestamp"] = w.clock.Format("2006-01-02T15:04:05.000Z")
		m["ordinal"] = w.ordinal
		p := obj(m, "payload")
		if md, ok := m["metadata"].(map[string]any); ok {
			w.seq++
			md["history_sequence"] = w.seq
			md["sampled_through_sequence"] = w.seq - 1
		}
		if set != nil {
			set(m, p)
		}
	}))
	w.ordinal++
}

// setText sets the text of a message's first content part.
func setText(p map[string]any, text string) {
	c, _ := p["content"].([]any)
	if len(c) == 0 {
		p["content"] = []any{map[string]any{"type": "input_text", "text": text}}
		return
	}
	c[0].(map[string]any)["text"] = text
}

// usage writes the token records after a model response.
func (w *codexWriter) usage() {
	w.tokens += 500 + w.g.r.IntN(4000)
	u := map[string]any{"input_tokens": w.tokens, "cached_input_tokens": w.tokens * 9 / 10, "cache_write_input_tokens": 0,
		"output_tokens": 20 + w.g.r.IntN(800), "reasoning_output_tokens": w.g.r.IntN(400), "total_tokens": w.tokens + 400}
	w.emit("usage", func(_, p map[string]any) {
		p["response_id"] = "resp_" + w.g.hex(32)
		p["usage"], p["turn_token_usage"], p["thread_token_usage"] = u, u, u
	})
	w.emit("count", func(_, p map[string]any) {
		info := obj(p, "info")
		info["total_token_usage"], info["last_token_usage"] = u, u
	})
}

// step writes a reasoning item, an exec_command call, its completion
// event and its output.
func (w *codexWriter) step() {
	g := w.g
	w.emit("reasoning", func(_, p map[string]any) {
		p["id"] = "rs_" + g.hex(32)
		p["summary"] = []any{map[string]any{"type": "summary_text", "text": "**" + title(g.pick(verbs)) + " the " + g.pick(nouns) + "**\n\n" + g.prose(1+g.r.IntN(3))}}
		p["encrypted_content"] = "gAAAAAB" + base64.RawURLEncoding.EncodeToString([]byte(g.hex(600+g.r.IntN(2400))))
	})
	sort := sorts[g.r.IntN(len(sorts))]
	cmd := g.command(sort)
	out := g.output(sort, min(g.outputSize(codexOutputLimit), codexOutputLimit))
	if w.plant != "" && !w.planted && (w.force || w.lf.n >= plantAt(w.size)) {
		out, w.planted = withNeedle(out, w.plant), true
	}
	callID := "call_" + g.hex(24)
	args, _ := json.Marshal(map[string]any{"cmd": cmd, "workdir": w.cwd, "yield_time_ms": 10000})
	w.emit("call", func(_, p map[string]any) {
		p["id"], p["call_id"], p["name"], p["arguments"] = "fc_"+g.hex(32), callID, "exec_command", string(args)
		delete(p, "namespace")
	})
	w.usage()
	secs := g.r.Float64() * 20
	// Codex records the command's end as an event holding its output
	// again, as it does an MCP call's result.
	w.emit("call-item", func(_, p map[string]any) {
		p["item"] = map[string]any{"type": "CommandExecution", "id": callID, "command": cmd, "cwd": w.cwd, "status": "completed",
			"exit_code": 0, "aggregated_output": out, "duration": map[string]any{"secs": int(secs), "nanos": g.r.IntN(1e9)}}
	})
	w.emit("output", func(_, p map[string]any) {
		p["id"], p["call_id"] = "fco_"+w.v7(), callID
		p["output"] = fmt.Sprintf("Chunk ID: %s\nWall time: %.4f seconds\nProcess exited with code 0\nOriginal token count: %d\nOutput:\n%s",
			g.hex(6), secs, len(out)/4, out)
	})
}

// turnOf writes one turn: its context, the user's prompt, steps and the
// answer (steps < 0: until the rollout has its size); spawn, if not nil,
// spawns the sub-agent before the answer.
func (w *codexWriter) turnOf(prompt string, first bool, steps int, spawn func() error) error {
	g := w.g
	w.newTurn()
	w.emit("task-started", nil)
	if first {
		w.emit("developer", nil)
		w.emit("environment", nil)
		w.emit("world", nil)
	}
	w.emit("turn-context", nil)
	if first {
		w.emit("settings", nil)
	}
	msgID := "msg_" + w.v7()
	w.emit("user", func(_, p map[string]any) { p["id"] = msgID; setText(p, prompt) })
	w.emit("user-item", func(_, p map[string]any) {
		item := obj(p, "item")
		item["id"] = w.v7()
		item["content"] = []any{map[string]any{"type": "text", "text": prompt, "text_elements": []any{}}}
	})
	for i := 0; (i < steps && w.lf.n < w.size) || (steps < 0 && (i == 0 || w.lf.n < w.size)); i++ {
		w.step()
	}
	if steps < 0 && w.plant != "" && !w.planted { // a sub-agent of one step
		w.force = true
		w.step()
	}
	if spawn != nil {
		if err := spawn(); err != nil {
			return err
		}
	}
	answer := g.prose(2 + g.r.IntN(8))
	w.answer = answer
	answerID := "msg_" + g.hex(32)
	w.emit("answer-item", func(_, p map[string]any) {
		item := obj(p, "item")
		item["id"] = answerID
		item["content"] = []any{map[string]any{"type": "Text", "text": answer}}
	})
	w.emit("answer", func(_, p map[string]any) {
		p["id"] = answerID
		p["content"] = []any{map[string]any{"type": "output_text", "text": answer, "annotations": []any{}}}
	})
	w.usage()
	w.emit("complete", func(_, p map[string]any) {
		p["last_agent_message"] = answer[:min(len(answer), 120)]
		p["duration_ms"] = 5000 + g.r.IntN(600_000)
	})
	return nil
}

// compact writes an automatic compaction.
func (w *codexWriter) compact() {
	summary := w.g.prose(14)
	w.emit("compacted", func(_, p map[string]any) { p["message"] = summary })
	w.tokens = 20_000
}

// rolloutPath is where Codex keeps the rollout of thread started at t.
func rolloutPath(dir string, t time.Time, thread string) string {
	return filepath.Join(dir, t.Format("2006/01/02"), "rollout-"+t.Format("2006-01-02T15-04-05")+"-"+thread+".jsonl")
}

// writeCodex writes a Codex session of about size bytes as Codex keeps it,
// <dir>/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl and, with sub, one
// sub-agent's rollout beside it, spawned halfway and taking about a third
// of the bytes; subPlant goes in the sub-agent's rollout.
func (t *sessionTemplates) writeCodex(dir string, g *textGen, project string, start time.Time, size int64, sub bool, subPlant string) ([]writtenFile, error) {
	w := &codexWriter{t: t, g: g, cwd: "/home/dev/src/" + project, clock: start, size: size}
	w.thread, w.window = w.v7(), w.v7()
	var subSize int64
	if sub {
		subSize = size / 3
		w.size -= subSize
		w.spawned = w.v7()
	}
	path := rolloutPath(dir, start, w.thread)
	lf, err := createLineFile(path)
	if err != nil {
		return nil, err
	}
	w.lf = lf
	w.newTurn()
	w.emit("meta", func(_, p map[string]any) {
		p["id"], p["session_id"], p["timestamp"] = w.thread, w.thread, start.Format("2006-01-02T15:04:05.000Z")
		p["model_provider"] = "openai"
	})
	var files []writtenFile
	spawned := !sub
	spawn := func() error {
		spawned = true
		prompt := "SUB: " + g.prompt(project)
		w.emit("spawn-call", func(_, p map[string]any) {
			args, _ := json.Marshal(map[string]string{"message": prompt})
			p["arguments"] = string(args)
		})
		w.usage()
		w.emit("spawn-item", nil)
		w.emit("spawn-output", nil)
		w.emit("world-partial", nil)
		s := &codexWriter{t: t, g: g, thread: w.spawned, parent: w.thread, cwd: w.cwd, clock: w.clock, size: subSize, plant: subPlant}
		s.window = s.v7()
		f, err := s.writeSubAgent(dir, prompt)
		if err != nil {
			return err
		}
		files = append(files, f)
		w.clock = s.clock
		// The sub-agent's answer comes back in the wait's output and in
		// the notification the model reads after it.
		status, _ := json.Marshal(map[string]any{w.spawned: map[string]string{"completed": s.answer}})
		w.emit("wait-call", nil)
		w.usage()
		w.emit("wait-item", nil)
		w.emit("wait-output", func(_, p map[string]any) { p["output"] = `{"status":` + string(status) + `}` })
		w.emit("notification", func(_, p map[string]any) {
			setText(p, "<subagent_notification>\n"+fmt.Sprintf(`{"agent_path":%q,"status":%s}`, w.spawned, status)+"\n</subagent_notification>")
		})
		return nil
	}
	var sinceCompaction int64
	for turn := 0; turn == 0 || lf.n < w.size || !spawned; turn++ {
		var spawnNow func() error
		if !spawned && lf.n >= w.size/2 {
			spawnNow = spawn
		}
		before := lf.n
		if err := w.turnOf(g.prompt(project), turn == 0, 1+g.r.IntN(6), spawnNow); err != nil {
			lf.close()
			return nil, err
		}
		if sinceCompaction += lf.n - before; sinceCompaction >= 8<<20 && lf.n < w.size {
			w.compact()
			sinceCompaction = 0
		}
	}
	f, err := lf.close()
	return append([]writtenFile{f}, files...), err
}

// writeSubAgent writes a sub-agent's rollout: its session_meta naming its
// parent, and one turn on prompt until the rollout has its size.
func (w *codexWriter) writeSubAgent(dir, prompt string) (writtenFile, error) {
	path := rolloutPath(dir, w.clock, w.thread)
	lf, err := createLineFile(path)
	if err != nil {
		return writtenFile{}, err
	}
	w.lf = lf
	w.newTurn()
	w.emit("sub-meta", func(_, p map[string]any) { p["timestamp"] = w.clock.Format("2006-01-02T15:04:05.000Z") })
	if err := w.turnOf(prompt, true, -1, nil); err != nil {
		return writtenFile{}, err
	}
	f, err := lf.close()
	f.subAgent, f.plant = true, w.plant
	return f, err
}
