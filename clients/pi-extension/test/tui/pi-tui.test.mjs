// The extension in the REAL interactive pi (no -p/--mode), driven in a tmux
// terminal (send-keys / capture-pane), with Pi's default settings, a real
// memoryd and the scripted model server of test/cli:
// - after new_context the chat shows one compaction block (Pi's, counting the
//   old window's reported tokens; the bootstrap when expanded with Ctrl+O)
//   and memoryd's footer names w1 → w2 and the reason;
// - a fallback rollover carried out by Pi's threshold compaction is followed
//   by the new window's turn with no key pressed;
// - /tree with the fence on: the fence follows the branch now in context;
// - a manual /compact: the checkpoint turn runs inside the one compaction,
//   which builds w2; the screen never shows "Compaction cancelled";
// - a manual checkpoint request the user drops (Escape during its turn) is
//   cancelled in memoryd and gone from the model's next request;
// - quitting (Ctrl+C twice) during the checkpoint turn leaves memoryd READY,
//   and a resumed session (pi -c) does not show the model the dropped request.
// Needs tmux on PATH (fails, does not skip, without it).
import assert from "node:assert/strict";
import { before, test } from "node:test";

import { startModelServer, textOf } from "../cli/model-server.mjs";
import { freshSetup, memorydForPi, runPi, traced } from "../cli/pi-cli.mjs";
import { BIG_FILES, NEAR_FULL, PROMPT, READ_DONE, fallbackScript, hasManual, held, inW2, lastIsManual, manualScript, rolloverScript } from "../cli/scenarios.mjs";
import { requireTmux, startTui } from "./tmux.mjs";
import { hangGuardMs } from "../../../testing/memoryd.mjs";

before(requireTmux);
const memoryd = memorydForPi();
const memorydEnv = () => memoryd.env();
const stateOf = memoryd.stateOf;

/** Starts pi in tmux, runs the reads turn; returns the terminal. */
async function afterReads(setup) {
  const tui = startTui(setup, { env: memorydEnv() });
  await tui.waitFor((s) => s.includes("scripted-model"), 30_000, "pi's editor");
  tui.type("read a.txt, b.txt and c.txt");
  await tui.waitFor((s) => s.includes(READ_DONE), 60_000, "the reads turn");
  return tui;
}

/**
 * The manual /compact whose checkpoint reply is held back: pi in tmux after
 * the reads turn, /compact typed, the model asked for the checkpoint; then
 * fn({ tui, model, setup }). Releases the reply and cleans up after it.
 */
async function duringHeldCheckpoint(fn) {
  const reply = held();
  const model = await startModelServer(manualScript(() => reply.promise));
  const setup = freshSetup(model.url, BIG_FILES);
  const tui = await afterReads(setup);
  try {
    tui.type("/compact");
    await tui.waitUntil(() => model.requests.some(lastIsManual), 30_000, "the checkpoint request");
    await fn({ tui, model, setup });
  } finally {
    reply.release({ text: "too late" });
    tui.stop();
    await model.close();
    setup.remove();
  }
}

/**
 * The rollover as the screen shows it: Pi's one compaction block, counting
 * the old window's tokens as the model last reported them (usedBefore: a
 * RegExp of the number as Pi prints it), and memoryd's footer line naming
 * the windows and the reason, once on the screen; Ctrl+O expands the
 * bootstrap in Pi's block.
 */
async function assertOneResetShown(tui, reason, usedBefore) {
  const screen = tui.screen();
  assert.match(screen, new RegExp(`Compacted from ${usedBefore.source} tokens`), screen);
  assert.equal(screen.split(`memoryd: context window reset w1 → w2 (${reason})`).length - 1, 1, `one reset line, in the footer:\n${screen}`);
  assert.doesNotMatch(screen, /<context_window_reset\/>/, "collapsed: the bootstrap is not shown");
  tui.keys("C-o");
  // The bootstrap's sections (its first lines may scroll out of the 50-line terminal).
  await tui.waitFor((s) => s.includes("Recovery protocol:") && s.includes("Existing notes for /root at this context-window reset"), 10_000, "the expanded bootstrap");
}

/**
 * The large session of script typed into pi in tmux, with no key pressed
 * after the prompt until the model's w2 answer ("RECOVERED": the rollover's
 * continuation alone started it); then check(tui); memoryd is READY in w2.
 */
async function recoveredInTui(script, check) {
  const model = await startModelServer(script);
  const setup = freshSetup(model.url, BIG_FILES);
  const tui = startTui(setup, { env: memorydEnv() });
  try {
    await tui.waitFor((s) => s.includes("scripted-model"), 30_000, "pi's editor");
    tui.type(PROMPT);
    await tui.waitFor((s) => s.includes("RECOVERED: back on"), 60_000, "the model's w2 answer");
    await check(tui);
    const st = await stateOf(tui.stderr());
    assert.deepEqual([st.window_id, st.phase], ["w2", "READY"]);
  } finally {
    tui.stop();
    await model.close();
    setup.remove();
  }
}

