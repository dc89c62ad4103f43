// A Codex session's memory in memoryd: the real `codex` CLI, set up by `memoryd setup codex` (memoryd mcp on
// stdio, `memoryd hook codex` on its hook events, trusted), against the scripted Responses-API server. An MCP
// call writes a note as the session's agent; an automatic compaction splits the history into two windows; the
// next model request carries memoryd's bootstrap; and a fact said before the compaction is recovered with the
// history tools after it.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { memorydApi, startMemoryd } from "../../testing/memoryd.mjs";
import { codexExec, codexHome, startModelServer } from "../harness.mjs";

let md;
let model;
let big;
let dir;

const auth = () => ({ Authorization: `Bearer ${md.token}` });
const tool = (context, name, args) => memorydApi(md).tool(context, name, args);
const sessionTask = (session) => memorydApi(md).taskOf(`codex/${session}`);

/** The model requests logged to file, parsed. */
const requests = (file) => readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));

/** The text of the output the model got for its call callId, from the requests logged to file. */
function toolOutput(file, callId) {
  for (const q of requests(file).reverse()) {
    const out = (q.body?.input ?? []).find((i) => i.type === "function_call_output" && i.call_id === callId);
    if (out) return typeof out.output === "string" ? out.output : out.output.map((p) => p.text ?? "").join("\n");
  }
  return undefined;
}

/** The call id of the model's latest call of tool, from the requests logged to file. */
function lastCall(file, tool) {
  const calls = requests(file).flatMap((q) => (q.body?.input ?? []).filter((i) => i.type === "function_call" && i.name === tool));
  return calls.at(-1)?.call_id;
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "memoryd-codex-"));
  md = await startMemoryd();
  model = await startModelServer(join(dir, "model.jsonl"));
  big = await startModelServer(join(dir, "model-big.jsonl"), { MS_INPUT_TOKENS: "200000" });
});

after(async () => {
  model?.stop();
  big?.stop();
  await md?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("the real codex writes a note through memoryd's MCP tools, and recovers a fact after an automatic compaction", async () => {
  const home = codexHome(dir, "codex-home", md, model.port);
  const project = join(dir, "project");
  const log = join(dir, "model.jsonl");
  const run = async (args, opts = {}) => {
    const r = await codexExec({ md, home, project, args, ...opts });
    assert.equal(r.code, 0, `codex ${args.join(" ")}:\n${r.stdout}\n${r.stderr}`);
    return r;
  };

  // 1. An MCP call writes a note, as the session's own agent.
  const note = { path: "checkpoint.md", text: "FACT: the password is swordfish" };
  const first = await run([`FACT: the password is swordfish. CALL_TOOL mcp__memoryd__notes_write_file ${JSON.stringify(note)}`]);
  const id = first.session;
  assert.ok(id, `codex printed no session id:\n${first.stderr}`);
  const task = await sessionTask(id);
  const root = { task_id: task.task_id, agent: "/root" };
  const read = await tool(root, "notes_read_file", { path: "checkpoint.md" });
  assert.match(JSON.stringify(read), /the password is swordfish/);
  const written = toolOutput(log, lastCall(log, "notes_write_file"));
  assert.match(written ?? "", /\/root\/notes\/checkpoint\.md/, "the model did not get the write's result");

  // 2. A turn that reports 200,000 input tokens, then a turn past a 50,000-token compaction limit: codex
  // compacts before its first request (docs/codex.md §5), and the SessionStart(compact) hook answers the
  // bootstrap.
  await run(["resume", id, "a large request"], { port: big.port });
  const before = requests(log).length;
  const search = `CALL_TOOL mcp__memoryd__history_search_contents ${JSON.stringify({ query: "swordfish" })}`;
  await run(["-c", "model_auto_compact_token_limit=50000", "resume", id, search]);
  const qs = requests(log).slice(before);
  const compaction = qs.findIndex((q) => q.headers["x-codex-turn-metadata"]?.includes('"request_kind":"compaction"'));
  assert.ok(compaction >= 0, "codex did not compact");
  const next = qs.slice(compaction + 1);
  const carried = JSON.stringify(next[0]?.body ?? {}).split("Current context window id: w2").length - 1;
  assert.equal(carried, 1, "the first request after the compaction does not carry memoryd's bootstrap of w2 once");

  // 3. The fact said before the compaction is found in w1, and read whole.
  const found = toolOutput(log, lastCall(log, "history_search_contents")) ?? "";
  const m = /"item_id":"([^"]+)","window_id":"w1"/.exec(found.replace(/\\"/g, '"'));
  assert.ok(m, `the fact is not found in w1: ${found}`);
  await run(["resume", id, `CALL_TOOL mcp__memoryd__history_read_item ${JSON.stringify({ window_id: "w1", item_id: m[1] })}`]);
  assert.match(toolOutput(log, lastCall(log, "history_read_item")) ?? "", /FACT: the password is swordfish/);

  // The task's history is the rollout: two windows, and the usage the token counts reported.
  const { details } = await tool(root, "history_list_windows");
  assert.deepEqual(details.windows.map((w) => w.window_id), ["w1", "w2"]);
  const { events } = await (await fetch(`${md.url}/v1/events?limit=5000`, { headers: auth() })).json();
  const usage = events.filter((e) => e.type === "lifecycle.usage_reported" && e.data.task_id === task.task_id);
  assert.ok(usage.some((e) => e.data.tokens_used >= 200000), `no usage of the large turn reported: ${JSON.stringify(usage.map((e) => e.data))}`);
});
