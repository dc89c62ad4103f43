package main

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Claude Code keeps a Bash output of at most 30,000 characters; a Read
// returns up to 2,000 lines, about 100 KB of source.
const (
	ccBashLimit = 30_000
	ccReadLimit = 100 << 10
)

// ccWriter writes one Claude Code transcript, the session's or a
// sub-agent's, from the captured lines.
type ccWriter struct {
	t       *sessionTemplates
	g       *textGen
	lf      *lineFile
	rep     *strings.Replacer
	sid     string
	agentID string // a sub-agent's, "" for the session's transcript
	cwd     string
	clock   time.Time
	parent  any // the last line's uuid, nil before the first
	prompt  string
	tokens  int
	size    int64
	plant   string
	planted bool
	force   bool // plant in the next tool output
}

func (w *ccWriter) now() string {
	w.clock = w.clock.Add(time.Duration(200+w.g.r.IntN(20_000)) * time.Millisecond)
	return w.clock.Format("2006-01-02T15:04:05.000Z")
}

// emit writes the line made of the template of role, chained after the
// last line when it has a uuid, and returns its uuid.
func (w *ccWriter) emit(role string, set func(m map[string]any)) string {
	tpl := w.t.cc[role]
	if w.agentID != "" && w.t.cc["sub-"+role] != nil {
		tpl = w.t.cc["sub-"+role]
	}
	id := ""
	w.lf.line(tpl.fill(w.rep, func(m map[string]any) {
		if _, ok := m["timestamp"]; ok {
			m["timestamp"] = w.now()
		}
		if _, ok := m["uuid"]; ok {
			id = w.g.uuid()
			m["uuid"] = id
			m["parentUuid"] = w.parent
		}
		if _, ok := m["promptId"]; ok {
			m["promptId"] = w.g.uuid()
		}
		if _, ok := m["requestId"]; ok {
			m["requestId"] = "req_011C" + w.g.hex(20)
		}
		if set != nil {
			set(m)
		}
	}))
	if id != "" {
		w.parent = id
	}
	return id
}

// assistant writes an assistant line of blocks, as Claude Code writes one
// line per content block.
func (w *ccWriter) assistant(role, msgID string, blocks ...map[string]any) string {
	stop := any(nil)
	if blocks[len(blocks)-1]["type"] == "tool_use" {
		stop = "tool_use"
	} else if blocks[len(blocks)-1]["type"] == "text" {
		stop = "end_turn"
	}
	w.tokens += 200 + w.g.r.IntN(3000)
	return w.emit(role, func(m map[string]any) {
		msg := obj(m, "message")
		msg["id"] = msgID
		msg["content"] = toAny(blocks)
		msg["stop_reason"] = stop
		u := obj(msg, "usage")
		u["input_tokens"] = 3 + w.g.r.IntN(20)
		u["cache_read_input_tokens"] = w.tokens
		u["cache_creation_input_tokens"] = 200 + w.g.r.IntN(4000)
		u["output_tokens"] = 20 + w.g.r.IntN(900)
	})
}

func toAny(blocks []map[string]any) []any {
	out := make([]any, len(blocks))
	for i, b := range blocks {
		out[i] = b
	}
	return out
}

// toolStep writes one tool call, its thinking sometimes, and its result.
func (w *ccWriter) toolStep(project string) {
	g := w.g
	msgID := "msg_01" + g.hex(22)
	if g.r.IntN(2) == 0 {
		w.assistant("tool-use", msgID, map[string]any{"type": "thinking", "thinking": g.prose(1 + g.r.IntN(5)),
			"signature": base64.StdEncoding.EncodeToString([]byte(g.hex(300 + g.r.IntN(600))))})
	}
	callID := "toolu_01" + g.hex(22)
	sort := sorts[g.r.IntN(len(sorts))]
	var name string
	var input map[string]any
	var content string
	var result map[string]any
	switch x := g.r.IntN(10); {
	case sort == "source" && x < 6:
		name, input = "Read", map[string]any{"file_path": "/home/dev/src/" + project + "/" + g.srcPath()}
		content = g.output("source", min(g.outputSize(ccReadLimit), ccReadLimit))
		result = map[string]any{"type": "text", "file": map[string]any{"filePath": input["file_path"], "content": content,
			"numLines": strings.Count(content, "\n"), "startLine": 1, "totalLines": strings.Count(content, "\n")}}
	case sort == "grep":
		name, input = "Grep", map[string]any{"pattern": g.ident(false), "path": "/home/dev/src/" + project, "output_mode": "content", "-n": true}
		content = g.output("grep", min(g.outputSize(ccBashLimit), ccBashLimit))
		result = map[string]any{"mode": "content", "numFiles": 1 + g.r.IntN(30), "filenames": []any{}, "content": content,
			"numLines": strings.Count(content, "\n")}
	case x < 2:
		p := "/home/dev/src/" + project + "/" + g.srcPath()
		old, new := g.ident(false)+"(ctx)", g.ident(false)+"(ctx, opts)"
		name, input = "Edit", map[string]any{"file_path": p, "old_string": old, "new_string": new, "replace_all": false}
		original := g.output("source", 2000+g.r.IntN(30_000))
		content = fmt.Sprintf("The file %s has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n%s", p,
			original[:min(len(original), 600)])
		l := 1 + g.r.IntN(300)
		result = map[string]any{"filePath": p, "oldString": old, "newString": new, "originalFile": original, "userModified": false, "replaceAll": false,
			"structuredPatch": []any{map[string]any{"oldStart": l, "oldLines": 7, "newStart": l, "newLines": 7,
				"lines": []any{"   " + old, "-  " + old, "+  " + new, "   return nil"}}}}
	default:
		name, input = "Bash", map[string]any{"command": g.command(sort), "description": g.sentence()}
		content = g.output(sort, min(g.outputSize(ccBashLimit), ccBashLimit))
		result = map[string]any{"stdout": content, "stderr": "", "interrupted": false, "isImage": false, "noOutputExpected": false}
	}
	if w.plant != "" && !w.planted && (w.force || w.lf.n >= plantAt(w.size)) {
		content, w.planted = withNeedle(content, w.plant), true
		if _, ok := result["stdout"]; ok {
			result["stdout"] = content
		}
	}
	use := w.assistant("tool-use", msgID, map[string]any{"type": "tool_use", "id": callID, "name": name, "input": input})
	w.emit("tool-result", func(m map[string]any) {
		obj(m, "message")["content"] = []any{map[string]any{"tool_use_id": callID, "type": "tool_result", "content": content, "is_error": false}}
		m["toolUseResult"] = result
		m["sourceToolAssistantUUID"] = use
	})
}

