// The budget from Pi's settings (settings.ts): each tokenBudget knob, the
// precedence of tokenBudget.defaults, tokenBudget.models keys and the
// PI_TOKEN_BUDGET_* variables, invalid values (the default used, with a
// warning naming the setting and the value), the settings files (missing,
// unreadable, invalid JSON, the project's), the attach budget the extension
// sends, and memoryd accepting it (a changed budget on a re-attach is
// recorded as agent.reattached).
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { after, test } from "node:test";

import { MemorydClient } from "@memoryd/client";
import { optionsFromEnv } from "../dist/index.js";
import { attachBudget } from "../dist/options.js";
import {
  BUDGET_DEFAULTS,
  attachFields,
  piAgentDir,
  readTokenBudget,
  resolveTokenBudget,
  settingsFiles,
  tokenBudgetDisabled,
  warnOnce,
} from "../dist/settings.js";
import { hangGuardMs, memorydPerFile } from "../../testing/memoryd.mjs";

const MODEL = { provider: "anthropic", id: "claude-sonnet-4" };

/** resolveTokenBudget with its warnings collected. */
function resolve(tokenBudget, { model = MODEL, env = {} } = {}) {
  const warnings = [];
  const budget = resolveTokenBudget(tokenBudget, model, env, (l) => warnings.push(l));
  return { budget, warnings };
}

const dirs = [];
after(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A temporary folder with files (name → text; an object is written as JSON). */
function folder(files = {}) {
  const dir = mkdtempSync(join(tmpdir(), "pi-settings-test-"));
  dirs.push(dir);
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, ".."), { recursive: true });
    writeFileSync(join(dir, name), typeof content === "string" ? content : JSON.stringify(content));
  }
  return dir;
}

test("no tokenBudget: memoryd's defaults, no warning", () => {
  assert.deepEqual(resolve({}), { budget: { ...BUDGET_DEFAULTS }, warnings: [] });
  assert.deepEqual(BUDGET_DEFAULTS, {
    reminderRemainingPercent: 0.25,
    reminderRemainingFloorTokens: 21384,
    reminderRemainingCeilingTokens: 60000,
    hardRolloverUsedTokens: 0,
    maxToolOutputChars: 12000,
    historyItemPreviewChars: 400,
    notesMaxFileBytes: 1_000_000,
  });
  assert.deepEqual(attachFields(BUDGET_DEFAULTS), {
    reminder_remaining_percent: 0.25,
    reminder_remaining_floor_tokens: 21384,
    reminder_remaining_ceiling_tokens: 60000,
    hard_rollover_used_tokens: 0,
    max_tool_output_chars: 12000,
    history_item_preview_chars: 400,
    notes_max_file_bytes: 1_000_000,
  });
});

// Each knob: a valid value is used; each invalid one falls back to the default with one warning.
const KNOBS = {
  reminderRemainingPercent: { valid: [0.1, 0.999], invalid: [0, 1, -0.5, 1.5, "0.3", null], rule: "a number strictly between 0 and 1" },
  reminderRemainingFloorTokens: { valid: [1, 30000], invalid: [0, -1, 1.5, "30000", true], rule: "an integer of at least 1" },
  reminderRemainingCeilingTokens: { valid: [1, 90000], invalid: [0, 2.5, "90000", []], rule: "an integer of at least 1" },
  hardRolloverUsedTokens: { valid: [0, 150000], invalid: [-1, 0.5, "150000", {}], rule: "an integer of at least 0 (0: off)" },
  maxToolOutputChars: { valid: [1, 50000], invalid: [0, 100.5, "50000"], rule: "an integer of at least 1" },
  historyItemPreviewChars: { valid: [1, 800], invalid: [0, -400, 1e-3, "800"], rule: "an integer of at least 1" },
  notesMaxFileBytes: {
    valid: [1, 250_000, 1_000_000],
    invalid: [0, 1_000_001, 5e6, 2.5, "250000"],
    rule: "an integer from 1 to 1000000 (it can only lower memoryd's cap)",
  },
};

