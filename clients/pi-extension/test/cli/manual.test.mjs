// A manual compaction in the real pi CLI (RPC mode's `compact` command, which
// is Pi's manual /compact; Pi's default settings), against a real memoryd:
// - the checkpoint turn ends without a save (the model answers in plain text):
//   docs/behaviour.md §D.3 row 22, memoryd's manual request is cancelled
//   (READY in w1, no fence), Pi's compaction is cancelled, and the request is
//   gone from the model's next request;
// - a manual request left by a pi process killed during its checkpoint turn
//   (SIGKILL: no session_shutdown) is cancelled when the session is resumed
//   (`pi -c`) and attaches: memoryd is READY.
import assert from "node:assert/strict";
import { test } from "node:test";

import { waitFor } from "../start/pi-cli.mjs";
import { startModelServer, textOf } from "./model-server.mjs";
import { freshSetup, memorydForPi, startRpc, traced } from "./pi-cli.mjs";
import { BIG_FILES, READ_DONE, hasManual, held, lastIsManual, manualScript } from "./scenarios.mjs";
import { hangGuardMs } from "../../../testing/memoryd.mjs";

const memoryd = memorydForPi();
const memorydEnv = () => memoryd.env();
const stateOf = memoryd.stateOf;

/** Sends a prompt; resolves with the events of its run, up to agent_settled. */
async function ask(rpc, message) {
  const from = rpc.events.length;
  rpc.send({ type: "prompt", message });
  await rpc.waitFor((ev) => ev.slice(from).some((e) => e.type === "agent_settled"), 60_000, `the run of "${message}"`);
  return rpc.events.slice(from);
}

const answers = (events) =>
  events.filter((e) => e.type === "message_end" && e.message.role === "assistant").map((e) => textOf(e.message).trim()).filter((t) => t !== "");

test("RPC compact: a checkpoint turn that ends without a save cancels the manual request; the request leaves the model's context", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(manualScript(() => ({ text: "Nothing worth saving yet." })));
  const setup = freshSetup(model.url, BIG_FILES);
  const rpc = startRpc(setup, { env: memorydEnv() });
  try {
    assert.deepEqual(answers(await ask(rpc, "read a.txt, b.txt and c.txt")), [READ_DONE]);
    const from = rpc.events.length;
    rpc.send({ id: "c1", type: "compact" });
    await rpc.waitFor((ev) => ev.some((e) => e.type === "response" && e.id === "c1"), 60_000, "the compact response");
    const events = rpc.events.slice(from);
    const response = events.find((e) => e.type === "response" && e.id === "c1");
    // The model was asked, answered without a save: Pi's compaction is cancelled, nothing compacted.
    assert.ok(model.requests.some(lastIsManual), "the model was asked for the checkpoint");
    assert.deepEqual([response.success, response.error], [false, "Compaction cancelled"], JSON.stringify(response));
    assert.ok(answers(events).includes("Nothing worth saving yet."));
    const stderr = rpc.stderr();
    assert.deepEqual(traced(stderr, "manual_turn").map((t) => t.outcome), ["not_saved"], stderr);
    assert.deepEqual(traced(stderr, "manual_cancelled").map((t) => t.why), ["not_saved"], stderr);
    assert.deepEqual(traced(stderr, "rollover_prepared"), []);
    assert.deepEqual(traced(stderr, "error"), [], stderr);
    // The user is told (RPC: Pi's notify record).
    const notices = events.filter((e) => e.type === "extension_ui_request" && e.method === "notify").map((e) => e.message);
    assert.deepEqual(notices, ["memoryd: no checkpoint was saved, so /compact did not compact"]);
    const st = await stateOf(stderr);
    assert.deepEqual([st.window_id, st.phase, st.manual, st.fence_active], ["w1", "READY", undefined, false]);
    // The next request: the session as it was, the checkpoint request gone, tools open.
    const n = model.requests.length;
    assert.deepEqual(answers(await ask(rpc, "hello")), ["hi"]);
    const next = model.requests[n];
    assert.ok(!hasManual(next), "the cancelled checkpoint request is not in the model's context");
    assert.ok(next.messages.some((m) => textOf(m).includes(READ_DONE)), "the rest of w1 is");
  } finally {
    const exit = await rpc.stop();
    await model.close();
    setup.remove();
    assert.equal(exit.code, 0, rpc.stderr());
  }
});

test("a manual request left by a pi killed during its checkpoint turn is cancelled when pi -c attaches", { timeout: hangGuardMs }, async () => {
  const reply = held();
  const model = await startModelServer(manualScript(() => reply.promise));
  const setup = freshSetup(model.url, BIG_FILES);
  const first = startRpc(setup, { env: memorydEnv() });
  let second;
  try {
    await ask(first, "read a.txt, b.txt and c.txt");
    first.send({ id: "c1", type: "compact" });
    await waitFor(() => model.requests.some(lastIsManual), 30_000, "the checkpoint request");
    const armed = await stateOf(first.stderr());
    assert.deepEqual([armed.phase, armed.fence_active], ["MANUAL_AWAITING", true]);
    // Killed: no session_shutdown, so nothing cancels the request in this process.
    await first.kill("SIGKILL");
    const left = await stateOf(first.stderr());
    assert.deepEqual([left.phase, left.fence_active], ["MANUAL_AWAITING", true], "the stale request is still in memoryd");

    second = startRpc(setup, { env: memorydEnv(), args: ["-c"] });
    await waitFor(() => traced(second.stderr(), "manual_cancelled").length > 0, 30_000, () => `the cancel at attach; stderr:\n${second.stderr()}`);
    const [a1] = traced(first.stderr(), "attached");
    const [a2] = traced(second.stderr(), "attached");
    assert.deepEqual([a2.task_id, a2.agent, a2.resumed], [a1.task_id, a1.agent, true], "the same session resumed");
    assert.deepEqual(traced(second.stderr(), "manual_cancelled").map((t) => t.why), ["attach"]);
    const st = await stateOf(second.stderr());
    assert.deepEqual([st.window_id, st.phase, st.manual, st.fence_active], ["w1", "READY", undefined, false]);
    // Tools are open and the stale request is not in the model's context.
    const n = model.requests.length;
    assert.deepEqual(answers(await ask(second, "hello again")), ["hi"]);
    assert.ok(!hasManual(model.requests[n]), "the stale checkpoint request is not in the model's context");
    assert.deepEqual(traced(second.stderr(), "error"), [], second.stderr());
  } finally {
    reply.release({ text: "too late" });
    const exit = second ? await second.stop() : undefined;
    await model.close();
    setup.remove();
    if (exit) assert.equal(exit.code, 0, second.stderr());
  }
});
