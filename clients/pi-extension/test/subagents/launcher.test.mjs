// The launcher API in the real Pi SDK: a launcher extension in the parent's
// session learns the parent's task with getTokenBudgetTask(pi) and starts
// child sessions with createTokenBudgetExtension (one named, one not); the
// child entry pi-subagents loads, in a process where no session registered a
// task, leaves its session a task of its own. And the adapter's registry: one
// owner per session id, the child's parent among several sessions.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

import { MemorydClient } from "@memoryd/client";
import { createMemorydExtension, createTokenBudgetExtension, getTokenBudgetTask, subagentChildEntry } from "../../dist/index.js";
import { findParentTask, SubagentsAdapter } from "../../dist/subagents.js";
import { hangGuardMs, memorydPerFile } from "../../../testing/memoryd.mjs";
import { createPiSession, fauxAssistantMessage, fauxToolCall, textOf } from "../harness.mjs";

let md;
let client;
memorydPerFile(MemorydClient, (m, c) => {
  md = m;
  client = c;
});

/** A scripted model that runs the given tool calls, one per request, then answers "done"; results are collected. */
function stepsModel(steps, results = []) {
  let i = 0;
  return (context) => {
    const last = context.messages.at(-1);
    if (last.role === "toolResult") results.push(last);
    if (i >= steps.length) return fauxAssistantMessage("done");
    const [name, args] = steps[i++];
    return fauxAssistantMessage([fauxToolCall(name, args, { id: `c${i}` })], { stopReason: "toolUse" });
  };
}

/** The extension's trace events, collected. */
function collect() {
  const traces = [];
  return { traces, onTrace: (event, data) => traces.push({ event, ...data }), attached: () => traces.find((t) => t.event === "attached") };
}

test("getTokenBudgetTask and createTokenBudgetExtension: the launcher's children join the parent's task", { timeout: hangGuardMs }, async () => {
  let launcherPi;
  const parentTrace = collect();
  const parent = await createPiSession({
    extension: createMemorydExtension({ client, onTrace: parentTrace.onTrace }),
    extraExtensions: [(pi) => (launcherPi = pi)],
    model: stepsModel([["notes_write_file", { path: "brief.md", text: "review the parser\n" }]]),
  });
  const children = [];
  try {
    await parent.session.prompt("write the brief");
    const task = getTokenBudgetTask(launcherPi);
    const root = parentTrace.attached();
    assert.deepEqual(task, { context: { taskId: root.task_id, baseUrl: md.url }, agentName: "/root" });

    // A named child: <parentAgentName>/<agentName>; it reads the parent's note and writes its own.
    const named = collect();
    const namedResults = [];
    children.push(
      await createPiSession({
        extension: createTokenBudgetExtension({ client, onTrace: named.onTrace, task: { ...task.context, parentAgentName: task.agentName, agentName: "reviewer" } }),
        model: stepsModel(
          [
            ["notes_read_file", { path: "/root/notes/brief.md" }],
            ["notes_write_file", { path: "review.md", text: "LGTM\n" }],
          ],
          namedResults,
        ),
      }),
    );
    await children[0].session.prompt("review");
    assert.deepEqual([named.attached().task_id, named.attached().agent], [root.task_id, "/root/reviewer"]);
    assert.match(textOf(namedResults[0]), /review the parser/);
    const review = await client.notesReadFile({ task_id: root.task_id, agent: "/root" }, { path: "/root/reviewer/notes/review.md" });
    assert.equal(review.details.text, "LGTM\n");

    // An unnamed child: /root/agent_<first 12 hex of sha256(its session key)>.
    const unnamed = collect();
    children.push(
      await createPiSession({
        extension: createTokenBudgetExtension({ client, onTrace: unnamed.onTrace, task: { ...task.context, parentAgentName: task.agentName } }),
        model: stepsModel([]),
      }),
    );
    await children[1].session.prompt("hello");
    const key = `pi-session:${children[1].session.sessionManager.getSessionId()}`;
    const hash = createHash("sha256").update(key).digest("hex").slice(0, 12);
    assert.deepEqual([unnamed.attached().task_id, unnamed.attached().agent], [root.task_id, `/root/agent_${hash}`]);
  } finally {
    for (const c of children) c.session.dispose();
    parent.session.dispose();
  }
});

test("getTokenBudgetTask: undefined in a session without the memoryd extension", { timeout: hangGuardMs }, async () => {
  let launcherPi;
  const { session } = await createPiSession({ extraExtensions: [(pi) => (launcherPi = pi)], model: stepsModel([]) });
  try {
    assert.equal(getTokenBudgetTask(launcherPi), undefined);
  } finally {
    session.dispose();
  }
});

test("the child entry with no session of this process registered: the session is a task of its own", { timeout: hangGuardMs }, async () => {
  assert.equal(subagentChildEntry, fileURLToPath(new URL("../../dist/subagent-child.js", import.meta.url)));
  const saved = { ...process.env };
  Object.assign(process.env, { MEMORYD_URL: md.url, MEMORYD_TOKEN: md.token, MEMORYD_AUTOSTART: "0" });
  let session;
  try {
    ({ session } = await createPiSession({ extensionPaths: [subagentChildEntry], model: stepsModel([["get_context_remaining", {}]]) }));
    await session.prompt("hello");
    const key = `pi-session:${session.sessionManager.getSessionId()}`;
    const { tasks } = await client.listTasks();
    const mine = tasks.find((t) => t.agents.some((a) => a.session_key === key));
    assert.deepEqual(mine.agents.map((a) => a.agent), ["/root"]);
  } finally {
    session?.dispose();
    for (const k of ["MEMORYD_URL", "MEMORYD_TOKEN", "MEMORYD_AUTOSTART"]) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
  }
});

test("the registry: one owner per session id (the second is told, not registered); a child's parent is the session whose subagent call runs", () => {
  const subagentsTool = { name: "subagent", sourceInfo: { path: fileURLToPath(import.meta.resolve("pi-subagents")) } };
  const pi = { getAllTools: () => [subagentsTool] };
  const ctx = (id) => ({ sessionManager: { getSessionId: () => id }, hasUI: true, ui: { notify: (line) => told.push(line) } });
  const task = (taskId) => ({ context: { taskId, baseUrl: "http://127.0.0.1:1" }, agentName: "/root" });
  const told = [];
  const traces = [];
  const first = new SubagentsAdapter(pi, (event) => traces.push(event));
  const second = new SubagentsAdapter(pi, (event) => traces.push(event));
  const other = new SubagentsAdapter(pi, () => {});
  try {
    first.register(ctx("s1"), task("T1"));
    second.register(ctx("s1"), task("T9"));
    assert.deepEqual(traces, ["subagents", "subagents_taken"]);
    assert.match(told[0], /already gives pi-subagents' children of session s1 their task; it is kept/);
    assert.equal(findParentTask().task.context.taskId, "T1");

    // Two tasks: the one whose subagent call runs is the parent; neither running, the child cannot tell.
    other.register(ctx("s2"), task("T2"));
    assert.match(findParentTask().error, /2 tasks/);
    other.toolRunning("subagent", 1);
    assert.equal(findParentTask().task.context.taskId, "T2");
    other.toolRunning("subagent", -1);
    second.unregister();
    other.unregister();
    assert.equal(findParentTask().task.context.taskId, "T1", "the owner's registration outlives the other's unregister");
  } finally {
    first.unregister();
    other.unregister();
  }
  assert.deepEqual(findParentTask(), { task: undefined });
});