for (const [knob, { valid, invalid, rule }] of Object.entries(KNOBS)) {
  test(`tokenBudget.${knob}: used when valid; ${invalid.map((v) => JSON.stringify(v)).join(", ")} fall back to the default with a warning`, () => {
    for (const v of valid) assert.deepEqual(resolve({ [knob]: v }), { budget: { ...BUDGET_DEFAULTS, [knob]: v }, warnings: [] }, `${knob} ${v}`);
    for (const v of invalid) {
      assert.deepEqual(
        resolve({ [knob]: v }),
        { budget: { ...BUDGET_DEFAULTS }, warnings: [`tokenBudget.${knob} is ${JSON.stringify(v)}, not ${rule}; using ${BUDGET_DEFAULTS[knob]}`] },
        `${knob} ${JSON.stringify(v)}`,
      );
    }
  });
}

test("precedence of the trigger fields: tokenBudget.<field> < defaults < models '*' < bare provider < 'provider/*' < exact 'provider/id'", () => {
  const p = (v) => ({ reminderRemainingPercent: v });
  const levels = [
    ["top", { reminderRemainingPercent: 0.11 }],
    ["defaults", { defaults: p(0.12) }],
    ["*", { models: { "*": p(0.13) } }],
    ["provider", { models: { anthropic: p(0.14) } }],
    ["provider/*", { models: { "anthropic/*": p(0.15) } }],
    ["exact", { models: { "anthropic/claude-sonnet-4": p(0.16) } }],
  ];
  // Each level beats every level below it, whatever the order of the keys in the file.
  for (let i = 1; i < levels.length; i++) {
    const merged = {};
    for (const [, l] of [...levels.slice(0, i + 1)].reverse()) {
      for (const [k, v] of Object.entries(l)) merged[k] = typeof v === "object" ? { ...merged[k], ...v } : v;
    }
    assert.equal(resolve(merged).budget.reminderRemainingPercent, 0.11 + i / 100, `${levels[i][0]} wins`);
  }
});

test("models keys of other providers and models do not apply; no model: only '*' applies", () => {
  const tokenBudget = {
    models: {
      openai: { reminderRemainingFloorTokens: 1 },
      "openai/*": { reminderRemainingFloorTokens: 2 },
      "anthropic/claude-opus-4": { reminderRemainingFloorTokens: 3 },
      "anthropic/claude-sonnet-4/extra": { reminderRemainingFloorTokens: 4 },
      "*": { reminderRemainingCeilingTokens: 70000 },
    },
  };
  assert.deepEqual(resolve(tokenBudget), { budget: { ...BUDGET_DEFAULTS, reminderRemainingCeilingTokens: 70000 }, warnings: [] });
  assert.deepEqual(resolve({ models: { anthropic: { hardRolloverUsedTokens: 9 }, "*": { hardRolloverUsedTokens: 8 } } }, { model: null }).budget.hardRolloverUsedTokens, 8);
  // A model id holding a slash (a router's): the exact key is provider/id.
  const routed = { provider: "openrouter", id: "anthropic/claude-sonnet-4" };
  const models = { "openrouter/anthropic/claude-sonnet-4": { hardRolloverUsedTokens: 7 }, "openrouter/*": { hardRolloverUsedTokens: 6 } };
  assert.equal(resolve({ models }, { model: routed }).budget.hardRolloverUsedTokens, 7);
});

test("the layers merge field by field: each trigger field from the most specific entry that sets it", () => {
  const { budget, warnings } = resolve({
    reminderRemainingCeilingTokens: 80000,
    defaults: { reminderRemainingPercent: 0.3, hardRolloverUsedTokens: 100000 },
    models: {
      "anthropic/*": { reminderRemainingFloorTokens: 10000 },
      "anthropic/claude-sonnet-4": { reminderRemainingPercent: 0.2 },
    },
  });
  assert.deepEqual(warnings, []);
  assert.deepEqual(budget, {
    ...BUDGET_DEFAULTS,
    reminderRemainingPercent: 0.2,
    reminderRemainingFloorTokens: 10000,
    reminderRemainingCeilingTokens: 80000,
    hardRolloverUsedTokens: 100000,
  });
});

