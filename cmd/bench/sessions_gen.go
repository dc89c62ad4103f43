package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/memoryd/memoryd/internal/sessiongen"
)

// The search-all rows search a machine's whole history: the session files
// of Pi, Claude Code and Codex that a developer's agents left on it,
// imported by memoryd import-sessions. writeSessions generates them, a
// third of the bytes each: Pi sessions with sessiongen's Builder, Claude
// Code transcripts and Codex rollouts by filling the lines of the captured
// ones (testdata/claude-code/transcripts, testdata/codex/rollouts) with
// new ids and generated prompts, tool calls and outputs. Sessions vary in
// size (log-uniformly, from 48 KB to tens of MB), some have sub-agents,
// and every one has ids of its own.

// The needles of the search-all rows. Generated text never holds the
// three planted ones (it has no capital Z) nor the absent one (no z
// before a q).
const (
	// allRareNeedle is in one tool output of one Claude Code sub-agent.
	allRareNeedle = "ZQX-MACHINE-RARE-5203"
	// allKindNeedle is in one tool output of a Codex sub-agent, of a Pi
	// session and of a Claude Code session: the Codex one is the only
	// match of the agents of kind codex.
	allKindNeedle = "ZQX-KIND-CODEX-7741"
	// allAbsentNeedle is nowhere. Its first byte is the files' most
	// frequent letter, the worst case for a scan that skips to the
	// needle's first byte, as search-common's needle is for GLOB.
	allAbsentNeedle = "ezq-nowhere-6642"
	// allCommonNeedle is in nearly every tool output.
	allCommonNeedle = "error"
	// allCommonLimit is the --limit of the common needle's search.
	allCommonLimit = 20
)

// sessionKindNames are the kinds of session files, in the order they are
// generated and reported.
var sessionKindNames = [3]string{"pi", "claude-code", "codex"}

// sessionSet is the generated folder of session files.
type sessionSet struct {
	dir   string
	kinds [3]kindSet
	// rareFile holds allRareNeedle; kindFiles hold allKindNeedle, the
	// Codex one first.
	rareFile  string
	kindFiles []string
}

// kindSet is the session files of one kind.
type kindSet struct {
	dir       string // the folder they are under
	sessions  int    // sessions: a Codex sub-agent's rollout is not one
	subAgents int    // sub-agents' transcripts or rollouts
	files     int    // .jsonl files
	bytes     int64  // of every file, sub-agents' included
	largest   int64  // the largest session, its sub-agents' files included
}

func (s *sessionSet) bytes() int64 {
	var n int64
	for _, k := range s.kinds {
		n += k.bytes
	}
	return n
}

func (s *sessionSet) files() int {
	n := 0
	for _, k := range s.kinds {
		n += k.files
	}
	return n
}

// sessionSize draws the size of a kind's next session, left bytes of the
// kind's budget to go: log-uniform between the largest's hundredth and a
// quarter of the budget (at most 40 MiB), so there are at least four; the
// last takes what is left.
func sessionSize(r *rand.Rand, budget, left int64) int64 {
	hi := min(max(budget/4, 128<<10), 40<<20)
	lo := max(hi/100, 48<<10)
	n := int64(math.Exp(math.Log(float64(lo)) + r.Float64()*(math.Log(float64(hi))-math.Log(float64(lo)))))
	if left-n < lo {
		n = left
	}
	return n
}

