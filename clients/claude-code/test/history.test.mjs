// A Claude Code session's transcript is its task's history: the real `claude` CLI, set up by `memoryd
// setup claude-code` (memoryd mcp on stdio, `memoryd hook claude-code` on every event that ends a step, the
// tools allowed) against the scripted model server. A fact
// said before a /compact is found by history_search_contents after it, and the SessionStart hook puts
// memoryd's bootstrap (windows, requests, notes) into the context the model gets after the compaction.
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { memorydApi, startMemoryd } from "../../testing/memoryd.mjs";
import { claude, claudeHome, startModelServer } from "../harness.mjs";

let md;
let model;
let dir;

const auth = () => ({ Authorization: `Bearer ${md.token}` });
const tool = (context, name, args) => memorydApi(md).tool(context, name, args);
const sessionTask = (session) => memorydApi(md).taskOf(`claude-code/${session}`);

/** The model requests logged to file, parsed. */
const requests = (file) => readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));

/** Runs claude in the project name, with its HOME, against the model server on port. */
async function runAt(port, name, args, env = {}) {
  const project = join(dir, name);
  const r = await claude({ md, port, home: join(dir, `home-${name}`), project, args, env });
  assert.equal(r.code, 0, `claude ${args.join(" ")}: ${r.stdout}\n${r.stderr}`);
  return r;
}

/** A project and a fresh HOME set up by memoryd setup claude-code; returns run(args, env) for claude in it. */
function session(name, port) {
  const project = join(dir, name);
  mkdirSync(project, { recursive: true });
  setup(claudeHome(dir, `home-${name}`, project, {}));
  return (args, env) => runAt(port, name, args, env);
}

/** `memoryd setup claude-code` for HOME home: memoryd's MCP server, hooks and permission in its settings. */
function setup(home) {
  const r = spawnSync(md.bin, ["setup", "claude-code", "--addr", new URL(md.url).host], { env: { ...process.env, HOME: home }, encoding: "utf8" });
  assert.equal(r.status, 0, `memoryd setup claude-code: ${r.stdout}${r.stderr}`);
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "memoryd-claude-history-"));
  md = await startMemoryd();
  model = await startModelServer(join(dir, "model.jsonl"));
});