test("an invalid value of a more specific entry falls back to the next valid one, named in the warning", () => {
  const { budget, warnings } = resolve({
    defaults: { reminderRemainingPercent: 0.3 },
    models: { "anthropic/*": { reminderRemainingPercent: 0.4 }, "anthropic/claude-sonnet-4": { reminderRemainingPercent: 1 } },
  });
  assert.equal(budget.reminderRemainingPercent, 0.4);
  assert.deepEqual(warnings, ['tokenBudget.models["anthropic/claude-sonnet-4"].reminderRemainingPercent is 1, not a number strictly between 0 and 1; using 0.4']);
});

test("per-model entries and defaults set only the four trigger fields; the others are warned about and ignored", () => {
  const { budget, warnings } = resolve({
    defaults: { maxToolOutputChars: 5 },
    models: { anthropic: { notesMaxFileBytes: 10, hardRolloverUsedTokens: 5000 } },
  });
  assert.deepEqual(budget, { ...BUDGET_DEFAULTS, hardRolloverUsedTokens: 5000 });
  const only = "only reminderRemainingPercent, reminderRemainingFloorTokens, reminderRemainingCeilingTokens, hardRolloverUsedTokens can be set there";
  assert.deepEqual(warnings, [`tokenBudget.defaults.maxToolOutputChars is ignored: ${only}`, `tokenBudget.models["anthropic"].notesMaxFileBytes is ignored: ${only}`]);
});

test("malformed structure: unknown keys, a glob no model matches, defaults/models/entries that are not objects", () => {
  const { budget, warnings } = resolve({
    reminderPercent: 0.3,
    defaults: 5,
    models: { "anthropic/claude-*": { reminderRemainingPercent: 0.3 }, anthropic: "fast" },
  });
  assert.deepEqual(budget, { ...BUDGET_DEFAULTS });
  assert.deepEqual(warnings, [
    "tokenBudget.reminderPercent is not a token budget setting; ignored (the settings: reminderRemainingPercent, reminderRemainingFloorTokens, reminderRemainingCeilingTokens, hardRolloverUsedTokens, maxToolOutputChars, historyItemPreviewChars, notesMaxFileBytes, defaults, models)",
    "tokenBudget.defaults is 5, not an object; ignored",
    'tokenBudget.models["anthropic/claude-*"] is ignored: a key is "<provider>/<model id>", "<provider>/*", "<provider>" or "*"',
    'tokenBudget.models["anthropic"] is "fast", not an object; ignored',
  ]);
  assert.deepEqual(resolve({ models: [1] }).warnings, ["tokenBudget.models is [1], not an object; ignored"]);
});

test("PI_TOKEN_BUDGET_REMINDER_PERCENT wins over every settings value, model overrides included", () => {
  const tokenBudget = { reminderRemainingPercent: 0.1, models: { "anthropic/claude-sonnet-4": { reminderRemainingPercent: 0.2 } } };
  assert.deepEqual(resolve(tokenBudget, { env: { PI_TOKEN_BUDGET_REMINDER_PERCENT: "0.4" } }), {
    budget: { ...BUDGET_DEFAULTS, reminderRemainingPercent: 0.4 },
    warnings: [],
  });
  // Invalid: the settings' value for the model, with a warning naming the variable.
  for (const bad of ["1", "0", "abc", "40%"]) {
    const shown = Number.isFinite(Number(bad)) ? bad : JSON.stringify(bad);
    assert.deepEqual(
      resolve(tokenBudget, { env: { PI_TOKEN_BUDGET_REMINDER_PERCENT: bad } }),
      {
        budget: { ...BUDGET_DEFAULTS, reminderRemainingPercent: 0.2 },
        warnings: [`PI_TOKEN_BUDGET_REMINDER_PERCENT is ${shown}, not a number strictly between 0 and 1; using 0.2`],
      },
      bad,
    );
  }
  assert.deepEqual(resolve({}, { env: { PI_TOKEN_BUDGET_REMINDER_PERCENT: "" } }), { budget: { ...BUDGET_DEFAULTS }, warnings: [] }, "empty: unset");
});