// writeSessions writes about total bytes of session files under dir, in
// each kind's own layout: pi/<cwd folder>/<time>_<id>.jsonl,
// claude-code/<project folder>/<session id>.jsonl with its sub-agents
// under <session id>/subagents/, and codex/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl.
// tpl is the captured files' lines.
func writeSessions(dir string, total int64, tpl *sessionTemplates) (*sessionSet, error) {
	set := &sessionSet{dir: dir}
	r := rand.New(rand.NewPCG(uint64(total), 0x5e551))
	for k, name := range sessionKindNames {
		ks := &set.kinds[k]
		ks.dir = filepath.Join(dir, name)
		budget := total / 3
		for i := 0; ks.bytes < budget; i++ {
			size := sessionSize(r, budget, budget-ks.bytes)
			seed := uint64(k)<<32 | uint64(i)
			g := newTextGen(seed)
			project := projects[(i+k)%len(projects)]
			start := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC).Add(time.Duration(i*len(sessionKindNames)+k) * 97 * time.Minute)
			var files []writtenFile
			var err error
			switch name {
			case "pi":
				plant := ""
				if i == 0 {
					plant = allKindNeedle
				}
				files, err = writePiSession(ks.dir, seed, g, project, start, size, plant)
			case "claude-code":
				// The second session always has a sub-agent, which holds
				// the rare needle.
				subs := 0
				if i == 1 || g.r.IntN(3) == 0 {
					subs = 1 + g.r.IntN(3)
				}
				plant, subPlant := "", ""
				switch i {
				case 0:
					plant = allKindNeedle
				case 1:
					subPlant = allRareNeedle
				}
				files, err = tpl.writeClaudeCode(ks.dir, g, project, start, size, subs, plant, subPlant)
			case "codex":
				// So does the second Codex session, holding the kind needle.
				sub := i == 1 || g.r.IntN(4) == 0
				subPlant := ""
				if i == 1 {
					subPlant = allKindNeedle
				}
				files, err = tpl.writeCodex(ks.dir, g, project, start, size, sub, subPlant)
			}
			if err != nil {
				return nil, err
			}
			ks.sessions++
			var sessionBytes int64
			for _, f := range files {
				ks.bytes += f.size
				sessionBytes += f.size
				if strings.HasSuffix(f.path, ".jsonl") {
					ks.files++
				}
				if f.subAgent {
					ks.subAgents++
				}
				switch f.plant {
				case allRareNeedle:
					set.rareFile = f.path
				case allKindNeedle:
					if name == "codex" {
						set.kindFiles = append([]string{f.path}, set.kindFiles...)
					} else {
						set.kindFiles = append(set.kindFiles, f.path)
					}
				}
			}
			ks.largest = max(ks.largest, sessionBytes)
		}
	}
	if set.rareFile == "" || len(set.kindFiles) != 3 {
		return nil, fmt.Errorf("session generation planted the rare needle in %q and the kind needle in %q", set.rareFile, set.kindFiles)
	}
	return set, nil
}

// writtenFile is a file a session generator wrote.
type writtenFile struct {
	path     string
	size     int64
	subAgent bool
	plant    string // the needle it holds, if any
}

// lineFile writes a JSONL file line by line and counts its bytes.
type lineFile struct {
	f    *os.File
	w    *bufio.Writer
	n    int64
	path string
	err  error
}

func createLineFile(path string) (*lineFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &lineFile{f: f, w: bufio.NewWriterSize(f, 1<<20), path: path}, nil
}

// line writes one line; a newline ends it if it has none.
func (l *lineFile) line(b []byte) {
	if l.err != nil {
		return
	}
	if len(b) == 0 || b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	_, l.err = l.w.Write(b)
	l.n += int64(len(b))
}

func (l *lineFile) close() (writtenFile, error) {
	err := l.err
	if e := l.w.Flush(); err == nil {
		err = e
	}
	if e := l.f.Close(); err == nil {
		err = e
	}
	return writtenFile{path: l.path, size: l.n}, err
}

// plantAt is where in a session of size bytes a needle goes: in the first
// tool output past the middle.
func plantAt(size int64) int64 { return size / 2 }

// withNeedle returns out with needle on a log line of its own near its
// middle.
func withNeedle(out, needle string) string {
	line := "2026-11-20T10:59:59.000Z ERROR " + needle + " checksum mismatch in shard 7\n"
	i := strings.IndexByte(out[len(out)/2:], '\n')
	if i < 0 {
		return out + "\n" + line
	}
	i += len(out)/2 + 1
	return out[:i] + line + out[i:]
}

// Pi's tool outputs are cut at 50 KB, as Pi's bash and read tools cut them.
const piOutputLimit = 50 << 10

