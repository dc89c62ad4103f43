// Pi's settings in the REAL pi CLI (print mode, the extension loaded with -e
// from its build, a scripted model server):
// - tokenBudget in the agent folder's settings.json (a per-model override, an
//   invalid value) is the budget memoryd's attach recorded (agent.registered);
// - PI_TOKEN_BUDGET_DISABLED=1: none of memoryd's tools reach the model and no
//   memoryd is started, though a binary is configured;
// - hardRolloverUsedTokens below the session's usage: memoryd answers the usage
//   report with due "hard_rollover" and the fallback checkpoint message reaches
//   the model.
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { TOOL_NAMES } from "@memoryd/client";
import { freePort, hangGuardMs, memorydBinary } from "../../../testing/memoryd.mjs";
import { healthz } from "../start/pi-cli.mjs";
import { conversation, startModelServer, textOf } from "./model-server.mjs";
import { MODEL, PROVIDER, freshSetup, memorydForPi, runPi, traced } from "./pi-cli.mjs";

const memoryd = memorydForPi();
const memorydEnv = () => memoryd.env({ MEMORYD_AUTOSTART: "0" });

/** A fresh setup whose agent folder holds settings.json with tokenBudget. */
function setupWith(modelUrl, tokenBudget) {
  const setup = freshSetup(modelUrl);
  writeFileSync(join(setup.agentDir, "settings.json"), JSON.stringify({ tokenBudget }, null, 2));
  return setup;
}

/** The budget memoryd recorded when the session pi attached as registered. */
async function registeredBudget(stderr) {
  const [attached] = traced(stderr, "attached");
  assert.ok(attached, `pi never attached to memoryd:\n${stderr}`);
  const { events } = await memoryd.client.listEvents({ task_id: attached.task_id });
  const registered = events.find((e) => e.type === "agent.registered" && e.data.agent === attached.agent);
  return registered.data.budget;
}

test("settings.json tokenBudget (with a per-model override and an invalid value) is the budget memoryd's attach recorded", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(() => ({ text: "hello" }));
  const setup = setupWith(model.url, {
    reminderRemainingFloorTokens: 30000,
    maxToolOutputChars: 8000,
    historyItemPreviewChars: 300,
    notesMaxFileBytes: 2_000_000,
    defaults: { reminderRemainingPercent: 0.2 },
    models: { [`${PROVIDER}/*`]: { reminderRemainingCeilingTokens: 50000 }, [`${PROVIDER}/${MODEL}`]: { hardRolloverUsedTokens: 150000 }, other: { hardRolloverUsedTokens: 1 } },
  });
  try {
    const r = await runPi(setup, ["-p", "hi"], { env: memorydEnv() });
    assert.equal(r.code, 0, r.stderr);
    const { context_window, ...budget } = await registeredBudget(r.stderr);
    assert.deepEqual(budget, {
      reminder_remaining_percent: 0.2,
      reminder_remaining_floor_tokens: 30000,
      reminder_remaining_ceiling_tokens: 50000,
      hard_rollover_used_tokens: 150000,
      max_tool_output_chars: 8000,
      history_item_preview_chars: 300,
      notes_max_file_bytes: 1_000_000,
    });
    assert.ok(context_window > 0, `the model's context window: ${context_window}`);
    const warnings = r.stderr.split("\n").filter((l) => l.startsWith("[memoryd] Pi settings: "));
    assert.deepEqual(warnings, [
      "[memoryd] Pi settings: tokenBudget.notesMaxFileBytes is 2000000, not an integer from 1 to 1000000 (it can only lower memoryd's cap); using 1000000",
    ]);
  } finally {
    await model.close();
    setup.remove();
  }
});

test("PI_TOKEN_BUDGET_DISABLED=1: the model gets none of memoryd's tools and no memoryd is started", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(() => ({ text: "plain" }));
  const setup = freshSetup(model.url);
  const url = `http://127.0.0.1:${await freePort()}`;
  const xdg = join(setup.dir, "xdg");
  try {
    const env = { PI_TOKEN_BUDGET_DISABLED: "1", MEMORYD_BIN: await memorydBinary(), MEMORYD_URL: url, XDG_DATA_HOME: xdg, MEMORYD_DEBUG: "1" };
    const r = await runPi(setup, ["-p", "hi"], { env });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), "plain");
    assert.equal(model.requests.length, 1);
    const offered = (model.requests[0].tools ?? []).map((t) => t.function.name);
    assert.ok(offered.length > 0, "Pi's own tools are offered");
    assert.deepEqual(offered.filter((n) => TOOL_NAMES.includes(n)), [], `offered: ${offered}`);
    assert.doesNotMatch(JSON.stringify(model.requests[0].messages), /notes_write_file|new_context/, "no workflow guidance");
    // Nothing of the extension ran: no trace, no spawn, no memoryd log, nothing at MEMORYD_URL.
    assert.doesNotMatch(r.stderr, /\[memoryd\]/, r.stderr);
    assert.equal(existsSync(join(xdg, "memoryd")), false, "no memoryd folder (its log and database)");
    assert.equal(await healthz(url), false, "nothing listens at MEMORYD_URL");
  } finally {
    await model.close();
    setup.remove();
  }
});

test("hardRolloverUsedTokens crossed by the session's usage: due hard_rollover, and the fallback checkpoint message reaches the model", { timeout: hangGuardMs }, async () => {
  const fallbackTag = '<context_window_fallback window_id="w1"/>';
  const model = await startModelServer((body) => {
    const conv = conversation(body);
    if (conv.at(-1).role === "tool") return { text: "checkpoint saved" };
    if (conv.some((m) => textOf(m).includes(fallbackTag))) return { calls: [["notes_write_file", { path: "checkpoint.md", text: "goal: hi" }]] };
    return { text: "hello" };
  });
  // The first answer's usage (the system prompt alone is over 100 tokens) crosses it.
  const setup = setupWith(model.url, { hardRolloverUsedTokens: 100 });
  try {
    const r = await runPi(setup, ["-p", "hi"], { env: memorydEnv() });
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await registeredBudget(r.stderr)).hard_rollover_used_tokens, 100);
    const dues = traced(r.stderr, "usage").map((u) => u.due);
    assert.equal(dues[0], "hard_rollover", r.stderr);
    assert.equal(dues.filter((d) => d === "hard_rollover").length, 1, `hard_rollover once: ${dues}`);
    const reached = model.requests.findIndex((b) => conversation(b).some((m) => textOf(m).includes(fallbackTag)));
    assert.equal(reached, 1, "the request after the first answer carries the fallback message");
    assert.deepEqual(traced(r.stderr, "deliver").map((d) => d.kind), ["fallback"]);
  } finally {
    await model.close();
    setup.remove();
  }
});
