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

import { startMemoryd } from "../../testing/memoryd.mjs";
import { claude, claudeHome, startModelServer } from "../harness.mjs";

let md;
let model;
let dir;

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
  if (dir && !process.env.KEEP) rmSync(dir, { recursive: true, force: true });
});

test("after /compact the real claude gets memoryd's bootstrap and finds a fact said before it in history", async () => {
  const project = join(dir, "project");
  mkdirSync(project, { recursive: true });
  const home = claudeHome(dir, "home", project, {});
  setup(home);
  const run = async (...args) => {
    const r = await claude({ md, port: model.port, home, project, args });
    assert.equal(r.code, 0, `claude ${args.join(" ")}: ${r.stdout}\n${r.stderr}`);
    return r;
  };
  const first = JSON.parse((await run("-p", "FACT: the password is swordfish", "--output-format", "json")).stdout);
  const session = first.session_id;
  assert.match(session, /^[0-9a-f-]{36}$/);

  // Claude Code compacts nothing shorter ("Not enough messages to compact").
  await run("-p", "--resume", session, "a second request");
  await run("-p", "--resume", session, "a third request");
  await run("-p", "--resume", session, "/compact");
  const r = await run("-p", "--resume", session, `CALL_TOOL mcp__memoryd__history_search_contents ${JSON.stringify({ query: "swordfish" })}`);
  assert.match(r.stdout, /TOOL_RESULT_SEEN: .*"window_id":"w1"/, "the fact said before the compaction is found in its window");

  // The requests after the compaction carry memoryd's bootstrap, from the SessionStart hook.
  const requests = readFileSync(join(dir, "model.jsonl"), "utf8").trim().split("\n").map((l) => JSON.parse(l));
  const carrying = requests.filter((q) => JSON.stringify(q.body ?? {}).includes("Current context window id: w2"));
  assert.ok(carrying.length > 0, "no model request carries the bootstrap of window w2");
  assert.ok(JSON.stringify(carrying.at(-1).body).includes("FACT: the password is swordfish"), "the bootstrap lists the user's request");

  // The task holds the session's history: two windows, the first with the fact.
  const res = await fetch(`${md.url}/v1/tasks`, { headers: { Authorization: `Bearer ${md.token}` } });
  const { tasks } = await res.json();
  const task = tasks.find((t) => t.agents.some((a) => a.session_key === `claude-code/${session}`));
  assert.ok(task, "no task for the session");
  const call = await fetch(`${md.url}/v1/tools/history_list_windows`, {
    method: "POST", headers: { Authorization: `Bearer ${md.token}`, "Content-Type": "application/json" },
    body: JSON.stringify({ context: { task_id: task.task_id, agent: "/root" }, arguments: {} }),
  });
  const { details } = await call.json();
  assert.deepEqual(details.windows.map((w) => w.window_id), ["w1", "w2"]);
});
