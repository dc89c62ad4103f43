package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/sessiongen"
)

// The rollover rows time what a window rollover costs between the
// checkpoint write's answer and the new window's first model request, as
// the Pi extension drives it (clients/pi-extension/src: gate.ts,
// tools.ts, index.ts, rollover.ts, sync.ts). After the fenced
// notes_write_file answers terminate:
//
//	GET  /v1/state                        tools.ts: a terminating call refreshes the state
//	POST /v1/lifecycle/tool-result        gate.ts: the claimed call's result
//	POST /v1/history/sync                 message_end of the tool result (delta)
//	GET  /v1/state                        agent_settled: rollover_due
//	POST /v1/lifecycle/rollover/prepare   rollover.ts prepare(): the bootstrap
//	POST /v1/history/sync                 session_compact: the compaction entry (delta)
//	POST /v1/lifecycle/rollover/commit    the new window is live
//	POST /v1/history/sync                 message_end of the continuation (delta)
//
// after which Pi sends the new window's first model request (the syncs of
// agent_settled, of prepare and of the context event find nothing new and
// send nothing). Each cycle first brings the agent to that write, untimed:
// a model turn reporting usage past the fallback threshold, the fallback
// delivered, synced and armed, the checkpoint call's turn, its admit and
// the write itself.

// rolloverRowEntries is the history of the rollover row, at most
// -rollover-entries; rollover-190k's is -rollover-entries.
const rolloverRowEntries = 10_000

// rolloverCycles is the rollovers one repetition times; its figure is
// their median.
const rolloverCycles = 5

// rolloverTarget is the most memoryd's own time (its CPU) of one rollover
// at 190k entries may be.
const rolloverTarget = 0.050

// rolloverWindow is the context window the rollover agent reports.
const rolloverWindow = 200_000

// rollFixture is one memoryd serving one agent with a history of entries
// entries and some notes, and the state of its branch as the extension
// tracks it.
type rollFixture struct {
	p        *proc
	task     string
	entries  int // entries of the generated history
	requests int // user requests in it
	notes    int // note files written
	branch   int // the branch's length
	leaf     string
	revision int64 // the branch's revision, as the last sync returned it
	window   string
	cycles   int
	stamp    time.Time
	// lastBootstrap is the last bootstrap prepare answered.
	lastBootstrap string
}

var (
	fxRollover     = &fixture{name: "rollover server (small history)", setup: func(b *bench, ctx context.Context) error { return b.setupRollover(ctx, 0) }}
	fxRolloverHuge = &fixture{name: "rollover server (large history)", setup: func(b *bench, ctx context.Context) error { return b.setupRollover(ctx, 1) }}
)

// rolloverEntries is the history size of fixture i (0: rollover, 1: rollover-190k).
func (b *bench) rolloverEntries(i int) int {
	if i == 0 {
		return min(rolloverRowEntries, b.cfg.rolloverEntries)
	}
	return b.cfg.rolloverEntries
}

// rolloverSession generates a Pi session of n entries (about), in turns of
// a user request, 3 to 14 tool calls with their results (200 B to 3 KB of
// output each) and a closing answer: about one user request in 20 entries.
func rolloverSession(n int) (sessiongen.Session, int) {
	g := newTextGen(uint64(n))
	sb := sessiongen.NewBuilder(uint64(n) ^ 0x7011)
	requests := 0
	for sb.Len() < n {
		sb.UserText(g.prompt(g.pick(projects)))
		requests++
		for range 3 + g.r.IntN(12) {
			sort := g.pick(sorts)
			id := sb.CallID()
			sb.Assistant(sessiongen.Text(g.sentence()), sessiongen.ToolCall(id, "bash", map[string]any{"command": g.command(sort)}))
			sb.ToolResult(id, "bash", false, sessiongen.Text(g.output(sort, 200+g.r.IntN(2800))))
		}
		sb.Assistant(sessiongen.Text(g.prose(2)))
	}
	return sb.Session(), requests
}