// turn writes a prompt, steps tool calls and an answer, and the hooks'
// lines around them, as Claude Code does for each prompt.
func (w *ccWriter) turn(project string, first bool, steps int, spawn func() error) error {
	g := w.g
	w.prompt = g.prompt(project)
	if w.agentID == "" {
		w.emit("enqueue", func(m map[string]any) { m["content"] = w.prompt })
		w.emit("dequeue", nil)
		if first {
			w.emit("hook-start", nil)
			w.emit("hook-context", nil)
		}
	}
	w.emit("prompt", func(m map[string]any) { obj(m, "message")["content"] = w.prompt })
	if first {
		w.emit("skills", nil)
	}
	for ; steps > 0 && (w.lf.n < w.size || w.force && !w.planted); steps-- { // a turn ends where the session does
		w.toolStep(project)
	}
	if spawn != nil {
		if err := spawn(); err != nil {
			return err
		}
	}
	w.assistant("answer", "msg_01"+g.hex(22), map[string]any{"type": "text", "text": g.prose(2 + g.r.IntN(8))})
	if w.agentID == "" {
		w.emit("hook-stop", nil)
		w.emit("stop-summary", nil)
		w.emit("turn-duration", func(m map[string]any) { m["durationMs"] = 2000 + g.r.IntN(300_000) })
		w.emit("last-prompt", func(m map[string]any) { m["lastPrompt"] = w.prompt; m["leafUuid"] = w.parent })
	}
	return nil
}

// compact writes a compaction: its boundary and the summary the session
// continues from.
func (w *ccWriter) compact() {
	last := w.parent
	w.parent = nil
	w.emit("compact-boundary", func(m map[string]any) {
		m["logicalParentUuid"] = last
		meta := obj(m, "compactMetadata")
		delete(meta, "preservedSegment")
		delete(meta, "preservedMessages")
		meta["trigger"] = "auto"
		meta["preTokens"] = w.tokens
	})
	w.tokens = 20_000
	w.emit("compact-summary", func(m map[string]any) {
		obj(m, "message")["content"] = "This session is being continued from a previous conversation that ran out of context. " +
			"The summary below covers the earlier portion of the conversation.\n\n" + w.g.prose(12)
	})
}