after(async () => {
  model?.stop();
  await md?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("after /compact the real claude gets memoryd's bootstrap and recovers a fact said before it", async () => {
  const run = session("manual", model.port);
  const first = JSON.parse((await run(["-p", "FACT: the password is swordfish", "--output-format", "json"])).stdout);
  const id = first.session_id;
  assert.match(id, /^[0-9a-f-]{36}$/);
  // Claude Code compacts nothing shorter ("Not enough messages to compact").
  await run(["-p", "--resume", id, "a second request"]);
  await run(["-p", "--resume", id, "a third request"]);
  await run(["-p", "--resume", id, "/compact"]);

  // The model finds the fact with history_search_contents, then reads its item with history_read_item.
  const found = await run(["-p", "--resume", id, `CALL_TOOL mcp__memoryd__history_search_contents ${JSON.stringify({ query: "swordfish" })}`]);
  const m = /TOOL_RESULT_SEEN: \{"results":\[\{"item_id":"([^"]+)","window_id":"w1"/.exec(found.stdout);
  assert.ok(m, `the fact said before the compaction is not found in w1: ${found.stdout}`);
  const read = await run(["-p", "--resume", id, `CALL_TOOL mcp__memoryd__history_read_item ${JSON.stringify({ window_id: "w1", item_id: m[1] })}`]);
  assert.match(read.stdout, /TOOL_RESULT_SEEN: .*FACT: the password is swordfish/);

  // The requests after the compaction carry memoryd's bootstrap, from the SessionStart hook.
  const carrying = requests(join(dir, "model.jsonl")).filter((q) => JSON.stringify(q.body ?? {}).includes("Current context window id: w2"));
  assert.ok(carrying.length > 0, "no model request carries the bootstrap of window w2");
  assert.ok(JSON.stringify(carrying.at(-1).body).includes("FACT: the password is swordfish"), "the bootstrap lists the user's request");

  // The task holds the session's history: two windows, the first with the fact.
  const task = await sessionTask(id);
  const { details } = await tool({ task_id: task.task_id, agent: "/root" }, "history_list_windows");
  assert.deepEqual(details.windows.map((w) => w.window_id), ["w1", "w2"]);

  // The compaction moved the session's window with its history's.
  const state = await (await fetch(`${md.url}/v1/state?task_id=${task.task_id}&agent=/root`, { headers: auth() })).json();
  assert.equal(state.window_id, "w2", `after the compaction the state's window is ${state.window_id}`);

  // get_context_remaining answers from the transcript's usage: the last assistant message's, as the hooks reported it.
  const { events } = await (await fetch(`${md.url}/v1/events?limit=5000`, { headers: auth() })).json();
  const usage = events.filter((e) => e.type === "lifecycle.usage_reported" && e.data.task_id === task.task_id).at(-1);
  assert.ok(usage && usage.data.tokens_used > 1000, `no usage reported for the session: ${JSON.stringify(usage)}`);
});

test("the real claude's automatic compaction: the next request holds the bootstrap, and the fact is found", async () => {
  // A few turns, then one answer that reports 990,000 input tokens, past the 20,000-token window given to
  // claude: its next turn compacts before its first request (docs/claude-code.md, §5). A compaction needs
  // a few turns before it ("Not enough messages to compact", else "Prompt is too long").
  const big = await startModelServer(join(dir, "model-big.jsonl"), { MS_INPUT_TOKENS: "990000" });
  try {
    const run = session("auto", model.port);
    const env = { CLAUDE_CODE_AUTO_COMPACT_WINDOW: "20000" };
    const first = JSON.parse((await run(["-p", "FACT: the fruit is kumquat", "--output-format", "json"], env)).stdout);
    const id = first.session_id;
    await run(["-p", "--resume", id, "a second request"], env);
    await run(["-p", "--resume", id, "a third request"], env);
    await runAt(big.port, "auto", ["-p", "--resume", id, "a large request"], env);
    const before = requests(join(dir, "model.jsonl")).length;
    const r = await run(["-p", "--resume", id, `CALL_TOOL mcp__memoryd__history_search_contents ${JSON.stringify({ query: "kumquat" })}`], env);
    assert.match(r.stdout, /TOOL_RESULT_SEEN: \{"results":\[\{"item_id":"[^"]+","window_id":"w1"/);
    const qs = requests(join(dir, "model.jsonl")).slice(before);
    const compaction = qs.findIndex((q) => /Please provide your summary|create a detailed summary/i.test(JSON.stringify(q.body ?? {})));
    assert.ok(compaction >= 0, "claude did not compact");
    const after = qs.slice(compaction + 1).filter((q) => q.body?.messages);
    assert.ok(after.length > 0 && JSON.stringify(after[0].body).includes("Current context window id: w2"),
      "the first request after the automatic compaction does not carry the bootstrap of w2");
  } finally {
    big.stop();
  }
});

test("the real claude's context filling: memoryd's reminder reaches the model after a tool call, once, before Claude Code compacts", async () => {
  // Every answer reports 130,000 input tokens: past the reminder (at 125,250 of the 167,000 tokens Claude
  // Code fills before it compacts a 200,000-token window) and short of the compaction.
  const full = await startModelServer(join(dir, "model-full.jsonl"), { MS_INPUT_TOKENS: "130000" });
  try {
    const run = session("remind", full.port);
    const call = `CALL_TOOL mcp__memoryd__get_context_remaining {}`;
    const id = JSON.parse((await run(["-p", call, "--output-format", "json"])).stdout).session_id;
    // The second call's PreToolUse hook has synced the first answer's usage.
    const second = await run(["-p", "--resume", id, call]);
    assert.match(second.stdout, /"remaining_tokens":36980/, "get_context_remaining does not count the 167,000 tokens Claude Code fills, less 130,020");
    const qs = requests(join(dir, "model-full.jsonl")).map((q) => JSON.stringify(q.body ?? {}));
    const reminded = qs.findIndex((q) => q.includes("context_window_reminder"));
    assert.ok(reminded > 0, "no model request carries memoryd's reminder");
    assert.match(qs[reminded], /The context window w1 is getting full/);
    assert.equal(qs.at(-1).split("<context_window_reminder").length - 1, 1, "the reminder came more than once in one window");
    assert.ok(!qs.some((q) => /Please provide your summary|create a detailed summary/i.test(q)), "claude compacted");
    const task = await sessionTask(id);
    const { events } = await (await fetch(`${md.url}/v1/events?limit=5000`, { headers: auth() })).json();
    const delivered = events.filter((e) => e.type === "lifecycle.control_delivered" && e.data.task_id === task.task_id);
    assert.deepEqual(delivered.map((e) => [e.data.kind, e.data.window_id]), [["reminder", "w1"]]);
  } finally {
    full.stop();
  }
});

test("a sub-agent of the real claude is a child agent whose history and notes the parent reads", async () => {
  const run = session("sub", model.port);
  const sub = `CALL_TOOL mcp__memoryd__notes_write_file ${JSON.stringify({ path: "found.md", text: "the sub-agent's finding: 31337" })}`;
  const agent = `CALL_TOOL Agent ${JSON.stringify({ description: "probe sub", prompt: sub, subagent_type: "general-purpose" })}`;
  const first = JSON.parse((await run(["-p", agent, "--output-format", "json", "--allowedTools", "Agent"])).stdout);
  const task = await sessionTask(first.session_id);
  const child = task.agents.find((a) => a.session_key.startsWith(`claude-code/${first.session_id}/`));
  assert.ok(child, `no child agent: ${JSON.stringify(task.agents)}`);
  const root = { task_id: task.task_id, agent: "/root" };
  const { details } = await tool(root, "history_search_contents", { query: "31337", agent_name: child.agent });
  assert.ok(details.results.length > 0, "the parent finds nothing in its sub-agent's history");
  const note = await tool(root, "notes_read_file", { path: `${child.agent}/notes/found.md` });
  assert.match(JSON.stringify(note), /31337/);
});
