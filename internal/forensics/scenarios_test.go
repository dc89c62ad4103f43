package forensics_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memoryd/memoryd/internal/eventlog"
	"github.com/memoryd/memoryd/internal/events"
	"github.com/memoryd/memoryd/internal/forensics"
	"github.com/memoryd/memoryd/internal/memory"
	"github.com/memoryd/memoryd/internal/memorytest"
	"github.com/memoryd/memoryd/internal/tools"
)

var (
	update        = flag.Bool("update", false, "run the scenarios and rewrite testdata/logs")
	updateDigests = flag.Bool("update-digests", false, "keep the logs, rewrite their .digest files (after a projection's shape changed)")
)

const logsDir = "testdata/logs"

// scenario is a scripted session run through memory.Service with the read
// audit on; its exported log is testdata/logs/<name>.jsonl.
type scenario struct {
	name string
	what string // the line of testdata/logs/README.md
	run  func(h *harness)
}

var scenarios = []scenario{
	{"fenced-checkpoint-retry", "a fallback delivered and armed; the admitted checkpoint write fails twice (a path outside the notes, then over a 600-byte cap), each failure's tool-result is_error releases the claim, other calls are blocked, the corrected write succeeds with terminate:true (and its retry answers the same), then prepare/commit roll over to w2 and the agent recovers from notes and history.", scenarioFencedCheckpointRetry},
	{"manual-compact-reuse", "a manual /compact: request, arm manual_checkpoint, the checkpoint write (MANUAL_SAVED), compacting, prepare manual_compact, a compaction failure that is not aborted (the checkpoint becomes reusable and tools reopen), a second /compact that reuses it without a new write, prepare and commit to w2.", scenarioManualCompactReuse},
	{"branch-switch-compaction", "history sync of branch A with a native compaction (w1, w2), then the user navigates back to the shared prefix and continues on branch B across a compaction of its own, back to A and to B again; searches, lists and reads before and after each switch (A-only items become not_found).", scenarioBranchSwitchCompaction},
	{"cross-agent-notes", "one task with /root and two children (/root/reviewer, /root/tester) writing, appending, overwriting, listing, searching and reading each other's notes and history by full path and relative name; another task's reads are forbidden, unknown agents not_found.", scenarioCrossAgentNotes},
	{"idempotent-retries", "note writes and appends retried with the same call_id (one event each; a retry with other arguments is conflict), new_context called 3 times (one request), the new_context rollover, and retries of old call ids after it.", scenarioIdempotentRetries},
	{"long-session-images", "a long session (~300 entries, synced in batches of about 30, three native compactions) with screenshots and image tool results; list, search and paged read_item calls, read_item attaching 1–2 images.", scenarioLongSessionImages},
}

// ---- the harness ----

type harness struct {
	t     *testing.T
	ctx   context.Context
	store *eventlog.Store
	svc   *memory.Service
	reads int // read-only tool calls made
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	ctx := context.Background()
	clock := memorytest.NewClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	svc := memorytest.Open(t, memory.OpenOptions{Now: clock.Now, AuditCalls: true})
	return &harness{t: t, ctx: ctx, store: svc.Store(), svc: svc}
}

func (h *harness) attach(key string, task *memory.TaskRef, budget *memory.BudgetInput) memory.CallContext {
	h.t.Helper()
	res, err := h.svc.Attach(h.ctx, memory.AttachRequest{SessionKey: key, SessionID: "sess-" + filepath.Base(key),
		SessionFile: key, Task: task, Budget: budget}, "")
	if err != nil {
		h.t.Fatalf("attach %s: %v", key, err)
	}
	return memory.CallContext{TaskID: res.TaskID, Agent: res.Agent}
}

// sync sends the session's new entries and its current branch.
func (h *harness) sync(cc memory.CallContext, s *piSession) memory.SyncResult {
	h.t.Helper()
	branch := s.branch()
	res, err := h.svc.Sync(h.ctx, memory.SyncRequest{Context: cc, Entries: s.unsynced(), Branch: &branch}, "")
	if err != nil {
		h.t.Fatalf("sync: %v", err)
	}
	return res
}

// tool runs one tool as cc with callID and arguments args.
func (h *harness) tool(cc memory.CallContext, callID, tool, args string) (memory.ToolResult, error) {
	cc.CallID = callID
	if !tools.Writes(tool) {
		h.reads++
	}
	return h.svc.CallTool(h.ctx, tool, cc, json.RawMessage(args), callID)
}

// ok runs a tool that must succeed.
func (h *harness) ok(cc memory.CallContext, callID, tool, args string) memory.ToolResult {
	h.t.Helper()
	res, err := h.tool(cc, callID, tool, args)
	if err != nil {
		h.t.Fatalf("%s %s %s: %v", cc.Agent, tool, args, err)
	}
	return res
}

// fails runs a tool that must fail with the error kind want.
func (h *harness) fails(cc memory.CallContext, callID, tool, args, want string) {
	h.t.Helper()
	_, err := h.tool(cc, callID, tool, args)
	if err == nil || memory.ErrorKind(err) != want {
		h.t.Fatalf("%s %s %s: %v, want %s", cc.Agent, tool, args, err, want)
	}
}

// model runs a tool as the model calls it: the assistant entry calling it
// is synced first (the in-flight call history excludes), then the tool
// runs with that call id, and its result joins the session.
func (h *harness) model(cc memory.CallContext, s *piSession, tool, args string) (memory.ToolResult, error) {
	h.t.Helper()
	id := s.callID()
	s.assistant(toolCallBlock(id, tool, json.RawMessage(args)))
	h.sync(cc, s)
	res, err := h.tool(cc, id, tool, args)
	text := ""
	if err != nil {
		text = err.Error()
	} else if len(res.Content) > 0 {
		text = res.Content[0].Text
	}
	s.toolResult(id, tool, err != nil, textBlock(text))
	return res, err
}

