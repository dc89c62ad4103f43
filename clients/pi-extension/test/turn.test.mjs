// One request per model turn and one per tool call: the syncs of a turn's
// sync points go with its usage report or its next admit in one
// POST /v1/lifecycle/turn. The same session against a memoryd without that
// route (it answers 404, as an older memoryd does) makes the separate
// requests of before, and both leave the same events in the log.
import assert from "node:assert/strict";
import { test } from "node:test";

import { MemorydClient } from "@memoryd/client";
import { createMemorydExtension } from "../dist/index.js";
import { hangGuardMs, memorydPerFile } from "../../testing/memoryd.mjs";
import { createPiSession, fauxAssistantMessage, fauxToolCall } from "./harness.mjs";

let md;
memorydPerFile(MemorydClient, (m) => {
  md = m;
});

const TOOL_TURNS = 4;

/**
 * Runs one prompt of TOOL_TURNS model turns with one tool call each and a
 * final answer; old: memoryd answers the turn route 404. Returns the
 * requests made during the prompt (after the session started) and the
 * task's events.
 */
async function runSession(old) {
  const requests = [];
  let counting = false;
  const fetchFn = async (url, init) => {
    const path = new URL(url).pathname;
    if (counting) requests.push(path);
    if (old && path === "/v1/lifecycle/turn") {
      const body = JSON.stringify({ error: { code: "not_found", message: "no such route; see the API contract", details: {} } });
      return new Response(body, { status: 404, headers: { "Content-Type": "application/json" } });
    }
    return fetch(url, init);
  };
  const client = new MemorydClient({ baseUrl: md.url, token: md.token, fetch: fetchFn });
  const traces = [];
  const extension = createMemorydExtension({ client, onTrace: (event, data) => traces.push({ event, ...data }) });
  const echo = (pi) =>
    pi.registerTool({
      name: "echo",
      label: "echo",
      description: "echo",
      parameters: { type: "object" },
      execute: async () => ({ content: [{ type: "text", text: "echoed" }] }),
    });
  let n = 0;
  const model = () => (++n <= TOOL_TURNS ? fauxAssistantMessage([fauxToolCall("echo", { n }, { id: `c${n}` })], { stopReason: "toolUse" }) : fauxAssistantMessage("done"));
  const { session } = await createPiSession({ extension, extraExtensions: [echo], model });
  try {
    await session.bindExtensions({});
    counting = true;
    await session.prompt("go");
    await session.waitForIdle();
    counting = false;
    const attached = traces.find((t) => t.event === "attached");
    const events = (await client.listEvents({ task_id: attached.task_id, limit: 500 })).events;
    const ids = session.sessionManager.getBranch().map((e) => e.id);
    return { requests, events, attached, ids, traces };
  } finally {
    session.dispose();
  }
}

/** An event as both logs must agree on it: entry ids, session and task ids are each session's own. */
function comparable(ev, taskId) {
  if (ev.type === "history.entry_recorded" || ev.type === "task.created" || ev.type === "agent.registered") return ev.type;
  if (ev.type === "history.branch_changed") return `${ev.type} revision=${ev.data.revision} keep=${ev.data.keep} append=${ev.data.append.length}`;
  return `${ev.type} ${JSON.stringify(ev.data).replaceAll(taskId, "TASK")}`;
}

function count(requests, path) {
  return requests.filter((p) => p === path).length;
}

test("a model turn is one request and a tool call one more; an older memoryd gets the separate requests; the same events", { timeout: hangGuardMs }, async () => {
  const now = await runSession(false);
  const old = await runSession(true);

  const turns = TOOL_TURNS + 1;
  assert.equal(count(now.requests, "/v1/lifecycle/turn"), turns, `one turn request per model turn: ${now.requests}`);
  assert.equal(count(now.requests, "/v1/lifecycle/admit"), TOOL_TURNS, `one admit per tool call: ${now.requests}`);
  assert.equal(count(now.requests, "/v1/lifecycle/usage"), 0, `usage goes with the turn: ${now.requests}`);
  // The prompt's own requests (the user message's sync and user-input) and the settled boundary's (a sync, the state).
  const other = now.requests.filter((p) => p !== "/v1/lifecycle/turn" && p !== "/v1/lifecycle/admit");
  assert.deepEqual(other, ["/v1/history/sync", "/v1/lifecycle/user-input", "/v1/history/sync", "/v1/state"], `${now.requests}`);

  assert.equal(count(old.requests, "/v1/lifecycle/turn"), 1, `the turn route is tried once: ${old.requests}`);
  assert.equal(count(old.requests, "/v1/lifecycle/usage"), turns, `${old.requests}`);
  assert.equal(count(old.requests, "/v1/lifecycle/admit"), TOOL_TURNS, `${old.requests}`);
  assert.ok(count(old.requests, "/v1/history/sync") >= 2 * TOOL_TURNS, `${old.requests}`);

  const want = old.events.map((e) => comparable(e, old.attached.task_id));
  const got = now.events.map((e) => comparable(e, now.attached.task_id));
  assert.deepEqual(got, want);
  assert.ok(want.filter((t) => t.startsWith("lifecycle.usage_reported")).length === turns, want.join("\n"));
  // memoryd's branch is Pi's.
  const branch = [];
  for (const ev of now.events) if (ev.type === "history.branch_changed") branch.splice(ev.data.keep, Infinity, ...ev.data.append);
  assert.deepEqual(branch, now.ids);
});
