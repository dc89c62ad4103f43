// The extension in the real Pi SDK: tool registration from GET /v1/tools,
// new_context rolling over at the settled boundary, a child session joining
// its parent's task, an unreachable memoryd (clear tool errors, no local
// files) and starting memoryd through the spawn option.
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

import { MemorydClient } from "@memoryd/client";
import { createMemorydExtension, optionsFromEnv } from "../dist/index.js";
import { freePort, hangGuardMs, memorydBinary, memorydPerFile } from "../../testing/memoryd.mjs";
import { createPiSession, fauxAssistantMessage, fauxToolCall, textOf, waitFor } from "./harness.mjs";

let md;
let client;
memorydPerFile(MemorydClient, (m, c) => {
  md = m;
  client = c;
});

/** A scripted model that runs the given tool-call steps, one per request, then answers "done". */
function stepsModel(steps, onResult) {
  let i = 0;
  let n = 0;
  return (context) => {
    const last = context.messages.at(-1);
    if (last.role === "toolResult") onResult?.(last);
    if (i >= steps.length) return fauxAssistantMessage("done");
    const step = steps[i++];
    if (typeof step === "string") return fauxAssistantMessage(step);
    // A step is one call [name, args] or a batch [[name, args], ...].
    const calls = (typeof step[0] === "string" ? [step] : step).map(([name, args]) => fauxToolCall(name, args, { id: `c${++n}` }));
    return fauxAssistantMessage(calls, { stopReason: "toolUse" });
  };
}