test("TUI: after new_context one compaction block shows the window reset (Pi's, with the real token count) and memoryd's footer names w1 → w2 and the reason", { timeout: hangGuardMs }, () =>
  recoveredInTui(rolloverScript, async (tui) => {
    const [usage] = traced(tui.stderr(), "usage").filter((u) => u.tokens_used > 30_000).slice(-1);
    await assertOneResetShown(tui, "the model called new_context", new RegExp(usage.tokens_used.toLocaleString("en-US")));
  }),
);

test("TUI: the fallback rollover Pi's threshold compaction carries out is followed by the new window's turn", { timeout: hangGuardMs }, () =>
  recoveredInTui(fallbackScript, async (tui) => {
    const stderr = tui.stderr();
    assert.deepEqual(traced(stderr, "continue").map((c) => [c.reason, c.compaction]), [["fallback", "threshold"]], stderr);
    assert.deepEqual(traced(stderr, "deliver").map((d) => d.kind), ["fallback"], "no reminder under the fence");
    await assertOneResetShown(tui, "checkpoint saved at the fallback", /113,\d{3}/);
  }),
);

test("TUI: a manual /compact runs the checkpoint turn inside the one compaction, with no 'Compaction cancelled'", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(manualScript(() => ({ calls: [["notes_write_file", { path: "checkpoint.md", text: "manual checkpoint" }]] })));
  const setup = freshSetup(model.url, BIG_FILES);
  const tui = await afterReads(setup);
  try {
    tui.type("/compact");
    // Watched on every screen until the rollover (a later compaction would clear the chat).
    let cancelled = false;
    await tui.waitFor((s) => {
      cancelled ||= s.includes("Compaction cancelled");
      return s.includes("context window reset w1 → w2 (/compact)");
    }, 60_000, "the manual rollover");
    assert.equal(cancelled, false, "the screen showed 'Compaction cancelled'");
    assert.ok(model.requests.some(lastIsManual), "the model was asked for the checkpoint");
    const stderr = tui.stderr();
    assert.deepEqual(traced(stderr, "manual_turn").map((t) => t.outcome), ["saved"]);
    assert.deepEqual(traced(stderr, "rollover_prepared").map((t) => t.reason), ["manual_compact"]);
    assert.deepEqual(traced(stderr, "compact"), [], "the extension started no second compaction");
    assert.deepEqual(traced(stderr, "error"), [], stderr);
    // The checkpoint is in memoryd; the new window is live.
    const st = await stateOf(stderr);
    assert.deepEqual([st.window_id, st.phase, st.manual], ["w2", "READY", undefined]);
    // The next request of the model holds the bootstrap, nothing of w1 and no checkpoint request.
    tui.type("what now?");
    await tui.waitFor((s) => s.includes("ready in w2"), 30_000, "the w2 answer");
    const last = model.requests.at(-1);
    assert.ok(inW2(last) && !hasManual(last));
    assert.doesNotMatch(tui.screen(), /Compaction cancelled/);
  } finally {
    tui.stop();
    await model.close();
    setup.remove();
  }
});

test("TUI: a manual checkpoint request dropped with Escape is cancelled in memoryd and gone from the next request", { timeout: hangGuardMs }, () =>
  duringHeldCheckpoint(async ({ tui, model }) => {
    tui.keys("Escape");
    await tui.waitUntil(() => traced(tui.stderr(), "manual_cancelled").length > 0, 30_000, "the manual cancel");
    const st = await stateOf(tui.stderr());
    assert.deepEqual([st.window_id, st.phase, st.manual, st.fence_active], ["w1", "READY", undefined, false]);
    const before = model.requests.length;
    tui.type("something else");
    await tui.waitUntil(() => model.requests.length > before, 30_000, "the next request");
    const next = model.requests[before];
    assert.match(textOf(next.messages.at(-1)), /something else/);
    assert.ok(!hasManual(next), "the dropped checkpoint request is not in the model's context");
    assert.ok(next.messages.some((m) => textOf(m).includes(READ_DONE)), "the rest of w1 is");
  }),
);

