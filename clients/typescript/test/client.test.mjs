// The client against a real memoryd built from this repository: every route
// of API.md, the error envelope for each status, images, timeouts and token
// discovery.
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";

import {
  MemorydClient,
  MemorydError,
  SYNC_STALE_BASE,
  TOOL_NAMES,
  branchDelta,
  defaultDbPath,
  discoverBaseUrl,
  discoverToken,
  isMemorydError,
  isStaleBase,
  tokenFilePath,
} from "../dist/index.js";
import { startMemoryd, waitFloorMs } from "../../testing/memoryd.mjs";

// A 1x1 PNG.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

let md;
let client;

before(async () => {
  md = await startMemoryd({ args: ["--max-body", String(1 << 20)] });
  client = new MemorydClient({ baseUrl: md.url, token: md.token, timeoutMs: waitFloorMs });
});

after(async () => {
  const res = await md?.stop();
  assert.equal(res?.code, 0, "memoryd exits 0 on SIGTERM");
});

/** Asserts that fn rejects with a MemorydError of code and status; returns it. */
async function rejectsWith(fn, code, status) {
  try {
    await fn();
  } catch (err) {
    assert.ok(err instanceof MemorydError, `expected a MemorydError, got ${err}`);
    assert.equal(err.code, code, `code of: ${err.message}`);
    assert.equal(err.status, status, `status of: ${err.message}`);
    assert.equal(typeof err.message, "string");
    assert.ok(err.message.length > 0);
    assert.equal(typeof err.details, "object");
    return err;
  }
  assert.fail(`expected ${code} (${status})`);
}

let n = 0;
async function attachNew(budget) {
  const key = `/tmp/sessions/client-test-${process.pid}-${++n}.jsonl`;
  const res = await client.attach({ session_key: key, session_id: `sid-${n}`, session_file: key, budget });
  return { key, ...res, ctx: (callId) => ({ task_id: res.task_id, agent: res.agent, ...(callId ? { call_id: callId } : {}) }) };
}

function msgEntry(id, parentId, role, content, extra = {}) {
  return {
    type: "message",
    id,
    parentId,
    timestamp: "2026-12-02T10:00:00.000Z",
    message: { role, content, timestamp: 1796205600000, ...extra },
  };
}

