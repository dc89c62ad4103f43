package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// The Claude Code rows run on the notes server: mcp-read1 pairs a
// notes_read_file over MCP with the same call over the HTTP route, and
// hook-sync times `memoryd hook claude-code` syncing a transcript.
var fxClaudeCode = &fixture{name: "Claude Code session and transcript", needs: []*fixture{fxRead8}, setup: (*bench).setupClaudeCode}

// hookTranscriptEntries is the size of hook-sync's transcript.
const hookTranscriptEntries = 10_000

// mcpCallID is the host call id the fixture's hook binds, which every
// mcp-read1 call names, as Claude Code names each call's tool_use id.
const mcpCallID = "toolu_bench_mcp"

// setupClaudeCode binds a host call to a Claude Code session's task,
// writes the read8 note there, and writes hook-sync's transcript.
func (b *bench) setupClaudeCode(ctx context.Context) error {
	hook := `{"hook_event_name":"PreToolUse","session_id":"bench-mcp","tool_use_id":"` + mcpCallID + `"}`
	if _, err := b.cl.post(ctx, b.notes.url+"/v1/hooks/claude-code", []byte(hook), false); err != nil {
		return err
	}
	var text strings.Builder
	for i := 0; text.Len() < 4000; i++ {
		fmt.Fprintf(&text, "line %03d: the quick brown fox jumps over the lazy dog\n", i)
	}
	args, _ := json.Marshal(map[string]string{"path": "bench/read8.md", "text": text.String()})
	if _, err := b.cl.post(ctx, b.notes.url+"/v1/tools/notes_write_file", fmt.Appendf(nil, `{"host_call_id":%q,"arguments":%s}`, mcpCallID, args), false); err != nil {
		return err
	}
	mcp, err := b.mcpRead(ctx)
	if err != nil {
		return err
	}
	route, err := b.cl.post(ctx, b.notes.url+"/v1/tools/notes_read_file", b.routeReadBody(), true)
	if err != nil {
		return err
	}
	if !bytes.Contains(mcp, []byte("line 000: the quick brown fox")) || !bytes.Contains(route, []byte("line 000: the quick brown fox")) {
		return fmt.Errorf("the MCP or the route's read did not return the note: %.200s / %.200s", mcp, route)
	}
	b.hookHome = filepath.Join(b.scratch, "claude-home")
	b.transcriptDir = filepath.Join(b.hookHome, ".claude", "projects", "-bench")
	if err := os.MkdirAll(b.transcriptDir, 0o700); err != nil {
		return err
	}
	b.transcript = transcriptLines(hookTranscriptEntries, "t")
	for n := range 2 { // warm up: the binary in the page cache, the server's statements
		if _, err := b.hookSync(ctx, fmt.Sprintf("warm-%d", n), b.transcript); err != nil {
			return err
		}
	}
	return nil
}

// routeReadBody is a notes_read_file over the HTTP route, as memoryd mcp
// sends it: the host's call id in place of a context.
func (b *bench) routeReadBody() []byte {
	return []byte(`{"host_call_id":"` + mcpCallID + `","arguments":{"path":"bench/read8.md"}}`)
}

// mcpRead is one notes_read_file over MCP's streamable HTTP transport.
func (b *bench) mcpRead(ctx context.Context) ([]byte, error) {
	body := fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"notes_read_file",`+
		`"arguments":{"path":"bench/read8.md"},"_meta":{"claudecode/toolUseId":%q}}}`, b.calls.Add(1), mcpCallID)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, b.notes.url+"/v1/mcp", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := b.cl.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err == nil && (resp.StatusCode != http.StatusOK || bytes.Contains(out, []byte(`"isError":true`))) {
		err = fmt.Errorf("MCP tools/call: %d %.300s", resp.StatusCode, out)
	}
	return out, err
}

// measureMCPRead1 pairs one client reading the note over MCP with the
// same client reading it over the HTTP route.
func (b *bench) measureMCPRead1(ctx context.Context, rep repetition) (sample, error) {
	var f, c loopResult
	var cpuF, cpuC float64
	run := func(op func(ctx context.Context) error, out *loopResult, cpu *float64) func() error {
		return func() (err error) {
			*cpu, err = cpuOf(b.notes.pid(), func() (err error) {
				*out, err = loop(ctx, 1, b.cfg.dur, func(ctx context.Context, _ int) error { return op(ctx) })
				return err
			})
			return err
		}
	}
	mcp := func(ctx context.Context) error { _, err := b.mcpRead(ctx); return err }
	route := func(ctx context.Context) error {
		_, err := b.cl.post(ctx, b.notes.url+"/v1/tools/notes_read_file", b.routeReadBody(), false)
		return err
	}
	if err := rep.pair(run(mcp, &f, &cpuF), run(route, &c, &cpuC)); err != nil {
		return sample{}, err
	}
	fp50, cp50 := percentile(f.lat, 50).Seconds(), percentile(c.lat, 50).Seconds()
	s := sample{fig: fp50, ceil: cp50, ratio: fp50 / cp50}
	s.add("MCP p99 (s)", percentile(f.lat, 99).Seconds())
	s.add("route p99 (s)", percentile(c.lat, 99).Seconds())
	s.add("MCP CPU per call (s)", cpuF/float64(f.calls))
	s.add("route CPU per call (s)", cpuC/float64(c.calls))
	b.logf("mcp-read1: MCP p50 %s, route p50 %s", ms(fp50), ms(cp50))
	return s, nil
}

func (b *bench) mcpRead1Notes() string {
	return fmt.Sprintf("One client reading a ~4 KB note (`notes_read_file`) of a Claude Code session's task for %s: figure = p50 of an MCP `tools/call` "+
		"POSTed to `/v1/mcp` (streamable HTTP, stateless, JSON answer; `_meta[\"claudecode/toolUseId\"]` names a call its PreToolUse hook bound, "+
		"as Claude Code sends it). Ceiling: the same client for %s POSTing the same call to `/v1/tools/notes_read_file` with `host_call_id`, as "+
		"`memoryd mcp` on stdio forwards it. Same server, same agent, same answer; ratio = MCP / route: what the MCP transport adds to a call.",
		b.cfg.dur, b.cfg.dur)
}