test("TUI: quitting (Ctrl+C twice) during the checkpoint turn leaves memoryd READY; pi -c does not see the request", { timeout: hangGuardMs }, () =>
  duringHeldCheckpoint(async ({ tui, model, setup }) => {
    const armed = await stateOf(tui.stderr());
    assert.deepEqual([armed.phase, armed.fence_active], ["MANUAL_AWAITING", true]);
    tui.keys("C-c", "C-c");
    await tui.waitExit(30_000);
    const stderr = tui.stderr();
    // Pi's shutdown aborts the held compaction (its signal) or reaches session_shutdown first: one cancel either way.
    const cancels = traced(stderr, "manual_cancelled").map((t) => t.why);
    assert.equal(cancels.length, 1, stderr);
    assert.ok(["aborted", "shutdown"].includes(cancels[0]), stderr);
    const st = await stateOf(stderr);
    assert.deepEqual([st.window_id, st.phase, st.manual, st.fence_active], ["w1", "READY", undefined, false]);
    // Resumed: the model's next request has the session, not the dropped checkpoint request.
    const before = model.requests.length;
    const r = await runPi(setup, ["-p", "-c", "continue please"], { env: memorydEnv() });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), "hi");
    const next = model.requests[before];
    assert.ok(next.messages.some((m) => textOf(m).includes(READ_DONE)), "the resumed session");
    assert.ok(!hasManual(next), "the dropped checkpoint request is not in the model's context");
    const resumed = await stateOf(r.stderr);
    assert.deepEqual([resumed.window_id, resumed.phase], ["w1", "READY"]);
  }),
);

/**
 * The /tree session: two questions, the second answered near full (the
 * fallback is due), the fallback turn answered without a checkpoint (the
 * fence stays on); "go on" then calls history_list_windows and the model
 * says what it got.
 */
function treeScript(body) {
  const last = body.messages.at(-1);
  const text = textOf(last);
  if (last.role === "tool") return { text: `TOOL SAID: ${text.slice(0, 60)}` };
  if (text.includes("<context_window_fallback")) return { text: "I will checkpoint later.", promptTokens: NEAR_FULL };
  if (text.includes("first question")) return { text: "FIRST ANSWER" };
  if (text.includes("second question")) return { text: "SECOND ANSWER", promptTokens: NEAR_FULL };
  if (text.includes("go on")) return { calls: [["history_list_windows", {}]] };
  return { text: "OTHER ANSWER" };
}

/** /tree to the entry whose line shows text (found with the tree's search), without a branch summary. */
async function treeTo(tui, text) {
  tui.type("/tree");
  await tui.waitFor((s) => s.includes("Session Tree"), 10_000, "the tree selector");
  tui.keys(...[...text].map((c) => (c === " " ? "Space" : c)));
  await tui.waitFor((s) => s.includes(`› • assistant: ${text}`), 10_000, `${text} selected`);
  tui.keys("Enter");
  await tui.waitFor((s) => s.includes("Summarize branch?"), 10_000, "the summary question");
  tui.keys("Enter"); // No summary
}

test("TUI: /tree with the fence on: the fence follows the branch now in context (the fallback again above its threshold, lifted below it)", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(treeScript);
  const setup = freshSetup(model.url);
  const tui = startTui(setup, { env: memorydEnv() });
  const branchTraces = () => traced(tui.stderr(), "branch");
  try {
    await tui.waitFor((s) => s.includes("scripted-model"), 30_000, "pi's editor");
    tui.type("first question");
    await tui.waitFor((s) => s.includes("FIRST ANSWER"), 30_000, "the first answer");
    tui.type("second question");
    await tui.waitUntil(() => traced(tui.stderr(), "settled").some((t) => t.phase === "FENCED"), 30_000, "the fenced, settled session");
    // Back to the near-full answer, before the fallback: the fallback is delivered again there.
    await treeTo(tui, "SECOND ANSWER");
    await tui.waitUntil(() => branchTraces().length === 1, 30_000, "the first branch report");
    assert.equal(branchTraces()[0].due, "fallback");
    assert.equal(traced(tui.stderr(), "resend_fallback").length, 1);
    assert.equal((await stateOf(tui.stderr())).phase, "FENCED");
    // Back to the small first answer: the fence is lifted.
    await treeTo(tui, "FIRST ANSWER");
    await tui.waitUntil(() => branchTraces().length === 2, 30_000, "the second branch report");
    assert.deepEqual([branchTraces()[1].due, branchTraces()[1].phase], [null, "READY"]);
    const st = await stateOf(tui.stderr());
    assert.deepEqual([st.window_id, st.phase, st.fence_active], ["w1", "READY", false]);
    const { events } = await memoryd.client.listEvents({ task_id: st.task_id });
    assert.deepEqual(events.filter((e) => e.type === "lifecycle.fence_lifted").map((e) => e.data.reason), ["branch_changed"]);
    // The model's context has no fallback, and its tools answer.
    tui.type("go on");
    await tui.waitFor((s) => s.includes("TOOL SAID:"), 30_000, "the tool result turn");
    const goOn = model.requests.find((b) => textOf(b.messages.at(-1)).includes("go on"));
    assert.ok(!goOn.messages.some((m) => textOf(m).includes("<context_window_fallback")), "no fallback in the branch now in context");
    assert.doesNotMatch(tui.screen(), /TOOL SAID: Checkpoint required/);
  } finally {
    tui.stop();
    await model.close();
    setup.remove();
  }
});
