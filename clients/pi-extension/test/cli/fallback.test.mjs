// The fallback and new_context rollovers that Pi's own threshold compaction
// carries out, in the REAL pi CLI with Pi's default settings (a 128000-token
// window, compaction above 111616 tokens) and a scripted model that reports
// its context near full:
// - fallback → checkpoint → Pi's threshold compaction at the end of the run
//   → rollover → the continuation turn in w2, in print, JSON and RPC mode
//   (before pi -p exits);
// - no reminder while the fallback is queued or fenced (Pi's threshold
//   compaction before the checkpoint turn is only cancelled);
// - new_context called above Pi's threshold: the same continuation;
// - an overflow compaction while new_context is pending: the rollover is the
//   request's, with its continuation;
// - a checkpoint whose rollover Pi refuses (a branch too short to compact):
//   the fence is lifted, the model is told, and its tools answer again.
import assert from "node:assert/strict";
import { test } from "node:test";

import { conversation, lastResults, startModelServer, textOf } from "./model-server.mjs";
import { assertCleanStderr, freshSetup, jsonLines, memorydForPi, runPi, startRpc, traced } from "./pi-cli.mjs";
import {
  BIG_FILES,
  CHECKPOINT_TEXT,
  FALLBACK,
  PROMPT,
  REMINDER,
  TASK_MARKER,
  fallbackScript,
  hasText,
  recoveredAt,
  settledAfterRecovery,
  inW2,
  newContextNearFullScript,
  overflowPendingScript,
  shortFallbackScript,
} from "./scenarios.mjs";
import { hangGuardMs } from "../../../testing/memoryd.mjs";

const memoryd = memorydForPi();
const memorydEnv = () => memoryd.env();

const CONTINUE = /^<context_window_continue window_id="w2" previous_window_id="w1"\/>/;

/**
 * The assertions on a rollover that Pi's threshold compaction carried out
 * for reason: one rollover, one continuation sent from that compaction and
 * in the model's context from then on, the model's recovery in w2, memoryd
 * READY in w2. atEnd: the compaction ran at the end of the run, so the new
 * window's first request holds the bootstrap and the continuation only
 * (a compaction before a request of the run sends that request with the
 * bootstrap, and the continuation follows it: Pi's steering queue).
 */
async function assertContinuedAfter(reason, requests, stderr, { atEnd }) {
  const prepared = traced(stderr, "rollover_prepared");
  assert.deepEqual(prepared.map((p) => p.reason), [reason], stderr);
  const continued = traced(stderr, "continue");
  assert.deepEqual(continued.map((c) => [c.reason, c.compaction, c.windowId]), [[reason, "threshold", "w2"]], stderr);
  const firstW2 = requests.findIndex(inW2);
  assert.ok(firstW2 > 0, `no request in w2; ${requests.length} requests`);
  const conv = conversation(requests[firstW2]).map(textOf);
  assert.match(conv[0], /<context_window_reset\/>/);
  if (atEnd) {
    assert.equal(conv.length, 2, `w2's first request: ${JSON.stringify(conv.map((c) => c.slice(0, 120)))}`);
    assert.match(conv[1], CONTINUE);
  }
  const lastConv = conversation(requests.at(-1)).map(textOf);
  assert.equal(lastConv.filter((t) => CONTINUE.test(t)).length, 1, `the last request: ${JSON.stringify(lastConv.map((c) => c.slice(0, 80)))}`);
  const results = Object.assign({}, ...requests.slice(firstW2).map(lastResults));
  assert.ok(results.notes_read_file?.includes(CHECKPOINT_TEXT), `notes_read_file: ${results.notes_read_file}`);
  assert.ok(results.history_read_item?.includes(PROMPT), `history_read_item: ${results.history_read_item}`);
  const st = await memoryd.stateOf(stderr);
  assert.deepEqual([st.window_id, st.phase, st.rollover_due, st.pending_new_context], ["w2", "READY", undefined, false]);
  assertCleanStderr(stderr);
}

/** The fallback went out once, no reminder ever did, and the model was asked once for its checkpoint. */
function assertOneFallbackNoReminder(requests, stderr) {
  const delivered = traced(stderr, "deliver").map((d) => d.kind);
  assert.deepEqual(delivered, ["fallback"], stderr);
  assert.ok(!requests.some((b) => hasText(b, REMINDER)), "no request shows the model a reminder");
  const asked = requests.filter((b) => !inW2(b) && hasText(b, FALLBACK));
  assert.ok(asked.length >= 1, "the model saw the fallback");
}

test("print mode: fallback, checkpoint, Pi's threshold compaction, and the new window's turn before pi exits", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(fallbackScript);
  const setup = freshSetup(model.url, BIG_FILES);
  try {
    const r = await runPi(setup, ["-p", PROMPT], { env: memorydEnv() });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), `RECOVERED: back on ${TASK_MARKER}`);
    assertOneFallbackNoReminder(model.requests, r.stderr);
    await assertContinuedAfter("fallback", model.requests, r.stderr, { atEnd: true });
  } finally {
    await model.close();
    setup.remove();
  }
});