// writePiSession writes a Pi session of about size bytes as Pi keeps it:
// <dir>/--<cwd>--/<time>_<session id>.jsonl. Turns are a prompt, one to
// six tool calls (read, bash, edit, write) with their results, and an
// answer; a compaction every 8 MB or so.
func writePiSession(dir string, seed uint64, g *textGen, project string, start time.Time, size int64, plant string) ([]writtenFile, error) {
	b := sessiongen.NewBuilder(seed + 1000)
	var sizeSoFar, sinceCompaction int64
	planted := plant == ""
	for turn := 1; sizeSoFar < size || !planted; turn++ {
		before := b.Len()
		b.UserText(g.prompt(project))
		for step := 1 + g.r.IntN(6); step > 0; step-- {
			id := b.CallID()
			sort := sorts[g.r.IntN(len(sorts))]
			out := g.output(sort, min(g.outputSize(piOutputLimit), piOutputLimit))
			var call sessiongen.Block
			name := "bash"
			switch x := g.r.IntN(10); {
			case x < 4 && sort == "source":
				name = "read"
				call = sessiongen.ToolCall(id, name, map[string]any{"path": g.srcPath()})
			case x < 5:
				name = "edit"
				p := g.srcPath()
				call = sessiongen.ToolCall(id, name, map[string]any{"path": p, "oldText": g.ident(false) + "(ctx)", "newText": g.ident(false) + "(ctx, opts)"})
				out = "Successfully replaced text in " + p + ".\n" + out
			case x < 6:
				name = "write"
				p := g.srcPath()
				content := g.output("source", 500+g.r.IntN(4000))
				call = sessiongen.ToolCall(id, name, map[string]any{"path": p, "content": content})
				out = fmt.Sprintf("Successfully wrote %d bytes to %s\n", len(content), p)
			default:
				call = sessiongen.ToolCall(id, name, map[string]any{"command": g.command(sort)})
			}
			if !planted && (sizeSoFar >= plantAt(size) || sizeSoFar >= size) {
				out, planted = withNeedle(out, plant), true
			}
			blocks := []sessiongen.Block{call}
			if g.r.IntN(2) == 0 {
				blocks = append([]sessiongen.Block{sessiongen.Thinking(g.prose(1 + g.r.IntN(4)))}, blocks...)
			}
			b.Assistant(blocks...)
			b.ToolResult(id, name, g.r.IntN(20) == 0, sessiongen.Text(out))
		}
		b.Assistant(sessiongen.Text(g.prose(2 + g.r.IntN(6))))
		sess := b.Session()
		for _, e := range sess.Entries[before:] {
			sizeSoFar += int64(len(e)) + 1
			sinceCompaction += int64(len(e)) + 1
		}
		if sinceCompaction >= 8<<20 && sizeSoFar < size {
			b.Compaction(fmt.Sprintf("Turns up to %d: %s", turn, g.prose(4)), b.Leaf(), 150000)
			sinceCompaction = 0
		}
	}
	sess := b.Session()
	folder := "--home-dev-src-" + project + "--"
	path := filepath.Join(dir, folder, fmt.Sprintf("%s_%s.jsonl", start.Format("2006-01-02T15-04-05-000Z"), g.uuid()))
	lf, err := createLineFile(path)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := sess.WriteJSONL(&buf); err != nil {
		return nil, err
	}
	lf.line(buf.Bytes())
	wf, err := lf.close()
	wf.plant = plant
	return []writtenFile{wf}, err
}

// templateLine is a captured line to fill: decoded afresh for each use,
// so that a change to one line leaves the template as it was.
type templateLine []byte

// fill decodes the line, lets set change it, and encodes it as the
// agents write JSON (no HTML escaping), with rep's replacements of the
// captured ids made. Object keys come out sorted.
func (t templateLine) fill(rep *strings.Replacer, set func(m map[string]any)) []byte {
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(t))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		panic(fmt.Sprintf("a template line does not decode: %v", err))
	}
	if set != nil {
		set(m)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		panic(err)
	}
	if rep == nil {
		return buf.Bytes()
	}
	return []byte(rep.Replace(buf.String()))
}

// obj returns m[key] as an object, made if missing.
func obj(m map[string]any, key string) map[string]any {
	o, ok := m[key].(map[string]any)
	if !ok {
		o = map[string]any{}
		m[key] = o
	}
	return o
}

// sessionTemplates are the lines of the captured transcripts and rollouts
// that the generated ones are made of, by role.
type sessionTemplates struct {
	cc    map[string]templateLine
	codex map[string]templateLine
	// The captured ids a generated line replaces: Claude Code's sessions
	// and its sub-agent; Codex's threads (the sub-agent's and its
	// parent's apart), turns and context windows.
	ccSessionIDs                 []string
	ccAgentID                    string
	codexThreadIDs               []string // but the two below
	codexParentID, codexSubID    string
	codexTurnIDs, codexWindowIDs []string
	ccMeta                       templateLine
	ccCwd, codexCwd              string // the captured sessions' working folder
}