// setupRollover starts fixture i's memoryd, syncs its history in bodies of
// at most maxSyncRequest bytes (the branch as a delta after the first) and
// writes its notes: 20, and one more per 5,000 entries, of 300 B to 6 KB.
func (b *bench) setupRollover(ctx context.Context, i int) error {
	n := b.rolloverEntries(i)
	t0 := time.Now()
	sess, requests := rolloverSession(n)
	if len(sess.Branch) != len(sess.Entries) {
		return fmt.Errorf("the rollover session is not linear")
	}
	name := [2]string{"rollover", "rollover-190k"}[i]
	b.logf("%s: %d entries, %d user requests, %s generated in %v", name, len(sess.Entries), requests, mb(int64(sess.Bytes())), time.Since(t0).Round(time.Millisecond))
	p, err := b.startMemoryd(ctx, "memoryd("+name+")", filepath.Join(b.scratch, name+".db"))
	if err != nil {
		return err
	}
	f := &rollFixture{p: p, entries: len(sess.Entries), requests: requests, window: "w1",
		stamp: time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC)}
	b.rollovers[i] = f
	if f.task, err = b.attach(ctx, p, name); err != nil {
		return err
	}
	t1 := time.Now()
	var body bytes.Buffer
	for lo := 0; lo < len(sess.Entries); {
		hi, size := lo, 0
		for hi < len(sess.Entries) && hi-lo < memory.MaxSyncEntries && (hi == lo || size+len(sess.Entries[hi])+12 < maxSyncRequest-4096) {
			size += len(sess.Entries[hi]) + 12
			hi++
		}
		body.Reset()
		fmt.Fprintf(&body, `{"context":{"task_id":%q,"agent":"/root"},"entries":[`, f.task)
		for k, e := range sess.Entries[lo:hi] {
			if k > 0 {
				body.WriteByte(',')
			}
			body.Write(e)
		}
		ids, err := json.Marshal(sess.Branch[lo:hi])
		if err != nil {
			return err
		}
		if lo == 0 {
			fmt.Fprintf(&body, `],"branch":%s}`, ids)
		} else {
			fmt.Fprintf(&body, `],"delta":{"base_revision":%d,"keep":%d,"append":%s}}`, f.revision, lo, ids)
		}
		var res syncAnswer
		if err := b.cl.postJSON(ctx, p.url+"/v1/history/sync", body.Bytes(), &res); err != nil {
			return fmt.Errorf("%s: sync of entries %d–%d: %w", name, lo, hi-1, err)
		}
		if res.Stored != hi-lo {
			return fmt.Errorf("%s: sync of entries %d–%d stored %d", name, lo, hi-1, res.Stored)
		}
		f.revision = res.Revision
		lo = hi
	}
	f.branch, f.leaf = len(sess.Branch), sess.Branch[len(sess.Branch)-1]
	total := sess.Bytes()
	sess = sessiongen.Session{}
	runtime.GC()
	ingest := time.Since(t1)
	g := newTextGen(uint64(n) + 1)
	f.notes = 20 + n/5000
	for k := range f.notes {
		path := fmt.Sprintf("%s/%s-%d.md", g.pick([]string{"plans", "findings", "logs", "decisions"}), g.pick(nouns), k)
		if k == 0 {
			path = "checkpoint.md"
		}
		args, err := json.Marshal(map[string]string{"path": path, "text": g.prose(3 + g.r.IntN(60))})
		if err != nil {
			return err
		}
		var res struct {
			Terminate bool `json:"terminate"`
		}
		if err := b.cl.postJSON(ctx, p.url+"/v1/tools/notes_write_file", b.toolBody(f.task, string(args)), &res); err != nil {
			return fmt.Errorf("%s: note %s: %w", name, path, err)
		}
	}
	b.info = append(b.info, fmt.Sprintf("Rollover history of %s entries (%s user requests, %s) synced in %s; %d note files.",
		num(float64(f.entries), 0), num(float64(f.requests), 0), mb(int64(total)), ingest.Round(100*time.Millisecond), f.notes))
	b.logf("%s: synced in %v, %d notes written", name, ingest.Round(100*time.Millisecond), f.notes)
	return nil
}