// writeClaudeCode writes a Claude Code session of about size bytes as
// Claude Code keeps it: <dir>/-home-dev-src-<project>/<session id>.jsonl
// and, when subs > 0, that many sub-agents' transcripts (with their
// .meta.json) under <session id>/subagents/, which take about a third of
// the bytes. plant goes in the session's transcript, subPlant in its first
// sub-agent's.
func (t *sessionTemplates) writeClaudeCode(dir string, g *textGen, project string, start time.Time, size int64, subs int, plant, subPlant string) ([]writtenFile, error) {
	sid := g.uuid()
	cwd := "/home/dev/src/" + project
	path := filepath.Join(dir, "-home-dev-src-"+project, sid+".jsonl")
	var files []writtenFile
	subSize := int64(0)
	if subs > 0 {
		subSize = size / 3 / int64(subs)
	}
	lf, err := createLineFile(path)
	if err != nil {
		return nil, err
	}
	pairs := []string{t.ccCwd, cwd}
	for _, id := range t.ccSessionIDs {
		pairs = append(pairs, id, sid)
	}
	w := &ccWriter{t: t, g: g, lf: lf, rep: strings.NewReplacer(pairs...), sid: sid, cwd: cwd, clock: start, size: size - subSize*int64(subs), plant: plant}
	var sinceCompaction int64
	spawned := 0
	spawn := func() error {
		agentID := "a" + g.hex(16)
		p := ""
		if spawned == 0 {
			p = subPlant
		}
		spawned++
		prompt := g.prompt(project)
		callID := "toolu_01" + g.hex(22)
		use := w.assistant("agent-use", "msg_01"+g.hex(22), map[string]any{"type": "tool_use", "id": callID, "name": "Agent",
			"input": map[string]any{"description": g.pick(verbs) + " " + g.pick(nouns), "prompt": prompt, "subagent_type": "general-purpose"}})
		subPath := filepath.Join(strings.TrimSuffix(path, ".jsonl"), "subagents", "agent-"+agentID+".jsonl")
		f, err := t.writeClaudeCodeAgent(subPath, g, w, agentID, prompt, subSize, p)
		if err != nil {
			return err
		}
		files = append(files, f...)
		answer := []any{map[string]any{"type": "text", "text": g.prose(3 + g.r.IntN(6))},
			map[string]any{"type": "text", "text": fmt.Sprintf("agentId: %s (use SendMessage with to: '%s' to continue this agent)\n<usage>subagent_tokens: %d\ntool_uses: %d\nduration_ms: %d</usage>",
				agentID, agentID, 10_000+g.r.IntN(200_000), 3+g.r.IntN(60), 10_000+g.r.IntN(600_000))}}
		w.emit("agent-result", func(m map[string]any) {
			obj(m, "message")["content"] = []any{map[string]any{"tool_use_id": callID, "type": "tool_result", "content": answer}}
			r := obj(m, "toolUseResult")
			r["prompt"], r["agentId"], r["content"] = prompt, agentID, answer[:1]
			m["sourceToolAssistantUUID"] = use
		})
		return nil
	}
	for turn := 0; turn == 0 || lf.n < w.size || spawned < subs; turn++ {
		var spawnNow func() error
		if spawned < subs && (lf.n >= w.size*int64(spawned+1)/int64(subs+1) || lf.n >= w.size) {
			spawnNow = spawn
		}
		before := lf.n
		if err := w.turn(project, turn == 0, 1+g.r.IntN(6), spawnNow); err != nil {
			lf.close()
			return nil, err
		}
		if sinceCompaction += lf.n - before; sinceCompaction >= 8<<20 && lf.n < w.size {
			w.compact()
			sinceCompaction = 0
		}
	}
	if plant != "" && !w.planted { // a session of one turn
		w.force = true
		if err := w.turn(project, false, 1, nil); err != nil {
			return nil, err
		}
	}
	f, err := lf.close()
	f.plant = plant
	return append([]writtenFile{f}, files...), err
}

// writeClaudeCodeAgent writes a sub-agent's transcript of about size
// bytes and its .meta.json, continuing parent's clock.
func (t *sessionTemplates) writeClaudeCodeAgent(path string, g *textGen, parent *ccWriter, agentID, prompt string, size int64, plant string) ([]writtenFile, error) {
	lf, err := createLineFile(path)
	if err != nil {
		return nil, err
	}
	pairs := []string{t.ccCwd, parent.cwd, t.ccAgentID, agentID}
	for _, id := range t.ccSessionIDs {
		pairs = append(pairs, id, parent.sid)
	}
	w := &ccWriter{t: t, g: g, lf: lf, rep: strings.NewReplacer(pairs...), sid: parent.sid, agentID: agentID, cwd: parent.cwd,
		clock: parent.clock, size: size, plant: plant}
	// A sub-agent works on its one prompt until it answers.
	w.emit("prompt", func(m map[string]any) { obj(m, "message")["content"] = prompt })
	w.emit("skills", nil)
	project := parent.cwd[strings.LastIndexByte(parent.cwd, '/')+1:]
	for first := true; first || lf.n < size; first = false {
		w.toolStep(project)
	}
	if plant != "" && !w.planted { // a sub-agent of one step
		w.force = true
		w.toolStep(project)
	}
	w.assistant("answer", "msg_01"+g.hex(22), map[string]any{"type": "text", "text": g.prose(3 + g.r.IntN(6))})
	parent.clock = w.clock
	f, err := lf.close()
	f.subAgent, f.plant = true, plant
	if err != nil {
		return nil, err
	}
	meta, err := createLineFile(strings.TrimSuffix(path, ".jsonl") + ".meta.json")
	if err != nil {
		return nil, err
	}
	meta.line(t.ccMeta.fill(nil, func(m map[string]any) {
		m["description"] = g.pick(verbs) + " " + g.pick(nouns)
		m["toolUseId"] = "toolu_01" + g.hex(22)
	}))
	mf, err := meta.close()
	return []writtenFile{f, mf}, err
}