// loadSessionTemplates reads the captured files under testdata, the
// module's testdata folder.
func loadSessionTemplates(testdata string) (*sessionTemplates, error) {
	t := &sessionTemplates{cc: map[string]templateLine{}, codex: map[string]templateLine{}, ccCwd: "/home/dev/proj", codexCwd: "/home/dev/proj"}
	read := func(rel string) ([]map[string]any, [][]byte, error) {
		raw, err := os.ReadFile(filepath.Join(testdata, rel))
		if err != nil {
			return nil, nil, fmt.Errorf("the captured sessions the search-all rows' are made of: %w", err)
		}
		var ms []map[string]any
		var lines [][]byte
		for _, l := range bytes.Split(raw, []byte("\n")) {
			var m map[string]any
			if json.Unmarshal(l, &m) == nil {
				ms, lines = append(ms, m), append(lines, l)
			}
		}
		return ms, lines, nil
	}
	str := func(m map[string]any, path ...string) string {
		var v any = m
		for _, p := range path {
			o, ok := v.(map[string]any)
			if !ok {
				return ""
			}
			v = o[p]
		}
		s, _ := v.(string)
		return s
	}
	firstBlock := func(m map[string]any) string {
		c, _ := obj(m, "message")["content"].([]any)
		if len(c) == 0 {
			return ""
		}
		b, _ := c[0].(map[string]any)
		return str(b, "type")
	}
	pick := func(into map[string]templateLine, role string, ms []map[string]any, lines [][]byte, ok func(i int, m map[string]any) bool) {
		if _, done := into[role]; done {
			return
		}
		for i, m := range ms {
			if ok(i, m) {
				into[role] = templateLine(lines[i])
				return
			}
		}
	}
	// Claude Code: a session of prompts, tool calls and a compaction, and
	// one with a sub-agent.
	for _, f := range []string{"claude-code/transcripts/compacted.jsonl", "claude-code/transcripts/with-subagent/session.jsonl",
		"claude-code/transcripts/with-subagent/subagents/agent-a02dee9184452a481.jsonl"} {
		ms, lines, err := read(f)
		if err != nil {
			return nil, err
		}
		sub := strings.Contains(f, "subagents")
		p := func(role string, ok func(i int, m map[string]any) bool) { pick(t.cc, role, ms, lines, ok) }
		for _, m := range ms {
			if id := str(m, "sessionId"); id != "" && !slices.Contains(t.ccSessionIDs, id) {
				t.ccSessionIDs = append(t.ccSessionIDs, id)
			}
			if id := str(m, "agentId"); id != "" {
				t.ccAgentID = id
			}
		}
		typ := func(m map[string]any) string { return str(m, "type") }
		att := func(m map[string]any) string { return str(m, "attachment", "type") }
		hook := func(m map[string]any) string { return str(m, "attachment", "hookEvent") }
		if sub {
			p("sub-prompt", func(i int, m map[string]any) bool { return i == 0 && typ(m) == "user" })
			p("sub-skills", func(_ int, m map[string]any) bool { return att(m) == "skill_listing" })
			p("sub-tool-use", func(_ int, m map[string]any) bool { return typ(m) == "assistant" && firstBlock(m) == "tool_use" })
			p("sub-tool-result", func(_ int, m map[string]any) bool { return typ(m) == "user" && firstBlock(m) == "tool_result" })
			p("sub-answer", func(_ int, m map[string]any) bool { return typ(m) == "assistant" && firstBlock(m) == "text" })
			continue
		}
		p("enqueue", func(_ int, m map[string]any) bool {
			return typ(m) == "queue-operation" && str(m, "operation") == "enqueue"
		})
		p("dequeue", func(_ int, m map[string]any) bool {
			return typ(m) == "queue-operation" && str(m, "operation") == "dequeue"
		})
		p("hook-start", func(_ int, m map[string]any) bool { return att(m) == "hook_success" && hook(m) == "SessionStart" })
		p("hook-context", func(_ int, m map[string]any) bool { return att(m) == "hook_additional_context" })
		p("prompt", func(_ int, m map[string]any) bool {
			_, isString := obj(m, "message")["content"].(string)
			return typ(m) == "user" && isString && m["parentUuid"] != nil
		})
		p("skills", func(_ int, m map[string]any) bool { return att(m) == "skill_listing" })
		p("tool-use", func(_ int, m map[string]any) bool { return typ(m) == "assistant" && firstBlock(m) == "tool_use" })
		p("tool-result", func(_ int, m map[string]any) bool { return typ(m) == "user" && m["toolUseResult"] != nil })
		p("answer", func(_ int, m map[string]any) bool { return typ(m) == "assistant" && firstBlock(m) == "text" })
		p("hook-stop", func(_ int, m map[string]any) bool { return att(m) == "hook_success" && hook(m) == "Stop" })
		p("stop-summary", func(_ int, m map[string]any) bool { return str(m, "subtype") == "stop_hook_summary" })
		p("turn-duration", func(_ int, m map[string]any) bool { return str(m, "subtype") == "turn_duration" })
		p("last-prompt", func(_ int, m map[string]any) bool { return typ(m) == "last-prompt" })
		p("compact-boundary", func(_ int, m map[string]any) bool { return str(m, "subtype") == "compact_boundary" })
		p("compact-summary", func(i int, m map[string]any) bool { return i > 0 && str(ms[i-1], "subtype") == "compact_boundary" })
		p("agent-use", func(_ int, m map[string]any) bool { return typ(m) == "assistant" && hasToolUse(m, "Agent") })
		p("agent-result", func(_ int, m map[string]any) bool {
			return typ(m) == "user" && str(m, "toolUseResult", "agentId") != ""
		})
	}
	meta, err := os.ReadFile(filepath.Join(testdata, "claude-code/transcripts/with-subagent/subagents/agent-a02dee9184452a481.meta.json"))
	if err != nil {
		return nil, err
	}
	t.ccMeta = templateLine(meta)

	// Codex: a session that spawns a sub-agent, the sub-agent, an MCP call
	// with reasoning, and an automatic compaction.
	for _, f := range []string{"codex/rollouts/rollout-run19-parent.jsonl", "codex/rollouts/rollout-run19-subagent.jsonl",
		"codex/rollouts/rollout-run03-mcp-call.jsonl", "codex/rollouts/rollout-run07-autocompact.jsonl"} {
		ms, lines, err := read(f)
		if err != nil {
			return nil, err
		}
		p := func(role string, ok func(i int, m map[string]any) bool) { pick(t.codex, role, ms, lines, ok) }
		typ := func(m map[string]any) string { return str(m, "type") }
		pt := func(m map[string]any) string { return str(m, "payload", "type") }
		for _, m := range ms {
			if typ(m) == "session_meta" {
				if parent := str(m, "payload", "parent_thread_id"); parent != "" {
					t.codexParentID, t.codexSubID = parent, str(m, "payload", "id")
				}
				for _, id := range []string{str(m, "payload", "id"), str(m, "payload", "session_id")} {
					if !slices.Contains(t.codexThreadIDs, id) {
						t.codexThreadIDs = append(t.codexThreadIDs, id)
					}
				}
				if id := str(m, "payload", "context_window", "window_id"); id != "" {
					t.codexWindowIDs = append(t.codexWindowIDs, id)
				}
			}
			if id := str(m, "payload", "turn_id"); pt(m) == "task_started" && id != "" && !slices.Contains(t.codexTurnIDs, id) {
				t.codexTurnIDs = append(t.codexTurnIDs, id)
			}
		}
		switch {
		case strings.Contains(f, "subagent"):
			p("sub-meta", func(_ int, m map[string]any) bool { return typ(m) == "session_meta" })
		case strings.Contains(f, "run19-parent"):
			p("meta", func(_ int, m map[string]any) bool { return typ(m) == "session_meta" })
			p("task-started", func(_ int, m map[string]any) bool { return pt(m) == "task_started" })
			p("developer", func(_ int, m map[string]any) bool {
				return pt(m) == "message" && str(m, "payload", "role") == "developer"
			})
			p("environment", func(_ int, m map[string]any) bool {
				return pt(m) == "message" && codexKind(m) == "environments.environment_context"
			})
			p("world", func(_ int, m map[string]any) bool { return typ(m) == "world_state" })
			p("turn-context", func(_ int, m map[string]any) bool { return typ(m) == "turn_context" })
			p("settings", func(_ int, m map[string]any) bool { return pt(m) == "thread_settings_applied" })
			p("user", func(_ int, m map[string]any) bool { return pt(m) == "message" && codexKind(m) == "user.text" })
			p("user-item", func(_ int, m map[string]any) bool { return str(m, "payload", "item", "type") == "UserMessage" })
			p("spawn-call", func(_ int, m map[string]any) bool { return str(m, "payload", "name") == "spawn_agent" })
			p("spawn-item", func(_ int, m map[string]any) bool { return str(m, "payload", "item", "tool") == "spawn_agent" })
			p("spawn-output", func(_ int, m map[string]any) bool {
				return pt(m) == "function_call_output" && strings.Contains(str(m, "payload", "output"), "nickname")
			})
			p("world-partial", func(i int, m map[string]any) bool { return typ(m) == "world_state" && i > 5 })
			p("wait-call", func(_ int, m map[string]any) bool { return str(m, "payload", "name") == "wait_agent" })
			p("wait-item", func(_ int, m map[string]any) bool { return str(m, "payload", "item", "tool") == "wait" })
			p("wait-output", func(_ int, m map[string]any) bool {
				return pt(m) == "function_call_output" && strings.Contains(str(m, "payload", "output"), "status")
			})
			p("notification", func(_ int, m map[string]any) bool {
				return pt(m) == "message" && strings.HasPrefix(codexText(m), "<subagent_notification>")
			})
			p("usage", func(_ int, m map[string]any) bool { return typ(m) == "token_usage_record" })
			p("count", func(_ int, m map[string]any) bool { return pt(m) == "token_count" })
			p("answer-item", func(_ int, m map[string]any) bool { return str(m, "payload", "item", "type") == "AgentMessage" })
			p("answer", func(_ int, m map[string]any) bool {
				return pt(m) == "message" && str(m, "payload", "role") == "assistant"
			})
			p("complete", func(_ int, m map[string]any) bool { return pt(m) == "task_complete" })
		case strings.Contains(f, "run03"):
			p("reasoning", func(_ int, m map[string]any) bool { return pt(m) == "reasoning" })
			p("call", func(_ int, m map[string]any) bool { return pt(m) == "function_call" })
			p("call-item", func(_ int, m map[string]any) bool { return str(m, "payload", "item", "type") == "McpToolCall" })
			p("output", func(_ int, m map[string]any) bool { return pt(m) == "function_call_output" })
		case strings.Contains(f, "run07"):
			p("compacted", func(_ int, m map[string]any) bool { return typ(m) == "compacted" })
		}
	}
	for _, role := range []string{"enqueue", "dequeue", "hook-start", "hook-context", "prompt", "skills", "tool-use", "tool-result", "answer",
		"hook-stop", "stop-summary", "turn-duration", "last-prompt", "compact-boundary", "compact-summary", "agent-use", "agent-result",
		"sub-prompt", "sub-skills", "sub-tool-use", "sub-tool-result", "sub-answer"} {
		if t.cc[role] == nil {
			return nil, fmt.Errorf("the captured Claude Code transcripts have no line for %s", role)
		}
	}
	for _, role := range []string{"meta", "sub-meta", "task-started", "developer", "environment", "world", "turn-context", "settings", "user",
		"user-item", "spawn-call", "spawn-item", "spawn-output", "world-partial", "wait-call", "wait-item", "wait-output", "notification",
		"usage", "count", "answer-item", "answer", "complete", "reasoning", "call", "call-item", "output", "compacted"} {
		if t.codex[role] == nil {
			return nil, fmt.Errorf("the captured Codex rollouts have no line for %s", role)
		}
	}
	if len(t.ccSessionIDs) == 0 || t.ccAgentID == "" || t.codexSubID == "" {
		return nil, errors.New("the captured sessions name no session, sub-agent or Codex sub-agent thread")
	}
	t.codexThreadIDs = slices.DeleteFunc(t.codexThreadIDs, func(id string) bool { return id == "" || id == t.codexParentID || id == t.codexSubID })
	return t, nil
}

// hasToolUse reports whether a transcript line calls tool name.
func hasToolUse(m map[string]any, name string) bool {
	c, _ := obj(m, "message")["content"].([]any)
	for _, b := range c {
		if b, ok := b.(map[string]any); ok && b["type"] == "tool_use" && b["name"] == name {
			return true
		}
	}
	return false
}

// codexKind is the first content kind of a rollout's message.
func codexKind(m map[string]any) string {
	p := obj(m, "payload")
	kinds, _ := obj(p, "internal_chat_message_metadata_passthrough")["content_item_kinds"].([]any)
	if len(kinds) == 0 {
		return ""
	}
	s, _ := kinds[0].(string)
	return s
}

// codexText is the text of a rollout message's first part.
func codexText(m map[string]any) string {
	c, _ := obj(m, "payload")["content"].([]any)
	if len(c) == 0 {
		return ""
	}
	b, _ := c[0].(map[string]any)
	s, _ := b["text"].(string)
	return s
}