test("PI_TOKEN_BUDGET_HARD_ROLLOVER_TOKENS wins over every settings value; 0 turns the hard rollover off", () => {
  const tokenBudget = { defaults: { hardRolloverUsedTokens: 100000 }, models: { anthropic: { hardRolloverUsedTokens: 120000 } } };
  assert.equal(resolve(tokenBudget, { env: { PI_TOKEN_BUDGET_HARD_ROLLOVER_TOKENS: "90000" } }).budget.hardRolloverUsedTokens, 90000);
  assert.equal(resolve(tokenBudget, { env: { PI_TOKEN_BUDGET_HARD_ROLLOVER_TOKENS: "0" } }).budget.hardRolloverUsedTokens, 0);
  for (const bad of ["-1", "1.5", "lots"]) {
    const shown = Number.isFinite(Number(bad)) ? bad : JSON.stringify(bad);
    assert.deepEqual(resolve(tokenBudget, { env: { PI_TOKEN_BUDGET_HARD_ROLLOVER_TOKENS: bad } }), {
      budget: { ...BUDGET_DEFAULTS, hardRolloverUsedTokens: 120000 },
      warnings: [`PI_TOKEN_BUDGET_HARD_ROLLOVER_TOKENS is ${shown}, not an integer of at least 0 (0: off); using 120000`],
    });
  }
});

test("PI_TOKEN_BUDGET_DISABLED=1 disables the extension; any other value does not", () => {
  assert.equal(tokenBudgetDisabled({ PI_TOKEN_BUDGET_DISABLED: "1" }), true);
  for (const v of [undefined, "", "0", "true"]) assert.equal(tokenBudgetDisabled({ PI_TOKEN_BUDGET_DISABLED: v }), false, String(v));
});

test("the agent folder: PI_CODING_AGENT_DIR (Pi's), else PI_AGENT_DIR, else ~/.pi/agent; ~ is the home folder", () => {
  assert.equal(piAgentDir({ PI_CODING_AGENT_DIR: "/a/pi", PI_AGENT_DIR: "/b/pi" }), "/a/pi");
  assert.equal(piAgentDir({ PI_AGENT_DIR: "/b/pi" }), "/b/pi");
  assert.equal(piAgentDir({ PI_CODING_AGENT_DIR: "", PI_AGENT_DIR: "/b/pi" }), "/b/pi");
  assert.equal(piAgentDir({}), join(homedir(), ".pi", "agent"));
  assert.equal(piAgentDir({ PI_AGENT_DIR: "~/pi-agent" }), join(homedir(), "pi-agent"));
  // The project's .pi/settings.json only when Pi trusts the project, as Pi's SettingsManager reads it.
  assert.deepEqual(settingsFiles({ PI_CODING_AGENT_DIR: "/a/pi" }, "/work/p", false), ["/a/pi/settings.json"]);
  assert.deepEqual(settingsFiles({ PI_CODING_AGENT_DIR: "/a/pi" }, "/work/p", true), ["/a/pi/settings.json", "/work/p/.pi/settings.json"]);
});