test("new_context: terminates the batch, rolls over at the settled boundary and continues in w2", { timeout: hangGuardMs }, async () => {
  const traces = [];
  const results = [];
  const extension = createMemorydExtension({ client, onTrace: (event, data) => traces.push({ event, ...data }) });
  let inW2 = false;
  const model = (context) => {
    const all = context.messages.map(textOf).join("\n");
    const last = context.messages.at(-1);
    if (last.role === "toolResult") results.push(last);
    if (all.includes("<context_window_reset/>")) {
      inW2 = true;
      if (last.role === "toolResult") return fauxAssistantMessage("Recovered: " + textOf(last).split("\n").at(-1));
      return fauxAssistantMessage([fauxToolCall("get_context_remaining", {}, { id: "w2-gcr" })], { stopReason: "toolUse" });
    }
    if (!all.includes("[tool_call notes_write_file]")) {
      return fauxAssistantMessage([fauxToolCall("notes_write_file", { path: "checkpoint.md", text: "phase 1 done: " + "parser rewritten, tests green. ".repeat(20) }, { id: "w1-note" })], {
        stopReason: "toolUse",
      });
    }
    if (!all.includes("[tool_call new_context]")) {
      return fauxAssistantMessage([fauxToolCall("new_context", {}, { id: "w1-nc" })], { stopReason: "toolUse" });
    }
    return fauxAssistantMessage("unexpected: the batch should have terminated");
  };
  const { session } = await createPiSession({ extension, model });
  try {
    await session.prompt("Do phase 1, checkpoint it, then start a fresh context window.");
    await waitFor(() => traces.some((t) => t.event === "rollover_committed"), 20_000, "the rollover").catch((e) => {
      throw new Error(`${e.message}; traces: ${JSON.stringify(traces.filter((t) => t.event !== "synced"))}`);
    });
    await waitFor(() => inW2 && session.isIdle && traces.filter((t) => t.event === "settled").length >= 2, 20_000, "the new window's turn");
    await session.waitForIdle();
    const nc = session.sessionManager
      .getEntries()
      .find((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolName === "new_context").message;
    assert.match(textOf(nc), /"pending":true/);
    assert.ok(!session.messages.some((m) => m.role === "assistant" && textOf(m).includes("unexpected")), "new_context ended the batch");
    const prepared = traces.find((t) => t.event === "rollover_prepared");
    assert.deepEqual([prepared.reason, prepared.windowId], ["new_context", "w2"]);
    const attached = traces.find((t) => t.event === "attached");
    const st = await client.state(attached.task_id, attached.agent);
    assert.equal(st.window_id, "w2");
    assert.equal(st.pending_new_context, false);
    const gcr = results.find((r) => r.toolName === "get_context_remaining");
    assert.match(textOf(gcr), /"window_id":"w2"/);
  } finally {
    session.dispose();
  }
});

test("new_context in a session too small to compact: Pi refuses, the extension reports rollover/fail", { timeout: hangGuardMs }, async () => {
  const traces = [];
  const extension = createMemorydExtension({ client, onTrace: (event, data) => traces.push({ event, ...data }) });
  const { session } = await createPiSession({ extension, model: stepsModel([["new_context", {}]]) });
  try {
    await session.prompt("start over");
    await waitFor(() => traces.some((t) => t.event === "rollover_failed"), 20_000, "the failed rollover");
    const failed = traces.find((t) => t.event === "rollover_failed");
    assert.equal(failed.aborted, false);
    assert.match(failed.error, /Nothing to compact/);
    const attached = traces.find((t) => t.event === "attached");
    const st = await client.state(attached.task_id, attached.agent);
    assert.equal(st.window_id, "w1", "the window is kept");
    assert.equal(st.pending_new_context, false, "a non-aborted failure clears the request");
    assert.equal(st.phase, "READY");
    const events = (await client.listEvents({ task_id: attached.task_id })).events.map((e) => e.type);
    assert.ok(events.includes("lifecycle.rollover_failed"));
  } finally {
    session.dispose();
  }
});

test("a rollover prepared by a process that ended is reported aborted when the session attaches again", { timeout: hangGuardMs }, async () => {
  // An earlier process attached, asked for a new context, prepared the
  // rollover and ended before its compaction: nothing will commit it.
  const key = `/sessions/abandoned-${process.pid}-${Date.now()}.jsonl`;
  const first = await client.attach({ session_key: key, budget: { context_window: 128000 } });
  const ctx = { task_id: first.task_id, agent: first.agent };
  await client.newContext({ ...ctx, call_id: "toolu_nc" });
  const prepared = await client.rolloverPrepare({ context: ctx, reason: "new_context" });
  assert.equal(prepared.window_id, "w2");
  assert.equal((await client.state(ctx.task_id, ctx.agent)).pending_window_id, "w2");

  // The session resumes in a new process: the extension reports the
  // orphaned rollover aborted, so the request stays and no window is stuck
  // half prepared.
  const traces = [];
  const extension = createMemorydExtension({ client, sessionKey: () => key, onTrace: (event, data) => traces.push({ event, ...data }) });
  const { session } = await createPiSession({ extension, model: () => fauxAssistantMessage("ok") });
  try {
    await session.prompt("hello again");
    await waitFor(() => traces.some((t) => t.event === "rollover_abandoned"), 20_000, "the abandoned rollover");
    // The kept request is then served at a settled boundary like any other
    // (here Pi finds nothing to compact and that rollover fails for good).
    await waitFor(() => traces.some((t) => t.event === "rollover_failed" || t.event === "rollover_committed"), 20_000, "the next rollover");
    await session.waitForIdle();
    assert.equal(traces.find((t) => t.event === "attached").resumed, true);
    const failed = (await client.listEvents({ task_id: ctx.task_id })).events.filter((e) => e.type === "lifecycle.rollover_failed");
    assert.equal(failed[0]?.data.aborted, true, "the orphaned rollover is reported aborted, which keeps the request");
    const st = await client.state(ctx.task_id, ctx.agent);
    assert.equal(st.pending_window_id ?? null, null, "no rollover is left prepared");
    assert.equal(st.window_id, "w1");
  } finally {
    session.dispose();
  }
});

test("a child session joins its parent's task through the task option and shares notes", { timeout: hangGuardMs }, async () => {
  const parentTraces = [];
  const parent = await createPiSession({
    extension: createMemorydExtension({ client, onTrace: (event, data) => parentTraces.push({ event, ...data }) }),
    model: stepsModel(["ready"]),
  });
  try {
    await parent.session.prompt("hello");
    const root = parentTraces.find((t) => t.event === "attached");
    assert.equal(root.agent, "/root");

    // What a launcher does for a sub-agent: pass the parent's task.
    const childTraces = [];
    const childResults = [];
    const child = await createPiSession({
      extension: createMemorydExtension({
        client,
        task: { task_id: root.task_id, parent_agent: "/root", agent_name: "reviewer" },
        onTrace: (event, data) => childTraces.push({ event, ...data }),
      }),
      model: stepsModel(
        [
          ["notes_write_file", { path: "review.md", text: "LGTM with one nit\n" }],
          ["notes_read_file", { path: "/root/notes/brief.md" }],
          ["get_context_remaining", {}],
        ],
        (r) => childResults.push(r),
      ),
    });
    try {
      await client.notesWriteFile({ task_id: root.task_id, agent: "/root", call_id: "seed-brief" }, { path: "brief.md", text: "review the parser\n" });
      await child.session.prompt("review");
      const me = childTraces.find((t) => t.event === "attached");
      assert.equal(me.task_id, root.task_id);
      assert.equal(me.agent, "/root/reviewer");
      assert.match(textOf(childResults[1]), /review the parser/, "the child reads the parent's notes");
      assert.match(textOf(childResults[2]), /"registered_agents":\["\/root","\/root\/reviewer"\]/);
      const review = await client.notesReadFile({ task_id: root.task_id, agent: "/root" }, { path: "/root/reviewer/notes/review.md" });
      assert.equal(review.details.text, "LGTM with one nit\n");
    } finally {
      child.session.dispose();
    }
  } finally {
    parent.session.dispose();
  }
});

test("the heartbeat follows /healthz with an authenticated request: only those hold off memoryd's --idle-exit", { timeout: hangGuardMs }, async () => {
  const asked = [];
  const recording = (url, init) => {
    asked.push(`${init?.method ?? "GET"} ${new URL(url).pathname} ${init?.headers?.Authorization ? "with the token" : "without"}`);
    return fetch(url, init);
  };
  const beating = new MemorydClient({ baseUrl: md.url, token: md.token, fetch: recording });
  const { session } = await createPiSession({
    extension: createMemorydExtension({ client: beating, heartbeatMs: 50 }),
    model: stepsModel(["ready"]),
  });
  try {
    await session.prompt("hello"); // attached: the heartbeat runs
    const from = asked.length;
    const beatWithToken = () => {
      const beats = asked.slice(from);
      const probe = beats.indexOf("GET /healthz without");
      return probe >= 0 && beats.slice(probe + 1).includes("GET /v1/tools with the token");
    };
    await waitFor(beatWithToken, 5_000, "a heartbeat's /healthz followed by GET /v1/tools with the token").catch((err) => {
      throw new Error(`${err.message}; asked:\n${asked.slice(from).join("\n")}`);
    });
  } finally {
    session.dispose();
  }
});

test("memoryd unreachable: the tools exist but fail with a clear error; nothing is written locally", { timeout: hangGuardMs }, async () => {
  const port = await freePort();
  const results = [];
  const { session, dir } = await createPiSession({
    extension: createMemorydExtension({ baseUrl: `http://127.0.0.1:${port}`, token: "t", timeoutMs: 2000 }),
    model: stepsModel([["notes_write_file", { path: "checkpoint.md", text: "must not be lost silently" }]], (r) => results.push(r)),
  });
  try {
    const names = session.getAllTools().map((t) => t.name);
    for (const n of ["notes_write_file", "history_read_item", "new_context"]) assert.ok(names.includes(n), n);
    await session.prompt("save a note");
    assert.equal(results.length, 1);
    assert.equal(results[0].isError, true);
    assert.match(textOf(results[0]), /memoryd is not available/);
    assert.match(textOf(results[0]), /nothing answers at http:\/\/127\.0\.0\.1:\d+, and memoryd was not started/);
    assert.doesNotMatch(textOf(results[0]), /memoryd serve|go run|Start it/);
    // No local fallback: the session folder holds only Pi's own agent folder.
    const found = readdirSync(dir, { recursive: true }).filter((f) => /checkpoint|notes/.test(String(f)));
    assert.deepEqual(found, []);
  } finally {
    session.dispose();
  }
});

test("spawn: the extension starts the memoryd binary when nothing listens and waits for it", { timeout: hangGuardMs }, async () => {
  const port = await freePort();
  const bin = await memorydBinary();
  const traces = [];
  const results = [];
  const dbDir = md.dir + "/spawned";
  const { session } = await createPiSession({
    extension: createMemorydExtension({
      baseUrl: `http://127.0.0.1:${port}`,
      spawn: { command: bin, addr: "127.0.0.1:0", env: { MEMORYD_DB: `${dbDir}/memory.db`, MEMORYD_TOKEN: "spawn-token" } },
      onTrace: (event, data) => traces.push({ event, ...data }),
    }),
    model: stepsModel([["notes_write_file", { path: "a.md", text: "kept by the spawned memoryd\n" }]], (r) => results.push(r)),
  });
  let url;
  try {
    await session.prompt("note it");
    assert.ok(traces.some((t) => t.event === "spawn"));
    assert.equal(results[0].isError, false, textOf(results[0]));
    const attached = traces.find((t) => t.event === "attached");
    // The spawned memoryd printed its address; find it through its health route and read the note back.
    const spawnedClient = new MemorydClient({ baseUrl: traces.find((t) => t.event === "spawned").url, token: "spawn-token" });
    url = spawnedClient.baseUrl;
    const note = await spawnedClient.notesReadFile({ task_id: attached.task_id, agent: "/root" }, { path: "a.md" });
    assert.equal(note.details.text, "kept by the spawned memoryd\n");
  } finally {
    session.dispose();
    const pid = traces.find((t) => t.event === "spawned")?.pid;
    if (pid) {
      process.kill(-pid, "SIGTERM");
      await waitFor(async () => {
        try {
          await fetch(url + "/healthz");
          return false;
        } catch {
          return true;
        }
      }, 15_000, "the spawned memoryd to stop");
    }
  }
});

test("Pi's own loader loads the package entry (package.json pi.extensions: extension.js, which loads dist/extension.js) configured from the environment", { timeout: hangGuardMs }, async () => {
  const pkg = join(dirname(fileURLToPath(import.meta.url)), "..");
  const entry = join(pkg, JSON.parse(readFileSync(join(pkg, "package.json"), "utf8")).pi.extensions[0]);
  const saved = { url: process.env.MEMORYD_URL, token: process.env.MEMORYD_TOKEN };
  process.env.MEMORYD_URL = md.url;
  process.env.MEMORYD_TOKEN = md.token;
  const results = [];
  try {
    const { session } = await createPiSession({
      extensionPaths: [entry],
      model: stepsModel([["notes_write_file", { path: "loaded.md", text: "via pi.extensions\n" }]], (r) => results.push(r)),
    });
    try {
      const tool = session.getAllTools().find((t) => t.name === "notes_write_file");
      assert.ok(tool, "the tool is registered");
      assert.equal(tool.parameters.additionalProperties, false, "with memoryd's schema");
      await session.prompt("note");
      assert.equal(results[0].isError, false, textOf(results[0]));
      assert.match(textOf(results[0]), /"path":"\/root\/notes\/loaded.md"/);
    } finally {
      session.dispose();
    }
  } finally {
    for (const [k, v] of [["MEMORYD_URL", saved.url], ["MEMORYD_TOKEN", saved.token]]) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
});

test("optionsFromEnv: MEMORYD_TASK is a task reference; anything else is refused with its usage", () => {
  assert.deepEqual(optionsFromEnv({ MEMORYD_TASK: '{"task_id":"01J","parent_agent":"/root","agent_name":"reviewer"}' }).task, {
    task_id: "01J",
    parent_agent: "/root",
    agent_name: "reviewer",
  });
  assert.deepEqual(optionsFromEnv({ MEMORYD_TASK: '{"task_id":"01J"}' }).task, { task_id: "01J" });
  for (const bad of ["{nope", "[]", "null", '"01J"', '{"agent_name":"x"}', '{"task_id":7}', '{"task_id":"01J","agent_name":3}', '{"task_id":"01J","agent":"/root"}']) {
    assert.throws(() => optionsFromEnv({ MEMORYD_TASK: bad }), /MEMORYD_TASK must be JSON like/, bad);
  }
  const opts = optionsFromEnv({ MEMORYD_SPAWN: "go", MEMORYD_REPO: "../memoryd", MEMORYD_CONTEXT_WINDOW: "64000" });
  assert.deepEqual(opts.spawn, { command: "go", cwd: "../memoryd" });
  assert.deepEqual(opts.budget, { context_window: 64000 });
});

test("optionsFromEnv: MEMORYD_HEARTBEAT is a duration (seconds when bare); anything else is refused", () => {
  const ms = (v) => optionsFromEnv({ MEMORYD_HEARTBEAT: v }).heartbeatMs;
  assert.deepEqual(["1s", "500ms", "2m", "10", "0"].map(ms), [1000, 500, 120_000, 10_000, 0]);
  assert.equal(optionsFromEnv({}).heartbeatMs, undefined);
  for (const bad of ["fast", "-1s", "1h", "1 s"]) assert.throws(() => ms(bad), /MEMORYD_HEARTBEAT must be a duration like 30s/, bad);
});
