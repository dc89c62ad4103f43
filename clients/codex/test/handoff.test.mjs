// A hand-off: a task begun in the real `pi` CLI (with the memoryd extension) goes on in the real `codex` CLI
// as a new agent of the same task. `memoryd handoff TASK --to codex` gives the environment that makes codex's
// session join the task as /root/codex; its SessionStart hook adds the hand-off's bootstrap to the first
// request; and the Codex agent reads the Pi agent's note by its full path and an item of its history with
// agent_name, as a Pi sub-agent reads its parent's.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { runMemoryd, startMemoryd } from "../../testing/memoryd.mjs";
import { startModelServer as startPiModelServer } from "../../pi-extension/test/cli/model-server.mjs";
import { freshSetup, runPi, traced } from "../../pi-extension/test/cli/pi-cli.mjs";
import { codexExec, codexHome, startModelServer } from "../harness.mjs";

let md;
let model;
let piModel;
let dir;
let pi;

const FACT = "the migration key is ORCHID-19";
const REQUEST = "HANDOFF-REQUEST: migrate the billing tables; the deploy window is Tuesday 04:00 UTC.";

/** The model requests logged to file, parsed. */
const requests = (file) => readFileSync(file, "utf8").trim().split("\n").map((l) => JSON.parse(l));

/** The text of the output the model got for its latest call of tool, from the requests logged to file. */
function lastOutput(file, tool) {
  const qs = requests(file);
  const call = qs.flatMap((q) => (q.body?.input ?? []).filter((i) => i.type === "function_call" && i.name === tool)).at(-1);
  assert.ok(call, `the model never called ${tool}`);
  for (const q of qs.reverse()) {
    const out = (q.body?.input ?? []).find((i) => i.type === "function_call_output" && i.call_id === call.call_id);
    if (out) return typeof out.output === "string" ? out.output : out.output.map((p) => p.text ?? "").join("\n");
  }
  assert.fail(`no output of ${tool} reached the model`);
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "memoryd-handoff-"));
  md = await startMemoryd();
  model = await startModelServer(join(dir, "model.jsonl"));
  // Pi's scripted model: the first turn writes the checkpoint, then it answers in text.
  piModel = await startPiModelServer((body) => {
    const last = body.messages.at(-1);
    if (last.role === "tool") return { text: "Checkpoint saved." };
    return { calls: [["notes_write_file", { path: "checkpoint.md", text: `Goal: migrate billing. ${FACT}.` }]] };
  });
  pi = freshSetup(piModel.url);
});

after(async () => {
  model?.stop();
  await piModel?.close();
  await md?.stop();
  pi?.remove();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("a task begun in the real pi goes on in the real codex, which recovers pi's note and a history item", async () => {
  // 1. Pi: the user's request, and the agent's checkpoint note.
  const r = await runPi(pi, ["-p", REQUEST], { env: { MEMORYD_URL: md.url, MEMORYD_TOKEN: md.token, MEMORYD_DEBUG: "1" } });
  assert.equal(r.code, 0, `pi: ${r.stderr}`);
  const [attached] = traced(r.stderr, "attached");
  assert.ok(attached, `pi never attached to memoryd:\n${r.stderr}`);
  const taskId = attached.task_id;

  // 2. The hand-off, as a user asks for it.
  const h = await runMemoryd(["handoff", taskId, "--to", "codex", "--db", md.db, "--json"]);
  assert.equal(h.code, 0, `memoryd handoff: ${h.stderr}`);
  const handoff = JSON.parse(h.stdout);
  assert.equal(handoff.agent, "/root/codex");
  assert.equal(handoff.argv[0], "codex");

  // 3. Codex, with the hand-off's environment: it reads pi's note by its full path.
  const home = codexHome(dir, "codex-home", md, model.port);
  const project = join(dir, "project");
  const log = join(dir, "model.jsonl");
  const run = async (args) => {
    const c = await codexExec({ md, home, project, args, env: handoff.env });
    assert.equal(c.code, 0, `codex ${args.join(" ")}:\n${c.stdout}\n${c.stderr}`);
    return c;
  };
  const first = await run([`CALL_TOOL mcp__memoryd__notes_read_file ${JSON.stringify({ path: "/root/notes/checkpoint.md" })}`]);
  assert.ok(first.session, `codex printed no session id:\n${first.stderr}`);
  assert.match(lastOutput(log, "notes_read_file"), /ORCHID-19/);
  const firstRequest = JSON.stringify(requests(log)[0].body);
  assert.ok(firstRequest.includes("You are agent: /root/codex") && firstRequest.includes("Continuing agent: /root (pi)"),
    "codex's first request does not carry the hand-off's bootstrap");

  // 4. It finds pi's request in pi's history, and reads that item whole.
  await run(["resume", first.session, `CALL_TOOL mcp__memoryd__history_search_contents ${JSON.stringify({ query: "Tuesday 04:00", agent_name: "/root" })}`]);
  const found = lastOutput(log, "history_search_contents").replace(/\\"/g, '"');
  const m = /"item_id":"([^"]+)","window_id":"(w\d+)"/.exec(found);
  assert.ok(m, `pi's request is not found in its history: ${found}`);
  await run(["resume", first.session, `CALL_TOOL mcp__memoryd__history_read_item ${JSON.stringify({ agent_name: "/root", window_id: m[2], item_id: m[1] })}`]);
  assert.match(lastOutput(log, "history_read_item"), /HANDOFF-REQUEST: migrate the billing tables/);

  // The task has both agents: pi's root and codex's /root/codex.
  const { tasks } = await (await fetch(`${md.url}/v1/tasks`, { headers: { Authorization: `Bearer ${md.token}` } })).json();
  const task = tasks.find((t) => t.task_id === taskId);
  assert.deepEqual(task.agents.map((a) => a.agent).sort(), ["/root", "/root/codex"]);
  assert.equal(task.agents.find((a) => a.agent === "/root/codex").session_key, `codex/${first.session}`);
});