// rollAppend returns a new entry after the leaf, of type typ with the other
// fields rest (a JSON object's members, without braces), and makes it the
// leaf.
func (f *rollFixture) rollAppend(typ, rest string) (id string, entry []byte) {
	f.cycles++
	id = fmt.Sprintf("ro%03d%05d", f.branch%1000, f.cycles)
	f.stamp = f.stamp.Add(time.Second)
	entry = fmt.Appendf(nil, `{"type":%q,"id":%q,"parentId":%q,"timestamp":%q,%s}`, typ, id, f.leaf, f.stamp.Format("2006-01-02T15:04:05.000Z"), rest)
	f.leaf = id
	return id, entry
}

// sync sends entry with the branch as a delta, as the extension's
// HistorySync does, and checks it stored it.
func (b *bench) rollSync(ctx context.Context, f *rollFixture, id string, entry []byte) error {
	body := fmt.Appendf(nil, `{"context":{"task_id":%q,"agent":"/root"},"entries":[%s],"delta":{"base_revision":%d,"keep":%d,"append":[%q]}}`,
		f.task, entry, f.revision, f.branch, id)
	var res syncAnswer
	if err := b.cl.postJSON(ctx, f.p.url+"/v1/history/sync", body, &res); err != nil {
		return fmt.Errorf("sync of %s: %w", id, err)
	}
	if res.Stored != 1 || res.Revision != f.revision+1 {
		return fmt.Errorf("sync of %s: stored %d at revision %d, want 1 at %d", id, res.Stored, res.Revision, f.revision+1)
	}
	f.revision, f.branch = res.Revision, f.branch+1
	return nil
}

// rollState is what the bench reads of an agent state.
type rollState struct {
	Phase       string `json:"phase"`
	WindowID    string `json:"window_id"`
	FenceActive bool   `json:"fence_active"`
	RolloverDue string `json:"rollover_due"`
}

// rollAnswer is a lifecycle response.
type rollAnswer struct {
	Due              *string   `json:"due"`
	Allow            *bool     `json:"allow"`
	Terminate        *bool     `json:"terminate"`
	Reason           *string   `json:"reason"`
	WindowID         string    `json:"window_id"`
	PreviousWindowID string    `json:"previous_window_id"`
	Bootstrap        *string   `json:"bootstrap"`
	State            rollState `json:"state"`
}

// lifecycle posts body's members after the context to /v1/lifecycle/route.
func (b *bench) lifecycle(ctx context.Context, f *rollFixture, route, members string) (rollAnswer, error) {
	body := fmt.Sprintf(`{"context":{"task_id":%q,"agent":"/root"}`, f.task)
	if members != "" {
		body += "," + members
	}
	body += "}"
	var res rollAnswer
	if err := b.cl.postJSON(ctx, f.p.url+"/v1/lifecycle/"+route, []byte(body), &res); err != nil {
		return res, fmt.Errorf("%s: %w", route, err)
	}
	return res, nil
}

// state is GET /v1/state of the agent.
func (b *bench) rollStateOf(ctx context.Context, f *rollFixture) (rollState, error) {
	var st rollState
	err := b.cl.getJSON(ctx, f.p.url+"/v1/state?task_id="+f.task+"&agent=/root", &st)
	return st, err
}

// rollModelTurn syncs an assistant entry (content, the JSON of its content
// blocks) and reports usage as message_end does. It returns the usage's due.
func (b *bench) rollModelTurn(ctx context.Context, f *rollFixture, content string, used int) (string, error) {
	stop := "stop"
	if strings.Contains(content, `"toolCall"`) {
		stop = "toolUse"
	}
	id, e := f.rollAppend("message", fmt.Sprintf(`"message":{"role":"assistant","content":%s,"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":%d,"output":120,"cacheRead":0,"cacheWrite":0,"totalTokens":%d},"stopReason":%q,"timestamp":%d}`,
		content, used-120, used, stop, f.stamp.UnixMilli()))
	if err := b.rollSync(ctx, f, id, e); err != nil {
		return "", err
	}
	res, err := b.lifecycle(ctx, f, "usage", fmt.Sprintf(`"tokens_used":%d,"context_window":%d`, used, rolloverWindow))
	if err != nil || res.Due == nil {
		return "", err
	}
	return *res.Due, nil
}

