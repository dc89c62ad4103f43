// The extension in the REAL pi CLI (the package's bin), loaded with -e from its
// build, in print mode (-p), JSON mode (--mode json) and RPC mode (--mode rpc),
// with Pi's default settings (nothing but models.json in a fresh agent folder),
// against a real memoryd and a scripted OpenAI-compatible model server:
// - the 11 memoryd tools reach the model's first request as memoryd serves them;
// - new_context rolls the window over in the same process: the next request's
//   only conversation is the bootstrap and the continuation, and the model reads
//   its checkpoint note and a w1 history item;
// - a session too small for Pi to compact: the model's next request says the
//   window was not reset, and memoryd is READY in w1;
// - memoryd unreachable: the tool result tells the model memoryd is not available.
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { TOOL_NAMES } from "@memoryd/client";
import { freePort, hangGuardMs } from "../../../testing/memoryd.mjs";
import { conversation, startModelServer, textOf } from "./model-server.mjs";
import { assertCleanStderr, freshSetup, jsonLines, memorydForPi, runPi, startRpc, traced } from "./pi-cli.mjs";
import {
  BIG_FILES,
  CHECKPOINT_TEXT,
  PROMPT,
  TASK_MARKER,
  recoveredAt,
  rolloverRequests,
  rolloverScript,
  settledAfterRecovery,
  smallScript,
} from "./scenarios.mjs";

const memoryd = memorydForPi();
/** What pi needs to reach memoryd, with the extension's trace on stderr (MEMORYD_DEBUG=1). */
const memorydEnv = () => memoryd.env();
const stateOf = memoryd.stateOf;
/** The assertions shared by the three modes on a large session's new_context rollover. */
async function assertRollover(requests, stderr) {
  const { first, firstW2, firstW2Index, results, last } = rolloverRequests(requests);
  const served = await memoryd.client.listTools();
  // The 11 tools as memoryd serves them (name, description, JSON Schema).
  const offered = new Map(first.tools.map((t) => [t.function.name, t.function]));
  for (const spec of served) {
    const t = offered.get(spec.name);
    assert.ok(t, `${spec.name} missing from the first request's tools: ${[...offered.keys()]}`);
    assert.equal(t.description, spec.description, spec.name);
    assert.deepEqual(t.parameters, spec.parameters, spec.name);
  }
  assert.deepEqual(served.map((s) => s.name).sort(), [...TOOL_NAMES].sort());
  // The rollover happened in this process: the new window's request holds the
  // bootstrap and the continuation only, nothing of w1.
  assert.ok(firstW2Index > 0, `no request after the rollover; ${requests.length} requests`);
  const conv = conversation(firstW2).map(textOf);
  assert.equal(conv.length, 2, `w2's first request: ${JSON.stringify(conv.map((c) => c.slice(0, 120)))}`);
  assert.match(conv[0], /<context_window_reset\/>/);
  assert.match(conv[0], /Current context window id: w2/);
  assert.match(conv[1], /^<context_window_continue window_id="w2" previous_window_id="w1"\/>/);
  assert.ok(!conv.join("\n").includes("a.txt line 0000"), "nothing of w1's tool results is kept");
  // The model recovers: its checkpoint note and the w1 user item.
  assert.ok(results.notes_read_file?.includes(CHECKPOINT_TEXT), `notes_read_file: ${results.notes_read_file}`);
  assert.ok(results.history_read_item?.includes(PROMPT), `history_read_item: ${results.history_read_item}`);
  assert.match(results.history_read_item, /"window_id":"w1"/);
  assert.equal(textOf(last.messages.at(-1)).length > 0, true);
  // memoryd: committed, READY in w2, the request served.
  const [committed] = traced(stderr, "rollover_committed");
  assert.deepEqual([committed?.previousWindowId, committed?.windowId], ["w1", "w2"], stderr);
  const st = await stateOf(stderr);
  assert.deepEqual([st.window_id, st.phase, st.pending_new_context], ["w2", "READY", false]);
  assertCleanStderr(stderr);
}

/** The JSONL session file pi wrote under the agent folder. */
function sessionEntries(setup) {
  const files = [];
  const walk = (d) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.name.endsWith(".jsonl")) files.push(join(d, e.name));
    }
  };
  walk(join(setup.agentDir, "sessions"));
  assert.equal(files.length, 1, `session files: ${files}`);
  return jsonLines(readFileSync(files[0], "utf8"));
}

test("print mode: new_context rolls over and the model continues in w2 before pi exits (Pi's defaults)", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(rolloverScript);
  const setup = freshSetup(model.url, BIG_FILES);
  try {
    const r = await runPi(setup, ["-p", PROMPT], { env: memorydEnv() });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), `RECOVERED: back on ${TASK_MARKER}`);
    await assertRollover(model.requests, r.stderr);
    // The session file holds the compaction, the continuation and the w2 turn.
    const entries = sessionEntries(setup);
    const compaction = entries.findIndex((e) => e.type === "compaction");
    assert.ok(compaction > 0 && entries[compaction].summary.includes("<context_window_reset/>"));
    assert.ok(entries.slice(compaction).some((e) => e.type === "custom_message" && e.customType === "pi-token-budget:continue"));
    assert.ok(entries.slice(compaction).some((e) => e.type === "message" && textOf(e.message).startsWith("RECOVERED")));
  } finally {
    await model.close();
    setup.remove();
  }
});