test("settings files: a missing one is none; unreadable, invalid JSON or a tokenBudget that is not an object: a warning, the file skipped", () => {
  const dir = folder({
    "good.json": { theme: "dark", tokenBudget: { maxToolOutputChars: 9000, models: { "*": { reminderRemainingPercent: 0.3 } } } },
    "broken.json": '{"tokenBudget": {"maxToolOutputChars": 5',
    "not-object.json": { tokenBudget: 7 },
    "no-budget.json": { theme: "light" },
    "bom.json": "\uFEFF" + JSON.stringify({ tokenBudget: { historyItemPreviewChars: 500 } }),
  });
  mkdirSync(join(dir, "a-folder.json")); // reading it fails (EISDIR)
  const warnings = [];
  const files = ["missing.json", "good.json", "broken.json", "not-object.json", "no-budget.json", "a-folder.json", "bom.json"].map((f) => join(dir, f));
  const tokenBudget = readTokenBudget(files, (l) => warnings.push(l));
  assert.deepEqual(tokenBudget, { maxToolOutputChars: 9000, models: { "*": { reminderRemainingPercent: 0.3 } }, historyItemPreviewChars: 500 });
  assert.equal(warnings.length, 3, warnings.join("\n"));
  assert.match(warnings[0], new RegExp(`^${join(dir, "broken.json")} is not valid JSON \\(.+\\); its tokenBudget settings are not used$`));
  assert.equal(warnings[1], `tokenBudget in ${join(dir, "not-object.json")} is 7, not an object; its tokenBudget settings are not used`);
  assert.match(warnings[2], new RegExp(`^could not read ${join(dir, "a-folder.json")} \\(.*EISDIR.*\\); its tokenBudget settings are not used$`));
});

test("the project's settings merge over the agent folder's as Pi merges them (nested objects key by key)", () => {
  const agent = folder({ "settings.json": { tokenBudget: { maxToolOutputChars: 9000, models: { "*": { reminderRemainingPercent: 0.3 }, anthropic: { hardRolloverUsedTokens: 5 } } } } });
  const project = folder({ ".pi/settings.json": { tokenBudget: { maxToolOutputChars: 8000, models: { anthropic: { hardRolloverUsedTokens: 6 } } } } });
  const files = settingsFiles({ PI_CODING_AGENT_DIR: agent }, project, true);
  assert.deepEqual(readTokenBudget(files, assert.fail), {
    maxToolOutputChars: 8000,
    models: { "*": { reminderRemainingPercent: 0.3 }, anthropic: { hardRolloverUsedTokens: 6 } },
  });
});

test("warnOnce says each distinct line once per process", () => {
  const said = [];
  const line = `a warning of ${process.pid} ${Date.now()}`;
  warnOnce(line, (l) => said.push(l));
  warnOnce(line, (l) => said.push(l));
  warnOnce(`${line} (another)`, (l) => said.push(l));
  assert.deepEqual(said, [line, `${line} (another)`]);
});

/** A Pi extension context as attachBudget reads it. */
function fakeCtx({ cwd, model = { ...MODEL, contextWindow: 200000 }, hasUI = false, mode = "print", trusted = false, notes = [] }) {
  return { cwd, model, hasUI, mode, isProjectTrusted: () => trusted, ui: { notify: (text, type) => notes.push([text, type]) } };
}

/** Runs fn with process.stderr.write collected; returns what was written. */
function stderrOf(fn) {
  const written = [];
  const write = process.stderr.write;
  process.stderr.write = (s) => (written.push(String(s)), true);
  try {
    fn();
  } finally {
    process.stderr.write = write;
  }
  return written.join("");
}

test("attachBudget (the entry's, optionsFromEnv): the settings for ctx.model, the configured budget's fields win, the context window", () => {
  const agent = folder({
    "settings.json": {
      tokenBudget: { historyItemPreviewChars: 600, models: { "anthropic/*": { hardRolloverUsedTokens: 150000 }, openai: { hardRolloverUsedTokens: 1 } } },
    },
  });
  const env = { PI_CODING_AGENT_DIR: agent, PI_TOKEN_BUDGET_REMINDER_PERCENT: "0.2" };
  const options = optionsFromEnv(env);
  assert.deepEqual(options.piSettings, { env });
  const cwd = folder();
  assert.deepEqual(attachBudget(options, fakeCtx({ cwd })), {
    ...attachFields({ ...BUDGET_DEFAULTS, historyItemPreviewChars: 600, hardRolloverUsedTokens: 150000, reminderRemainingPercent: 0.2 }),
    context_window: 200000,
  });
  // MEMORYD_CONTEXT_WINDOW is the configured budget's context_window: it wins over the model's.
  const withWindow = optionsFromEnv({ ...env, MEMORYD_CONTEXT_WINDOW: "64000" });
  assert.equal(attachBudget(withWindow, fakeCtx({ cwd })).context_window, 64000);
  // An SDK caller's budget wins field by field; without piSettings nothing is read.
  assert.equal(attachBudget({ ...options, budget: { hard_rollover_used_tokens: 7 } }, fakeCtx({ cwd })).hard_rollover_used_tokens, 7);
  assert.deepEqual(attachBudget({}, fakeCtx({ cwd })), { context_window: 200000 });
  // A trusted project's settings count; an untrusted one's do not.
  const project = folder({ ".pi/settings.json": { tokenBudget: { historyItemPreviewChars: 700 } } });
  assert.equal(attachBudget(options, fakeCtx({ cwd: project, trusted: true })).history_item_preview_chars, 700);
  assert.equal(attachBudget(options, fakeCtx({ cwd: project, trusted: false })).history_item_preview_chars, 600);
});