// rollStep is one timed call of a rollover.
type rollStep struct {
	name string
	took time.Duration
}

// rolloverCycle brings the agent to its checkpoint write untimed, then
// times the calls from the write's answer to the new window's first model
// request. It returns the client's time, memoryd's CPU over those calls,
// each call's time and the bootstrap.
func (b *bench) rolloverCycle(ctx context.Context, f *rollFixture) (time.Duration, float64, []rollStep, string, error) {
	w := f.window
	fail := func(format string, args ...any) (time.Duration, float64, []rollStep, string, error) {
		return 0, 0, nil, "", fmt.Errorf("rollover of %s: "+format, append([]any{w}, args...)...)
	}
	// A model turn past the fallback threshold: the fallback is due.
	due, err := b.rollModelTurn(ctx, f, `[{"type":"text","text":"Reading the next module."}]`, rolloverWindow-15_000)
	if err != nil {
		return fail("%w", err)
	}
	if due != "fallback" {
		return fail("usage past the fallback threshold: due %q, want fallback", due)
	}
	// The fallback is delivered, enters the branch (synced) and arms the fence.
	req := fmt.Sprintf("fallback-%s-%05d", w, f.cycles)
	ctl := fmt.Sprintf(`"kind":"fallback","window_id":%q,"request_id":%q`, w, req)
	if _, err := b.lifecycle(ctx, f, "delivered", ctl); err != nil {
		return fail("%w", err)
	}
	text, _ := json.Marshal(fmt.Sprintf("<context_window_fallback window_id=%q/>\nThe context window %s is nearly exhausted. Checkpoint required.", w, w))
	id, e := f.rollAppend("custom_message", fmt.Sprintf(`"customType":"pi-token-budget:fallback","content":%s,"display":false,"details":{"windowId":%q,"source_context_window_id":%q,"requestId":%q,"kind":"fallback"}`,
		text, w, w, req))
	if err := b.rollSync(ctx, f, id, e); err != nil {
		return fail("%w", err)
	}
	arm, err := b.lifecycle(ctx, f, "arm", ctl)
	if err != nil {
		return fail("%w", err)
	}
	if !arm.State.FenceActive {
		return fail("armed fallback: the fence is off (phase %s)", arm.State.Phase)
	}
	// The checkpoint call's turn, its admit and the write.
	call := fmt.Sprintf("toolu_roll%05d", f.cycles)
	args := fmt.Sprintf(`{"path":"checkpoint.md","text":"goal: the rollover bench\nwindow: %s\nnext: go on in the next window, cycle %d"}`, w, f.cycles)
	if _, err := b.rollModelTurn(ctx, f, fmt.Sprintf(`[{"type":"toolCall","id":%q,"name":"notes_write_file","arguments":%s}]`, call, args), rolloverWindow-14_000); err != nil {
		return fail("%w", err)
	}
	adm, err := b.lifecycle(ctx, f, "admit", fmt.Sprintf(`"call_id":%q,"tool_name":"notes_write_file","arguments":%s`, call, args))
	if err != nil {
		return fail("%w", err)
	}
	if adm.Allow == nil || !*adm.Allow {
		return fail("the checkpoint write was not admitted: %v", adm.Reason)
	}
	var wr struct {
		Terminate bool `json:"terminate"`
	}
	body := fmt.Appendf(nil, `{"context":{"task_id":%q,"agent":"/root","call_id":%q},"arguments":%s}`, f.task, call, args)
	if err := b.cl.postJSON(ctx, f.p.url+"/v1/tools/notes_write_file", body, &wr); err != nil {
		return fail("the checkpoint write: %w", err)
	}
	if !wr.Terminate {
		return fail("the checkpoint write did not answer terminate")
	}

	// Timed: from the write's answer to the new window's first request.
	var steps []rollStep
	step := func(name string, fn func() error) error {
		t := time.Now()
		err := fn()
		steps = append(steps, rollStep{name, time.Since(t)})
		return err
	}
	var prep rollAnswer
	var next string
	run := func() error {
		if err := step("GET /v1/state (terminate)", func() error { _, err := b.rollStateOf(ctx, f); return err }); err != nil {
			return err
		}
		if err := step("tool-result", func() error {
			_, err := b.lifecycle(ctx, f, "tool-result", fmt.Sprintf(`"call_id":%q,"is_error":false`, call))
			return err
		}); err != nil {
			return err
		}
		id, e := f.rollAppend("message", fmt.Sprintf(`"message":{"role":"toolResult","toolCallId":%q,"toolName":"notes_write_file","content":[{"type":"text","text":"Wrote checkpoint.md."}],"isError":false,"timestamp":%d}`,
			call, f.stamp.UnixMilli()))
		if err := step("sync (tool result)", func() error { return b.rollSync(ctx, f, id, e) }); err != nil {
			return err
		}
		var st rollState
		if err := step("GET /v1/state (settled)", func() (err error) { st, err = b.rollStateOf(ctx, f); return err }); err != nil {
			return err
		}
		if st.RolloverDue != "fallback" {
			return fmt.Errorf("settled after the checkpoint: rollover_due %q, want fallback", st.RolloverDue)
		}
		if err := step("rollover/prepare", func() (err error) {
			prep, err = b.lifecycle(ctx, f, "rollover/prepare", `"reason":"fallback"`)
			return err
		}); err != nil {
			return err
		}
		if prep.Bootstrap == nil || prep.PreviousWindowID != w || prep.WindowID == "" {
			return fmt.Errorf("prepare: window %q previous %q bootstrap %v", prep.WindowID, prep.PreviousWindowID, prep.Bootstrap != nil)
		}
		next = prep.WindowID
		for _, want := range []string{"Current context window id: " + next + "\n", "Previous context window id: " + w + "\n",
			"Reset reason: fallback\n", "Recent user requests", `"path":"/root/notes/checkpoint.md"`} {
			if !strings.Contains(*prep.Bootstrap, want) {
				return fmt.Errorf("prepare: the bootstrap lacks %q:\n%s", want, *prep.Bootstrap)
			}
		}
		summary, _ := json.Marshal(*prep.Bootstrap)
		cid, ce := f.rollAppend("compaction", fmt.Sprintf(`"summary":%s,"firstKeptEntryId":"pi-token-budget:none","tokensBefore":%d,"details":{"memoryd":{"window_id":%q,"previous_window_id":%q,"reason":"fallback"}}`,
			summary, rolloverWindow-14_000, next, w))
		if err := step("sync (compaction)", func() error { return b.rollSync(ctx, f, cid, ce) }); err != nil {
			return err
		}
		if err := step("rollover/commit", func() error {
			res, err := b.lifecycle(ctx, f, "rollover/commit", fmt.Sprintf(`"window_id":%q,"compaction_entry_id":%q`, next, cid))
			if err == nil && res.State.WindowID != next {
				err = fmt.Errorf("commit: the state's window is %q, want %q", res.State.WindowID, next)
			}
			return err
		}); err != nil {
			return err
		}
		cont, _ := json.Marshal(fmt.Sprintf("<context_window_continue window_id=%q previous_window_id=%q/>\nThe context window rolled over to %s. Follow the recovery protocol.", next, w, next))
		kid, ke := f.rollAppend("custom_message", fmt.Sprintf(`"customType":"pi-token-budget:continue","content":%s,"display":false,"details":{"windowId":%q,"previousWindowId":%q}`, cont, next, w))
		return step("sync (continuation)", func() error { return b.rollSync(ctx, f, kid, ke) })
	}
	cpu0, err := threadsCPU(f.p.pid())
	if err != nil {
		return fail("%w", err)
	}
	t := time.Now()
	err = run()
	took := time.Since(t)
	if err != nil {
		return fail("%w", err)
	}
	cpu1, err := threadsCPU(f.p.pid())
	if err != nil {
		return fail("%w", err)
	}
	f.window, f.lastBootstrap = next, *prep.Bootstrap
	return took, cpu1 - cpu0, steps, *prep.Bootstrap, nil
}