test("JSON mode: the rollover and the new window's turn are in the event stream", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(rolloverScript);
  const setup = freshSetup(model.url, BIG_FILES);
  try {
    const r = await runPi(setup, ["--mode", "json", PROMPT], { env: memorydEnv() });
    assert.equal(r.code, 0, r.stderr);
    const events = jsonLines(r.stdout);
    assert.equal(events[0].type, "session");
    const compacted = events.findIndex((e) => e.type === "compaction_end" && e.result?.summary?.includes("<context_window_reset/>"));
    assert.ok(compacted > 0, `no compaction_end: ${events.map((e) => e.type)}`);
    assert.ok(recoveredAt(events) > compacted, "the model answered in w2 after the compaction");
    assert.equal(events.at(-1).type, "agent_settled");
    await assertRollover(model.requests, r.stderr);
  } finally {
    await model.close();
    setup.remove();
  }
});

test("RPC mode: the rollover and the new window's turn follow one prompt command", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(rolloverScript);
  const setup = freshSetup(model.url, BIG_FILES);
  const rpc = startRpc(setup, { env: memorydEnv() });
  try {
    rpc.send({ id: "p1", type: "prompt", message: PROMPT });
    await rpc.waitFor(settledAfterRecovery, 60_000, "the w2 answer and agent_settled");
    await assertRollover(model.requests, rpc.stderr());
  } finally {
    const exit = await rpc.stop();
    await model.close();
    setup.remove();
    assert.equal(exit.code, 0, rpc.stderr());
  }
});

test("print mode, a session too small to compact: the model's next request says the window was not reset", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(smallScript);
  const setup = freshSetup(model.url);
  try {
    const r = await runPi(setup, ["-p", "start over"], { env: memorydEnv() });
    assert.equal(r.code, 0, r.stderr);
    const ncAt = model.requests.findIndex((b) => conversation(b).some((m) => m.tool_calls?.some((c) => c.function.name === "new_context")));
    assert.ok(ncAt > 0, "new_context was called");
    const next = conversation(model.requests[ncAt]);
    const notice = textOf(next.at(-1));
    assert.equal(next.at(-1).role, "user");
    assert.match(notice, /^<context_window_not_reset window_id="w1"\/> The context window was not reset \(Compaction failed: Nothing to compact \(session too small\)\); you are still in w1 and can keep working\.$/);
    assert.equal(r.stdout.trim(), "OK, continuing in this window.");
    const [failed] = traced(r.stderr, "rollover_failed");
    assert.equal(failed?.aborted, false, r.stderr);
    const st = await stateOf(r.stderr);
    assert.deepEqual([st.window_id, st.phase, st.pending_new_context, st.pending_window_id], ["w1", "READY", false, undefined]);
    assertCleanStderr(r.stderr);
  } finally {
    await model.close();
    setup.remove();
  }
});


test("print mode, memoryd unreachable: the tool result tells the model memoryd is not available", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer((body) =>
    body.messages.at(-1).role === "tool" ? { text: "noted" } : { calls: [["notes_write_file", { path: "checkpoint.md", text: "x" }]] },
  );
  const setup = freshSetup(model.url);
  try {
    // Nothing listens there; no memoryd binary for the extension to start.
    const r = await runPi(setup, ["-p", "take a note"], {
      env: { MEMORYD_URL: `http://127.0.0.1:${await freePort()}`, MEMORYD_TOKEN: "t", MEMORYD_AUTOSTART: "0" },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(model.requests.length, 2);
    // The 11 tools are still offered (by name).
    const names = model.requests[0].tools.map((t) => t.function.name);
    for (const n of TOOL_NAMES) assert.ok(names.includes(n), `${n} offered`);
    const result = model.requests[1].messages.at(-1);
    assert.equal(result.role, "tool");
    // One short line for the model: the cause, never a request to start services (the user was told).
    assert.match(textOf(result), /^memoryd is not available \(nothing answers at http:\/\/127\.0\.0\.1:\d+, and memoryd was not started: MEMORYD_AUTOSTART=0 turns starting it off\)\. The memory tools do not work in this session; the user has been told how to fix it\.$/);
    assert.doesNotMatch(textOf(result), /memoryd serve|go run|Start it/);
    assert.ok(!existsSync(join(setup.cwd, "checkpoint.md")), "no local fallback");
    assert.equal(r.stdout.trim(), "noted");
  } finally {
    await model.close();
    setup.remove();
  }
});