// transcriptLines is a Claude Code transcript of n entries: turns of a
// user prompt, an assistant tool call and its result, chained by uuid.
// prefix makes its uuids its own.
func transcriptLines(n int, prefix string) [][]byte {
	lines := make([][]byte, 0, n)
	parent := "null"
	for i := 0; len(lines) < n; i++ {
		id := func(k int) string { return fmt.Sprintf("%s-%06d-%d", prefix, i, k) }
		call := fmt.Sprintf("toolu_%s_%06d", prefix, i)
		for k, l := range []string{
			fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":%s,"timestamp":"2026-12-07T00:00:00.000Z","message":{"role":"user","content":"step %d: look at the file src/module_%d.go and tell me what it does"}}`, id(0), parent, i, i),
			fmt.Sprintf(`{"type":"assistant","uuid":%q,"parentUuid":%q,"timestamp":"2026-12-07T00:00:01.000Z","message":{"role":"assistant","model":"claude-opus-4-8","content":[{"type":"tool_use","id":%q,"name":"Read","input":{"file_path":"src/module_%d.go"}}],"stop_reason":"tool_use","usage":{"input_tokens":%d,"output_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":0}}}`, id(1), id(0), call, i, 1000+i),
			fmt.Sprintf(`{"type":"user","uuid":%q,"parentUuid":%q,"timestamp":"2026-12-07T00:00:02.000Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":%q,"content":"package module\n\n// Step %d parses the input and returns the sum of its fields.\nfunc Step%d(in []int) int { s := 0; for _, v := range in { s += v }; return s }\n"}]}}`, id(2), id(1), call, i, i),
		} {
			if len(lines) < n {
				lines = append(lines, []byte(l+"\n"))
				parent = fmt.Sprintf("%q", id(k))
			}
		}
	}
	return lines
}

// hookSync writes lines as session's transcript and runs memoryd's Stop
// hook on it, returning how long the hook ran.
func (b *bench) hookSync(ctx context.Context, session string, lines [][]byte) (time.Duration, error) {
	path := filepath.Join(b.transcriptDir, session+".jsonl")
	if err := os.WriteFile(path, slices.Concat(lines...), 0o600); err != nil {
		return 0, err
	}
	in, _ := json.Marshal(map[string]string{"hook_event_name": "Stop", "session_id": session, "transcript_path": path})
	cmd := exec.CommandContext(ctx, b.bin, "hook", "claude-code", "--addr", strings.TrimPrefix(b.notes.url, "http://"),
		"--db", filepath.Join(b.scratch, "hook-cursors", "m.db"))
	cmd.Env = append(os.Environ(), b.memorydEnv("HOME="+b.hookHome, "MEMORYD_TOKEN="+b.token)...)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	err := cmd.Run()
	took := time.Since(start)
	if err != nil {
		return 0, fmt.Errorf("memoryd hook claude-code: %w: %s", err, stderr.String())
	}
	return took, nil
}

// hookSyncRuns is how many incremental hook runs a repetition times.
const hookSyncRuns = 20

// measureHookSync times the hook syncing a new 10,000-entry transcript
// whole, then hookSyncRuns turns appended to it, one hook run each.
func (b *bench) measureHookSync(ctx context.Context, rep repetition) (sample, error) {
	session := fmt.Sprintf("bench-%d", rep.n)
	lines := transcriptLines(hookTranscriptEntries, session)
	whole, err := b.hookSync(ctx, session, lines)
	if err != nil {
		return sample{}, err
	}
	more := transcriptLines(hookTranscriptEntries+3*hookSyncRuns, session)
	var runs []time.Duration
	for i := range hookSyncRuns {
		took, err := b.hookSync(ctx, session, more[:hookTranscriptEntries+3*(i+1)])
		if err != nil {
			return sample{}, err
		}
		runs = append(runs, took)
	}
	slices.Sort(runs)
	p50 := runs[len(runs)/2].Seconds()
	s := sample{fig: p50}
	s.add("whole 10,000-entry transcript, one hook run (s)", whole.Seconds())
	s.add("incremental, slowest of the runs (s)", runs[len(runs)-1].Seconds())
	s.add("transcript bytes", float64(len(slices.Concat(lines...))))
	b.logf("hook-sync: incremental p50 %s, whole %s", ms(p50), ms(whole.Seconds()))
	return s, nil
}

func (b *bench) hookSyncNotes() string {
	return fmt.Sprintf("`memoryd hook claude-code` run as Claude Code runs it (a new process, the Stop hook's JSON on stdin, the token in MEMORYD_TOKEN) "+
		"against the notes server, on a generated transcript of %s entries (turns of a prompt, a `Read` tool call and its result, about 300 bytes a "+
		"line), in a fresh session: first the whole transcript in one hook run (reported), then %d times one turn (3 lines) appended and the hook "+
		"run again, which reads only the new lines past its cursor and sends a delta. Figure = p50 of the incremental runs, from exec to exit: the "+
		"probe and proof of the server, the attach, the sync, the usage report and the hook's own call.",
		num(hookTranscriptEntries, 0), hookSyncRuns)
}