func (b *bench) measureRollover(ctx context.Context, rep repetition) (sample, error) {
	return b.measureRolloverOf(ctx, rep, 0)
}

func (b *bench) measureRolloverHuge(ctx context.Context, rep repetition) (sample, error) {
	return b.measureRolloverOf(ctx, rep, 1)
}

// measureRolloverOf times rolloverCycles rollovers of fixture i. The
// figure is the median of memoryd's CPU per rollover; the client's time,
// the slowest and each call's median go in the notes.
func (b *bench) measureRolloverOf(ctx context.Context, rep repetition, i int) (sample, error) {
	f := b.rollovers[i]
	var took, cpu []float64
	perStep := map[string][]float64{}
	var order []string
	var boot string
	for range rolloverCycles {
		d, c, steps, bs, err := b.rolloverCycle(ctx, f)
		if err != nil {
			return sample{}, err
		}
		took, cpu, boot = append(took, d.Seconds()), append(cpu, c), bs
		for _, s := range steps {
			if _, ok := perStep[s.name]; !ok {
				order = append(order, s.name)
			}
			perStep[s.name] = append(perStep[s.name], s.took.Seconds())
		}
	}
	ct, cc := spreadOf(took), spreadOf(cpu)
	s := sample{fig: cc.med}
	s.add("client time, checkpoint answer to the first model request (s)", ct.med)
	s.add("slowest client time of the repetition's rollovers (s)", ct.hi)
	s.add("most memoryd CPU of the repetition's rollovers (s)", cc.hi)
	for _, name := range order {
		s.add(name+", client time (s)", spreadOf(perStep[name]).med)
	}
	s.add("bootstrap (bytes)", float64(len(boot)))
	b.logf("%s: memoryd CPU %s [%s–%s], client %s [%s–%s] per rollover, window now %s, %d-byte bootstrap",
		rep.row, ms(cc.med), ms(cc.lo), ms(cc.hi), ms(ct.med), ms(ct.lo), ms(ct.hi), f.window, len(boot))
	return s, nil
}