describe("process routes", () => {
  test("health needs no token and reports the log position", async () => {
    const anon = new MemorydClient({ baseUrl: md.url, token: () => undefined });
    const h = await anon.health();
    assert.equal(h.status, "ok");
    assert.equal(typeof h.position, "number");
  });

  test("metrics is Prometheus text and needs the token", async () => {
    const text = await client.metrics();
    assert.match(text, /^# (HELP|TYPE) /m);
    // A wrong token is never sent: memoryd cannot prove it holds it.
    await rejectsWith(() => new MemorydClient({ baseUrl: md.url, token: "wrong" }).metrics(), "unproven", 0);
  });
});

describe("attach", () => {
  test("a new session key creates a task with /root; the same key resumes it", async () => {
    const a = await attachNew({ context_window: 200000 });
    assert.match(a.task_id, /^[0-9A-Z]{26}$/);
    assert.equal(a.agent, "/root");
    assert.equal(a.resumed, false);
    assert.equal(a.window_id, "w1");
    assert.deepEqual(a.registered_agents, ["/root"]);
    const again = await client.attach({ session_key: a.key, session_id: `sid-${n}`, session_file: a.key, budget: { context_window: 200000 } });
    assert.equal(again.task_id, a.task_id);
    assert.equal(again.resumed, true);
  });

  test("a child joins its parent's task with task.agent_name, or an automatic name", async () => {
    const root = await attachNew();
    const child = await client.attach({
      session_key: `${root.key}.reviewer`,
      task: { task_id: root.task_id, parent_agent: "/root", agent_name: "reviewer" },
    });
    assert.equal(child.task_id, root.task_id);
    assert.equal(child.agent, "/root/reviewer");
    const auto = await client.attach({ session_key: `${root.key}.auto`, task: { task_id: root.task_id } });
    assert.match(auto.agent, /^\/root\/agent_[0-9a-f]{12}$/);
    assert.deepEqual([...auto.registered_agents].sort(), ["/root", "/root/reviewer", auto.agent].sort());
  });

  test("errors: empty session_key 400, unknown task 404, bad budget 400", async () => {
    await rejectsWith(() => client.attach({ session_key: " " }), "invalid_argument", 400);
    await rejectsWith(
      () => client.attach({ session_key: "/tmp/x-unknown-task", task: { task_id: "01JEXAMPLE0000000000000000" } }),
      "not_found",
      404,
    );
    await rejectsWith(() => client.attach({ session_key: "/tmp/x-bad-budget", budget: { context_window: 0 } }), "invalid_argument", 400);
  });
});

describe("history sync and the history tools", () => {
  let a;
  const entries = [
    msgEntry("e1", null, "user", [{ type: "text", text: "Please fix the flaky ERR_TIMEOUT test in api_test.go" }]),
    msgEntry("e2", "e1", "assistant", [
      { type: "thinking", thinking: "secret reasoning" },
      { type: "text", text: "Looking at the screenshot you sent." },
      { type: "toolCall", id: "toolu_1", name: "bash", arguments: { command: "go test ./..." } },
    ]),
    msgEntry("e3", "e2", "toolResult", [{ type: "text", text: "--- FAIL: TestAPI ERR_TIMEOUT after 30s" }], {
      toolCallId: "toolu_1",
      toolName: "bash",
      isError: false,
    }),
    msgEntry("e4", "e3", "user", [
      { type: "text", text: "Here is the screenshot of the dashboard" },
      { type: "image", data: PNG, mimeType: "image/png" },
    ]),
  ];

  before(async () => {
    a = await attachNew();
  });

  test("sync stores entries, is idempotent, and replaces the branch", async () => {
    const r1 = await client.historySync({ context: a.ctx(), entries: entries.slice(0, 2), branch: ["e1", "e2"] });
    assert.deepEqual(r1, { revision: 1, stored: 2, unchanged: 0, window_id: "w1" });
    const r2 = await client.historySync({ context: a.ctx(), entries, branch: entries.map((e) => e.id), expected_revision: 1 });
    assert.equal(r2.stored, 2);
    assert.equal(r2.unchanged, 2);
    assert.equal(r2.revision, 2);
    // Re-sending the same entries with the same branch changes nothing.
    const r3 = await client.historySync({ context: a.ctx(), entries, branch: entries.map((e) => e.id) });
    assert.deepEqual(r3, { revision: 2, stored: 0, unchanged: 4, window_id: "w1" });
  });

  test("sync errors: changed entry 409, stale expected_revision 409, unknown branch id 400", async () => {
    const changed = { ...entries[0], message: { ...entries[0].message, content: [{ type: "text", text: "other" }] } };
    const e = await rejectsWith(() => client.historySync({ context: a.ctx(), entries: [changed] }), "conflict", 409);
    assert.match(e.message, /e1/);
    await rejectsWith(() => client.historySync({ context: a.ctx(), entries: [], branch: ["e1"], expected_revision: 0 }), "conflict", 409);
    await rejectsWith(() => client.historySync({ context: a.ctx(), entries: [], branch: ["e1", "nope"] }), "invalid_argument", 400);
    await rejectsWith(() => client.historySync({ context: { task_id: a.task_id, agent: "/root/ghost" }, entries: [] }), "not_found", 404);
  });

  test("delta sync: a branch as a change of the last revision; a stale base is a conflict that asks for the whole branch", async () => {
    const b = await attachNew();
    const ids = entries.map((e) => e.id);
    const r1 = await client.historySync({ context: b.ctx(), entries: entries.slice(0, 2), branch: ids.slice(0, 2) });
    // One more turn: only the new entry and the delta travel.
    const d2 = branchDelta(ids.slice(0, 2), ids.slice(0, 3), r1.revision);
    assert.deepEqual(d2, { base_revision: r1.revision, keep: 2, append: ["e3"] });
    const r2 = await client.historySync({ context: b.ctx(), entries: [entries[2]], delta: d2 });
    assert.deepEqual(r2, { revision: r1.revision + 1, stored: 1, unchanged: 0, window_id: "w1" });
    // The same delta retried after it succeeded: as a retried whole sync, nothing changes.
    assert.deepEqual(await client.historySync({ context: b.ctx(), entries: [entries[2]], delta: d2 }), { ...r2, stored: 0, unchanged: 1 });
    assert.equal(branchDelta(ids.slice(0, 3), ids.slice(0, 3), r2.revision), undefined);
    // A client that lost track: its base is stale.
    const stale = branchDelta(ids.slice(0, 2), ids, r1.revision);
    const e = await rejectsWith(() => client.historySync({ context: b.ctx(), entries: [entries[3]], delta: stale }), "conflict", 409);
    assert.ok(isStaleBase(e));
    assert.equal(e.details.reason, SYNC_STALE_BASE);
    assert.equal(e.details.revision, r2.revision);
    assert.match(e.message, /whole branch/);
    // The whole branch recovers, and deltas go on from its revision.
    const r3 = await client.historySync({ context: b.ctx(), entries: [entries[3]], branch: ids });
    assert.equal(r3.revision, r2.revision + 1);
    const r4 = await client.historySync({ context: b.ctx(), entries: [], delta: branchDelta(ids, ids.slice(0, 1), r3.revision) });
    assert.equal(r4.revision, r3.revision + 1);
    const items = await client.historyListItems(b.ctx(), {});
    assert.deepEqual(items.details.results.map((r) => r.item_id), ["e1"]);
    // Other conflicts are not stale bases.
    const changed = { ...entries[0], message: { ...entries[0].message, content: [{ type: "text", text: "other" }] } };
    const c = await rejectsWith(() => client.historySync({ context: b.ctx(), entries: [changed] }), "conflict", 409);
    assert.equal(isStaleBase(c), false);
    // A delta with the whole branch is refused.
    const both = { context: b.ctx(), entries: [], branch: ids, delta: { base_revision: r4.revision, keep: 1, append: [] } };
    await rejectsWith(() => client.request({ method: "POST", path: "/v1/history/sync", json: both }), "invalid_argument", 400);
  });

  test("history_list_windows and history_list_items", async () => {
    const w = await client.historyListWindows(a.ctx());
    assert.deepEqual(w.details.windows, [{ window_id: "w1", item_count: 4, current: true }]);
    assert.equal(w.terminate, false);
    assert.equal(w.content[0].type, "text");
    const items = await client.historyListItems(a.ctx(), { role: "user" });
    assert.deepEqual(
      items.details.results.map((i) => i.item_id),
      ["e1", "e4"],
    );
    assert.equal(items.details.results[1].images, 1);
    const tools = await client.historyListItems(a.ctx(), { tool_namespace: "functions", tool_name: "bash" });
    assert.deepEqual(
      tools.details.results.map((i) => [i.item_id, i.role]),
      [
        ["e2", "assistant"],
        ["e3", "tool"],
      ],
    );
  });

  test("history_search_contents returns regions that history_read_item reads back", async () => {
    const s = await client.historySearchContents(a.ctx("toolu_search"), { query: "ERR_TIMEOUT" });
    const ids = s.details.results.map((r) => r.item_id);
    assert.deepEqual(ids, ["e1", "e3"]);
    const hit = s.details.results[1];
    const region = hit.regions[0];
    const read = await client.historyReadItem(a.ctx(), {
      window_id: hit.window_id,
      item_id: hit.item_id,
      offset_chars: region.offset_chars,
      limit_chars: region.limit_chars,
    });
    const m = region.matches[0];
    assert.equal(read.details.content.slice(m.start - read.details.offset_chars, m.end - read.details.offset_chars), "ERR_TIMEOUT");
    // Thinking is never part of an item's text.
    const none = await client.historySearchContents(a.ctx(), { query: "secret reasoning" });
    assert.equal(none.details.results.length, 0);
  });

  test("history_read_item of an entry with an image returns an image content block", async () => {
    const r = await client.historyReadItem(a.ctx(), { window_id: "w1", item_id: "e4" });
    assert.equal(r.details.images, 1);
    assert.match(r.details.content, /screenshot of the dashboard/);
    const images = r.content.filter((c) => c.type === "image");
    assert.deepEqual(images, [{ type: "image", data: PNG, mimeType: "image/png" }]);
    assert.ok(r.content.some((c) => c.type === "text"));
  });

  test("history_read_item with the wrong window is an error; an unknown item is not_found", async () => {
    await rejectsWith(() => client.historyReadItem(a.ctx(), { window_id: "w2", item_id: "e4" }), "not_found", 404);
    await rejectsWith(() => client.historyReadItem(a.ctx(), { window_id: "w1", item_id: "zzz" }), "not_found", 404);
  });
});

describe("notes tools", () => {
  let a;
  before(async () => {
    a = await attachNew({ notes_max_file_bytes: 64 });
  });

  test("write, append, read, list, search", async () => {
    const w = await client.notesWriteFile(a.ctx("toolu_w1"), { path: "checkpoint.md", text: "goal: ship\n" });
    assert.equal(w.details.path, "/root/notes/checkpoint.md");
    assert.equal(w.details.created, true);
    // Idempotent per call_id: the retry returns the first result.
    const retry = await client.notesWriteFile(a.ctx("toolu_w1"), { path: "checkpoint.md", text: "goal: ship\n" });
    assert.deepEqual(retry.details, w.details);
    const ap = await client.notesAppendToFile(a.ctx("toolu_w2"), { path: "checkpoint.md", text: "next: tests\n" });
    assert.equal(ap.details.bytes, "goal: ship\nnext: tests\n".length);
    const read = await client.notesReadFile(a.ctx(), { path: "checkpoint.md", start_line: 2, stop_line: 2 });
    assert.equal(read.details.text, "next: tests");
    const list = await client.notesListFilesByPrefix(a.ctx(), { prefix: "check" });
    assert.deepEqual(
      list.details.files.map((f) => f.path),
      ["/root/notes/checkpoint.md"],
    );
    assert.match(list.details.files[0].created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const search = await client.notesSearchContents(a.ctx(), { query: "tests" });
    assert.deepEqual(search.details.files[0].matches, [{ line: 2, text: "next: tests" }]);
  });

  test("errors: unknown field 400 (naming it), bad path 400, missing note 404, reused call_id 409, over the cap 413", async () => {
    const e = await rejectsWith(
      () => client.callTool("notes_search_contents", a.ctx(), { query: "x", file_order_by: "name" }),
      "invalid_argument",
      400,
    );
    assert.match(e.message, /file_order_by/);
    await rejectsWith(() => client.notesReadFile(a.ctx(), { path: "../x" }), "invalid_argument", 400);
    await rejectsWith(() => client.notesReadFile(a.ctx(), { path: "missing.md" }), "not_found", 404);
    await rejectsWith(() => client.notesWriteFile(a.ctx("toolu_w1"), { path: "checkpoint.md", text: "other" }), "conflict", 409);
    const big = await rejectsWith(() => client.notesWriteFile(a.ctx("toolu_big"), { path: "big.md", text: "x".repeat(65) }), "too_large", 413);
    assert.equal(big.details.limit, 64);
  });

  test("403: another task's agent; 404: unknown task and unknown tool", async () => {
    const other = await attachNew();
    await client.attach({ session_key: `${other.key}.rev`, task: { task_id: other.task_id, agent_name: "reviewer_x" } });
    await rejectsWith(() => client.notesReadFile(a.ctx(), { path: "/root/reviewer_x/notes/a.md" }), "forbidden", 403);
    await rejectsWith(() => client.notesListFilesByPrefix({ task_id: "01JEXAMPLE0000000000000000", agent: "/root" }), "not_found", 404);
    await rejectsWith(() => client.callTool("notes_delete", a.ctx(), {}), "not_found", 404);
  });
});

describe("tools listing and the context tools", () => {
  test("GET /v1/tools lists the tools with schemas and execution modes", async () => {
    const tools = await client.listTools();
    assert.deepEqual(
      tools.map((t) => t.name).sort(),
      [...TOOL_NAMES].sort(),
    );
    const modes = Object.fromEntries(tools.map((t) => [t.name, t.execution_mode]));
    for (const name of TOOL_NAMES) {
      const want = ["notes_append_to_file", "notes_write_file", "new_context"].includes(name) ? "sequential" : "parallel";
      assert.equal(modes[name], want, name);
    }
    for (const t of tools) {
      assert.equal(t.parameters.type, "object");
      assert.equal(t.parameters.additionalProperties, false);
      assert.ok(t.description.length > 20);
    }
  });

  test("turn: syncs, usage and admit in one request, answered as their own routes answer", async () => {
    const a = await attachNew({ context_window: 100000 });
    const u1 = msgEntry("t1", null, "user", "hello");
    const a1 = msgEntry("t2", "t1", "assistant", [{ type: "text", text: "hi" }]);
    const r = await client.turn({
      context: a.ctx(),
      syncs: [
        { entries: [u1], branch: ["t1"] },
        { entries: [a1], delta: { base_revision: 1, keep: 1, append: ["t2"] } },
      ],
      usage: { tokens_used: 1000, context_window: 100000 },
      admit: { call_id: "toolu_t1", tool_name: "bash", arguments: { command: "ls" } },
    });
    assert.deepEqual(r.syncs.map((s) => [s.revision, s.stored]), [[1, 1], [2, 1]]);
    assert.equal(r.usage?.due, null);
    assert.equal(r.admit?.allow, true);
    assert.equal(r.admit?.state.tokens_used, 1000);
    // The usage that makes the reminder due: the admit waits for the reminder.
    const due = await client.turn({ context: a.ctx(), usage: { tokens_used: 80000 }, admit: { call_id: "toolu_t2", tool_name: "bash" } });
    assert.equal(due.usage?.due, "reminder");
    assert.equal(due.admit, undefined);
    // A stale delta is the sync's own conflict.
    const err = await rejectsWith(() => client.turn({ context: a.ctx(), syncs: [{ entries: [], delta: { base_revision: 1, keep: 0, append: [] } }] }), "conflict", 409);
    assert.ok(isStaleBase(err));
  });

  test("get_context_remaining follows usage; new_context is idempotent and terminates", async () => {
    const a = await attachNew({ context_window: 100000 });
    const before = await client.getContextRemaining(a.ctx());
    assert.equal(before.details.remaining_tokens, null);
    assert.deepEqual(before.details.registered_agents, ["/root"]);
    const u = await client.usage({ context: a.ctx(), tokens_used: 1000, context_window: 100000 });
    assert.equal(u.due, null);
    const after = await client.getContextRemaining(a.ctx());
    assert.equal(after.details.remaining_tokens, 99000);
    const n1 = await client.newContext(a.ctx("toolu_nc1"));
    const n2 = await client.newContext(a.ctx("toolu_nc2"));
    assert.deepEqual(n1.details, { pending: true, window_id: "w1" });
    assert.deepEqual(n2.details, n1.details);
    assert.equal(n1.terminate, true);
    const st = await client.state(a.task_id, a.agent);
    assert.equal(st.pending_new_context, true);
    assert.equal(st.phase, "ROLLOVER_PENDING");
    assert.equal(st.rollover_due, "new_context", "memoryd names the rollover due at the settled boundary");
  });
});

describe("lifecycle: fence, claim and rollover", () => {
  test("usage → fallback due → delivered → arm → fenced 423 → claim → checkpoint → prepare → commit", async () => {
    const a = await attachNew({ context_window: 10000, reminder_remaining_floor_tokens: 1000 });
    await client.historySync({
      context: a.ctx(),
      entries: [msgEntry("u1", null, "user", [{ type: "text", text: "refactor the parser" }])],
      branch: ["u1"],
    });
    // Thresholds for W=10000 with floor 1000: reminder at 2500 remaining, fallback at 1250.
    const r1 = await client.usage({ context: a.ctx(), tokens_used: 8000, context_window: 10000 });
    assert.equal(r1.due, "reminder");
    const d1 = await client.delivered({ context: a.ctx(), kind: "reminder", window_id: "w1", request_id: "rem-1" });
    assert.equal(d1.stale, false);
    assert.equal(d1.state.phase, "REMINDED");
    const r2 = await client.usage({ context: a.ctx(), tokens_used: 9000, context_window: 10000 });
    assert.equal(r2.due, "fallback");
    const d2 = await client.delivered({ context: a.ctx(), kind: "fallback", window_id: "w1", request_id: "fb-1" });
    assert.equal(d2.state.phase, "FALLBACK_QUEUED");
    // Queued only: tools are not blocked yet.
    await client.historyListWindows(a.ctx());
    const stale = await client.arm({ context: a.ctx(), kind: "fallback", window_id: "w0", request_id: "fb-0" });
    assert.equal(stale.stale, true);
    const armed = await client.arm({ context: a.ctx(), kind: "fallback", window_id: "w1", request_id: "fb-1" });
    assert.equal(armed.state.phase, "FENCED");
    assert.equal(armed.state.fence_active, true);

    // Every read is fenced (423) with the reason in details.
    const f = await rejectsWith(() => client.historyListWindows(a.ctx("toolu_r")), "fenced", 423);
    assert.match(String(f.details.reason), /Checkpoint required/);
    assert.equal(f.details.terminate, true);
    await rejectsWith(() => client.newContext(a.ctx("toolu_nc")), "fenced", 423);

    // admit: a read is blocked; the first own-notes write is admitted (the claim).
    const blocked = await client.admit({ context: a.ctx(), call_id: "toolu_bash", tool_name: "bash", arguments: { command: "ls" } });
    assert.equal(blocked.allow, false);
    assert.equal(blocked.terminate, true);
    assert.match(blocked.reason, /Checkpoint required/);
    const claim = await client.admit({
      context: a.ctx(),
      call_id: "toolu_cp1",
      tool_name: "notes_write_file",
      arguments: { path: "checkpoint.md", text: "x".repeat(10) },
    });
    assert.equal(claim.allow, true);
    assert.equal(claim.state.claim, "toolu_cp1");
    assert.equal(claim.state.phase, "FENCED_CLAIMED");
    // A failed claimed call releases the claim.
    const released = await client.toolResult({ context: a.ctx(), call_id: "toolu_cp1", is_error: true });
    assert.equal(released.state.phase, "FENCED");
    assert.equal(released.state.claim, undefined);
    // Another agent's notes cannot satisfy the fence.
    const cross = await client.admit({
      context: a.ctx(),
      call_id: "toolu_cross",
      tool_name: "notes_write_file",
      arguments: { path: "/root/other/notes/a.md", text: "x" },
    });
    assert.equal(cross.allow, false);

    const claim2 = await client.admit({
      context: a.ctx(),
      call_id: "toolu_cp2",
      tool_name: "notes_write_file",
      arguments: { path: "checkpoint.md", text: "checkpoint: parser half done\n" },
    });
    assert.equal(claim2.allow, true);
    const cp = await client.notesWriteFile(a.ctx("toolu_cp2"), { path: "checkpoint.md", text: "checkpoint: parser half done\n" });
    assert.equal(cp.terminate, true);
    const saved = await client.state(a.task_id, a.agent);
    assert.equal(saved.phase, "CHECKPOINT_SAVED");
    assert.equal(saved.checkpoint_saved, true);
    assert.equal(saved.rollover_due, "fallback");

    const prep = await client.rolloverPrepare({ context: a.ctx(), reason: "fallback" });
    assert.equal(prep.window_id, "w2");
    assert.equal(prep.previous_window_id, "w1");
    assert.match(prep.bootstrap, /^<context_window_reset\/>/);
    assert.match(prep.bootstrap, /Current context window id: w2/);
    assert.match(prep.bootstrap, /\/root\/notes\/checkpoint\.md/);
    assert.equal(prep.state.phase, "ROLLING_OVER");
    assert.equal("rollover_due" in prep.state, false, "nothing is due while a rollover is prepared");
    // Prepare is idempotent for the same reason; another reason is a conflict.
    const again = await client.rolloverPrepare({ context: a.ctx(), reason: "fallback" });
    assert.equal(again.bootstrap, prep.bootstrap);
    await rejectsWith(() => client.rolloverPrepare({ context: a.ctx(), reason: "new_context" }), "conflict", 409);
    await rejectsWith(() => client.rolloverCommit({ context: a.ctx(), window_id: "w3" }), "conflict", 409);

    const compaction = {
      type: "compaction",
      id: "c1",
      parentId: "u1",
      timestamp: "2026-12-02T10:05:00.000Z",
      summary: prep.bootstrap,
      firstKeptEntryId: "none",
      tokensBefore: 9000,
    };
    const synced = await client.historySync({ context: a.ctx(), entries: [compaction], branch: ["u1", "c1"] });
    assert.equal(synced.window_id, "w2");
    const commit = await client.rolloverCommit({ context: a.ctx(), window_id: "w2", compaction_entry_id: "c1" });
    assert.equal(commit.window_id, "w2");
    assert.equal(commit.previous_window_id, "w1");
    assert.equal(commit.state.phase, "READY");
    assert.equal(commit.state.fence_active, false);
    // Tools are open again.
    const w = await client.historyListWindows(a.ctx());
    assert.deepEqual(
      w.details.windows.map((x) => [x.window_id, x.current]),
      [
        ["w1", false],
        ["w2", true],
      ],
    );
  });

  test("rollover/fail: not aborted clears the request; without a prepared rollover it is ignored", async () => {
    const a = await attachNew({ context_window: 100000 });
    const ignored = await client.rolloverFail({ context: a.ctx(), aborted: false, error: "Nothing to compact" });
    assert.equal(ignored.ignored, true);
    await client.newContext(a.ctx("toolu_nc"));
    await client.rolloverPrepare({ context: a.ctx(), reason: "new_context" });
    const aborted = await client.rolloverFail({ context: a.ctx(), aborted: true, error: "cancelled" });
    assert.equal(aborted.ignored, false);
    assert.equal(aborted.state.pending_new_context, true, "an aborted attempt keeps the intent");
    await client.rolloverPrepare({ context: a.ctx(), reason: "new_context" });
    const failed = await client.rolloverFail({ context: a.ctx(), aborted: false, error: "Nothing to compact (session too small)" });
    assert.equal(failed.state.pending_new_context, false);
    assert.equal(failed.state.phase, "READY");
  });

  test("manual checkpoint phases and user-input", async () => {
    const a = await attachNew({ context_window: 100000 });
    const req = await client.manual({ context: a.ctx(), action: "request", request_id: "man-1" });
    assert.equal(req.state.phase, "MANUAL_AWAITING");
    const d = await client.delivered({ context: a.ctx(), kind: "manual_checkpoint", window_id: "w1", request_id: "man-1" });
    assert.equal(d.stale, false);
    const armed = await client.arm({ context: a.ctx(), kind: "manual_checkpoint", window_id: "w1", request_id: "man-1" });
    assert.equal(armed.state.fence_active, true);
    const ui = await client.userInput(a.ctx());
    assert.equal(ui.ignored, false);
    assert.equal(ui.state.phase, "READY", "a user message invalidates the manual checkpoint and reopens tools");
    await rejectsWith(() => client.manual({ context: a.ctx(), action: "saved", request_id: "man-1" }), "conflict", 409);
    await rejectsWith(() => client.manual({ context: a.ctx(), action: "bogus" }), "invalid_argument", 400);
  });

  test("lifecycle argument errors are 400", async () => {
    const a = await attachNew();
    await rejectsWith(() => client.usage({ context: a.ctx(), tokens_used: -1 }), "invalid_argument", 400);
    await rejectsWith(() => client.delivered({ context: a.ctx(), kind: "nope", window_id: "w1" }), "invalid_argument", 400);
    await rejectsWith(() => client.admit({ context: a.ctx(), call_id: "x", tool_name: "" }), "invalid_argument", 400);
    await rejectsWith(() => client.rolloverPrepare({ context: a.ctx(), reason: "because" }), "invalid_argument", 400);
    await rejectsWith(() => client.toolResult({ context: a.ctx(), call_id: "", is_error: true }), "invalid_argument", 400);
  });
});

describe("events and state", () => {
  test("events page in position order, by task, with next_after", async () => {
    const a = await attachNew();
    await client.notesWriteFile(a.ctx("toolu_ev"), { path: "a.md", text: "a" });
    const page = await client.listEvents({ task_id: a.task_id });
    const types = page.events.map((e) => e.type);
    assert.deepEqual(types.slice(0, 3), ["task.created", "agent.registered", "note.written"]);
    for (const e of page.events) assert.equal(e.stream.startsWith(a.task_id), true);
    const positions = page.events.map((e) => e.position);
    assert.deepEqual(positions, [...positions].sort((x, y) => x - y));
    assert.equal(page.next_after, positions.at(-1));
    const one = await client.listEvents({ after: 0, limit: 1 });
    assert.equal(one.events.length, 1);
    assert.equal(one.events[0].position, 1);
    const rest = await client.listEvents({ after: one.next_after, limit: 2 });
    assert.equal(rest.events[0].position, 2);
    await rejectsWith(() => client.listEvents({ after: -1 }), "invalid_argument", 400);
  });

  test("tasks page: newest activity first, agents with window and phase, next_before", async () => {
    const a = await attachNew();
    const child = await client.attach({
      session_key: `${a.key}.child`,
      task: { task_id: a.task_id, parent_agent: "/root", agent_name: "helper" },
    });
    const b = await attachNew();
    // Other tests' tasks may gain audit records meanwhile: check a and b among all.
    const page = await client.listTasks({ limit: 500 });
    const ids = page.tasks.map((t) => t.task_id);
    assert.ok(ids.indexOf(b.task_id) >= 0 && ids.indexOf(b.task_id) < ids.indexOf(a.task_id), "b is newer than a");
    const positions = page.tasks.map((t) => t.last_activity_position);
    assert.deepEqual(positions, [...positions].sort((x, y) => y - x));
    const ta = page.tasks[ids.indexOf(a.task_id)];
    assert.deepEqual(
      ta.agents.map((x) => [x.agent, x.parent_agent, x.window_id, x.phase]),
      [
        ["/root", null, "w1", "READY"],
        [child.agent, "/root", "w1", "READY"],
      ],
    );
    assert.equal(ta.agents[0].session_key, a.key);
    assert.deepEqual(ta.agents.map((x) => x.first_request), [null, null], "no history synced: no first request");
    assert.equal(ta.last_activity_position, ta.agents[1].last_activity_position);
    assert.equal(typeof ta.last_activity_at, "string");
    const first = await client.listTasks({ limit: 1 });
    assert.equal(first.tasks.length, 1);
    assert.equal(first.next_before, first.tasks[0].last_activity_position);
    const rest = await client.listTasks({ before: first.next_before, limit: 500 });
    assert.ok(rest.tasks.length >= 1);
    assert.ok(rest.tasks.every((t) => t.last_activity_position < first.next_before));
    assert.equal(rest.next_before, null);
    await rejectsWith(() => client.listTasks({ limit: 0 }), "invalid_argument", 400);
    await rejectsWith(() => client.listTasks({ before: 0 }), "invalid_argument", 400);
  });

  test("state of an agent; unknown agent 404", async () => {
    const a = await attachNew();
    const st = await client.state(a.task_id, "/root");
    assert.equal(st.task_id, a.task_id);
    assert.equal(st.agent, "/root");
    assert.equal(st.phase, "READY");
    assert.equal(st.window_id, "w1");
    assert.equal("rollover_due" in st, false, "rollover_due is omitted when none is due");
    await rejectsWith(() => client.state(a.task_id, "/root/nobody"), "not_found", 404);
  });
});

describe("forgetting a task", () => {
  test("forgetTask erases the task: its events tombstones, its notes, history and state gone; again or unknown 404", async () => {
    const a = await attachNew();
    const keep = await attachNew();
    const secret = `forget-me-${process.pid}-${Date.now()}`;
    await client.notesWriteFile(a.ctx("toolu_fg1"), { path: "secret.md", text: `the text ${secret}\n` });
    const e1 = msgEntry(`fg-${n}-1`, null, "user", [{ type: "text", text: `please keep ${secret}` }]);
    await client.historySync({ context: a.ctx(), entries: [e1], branch: [e1.id] });
    await client.notesWriteFile(keep.ctx("toolu_fg2"), { path: "kept.md", text: "kept\n" });
    const before = await client.listEvents({ task_id: a.task_id, limit: 1000 });
    assert.ok(before.events.length >= 4);

    const res = await client.forgetTask(a.task_id);
    assert.equal(res.task_id, a.task_id);
    assert.equal(res.events, before.events.length, "every event of the task became a tombstone");
    assert.ok(res.position > before.next_after);
    assert.deepEqual(res.agents, ["/root"]);
    assert.ok(res.rows.notes >= 1 && res.rows.history_entries >= 1, JSON.stringify(res.rows));
    assert.equal(res.scrub.engine, "sqlite");
    assert.equal(res.scrub.secure_delete, true);
    assert.equal(typeof res.scrub.free_pages_zeroed, "number");
    assert.ok(Array.isArray(res.scrub.vacuumed) && Array.isArray(res.scrub.left));
    if (res.scrub.wal_truncated) {
      assert.equal(res.scrub.wal_bytes, 0);
      assert.deepEqual(res.scrub.left, []);
    } else {
      assert.ok(res.scrub.left.length > 0, "a WAL readers kept is said in left");
    }

    // The log keeps its positions: the task's events are tombstones in place, then the erasure.
    const after = await client.listEvents({ task_id: a.task_id, limit: 1000 });
    assert.deepEqual(
      after.events.slice(0, -1).map((e) => [e.position, e.type]),
      before.events.map((e) => [e.position, "event.erased"]),
    );
    const erasure = after.events.at(-1);
    assert.deepEqual([erasure.position, erasure.type, erasure.data], [res.position, "task.erased", { task_id: a.task_id, events: res.events }]);
    assert.equal(JSON.stringify(after).includes(secret), false, "no event holds the text");

    // The task is gone; the other one is not.
    const tasks = await client.listTasks({ limit: 500 });
    assert.equal(tasks.tasks.some((t) => t.task_id === a.task_id), false);
    assert.ok(tasks.tasks.some((t) => t.task_id === keep.task_id));
    await rejectsWith(() => client.state(a.task_id, "/root"), "not_found", 404);
    await rejectsWith(() => client.notesReadFile(a.ctx(), { path: "secret.md" }), "not_found", 404);
    const kept = await client.notesReadFile(keep.ctx(), { path: "kept.md" });
    assert.equal(kept.details.text, "kept\n");

    const again = await rejectsWith(() => client.forgetTask(a.task_id), "not_found", 404);
    assert.match(again.message, /erased already/);
    await rejectsWith(() => client.forgetTask("01JEXAMPLE0000000000000000"), "not_found", 404);
    // The route needs the token, as every /v1 route.
    await rejectsWith(() => new MemorydClient({ baseUrl: md.url, token: "wrong" }).forgetTask(keep.task_id), "unproven", 0);
  });
});

describe("transport errors", () => {
  test("a wrong token is never sent (memoryd does not prove it holds it), and no token", async () => {
    const bad = new MemorydClient({ baseUrl: md.url, token: "not-the-token" });
    const e = await rejectsWith(() => bad.listTools(), "unproven", 0);
    assert.match(e.message, /did not prove it is the memoryd holding this token \(a proof that does not match this token\)/);
    const none = new MemorydClient({ baseUrl: md.url, token: () => undefined });
    await rejectsWith(() => none.listTools(), "no_token", 0);
  });

  test("memoryd proves itself once per client, and again after it was unreachable", async () => {
    const proofs = [];
    const counting = (url, init) => {
      if (new URL(url).pathname === "/v1/proof") proofs.push(url);
      return fetch(url, init);
    };
    const c = new MemorydClient({ baseUrl: md.url, token: md.token, fetch: counting });
    await c.listTools();
    await c.listTools();
    assert.equal(proofs.length, 1);
    let down = true;
    const flaky = new MemorydClient({
      baseUrl: md.url,
      token: md.token,
      fetch: (url, init) => (down && new URL(url).pathname === "/v1/tools" ? ((down = false), Promise.reject(new TypeError("fetch failed"))) : counting(url, init)),
    });
    await rejectsWith(() => flaky.listTools(), "unreachable", 0);
    await flaky.listTools();
    assert.equal(proofs.length, 3, "the failed request's proof, then a new one");
  });

  test("403: requests with an Origin header are refused", async () => {
    await rejectsWith(
      () => client.request({ method: "GET", path: "/v1/tools", headers: { Origin: "http://evil.example" } }),
      "forbidden",
      403,
    );
  });

  test("413: a body over --max-body", async () => {
    const a = await attachNew();
    await rejectsWith(
      () => client.notesWriteFile(a.ctx("toolu_huge"), { path: "huge.md", text: "y".repeat(1 << 20) }),
      "too_large",
      413,
    );
  });

  test("415: a body that is not application/json; 400: malformed JSON; 404: unknown route", async () => {
    await rejectsWith(
      () => client.request({ method: "POST", path: "/v1/sessions/attach", body: "session_key=x", contentType: "text/plain" }),
      "invalid_argument",
      415,
    );
    await rejectsWith(() => client.request({ method: "POST", path: "/v1/sessions/attach", body: "{nope" }), "invalid_argument", 400);
    await rejectsWith(() => client.request({ method: "GET", path: "/v1/nothing" }), "not_found", 404);
  });

  test("unreachable: nothing listens", async () => {
    const srv = createServer();
    await new Promise((res) => srv.listen(0, "127.0.0.1", res));
    const port = srv.address().port;
    await new Promise((res) => srv.close(res));
    const c = new MemorydClient({ baseUrl: `http://127.0.0.1:${port}`, token: "t" });
    const e = await rejectsWith(() => c.health(), "unreachable", 0);
    assert.match(e.message, /not reachable/);
    assert.ok(isMemorydError(e, "unreachable"));
  });

  test("timeout: a server that never answers (AbortSignal.timeout)", async () => {
    const sockets = [];
    const srv = createServer((s) => sockets.push(s));
    await new Promise((res) => srv.listen(0, "127.0.0.1", res));
    try {
      const c = new MemorydClient({ baseUrl: `http://127.0.0.1:${srv.address().port}`, token: "t", timeoutMs: 200 });
      await rejectsWith(() => c.listTools(), "timeout", 0);
      // A per-call timeout overrides the client's.
      await rejectsWith(() => c.listTools({ timeoutMs: 50 }), "timeout", 0);
      // The caller's signal aborts too.
      const ctl = new AbortController();
      setTimeout(() => ctl.abort(), 20);
      await rejectsWith(() => c.listTools({ signal: ctl.signal, timeoutMs: 5000 }), "aborted", 0);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((res) => srv.close(res));
    }
  });
});

describe("token and address discovery", () => {
  test("MEMORYD_TOKEN wins; else the token file beside MEMORYD_DB, XDG_DATA_HOME or ~/.local/share", () => {
    const dir = mkdtempSync(join(tmpdir(), "memoryd-disc-"));
    try {
      assert.equal(defaultDbPath({ MEMORYD_DB: "/x/y.db" }), "/x/y.db");
      assert.equal(defaultDbPath({ XDG_DATA_HOME: "/xdg" }), "/xdg/memoryd/memory.db");
      assert.equal(defaultDbPath({ HOME: "/home/u" }), "/home/u/.local/share/memoryd/memory.db");
      assert.equal(tokenFilePath("/a/b/memory.db"), "/a/b/token");
      mkdirSync(join(dir, "xdg", "memoryd"), { recursive: true });
      writeFileSync(join(dir, "xdg", "memoryd", "token"), "xdg-token\n");
      mkdirSync(join(dir, "home", ".local", "share", "memoryd"), { recursive: true });
      writeFileSync(join(dir, "home", ".local", "share", "memoryd", "token"), "home-token\n");
      writeFileSync(join(dir, "custom-token-dir-token"), "");
      assert.equal(discoverToken({ MEMORYD_TOKEN: "env-token", XDG_DATA_HOME: join(dir, "xdg") }), "env-token");
      assert.equal(discoverToken({ XDG_DATA_HOME: join(dir, "xdg"), HOME: join(dir, "home") }), "xdg-token");
      assert.equal(discoverToken({ HOME: join(dir, "home") }), "home-token");
      assert.equal(discoverToken({ MEMORYD_DB: join(dir, "xdg", "memoryd", "memory.db"), HOME: join(dir, "home") }), "xdg-token");
      assert.equal(discoverToken({ HOME: join(dir, "nowhere") }), undefined);
      assert.equal(discoverBaseUrl({}), "http://127.0.0.1:7411");
      assert.equal(discoverBaseUrl({ MEMORYD_ADDR: "127.0.0.1:9000" }), "http://127.0.0.1:9000");
      assert.equal(discoverBaseUrl({ MEMORYD_URL: "http://localhost:1234/" }), "http://localhost:1234");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a client with no token option reads the token file memoryd wrote beside its database", async () => {
    const own = await startMemoryd({ token: null });
    try {
      const c = new MemorydClient({ baseUrl: own.url, env: { MEMORYD_DB: own.db } });
      const tools = await c.listTools();
      assert.equal(tools.length, 11);
      const anon = new MemorydClient({ baseUrl: own.url, env: { MEMORYD_DB: join(own.dir, "elsewhere", "memory.db"), HOME: own.dir } });
      await rejectsWith(() => anon.listTools(), "no_token", 0);
    } finally {
      assert.equal((await own.stop()).code, 0);
    }
  });
});