// modelOK is model for a call that must succeed.
func (h *harness) modelOK(cc memory.CallContext, s *piSession, tool, args string) memory.ToolResult {
	h.t.Helper()
	res, err := h.model(cc, s, tool, args)
	if err != nil {
		h.t.Fatalf("%s %s %s: %v", cc.Agent, tool, args, err)
	}
	return res
}

func (h *harness) must(what string, err error) {
	h.t.Helper()
	if err != nil {
		h.t.Fatalf("%s: %v", what, err)
	}
}

func (h *harness) phase(cc memory.CallContext, want string) {
	h.t.Helper()
	st, err := h.svc.State(h.ctx, cc)
	h.must("state", err)
	if st.Phase != want {
		h.t.Fatalf("phase %s, want %s (state %+v)", st.Phase, want, st)
	}
}

// details returns a result's details as decoded JSON.
func details(t testing.TB, res memory.ToolResult) map[string]any {
	t.Helper()
	var m map[string]any
	b, err := json.Marshal(res.Details)
	if err == nil {
		err = json.Unmarshal(b, &m)
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (h *harness) wantText(res memory.ToolResult, field, want string) {
	h.t.Helper()
	if got, _ := details(h.t, res)[field].(string); got != want {
		h.t.Fatalf("%s = %q, want %q", field, got, want)
	}
}

func q(v any) string { return string(piJSON(v)) }

// readRound is the recovery reads an agent makes: notes and history.
func (h *harness) readRound(cc memory.CallContext, s *piSession, query string) {
	h.t.Helper()
	h.modelOK(cc, s, "notes_list_files_by_prefix", `{}`)
	h.modelOK(cc, s, "notes_search_contents", q(map[string]any{"query": query}))
	h.modelOK(cc, s, "history_list_windows", `{}`)
	h.modelOK(cc, s, "history_list_items", `{"role":"user"}`)
	h.modelOK(cc, s, "history_search_contents", q(map[string]any{"query": query}))
	h.modelOK(cc, s, "get_context_remaining", `{}`)
}

// ---- the scenarios ----

func sessionKey(name string) string {
	return "/home/dev/.pi/agent/sessions/--home-dev-project--/2026-12-02T09-00-00-000Z_" + name + ".jsonl"
}

func scenarioFencedCheckpointRetry(h *harness) {
	cc := h.attach(sessionKey("fenced"), nil, &memory.BudgetInput{ContextWindow: ptr[int64](100000), NotesMaxFileBytes: ptr[int64](600)})
	s := newPiSession("a1f0")
	s.user("Port the rate limiter to the token-bucket design and keep the old tests passing.")
	s.assistant(thinkingBlock("Look at limiter.go first."), textBlock("Reading the current limiter."))
	s.call("read", map[string]any{"path": "internal/limiter/limiter.go"}, "package limiter\n\n// Fixed window limiter.\ntype Limiter struct{ window time.Duration; max int }")
	s.call("bash", map[string]any{"command": "go test ./internal/limiter/"}, "ok  \tinternal/limiter\t0.012s")
	h.sync(cc, s)
	h.modelOK(cc, s, "notes_write_file", q(map[string]any{"path": "plan.md", "text": "# Plan\n- token bucket: rate, burst\n- keep Limiter API\n"}))
	h.readRound(cc, s, "token")
	h.modelOK(cc, s, "notes_read_file", `{"path":"plan.md"}`)
	s.assistant(textBlock("Implemented the token bucket in bucket.go; refill is lazy on Allow()."))
	s.call("bash", map[string]any{"command": "go test -race ./internal/limiter/"}, "ok  \tinternal/limiter\t1.204s")
	h.sync(cc, s)

	// Usage climbs: the reminder, then the fallback.
	for _, used := range []int64{40000, 76000} {
		_, err := h.svc.ReportUsage(h.ctx, cc, ptr(used), nil, "")
		h.must("usage", err)
	}
	_, err := h.svc.Delivered(h.ctx, cc, "reminder", "w1", "rem-1", "")
	h.must("deliver reminder", err)
	s.control("reminder", "w1", "About 25% of the context window is left: keep taking incremental notes.")
	h.sync(cc, s)
	h.modelOK(cc, s, "notes_append_to_file", `{"path":"plan.md","text":"- done: bucket.go, lazy refill\n"}`)
	h.modelOK(cc, s, "history_search_contents", `{"query":"bucket"}`)
	u, err := h.svc.ReportUsage(h.ctx, cc, ptr[int64](90000), nil, "")
	h.must("usage", err)
	if u.Due == nil || *u.Due != "fallback" {
		h.t.Fatalf("usage 90000 of 100000: due %v, want fallback", u.Due)
	}
	_, err = h.svc.Delivered(h.ctx, cc, "fallback", "w1", "fb-1", "")
	h.must("deliver fallback", err)
	h.phase(cc, "FALLBACK_QUEUED")
	s.control("fallback", "w1", "The context window is nearly full: write your checkpoint to notes now.")
	h.sync(cc, s)
	_, err = h.svc.Arm(h.ctx, cc, "fallback", "w1", "fb-1", "")
	h.must("arm", err)
	h.phase(cc, "FENCED")

	// Fenced: reads are refused.
	for _, c := range [][2]string{{"notes_read_file", `{"path":"plan.md"}`}, {"history_search_contents", `{"query":"bucket"}`}, {"get_context_remaining", `{}`}} {
		if _, err := h.model(cc, s, c[0], c[1]); memory.ErrorKind(err) != "fenced" {
			h.t.Fatalf("%s while fenced: %v", c[0], err)
		}
	}
	adm, err := h.svc.Admit(h.ctx, cc, "toolu_bash_fenced", "bash", json.RawMessage(`{"command":"ls"}`), "")
	h.must("admit bash", err)
	if *adm.Allow || !*adm.Terminate {
		h.t.Fatalf("bash admitted while fenced: %+v", adm)
	}

	// The admitted write fails twice; each failure releases the claim.
	attempt := func(callID, args, wantErr string) {
		h.t.Helper()
		adm, err := h.svc.Admit(h.ctx, cc, callID, "notes_write_file", json.RawMessage(args), "")
		h.must("admit", err)
		if !*adm.Allow {
			h.t.Fatalf("checkpoint write %s not admitted: %+v", callID, adm)
		}
		h.phase(cc, "FENCED_CLAIMED")
		s.assistant(toolCallBlock(callID, "notes_write_file", json.RawMessage(args)))
		h.sync(cc, s)
		res, err := h.tool(cc, callID, "notes_write_file", args)
		if wantErr == "" {
			if err != nil || !res.Terminate {
				h.t.Fatalf("checkpoint write: %v, terminate %v", err, res.Terminate)
			}
			s.toolResult(callID, "notes_write_file", false, textBlock(res.Content[0].Text))
			_, err = h.svc.ToolResult(h.ctx, cc, callID, false, "")
			h.must("tool-result", err)
			return
		}
		if memory.ErrorKind(err) != wantErr {
			h.t.Fatalf("checkpoint write %s: %v, want %s", callID, err, wantErr)
		}
		s.toolResult(callID, "notes_write_file", true, textBlock(err.Error()))
		// Blocked while the claim is held by the failed call.
		if _, err := h.tool(cc, "toolu_read_claimed", "notes_list_files_by_prefix", `{}`); memory.ErrorKind(err) != "fenced" {
			h.t.Fatalf("list while claimed: %v", err)
		}
		_, err = h.svc.ToolResult(h.ctx, cc, callID, true, "")
		h.must("tool-result", err)
		h.phase(cc, "FENCED")
	}
	checkpoint := "# Checkpoint\nGoal: token-bucket rate limiter, old tests green.\nDone: bucket.go (lazy refill), race tests pass.\nNext: wire Limiter to bucket, update docs.\n"
	attempt("toolu_ckpt_1", q(map[string]any{"path": "../escape.md", "text": checkpoint}), "invalid_argument")
	attempt("toolu_ckpt_2", q(map[string]any{"path": "checkpoint.md", "text": checkpoint + strings.Repeat("detail line of the limiter design\n", 20)}), "too_large")
	attempt("toolu_ckpt_3", q(map[string]any{"path": "checkpoint.md", "text": checkpoint}), "")
	h.phase(cc, "CHECKPOINT_SAVED")
	// The checkpoint's retry answers as the original did; everything else waits.
	if res := h.ok(cc, "toolu_ckpt_3", "notes_write_file", q(map[string]any{"path": "checkpoint.md", "text": checkpoint})); !res.Terminate {
		h.t.Fatal("retry of the checkpoint write lost terminate")
	}
	h.fails(cc, "toolu_after_save", "notes_read_file", `{"path":"checkpoint.md"}`, "fenced")
	h.fails(cc, "toolu_after_save2", "notes_write_file", `{"path":"more.md","text":"x"}`, "fenced")
	h.fails(cc, "toolu_after_save3", "new_context", `{}`, "fenced")

	prep, err := h.svc.PrepareRollover(h.ctx, cc, "fallback", "")
	h.must("prepare", err)
	if prep.WindowID != "w2" || !strings.Contains(*prep.Bootstrap, "/root/notes/checkpoint.md") {
		h.t.Fatalf("prepare: %s %q", prep.WindowID, *prep.Bootstrap)
	}
	h.phase(cc, "ROLLING_OVER")
	comp := s.compaction(*prep.Bootstrap, "ffffffff", 90000)
	h.sync(cc, s)
	_, err = h.svc.CommitRollover(h.ctx, cc, "w2", comp, "")
	h.must("commit", err)
	h.phase(cc, "READY")

	// Recovery in w2.
	s.control("continue", "w2", "Continue from your checkpoint.")
	h.sync(cc, s)
	res := h.modelOK(cc, s, "notes_read_file", `{"path":"checkpoint.md"}`)
	h.wantText(res, "text", checkpoint)
	h.readRound(cc, s, "bucket")
	h.modelOK(cc, s, "history_list_items", `{"window_id":"w1","role":"user"}`)
	h.modelOK(cc, s, "history_list_items", `{"window_id":"w1","tool_namespace":"notes"}`)
	h.modelOK(cc, s, "history_read_item", q(map[string]any{"window_id": "w1", "item_id": "a1f00001"}))
	h.modelOK(cc, s, "history_read_item", q(map[string]any{"window_id": "w2", "item_id": comp, "offset_chars": 0, "limit_chars": 200}))
	h.modelOK(cc, s, "history_search_contents", `{"query":"lazy refill","window_id":"w1"}`)
	if _, err := h.model(cc, s, "history_read_item", q(map[string]any{"window_id": "w2", "item_id": "a1f00001"})); memory.ErrorKind(err) != "not_found" {
		h.t.Fatalf("read_item in the wrong window: %v", err)
	}
	h.modelOK(cc, s, "get_context_remaining", `{}`)
}

func scenarioManualCompactReuse(h *harness) {
	cc := h.attach(sessionKey("manual"), nil, &memory.BudgetInput{ContextWindow: ptr[int64](200000)})
	s := newPiSession("b2c0")
	s.user("Add structured logging to the ingest worker.")
	s.call("read", map[string]any{"path": "cmd/ingest/worker.go"}, "func (w *Worker) run() { log.Printf(\"batch %d\", n) }")
	s.assistant(textBlock("Switching log.Printf to slog with batch and shard attributes."))
	s.call("bash", map[string]any{"command": "go build ./..."}, "")
	h.sync(cc, s)
	h.modelOK(cc, s, "notes_write_file", `{"path":"notes.md","text":"slog: batch, shard attrs\n"}`)
	h.readRound(cc, s, "slog")

	request := func(id, wantPhase string) {
		h.t.Helper()
		_, err := h.svc.Manual(h.ctx, cc, "request", id, "")
		h.must("manual request", err)
		h.phase(cc, wantPhase)
	}
	request("man-1", "MANUAL_AWAITING")
	h.modelOK(cc, s, "history_list_windows", `{}`) // not fenced yet
	_, err := h.svc.Delivered(h.ctx, cc, "manual_checkpoint", "w1", "man-1", "")
	h.must("deliver manual", err)
	s.control("manual-checkpoint", "w1", "Manual compaction requested: write your checkpoint to notes now.")
	h.sync(cc, s)
	_, err = h.svc.Arm(h.ctx, cc, "manual_checkpoint", "w1", "man-1", "")
	h.must("arm manual", err)
	h.fails(cc, "toolu_m_read", "notes_read_file", `{"path":"notes.md"}`, "fenced")
	h.fails(cc, "toolu_m_other", "notes_write_file", `{"path":"/root/x/notes/a.md","text":"x"}`, "fenced")

	checkpoint := "# Checkpoint\nIngest worker: slog with batch and shard attributes; build green.\nNext: log sampling.\n"
	adm, err := h.svc.Admit(h.ctx, cc, "toolu_m_ckpt", "notes_write_file", json.RawMessage(q(map[string]any{"path": "checkpoint.md", "text": checkpoint})), "")
	h.must("admit", err)
	if !*adm.Allow {
		h.t.Fatalf("manual checkpoint not admitted: %+v", adm)
	}
	if res := h.ok(cc, "toolu_m_ckpt", "notes_write_file", q(map[string]any{"path": "checkpoint.md", "text": checkpoint})); !res.Terminate {
		h.t.Fatal("manual checkpoint write did not terminate")
	}
	h.phase(cc, "MANUAL_SAVED")
	_, err = h.svc.Manual(h.ctx, cc, "saved", "man-1", "")
	h.must("manual saved", err)
	h.fails(cc, "toolu_m_read2", "history_list_windows", `{}`, "fenced")
	_, err = h.svc.Manual(h.ctx, cc, "compacting", "man-1", "")
	h.must("manual compacting", err)
	h.phase(cc, "MANUAL_COMPACTING")
	prep, err := h.svc.PrepareRollover(h.ctx, cc, "manual_compact", "")
	h.must("prepare", err)
	if prep.WindowID != "w2" {
		h.t.Fatalf("prepare: %s", prep.WindowID)
	}
	// The compaction fails, not aborted: the checkpoint is kept for reuse.
	_, err = h.svc.FailRollover(h.ctx, cc, false, "summarization model returned 529 overloaded", "")
	h.must("fail", err)
	h.phase(cc, "READY")
	res := h.modelOK(cc, s, "notes_read_file", `{"path":"checkpoint.md"}`)
	h.wantText(res, "text", checkpoint)
	h.readRound(cc, s, "slog")
	s.assistant(textBlock("The compaction failed; the checkpoint is saved and will be reused."))
	h.sync(cc, s)

	// The second /compact reuses the saved checkpoint.
	request("man-2", "MANUAL_SAVED")
	h.fails(cc, "toolu_m_read3", "notes_list_files_by_prefix", `{}`, "fenced")
	_, err = h.svc.Manual(h.ctx, cc, "compacting", "man-2", "")
	h.must("manual compacting", err)
	prep, err = h.svc.PrepareRollover(h.ctx, cc, "manual_compact", "")
	h.must("prepare", err)
	if prep.WindowID != "w2" || !strings.Contains(*prep.Bootstrap, "checkpoint.md") {
		h.t.Fatalf("prepare again: %s", prep.WindowID)
	}
	comp := s.compaction(*prep.Bootstrap, "ffffffff", 120000)
	h.sync(cc, s)
	_, err = h.svc.CommitRollover(h.ctx, cc, "w2", comp, "")
	h.must("commit", err)
	h.phase(cc, "READY")
	s.user("Now add log sampling for the hot path.")
	h.sync(cc, s)
	res = h.modelOK(cc, s, "notes_read_file", `{"path":"checkpoint.md"}`)
	h.wantText(res, "text", checkpoint)
	h.readRound(cc, s, "sampling")
	h.modelOK(cc, s, "history_list_items", `{"window_id":"w1"}`)
	h.modelOK(cc, s, "history_read_item", `{"window_id":"w1","item_id":"b2c00001"}`)
	h.modelOK(cc, s, "history_list_items", `{"window_id":"w2","tool_name":"notes_*"}`)
}

func scenarioBranchSwitchCompaction(h *harness) {
	cc := h.attach(sessionKey("branches"), nil, nil)
	s := newPiSession("c3b0")
	s.user("Speed up the JSON encoder.")
	fork := s.assistant(textBlock("Two options: a pooled buffer (approach A) or a code-generated encoder (approach B)."))
	s.user("Try approach A first: the pooled buffer.")
	s.call("bash", map[string]any{"command": "go test -bench Encode ./encoder"}, "BenchmarkEncode-2  1204 ns/op  baseline")
	s.assistant(textBlock("Approach A: a sync.Pool of bytes.Buffer makes encoding 8% faster."))
	s.compaction("The user asked to speed up the JSON encoder; approach A (sync.Pool) gave 8%.", s.leaf, 80000)
	s.user("Is approach A enough for the 2x goal?")
	aLeaf := s.assistant(textBlock("No: approach A tops out near 10%; approach B is needed for 2x."))
	h.sync(cc, s)
	h.modelOK(cc, s, "notes_write_file", `{"path":"encoder.md","text":"approach A: sync.Pool, +8%\n"}`)
	before := func() {
		h.modelOK(cc, s, "history_list_windows", `{}`)
		h.modelOK(cc, s, "history_list_items", `{}`)
		h.modelOK(cc, s, "history_list_items", `{"window_id":"w2"}`)
		h.modelOK(cc, s, "history_search_contents", `{"query":"approach"}`)
		h.modelOK(cc, s, "history_search_contents", `{"query":"sync.Pool"}`)
		h.modelOK(cc, s, "history_search_contents", `{"query":"approach","window_id":"w1"}`)
	}
	before()
	h.modelOK(cc, s, "history_read_item", q(map[string]any{"window_id": "w2", "item_id": aLeaf}))

	// The user navigates back to the shared prefix and tries approach B.
	s.checkout(fork)
	s.branchSummary(aLeaf, "Tried approach A (sync.Pool buffers): 8% faster, not enough for 2x.")
	s.user("Try approach B instead: generate the encoders.")
	s.call("bash", map[string]any{"command": "go generate ./encoder && go test -bench Encode ./encoder"}, "BenchmarkEncode-2  702 ns/op  generated")
	s.compaction("Approach B in progress: generator scaffolding written, 41% faster so far.", s.leaf, 70000)
	s.user("Finish approach B and remove the reflection path.")
	bLeaf := s.assistant(textBlock("Approach B done: generated encoders are 2.1x faster; reflection removed."))
	h.sync(cc, s)
	before()
	h.modelOK(cc, s, "history_read_item", q(map[string]any{"window_id": "w2", "item_id": bLeaf}))
	if _, err := h.model(cc, s, "history_read_item", q(map[string]any{"window_id": "w2", "item_id": aLeaf})); memory.ErrorKind(err) != "not_found" {
		h.t.Fatalf("read of an A-only item on branch B: %v", err)
	}
	h.modelOK(cc, s, "notes_append_to_file", `{"path":"encoder.md","text":"approach B: generated, 2.1x\n"}`)
	bTip := s.leaf

	// Back to A (nothing new to send), then to B again.
	s.checkout(aLeaf)
	h.sync(cc, s)
	h.ok(cc, "", "history_search_contents", `{"query":"approach"}`)
	h.ok(cc, "", "history_read_item", q(map[string]any{"window_id": "w2", "item_id": aLeaf}))
	h.ok(cc, "", "history_list_windows", `{}`)
	s.checkout(bTip)
	h.sync(cc, s)
	h.readRound(cc, s, "approach")
	h.modelOK(cc, s, "notes_read_file", `{"path":"encoder.md"}`)
}

func scenarioCrossAgentNotes(h *harness) {
	root := h.attach(sessionKey("cross-root"), nil, nil)
	reviewer := h.attach(sessionKey("cross-reviewer"), &memory.TaskRef{TaskID: root.TaskID, ParentAgent: "/root", AgentName: "reviewer"}, nil)
	tester := h.attach(sessionKey("cross-tester"), &memory.TaskRef{TaskID: root.TaskID, ParentAgent: "/root", AgentName: "tester"}, nil)
	other := h.attach(sessionKey("cross-other"), nil, nil)

	rs := newPiSession("d4a0")
	rs.user("Refactor the cache layer; the reviewer and tester agents will help.")
	rs.assistant(textBlock("Plan written to notes; delegating review and tests."))
	h.sync(root, rs)
	vs := newPiSession("d4b0")
	vs.user("Review the cache refactor in /root's plan.")
	h.sync(reviewer, vs)
	ts := newPiSession("d4c0")
	ts.user("Write tests for the cache eviction order.")
	h.sync(tester, ts)

	h.modelOK(root, rs, "notes_write_file", `{"path":"plan.md","text":"# Plan v1\n- LRU cache\n- reviewer: check locking\n"}`)
	h.modelOK(reviewer, vs, "notes_read_file", `{"path":"/root/notes/plan.md"}`)
	h.modelOK(tester, ts, "notes_read_file", `{"path":"/root/notes/plan.md"}`)
	h.modelOK(reviewer, vs, "notes_write_file", `{"path":"review.md","text":"locking: mutex per shard is fine\n"}`)
	h.modelOK(root, rs, "notes_read_file", `{"path":"/root/reviewer/notes/review.md"}`)
	h.modelOK(root, rs, "notes_list_files_by_prefix", `{"prefix":"/root/reviewer/notes/"}`)
	h.modelOK(reviewer, vs, "notes_write_file", `{"path":"/root/notes/from-reviewer.md","text":"reviewed: ok, one nit in evict()\n"}`)
	h.modelOK(root, rs, "notes_list_files_by_prefix", `{"file_order_by":"updated_at","file_order":"descending"}`)
	h.modelOK(root, rs, "notes_read_file", `{"path":"from-reviewer.md"}`)
	h.modelOK(tester, ts, "notes_append_to_file", `{"path":"/root/reviewer/notes/review.md","text":"tester: eviction order covered by TestEvictLRU\n"}`)
	h.modelOK(reviewer, vs, "notes_read_file", `{"path":"review.md"}`)
	h.modelOK(root, rs, "notes_search_contents", `{"query":"evict","path_prefix":"/root/reviewer/notes/"}`)
	h.modelOK(root, rs, "notes_search_contents", `{"query":"evict"}`)

	// The plan is overwritten; every agent reads the new version.
	ts.call("bash", map[string]any{"command": "go test -run TestEvict ./cache"}, "ok  \tcache\t0.031s")
	h.sync(tester, ts)
	h.modelOK(root, rs, "notes_write_file", `{"path":"plan.md","text":"# Plan v2\n- LRU cache with per-shard mutex\n- tests: TestEvictLRU\n"}`)
	h.modelOK(reviewer, vs, "notes_read_file", `{"path":"/root/notes/plan.md"}`)
	h.modelOK(tester, ts, "notes_read_file", `{"path":"/root/notes/plan.md","start_line":2}`)
	h.modelOK(tester, ts, "notes_list_files_by_prefix", `{"prefix":"/root/notes/"}`)

	// History across agents.
	h.modelOK(root, rs, "history_list_items", `{"agent_name":"reviewer"}`)
	h.modelOK(root, rs, "history_search_contents", `{"agent_name":"/root/tester","query":"TestEvict"}`)
	h.modelOK(tester, ts, "history_list_windows", `{"agent_name":"/root"}`)
	h.modelOK(reviewer, vs, "history_read_item", `{"agent_name":"/root","window_id":"w1","item_id":"d4a00001"}`)
	h.modelOK(reviewer, vs, "get_context_remaining", `{}`)

	// Outside the task, and nowhere.
	h.fails(other, "toolu_other_1", "notes_read_file", `{"path":"/root/reviewer/notes/review.md"}`, "forbidden")
	h.fails(other, "toolu_other_2", "history_list_items", `{"agent_name":"/root/tester"}`, "forbidden")
	h.fails(root, "toolu_root_x", "notes_read_file", `{"path":"/root/nobody/notes/a.md"}`, "not_found")
	h.fails(root, "toolu_root_y", "notes_read_file", `{"path":"missing.md"}`, "not_found")
	h.ok(other, "toolu_other_3", "notes_list_files_by_prefix", `{}`)
	h.readRound(root, rs, "cache")
}

func scenarioIdempotentRetries(h *harness) {
	cc := h.attach(sessionKey("retries"), nil, nil)
	s := newPiSession("e5d0")
	s.user("Fix the flaky TestUpload.")
	s.call("bash", map[string]any{"command": "go test -count 20 -run TestUpload ./upload"}, "--- FAIL: TestUpload (0.50s) 3 of 20")
	h.sync(cc, s)

	write := `{"path":"flaky.md","text":"TestUpload: fails 3/20, timeout 500ms\n"}`
	first := h.ok(cc, "toolu_w1", "notes_write_file", write)
	for range 2 {
		again := h.ok(cc, "toolu_w1", "notes_write_file", write)
		if q(again) != q(first) {
			h.t.Fatalf("retry answered %s, first %s", q(again), q(first))
		}
		h.ok(cc, "", "notes_read_file", `{"path":"flaky.md"}`)
	}
	h.fails(cc, "toolu_w1", "notes_write_file", `{"path":"flaky.md","text":"something else\n"}`, "conflict")
	h.ok(cc, "toolu_a1", "notes_append_to_file", `{"path":"flaky.md","text":"cause: shared tmp dir\n"}`)
	h.ok(cc, "toolu_a1", "notes_append_to_file", `{"path":"flaky.md","text":"cause: shared tmp dir\n"}`)
	res := h.ok(cc, "", "notes_read_file", `{"path":"flaky.md"}`)
	h.wantText(res, "text", "TestUpload: fails 3/20, timeout 500ms\ncause: shared tmp dir\n")
	h.fails(cc, "toolu_a1", "notes_append_to_file", `{"path":"other.md","text":"cause: shared tmp dir\n"}`, "conflict")
	h.ok(cc, "toolu_a2", "notes_append_to_file", `{"path":"flaky.md","text":"fix: t.TempDir()\n"}`)
	h.readRound(cc, s, "TestUpload")

	// new_context three times: one request.
	for _, id := range []string{"toolu_nc1", "toolu_nc1", "toolu_nc2"} {
		res := h.ok(cc, id, "new_context", `{}`)
		if !res.Terminate {
			h.t.Fatal("new_context did not terminate")
		}
		h.phase(cc, "ROLLOVER_PENDING")
		h.ok(cc, "", "get_context_remaining", `{}`)
	}
	prep, err := h.svc.PrepareRollover(h.ctx, cc, "new_context", "")
	h.must("prepare", err)
	again, err := h.svc.PrepareRollover(h.ctx, cc, "new_context", "")
	h.must("prepare again", err)
	if *again.Bootstrap != *prep.Bootstrap {
		h.t.Fatal("a repeated prepare built another bootstrap")
	}
	comp := s.compaction(*prep.Bootstrap, "ffffffff", 150000)
	h.sync(cc, s)
	_, err = h.svc.CommitRollover(h.ctx, cc, prep.WindowID, comp, "")
	h.must("commit", err)
	h.phase(cc, "READY")

	// Old call ids are still answered as before, and write nothing.
	h.ok(cc, "toolu_w1", "notes_write_file", write)
	h.ok(cc, "toolu_a2", "notes_append_to_file", `{"path":"flaky.md","text":"fix: t.TempDir()\n"}`)
	res = h.ok(cc, "", "notes_read_file", `{"path":"flaky.md"}`)
	h.wantText(res, "text", "TestUpload: fails 3/20, timeout 500ms\ncause: shared tmp dir\nfix: t.TempDir()\n")
	h.readRound(cc, s, "flaky")
	h.ok(cc, "", "history_list_items", `{"window_id":"w2"}`)
	h.ok(cc, "toolu_nc3", "new_context", `{}`)
	h.ok(cc, "toolu_nc3", "new_context", `{}`)
	h.ok(cc, "", "get_context_remaining", `{}`)
}

// scenarioPNG is a small deterministic PNG of one colour, base64.
func scenarioPNG(c color.RGBA) string {
	img := image.NewRGBA(image.Rect(0, 0, 12, 8))
	for y := range 8 {
		for x := range 12 {
			img.Set(x, y, color.RGBA{c.R, c.G ^ uint8(x*16), c.B ^ uint8(y*24), 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

func scenarioLongSessionImages(h *harness) {
	cc := h.attach(sessionKey("long"), nil, &memory.BudgetInput{ContextWindow: ptr[int64](200000)})
	s := newPiSession("f6e0")
	red, blue := scenarioPNG(color.RGBA{R: 220, G: 40, B: 40}), scenarioPNG(color.RGBA{R: 30, G: 60, B: 210})
	words := []string{"worker", "batch", "shard", "replica", "lag", "flush", "wal", "timeout", "retry", "cache", "miss", "queue"}
	var screenshots, imageResults, bigResults []string
	window := 1
	windowOf := map[string]string{} // entry id → its window
	track := func(id string) string {
		windowOf[id] = fmt.Sprintf("w%d", window)
		return id
	}
	for turn := 1; turn <= 90; turn++ {
		if turn%11 == 0 {
			id := track(s.userBlocks(textBlock(fmt.Sprintf("Turn %d: the dashboard looks wrong, see the screenshots.", turn)),
				imageBlock(red, "image/png"), imageBlock(blue, "image/png")))
			screenshots = append(screenshots, id)
		} else {
			s.user(fmt.Sprintf("Turn %d: check the %s %s logs.", turn, words[turn%len(words)], words[(turn*7)%len(words)]))
		}
		id := s.callID()
		if turn%9 == 0 {
			s.assistant(textBlock("Opening the graph."), toolCallBlock(id, "read", map[string]any{"path": fmt.Sprintf("graphs/lag-%d.png", turn)}))
			imageResults = append(imageResults, track(s.toolResult(id, "read", false, textBlock("Read image file [image/png]"), imageBlock(blue, "image/png"))))
		} else {
			s.assistant(thinkingBlock("Check the log tail."), textBlock("Reading the logs."),
				toolCallBlock(id, "bash", map[string]any{"command": fmt.Sprintf("tail -n 40 /var/log/app/%s.log", words[turn%len(words)])}))
			var b strings.Builder
			lines := 6 + turn%7
			if turn%25 == 0 {
				lines = 80
			}
			for l := range lines {
				level := "INFO"
				if (turn+l)%9 == 0 {
					level = "ERROR"
				}
				fmt.Fprintf(&b, "2026-12-02T10:%02d:%02dZ %s %s %s processed in %d ms\n", turn%60, l%60, level, words[(turn+l)%len(words)], words[(l*5)%len(words)], 10+(turn*l)%900)
			}
			if turn == 77 {
				b.WriteString("2026-12-02T10:17:59Z ERROR ZQX-RARE-NEEDLE checksum mismatch in shard 7\n")
			}
			r := track(s.toolResult(id, "bash", false, textBlock(b.String())))
			if lines == 80 {
				bigResults = append(bigResults, r)
			}
		}
		if turn%30 == 0 {
			c := s.compaction(fmt.Sprintf("Turns up to %d: log triage of the ingest workers; shard 7 lag investigated.", turn), s.leaf, 150000)
			window++
			track(c)
		}
		if turn%10 == 0 {
			h.sync(cc, s)
			if turn%20 == 0 {
				h.modelOK(cc, s, "history_list_windows", `{}`)
				h.modelOK(cc, s, "history_search_contents", `{"query":"ERROR","limit":5}`)
			}
		}
	}
	h.sync(cc, s)
	if s.n < 250 {
		h.t.Fatalf("only %d entries", s.n)
	}
	h.modelOK(cc, s, "notes_write_file", `{"path":"triage.md","text":"shard 7: checksum mismatch (turn 77)\n"}`)
	h.readRound(cc, s, "shard")
	for w := 1; w <= window; w++ {
		h.modelOK(cc, s, "history_list_items", q(map[string]any{"window_id": fmt.Sprintf("w%d", w), "limit": 200}))
		h.modelOK(cc, s, "history_list_items", q(map[string]any{"window_id": fmt.Sprintf("w%d", w), "role": "user", "recent_first": true, "limit": 10}))
	}
	h.modelOK(cc, s, "history_list_items", `{"tool_name":"read","max_chars_per_item":40}`)
	h.modelOK(cc, s, "history_search_contents", `{"query":"ZQX-RARE-NEEDLE"}`)
	h.modelOK(cc, s, "history_search_contents", `{"query":"ERROR","recent_first":true,"limit":50}`)
	h.modelOK(cc, s, "history_search_contents", `{"query":"[image]","role":"user"}`)
	read := func(id string, extra map[string]any) memory.ToolResult {
		h.t.Helper()
		args := map[string]any{"window_id": windowOf[id], "item_id": id}
		for k, v := range extra {
			args[k] = v
		}
		return h.modelOK(cc, s, "history_read_item", q(args))
	}
	for _, id := range screenshots[:4] {
		if res := read(id, nil); len(res.Content) != 3 {
			h.t.Fatalf("read_item of a screenshot: %d content blocks, want text and 2 images", len(res.Content))
		}
	}
	for _, id := range imageResults[:4] {
		if res := read(id, nil); len(res.Content) != 2 {
			h.t.Fatalf("read_item of an image result: %d content blocks, want 2", len(res.Content))
		}
	}
	for _, id := range bigResults {
		next := any(0)
		for pages := 0; next != nil; pages++ {
			if pages > 20 {
				h.t.Fatal("read_item paging does not end")
			}
			res := read(id, map[string]any{"offset_chars": next, "limit_chars": 1500})
			next = details(h.t, res)["next_offset_chars"]
		}
	}
	if _, err := h.model(cc, s, "history_read_item", q(map[string]any{"window_id": "w9", "item_id": screenshots[0]})); memory.ErrorKind(err) != "not_found" {
		h.t.Fatalf("read_item in an unknown window: %v", err)
	}
}

func ptr[T any](v T) *T { return &v }

// ---- writing and checking the logs ----

// generate runs sc and writes its log and digest.
func generate(t *testing.T, sc scenario) {
	h := newHarness(t)
	sc.run(h)
	h.svc.StopAudit() // flush the read audit
	if h.reads == 0 {
		t.Fatal("the scenario made no reads")
	}
	var buf bytes.Buffer
	w := bufio.NewWriter(&buf)
	err := h.store.Each(h.ctx, eventlog.Filter{Limit: 1000}, func(ev events.Event) error {
		return events.WriteJSONLines(w, []events.Event{ev})
	})
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		t.Fatal(err)
	}
	sum, err := forensics.Summarize(h.ctx, h.svc)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(logsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logsDir, sc.name+".jsonl"), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(logsDir, sc.name+".digest"), []byte(sum.Digest+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d events, %d bytes, %d reads", sc.name, sum.Events, buf.Len(), h.reads)
}

func writeReadme(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Scenario logs\n\n")
	b.WriteString("Exported event logs (`memoryd export`) of scripted sessions run through `memory.Service` with the read\n")
	b.WriteString("audit on, and the combined projection digest of each (`<name>.digest`). `TestScenarioLogs` replays every\n")
	b.WriteString("log and checks the digest and `--check-reads` (zero mismatches); the round-trip test imports, verifies\n")
	b.WriteString("and re-exports each byte for byte. Regenerate with\n`go test ./internal/forensics -run TestScenarioLogs -update`.\n\n")
	for _, sc := range scenarios {
		fmt.Fprintf(&b, "- `%s.jsonl`: %s\n", sc.name, sc.what)
	}
	if err := os.WriteFile(filepath.Join(logsDir, "README.md"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func openScenarioLog(t testing.TB, name string) (*forensics.LogReader, func()) {
	t.Helper()
	f, err := os.Open(filepath.Join(logsDir, name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return forensics.NewLogReader(f), func() { f.Close() }
}

// replayChecked replays a committed log with the read audit re-executed.
func replayChecked(t *testing.T, name string) (forensics.Summary, forensics.ReadCheck) {
	t.Helper()
	ctx := context.Background()
	lr, done := openScenarioLog(t, name)
	audit, _, err := forensics.CollectAudit(lr.Next)
	done()
	if err != nil {
		t.Fatal(lr.AtLine(err))
	}
	// The replay's database is of the engine the tests run on
	// (MEMORYD_TEST_ENGINE): the committed digests hold on both.
	store, err := forensics.Open(ctx, memorytest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	lr, done = openScenarioLog(t, name)
	defer done()
	check, err := forensics.Replay(ctx, store, lr.Next, forensics.ReplayOptions{Audit: audit})
	if err != nil {
		t.Fatal(lr.AtLine(err))
	}
	sum, err := forensics.Summarize(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	return sum, check
}

func TestScenarioLogs(t *testing.T) {
	if *update {
		for _, sc := range scenarios {
			t.Run("generate/"+sc.name, func(t *testing.T) { generate(t, sc) })
		}
		writeReadme(t)
	}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			want, err := os.ReadFile(filepath.Join(logsDir, sc.name+".digest"))
			if err != nil {
				t.Fatalf("%v (run go test -run TestScenarioLogs -update)", err)
			}
			sum, check := replayChecked(t, sc.name)
			if *updateDigests {
				if err := os.WriteFile(filepath.Join(logsDir, sc.name+".digest"), []byte(sum.Digest+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				want = []byte(sum.Digest)
			}
			if sum.Digest != strings.TrimSpace(string(want)) {
				t.Errorf("replayed digest %s, committed %s; tables %+v", sum.Digest, strings.TrimSpace(string(want)), sum.Tables)
			}
			if check.Checked == 0 {
				t.Error("check-reads checked no audited read")
			}
			for _, m := range check.Mismatches {
				t.Errorf("audited read differs on replay: %+v", m)
			}
			t.Logf("%d events, %d reads checked", sum.Events, check.Checked)
		})
	}
}

// TestScenarioLogsRoundTrip imports every committed log into an empty
// database, verifies its projections against a rebuild and exports it
// again byte for byte.
func TestScenarioLogsRoundTrip(t *testing.T) {
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			orig, err := os.ReadFile(filepath.Join(logsDir, sc.name+".jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			live, err := forensics.Open(ctx, memorytest.NewDatabase(t)) // SQLite or PostgreSQL, the verify's scratch on SQLite
			if err != nil {
				t.Fatal(err)
			}
			defer live.Close()
			lr := forensics.NewLogReader(bytes.NewReader(orig))
			n, err := forensics.Import(ctx, live, lr.Next)
			if err != nil {
				t.Fatal(lr.AtLine(err))
			}
			if want := int64(bytes.Count(orig, []byte("\n"))); n != want {
				t.Errorf("imported %d events, the log has %d lines", n, want)
			}
			scratch, err := forensics.Open(ctx, filepath.Join(dir, "scratch.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer scratch.Close()
			diffs, violations, err := forensics.Verify(ctx, live, scratch, 3)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range diffs {
				t.Errorf("verify: table %s differs: %+v", d.Table, d)
			}
			for _, v := range violations {
				t.Errorf("verify: event %d breaks a rule: %+v", v.Position, v)
			}
			var out bytes.Buffer
			if err := forensics.Export(ctx, live, "", 0, &out, nil); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), orig) {
				a, b := strings.Split(out.String(), "\n"), strings.Split(string(orig), "\n")
				for i := range min(len(a), len(b)) {
					if a[i] != b[i] {
						t.Fatalf("re-export differs at line %d:\n got %s\nwant %s", i+1, a[i], b[i])
					}
				}
				t.Fatalf("re-export has %d lines, the log %d", len(a), len(b))
			}
		})
	}
}

// TestReplayRefusesNonEmpty: a replay with the read audit, like one
// without, needs an empty database.
func TestReplayRefusesNonEmpty(t *testing.T) {
	ctx := context.Background()
	name := scenarios[0].name
	lr, done := openScenarioLog(t, name)
	audit, _, err := forensics.CollectAudit(lr.Next)
	done()
	if err != nil || len(audit) == 0 {
		t.Fatalf("collect audit: %v (%d reads)", err, len(audit))
	}
	store, err := forensics.Open(ctx, filepath.Join(t.TempDir(), "replay.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for i, a := range []map[int64][]forensics.AuditedCall{nil, nil, audit} {
		lr, done := openScenarioLog(t, name)
		_, err := forensics.Replay(ctx, store, lr.Next, forensics.ReplayOptions{Audit: a})
		done()
		if i == 0 && err != nil {
			t.Fatalf("first replay: %v", err)
		}
		if i > 0 && !errors.Is(err, eventlog.ErrNotEmpty) {
			t.Errorf("replay (audit %v) into a database that holds the log: %v, want ErrNotEmpty", a != nil, err)
		}
	}
}