func (b *bench) rolloverNotes() string { return b.rolloverNotesOf(0) }

func (b *bench) rolloverHugeNotes() string { return b.rolloverNotesOf(1) }

func (b *bench) rolloverNotesOf(i int) string {
	f := b.rollovers[i]
	return fmt.Sprintf("A window rollover as the Pi extension drives it, on one agent with a history of %s entries (%s user requests, "+
		"about one entry in 20; tool outputs of 200 B to 3 KB) and %d note files. Each rollover first brings the agent, untimed, to its "+
		"fenced checkpoint write: an assistant turn synced with usage past the fallback threshold (`due: fallback`), the fallback "+
		"`delivered`, its custom message synced, `arm`, the checkpoint call's turn synced with its usage, `admit`, and the "+
		"`notes_write_file` that answers `terminate: true`. Timed from that answer to the new window's first model request: "+
		"`GET /v1/state` (the refresh after a terminating call), `tool-result`, the tool result's sync, `GET /v1/state` "+
		"(agent_settled: `rollover_due` must be `fallback`), `rollover/prepare` (the bootstrap, whose previous window must be the "+
		"old one), the compaction entry's sync (the bootstrap as its summary), `rollover/commit` (the state's window must be the new "+
		"one) and the continuation's sync; each sync carries one entry and the branch as a delta. The figure is memoryd's CPU over "+
		"those calls (user+system of all its threads, from /proc/<pid>/task/*/schedstat), the median of %d rollovers per "+
		"repetition, one after the other (the window grows by one each: %s after the last). Target: ≤ 50 ms of memoryd's own time "+
		"at 190k entries (issue 37). The client's time is the loopback round trips and the server's wall time.",
		num(float64(f.entries), 0), num(float64(f.requests), 0), f.notes, rolloverCycles, f.window)
}