test("attachBudget warns once per process: a stderr line outside the TUI, a notification with a UI", () => {
  const agent = folder({ "settings.json": { tokenBudget: { maxToolOutputChars: `x-${process.pid}-${Date.now()}` } } });
  const options = optionsFromEnv({ PI_CODING_AGENT_DIR: agent });
  const bad = JSON.stringify(readTokenBudget([join(agent, "settings.json")], assert.fail).maxToolOutputChars);
  const line = `Pi settings: tokenBudget.maxToolOutputChars is ${bad}, not an integer of at least 1; using 12000`;
  const notes = [];
  let budget;
  const first = stderrOf(() => (budget = attachBudget(options, fakeCtx({ cwd: agent, hasUI: true, mode: "rpc", notes }))));
  assert.equal(budget.max_tool_output_chars, 12000);
  assert.equal(first, `[memoryd] ${line}\n`);
  assert.deepEqual(notes, [[line, "warning"]]);
  // Said already: not again, in any mode.
  assert.equal(stderrOf(() => attachBudget(options, fakeCtx({ cwd: agent }))), "");
  // The TUI: a notification only (another bad value, so not said before).
  const tui = folder({ "settings.json": { tokenBudget: { historyItemPreviewChars: -1 - process.pid } } });
  const tuiNotes = [];
  const out = stderrOf(() => attachBudget(optionsFromEnv({ PI_CODING_AGENT_DIR: tui }), fakeCtx({ cwd: tui, hasUI: true, mode: "tui", notes: tuiNotes })));
  assert.equal(out, "");
  assert.deepEqual(tuiNotes, [[`Pi settings: tokenBudget.historyItemPreviewChars is ${-1 - process.pid}, not an integer of at least 1; using 400`, "warning"]]);
});

let client;
memorydPerFile(MemorydClient, (_md, c) => (client = c));

test("memoryd accepts every budget the settings allow, records it, and records a changed budget on a re-attach", { timeout: hangGuardMs }, async () => {
  const key = `/sessions/settings-${process.pid}.jsonl`;
  const edge = attachFields({
    reminderRemainingPercent: 0.999,
    reminderRemainingFloorTokens: 1,
    reminderRemainingCeilingTokens: 1,
    hardRolloverUsedTokens: 0,
    maxToolOutputChars: 1,
    historyItemPreviewChars: 1,
    notesMaxFileBytes: 1_000_000,
  });
  const first = await client.attach({ session_key: key, budget: { ...edge, context_window: 1000 } });
  const changed = attachFields({ ...BUDGET_DEFAULTS, hardRolloverUsedTokens: 5000, notesMaxFileBytes: 1 });
  const again = await client.attach({ session_key: key, budget: { ...changed, context_window: 1000 } });
  assert.equal(again.resumed, true);
  const events = (await client.listEvents({ task_id: first.task_id })).events;
  const budgets = events.filter((e) => e.type === "agent.registered" || e.type === "agent.reattached").map((e) => [e.type, e.data.budget]);
  assert.deepEqual(budgets, [
    ["agent.registered", { ...edge, context_window: 1000 }],
    ["agent.reattached", { ...changed, context_window: 1000 }],
  ]);
});