test("JSON mode: Pi's threshold compaction rolls over and the w2 turn follows in the event stream", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(fallbackScript);
  const setup = freshSetup(model.url, BIG_FILES);
  try {
    const r = await runPi(setup, ["--mode", "json", PROMPT], { env: memorydEnv() });
    assert.equal(r.code, 0, r.stderr);
    const events = jsonLines(r.stdout);
    const compacted = events.findIndex((e) => e.type === "compaction_end" && e.result?.summary?.includes("<context_window_reset/>"));
    assert.ok(compacted > 0, `no compaction_end: ${events.map((e) => e.type)}`);
    assert.equal(events[compacted].reason, "threshold");
    assert.equal(events[compacted].result.details.memoryd.reason, "fallback");
    assert.ok(recoveredAt(events) > compacted, "the model answered in w2 after the compaction");
    assert.equal(events.at(-1).type, "agent_settled");
    assertOneFallbackNoReminder(model.requests, r.stderr);
    await assertContinuedAfter("fallback", model.requests, r.stderr, { atEnd: true });
  } finally {
    await model.close();
    setup.remove();
  }
});

test("RPC mode: one prompt command, the fallback rollover and the w2 turn", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(fallbackScript);
  const setup = freshSetup(model.url, BIG_FILES);
  const rpc = startRpc(setup, { env: memorydEnv() });
  try {
    rpc.send({ id: "p1", type: "prompt", message: PROMPT });
    await rpc.waitFor(settledAfterRecovery, 90_000, "the w2 answer and agent_settled");
    assertOneFallbackNoReminder(model.requests, rpc.stderr());
    await assertContinuedAfter("fallback", model.requests, rpc.stderr(), { atEnd: true });
  } finally {
    const exit = await rpc.stop();
    await model.close();
    setup.remove();
    assert.equal(exit.code, 0, rpc.stderr());
  }
});

test("print mode: new_context above Pi's threshold rolls over with a continuation too", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(newContextNearFullScript);
  const setup = freshSetup(model.url, BIG_FILES);
  try {
    const r = await runPi(setup, ["-p", PROMPT], { env: memorydEnv() });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), `RECOVERED: back on ${TASK_MARKER}`);
    assert.ok(!traced(r.stderr, "deliver").some((d) => d.kind === "fallback"), "no fallback: usage stayed under memoryd's fallback threshold");
    // The reminder was due (not the fallback): its turn's request is where Pi compacts.
    await assertContinuedAfter("new_context", model.requests, r.stderr, { atEnd: false });
  } finally {
    await model.close();
    setup.remove();
  }
});

test("print mode: an overflow while new_context is pending rolls over for the request, with its continuation", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(overflowPendingScript);
  const setup = freshSetup(model.url, BIG_FILES);
  try {
    const r = await runPi(setup, ["--mode", "json", PROMPT], { env: memorydEnv() });
    assert.equal(r.code, 0, r.stderr);
    const compacted = jsonLines(r.stdout).filter((e) => e.type === "compaction_end" && e.result);
    assert.deepEqual(compacted.map((e) => [e.reason, e.result.details.memoryd.reason]), [["overflow", "new_context"]]);
    const continued = traced(r.stderr, "continue");
    assert.deepEqual(continued.map((c) => [c.reason, c.compaction]), [["new_context", "overflow"]], r.stderr);
    assert.ok(model.requests.some((b) => inW2(b) && conversation(b).some((m) => CONTINUE.test(textOf(m)))), "a w2 request carries the continuation");
    assert.ok(recoveredAt(jsonLines(r.stdout)) >= 0, "the model answered in w2");
    const st = await memoryd.stateOf(r.stderr);
    assert.deepEqual([st.window_id, st.phase, st.pending_new_context], ["w2", "READY", false]);
    assertCleanStderr(r.stderr);
  } finally {
    await model.close();
    setup.remove();
  }
});

test("print mode: a checkpoint whose rollover Pi refuses lifts the fence and the model is told", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(shortFallbackScript);
  const setup = freshSetup(model.url);
  try {
    const r = await runPi(setup, ["-p", "look at the parser"], { env: memorydEnv() });
    assert.equal(r.code, 0, r.stderr);
    const [failed] = traced(r.stderr, "rollover_failed");
    assert.equal(failed?.aborted, false, r.stderr);
    assert.match(failed.error, /Nothing to compact/);
    // The model's next request: the notice, and no fallback left in its context.
    const after = model.requests.at(-1);
    const last = conversation(after).at(-1);
    assert.match(textOf(last), /^<context_window_not_reset window_id="w1"\/> The context window was not reset/);
    assert.ok(!hasText(after, FALLBACK), "the lifted fence's fallback is gone from the model's context");
    assert.equal(r.stdout.trim(), "OK, continuing in this window.");
    // memoryd: the fence was lifted by an event, tools answer again.
    const st = await memoryd.stateOf(r.stderr);
    assert.deepEqual([st.window_id, st.phase, st.fence_active, st.threshold_due], ["w1", "READY", false, "fallback"]);
    const { events } = await memoryd.client.listEvents({ task_id: st.task_id });
    const lifted = events.filter((e) => e.type === "lifecycle.fence_lifted");
    assert.deepEqual(lifted.map((e) => e.data.reason), ["rollover_refused"]);
    const listed = await memoryd.client.notesListFilesByPrefix({ task_id: st.task_id, agent: st.agent });
    assert.match(JSON.stringify(listed), /checkpoint\.md/);
    assertCleanStderr(r.stderr);
  } finally {
    await model.close();
    setup.remove();
  }
});
