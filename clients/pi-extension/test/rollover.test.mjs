// The extension in the real Pi SDK (createAgentSession, no network, a scripted
// faux model) against a real memoryd: a session that takes notes, crosses the
// reminder and fallback thresholds of a small context window, is fenced,
// saves its checkpoint, rolls over to window w2 and there recovers a detail
// with history_search_contents + history_read_item. The memoryd log of the
// run is exported and must replay clean (--check-reads); with UPDATE_LOGS=1
// it is written to testdata/logs/pi-sdk-rollover.jsonl.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { MemorydClient } from "@memoryd/client";
import { createMemorydExtension, NO_KEPT_ENTRY } from "../dist/index.js";
import { hangGuardMs, memorydPerFile, repoRoot, runMemoryd } from "../../testing/memoryd.mjs";
import { createPiSession, fauxAssistantMessage, fauxText, fauxToolCall, textOf, waitFor } from "./harness.mjs";

let md;
let client;
memorydPerFile(MemorydClient, (m, c) => {
  md = m;
  client = c;
});

/** A tool of the test: some ordinary work whose output fills the window. */
function workTool(pi) {
  pi.registerTool({
    name: "run_step",
    label: "run_step",
    description: "Run one step of the migration and return its log.",
    parameters: { type: "object", properties: { n: { type: "integer" } }, required: ["n"], additionalProperties: false },
    async execute(_id, { n }) {
      const lines = [`step ${n}: migrating billing tables`];
      if (n === 3) lines.push("generated credentials: DEPLOY_TOKEN=ZEBRA-42 (needed for the final deploy)");
      for (let i = 0; i < 30; i++) lines.push(`step ${n} row batch ${i}: copied 1000 rows, checksum ${(n * 7919 + i * 104729) % 1000003}`);
      lines.push(`step ${n} ok`);
      return { content: [{ type: "text", text: lines.join("\n") }], details: {} };
    },
  });
}

/** Parses the JSON lines of a memoryd tool result text. */
function jsonLines(text) {
  return text
    .split("\n")
    .filter((l) => l.startsWith("{"))
    .map((l) => JSON.parse(l));
}

test("a Pi session is fenced at the fallback, checkpoints, rolls over and recovers from history", { timeout: hangGuardMs }, async () => {
  const traces = [];
  const extension = createMemorydExtension({
    client,
    // 12000 tokens: reminder at 6000 remaining, fallback at 3000 (memoryd's thresholds).
    budget: { context_window: 12000 },
    onTrace: (event, data) => traces.push({ event, ...data }),
  });
  const seen = { readContent: undefined, finalText: undefined, maxStep: 0 };
  let ids = 0;
  const id = () => `call_${++ids}`;

  const model = (context) => {
    const msgs = context.messages;
    const texts = msgs.map(textOf);
    const all = texts.join("\n");
    const last = msgs.at(-1);
    const lastText = textOf(last);
    if (all.includes("<context_window_reset/>")) {
      // Window w2: recover by the protocol.
      if (last.role === "toolResult" && last.toolName === "history_read_item") {
        seen.readContent = lastText;
        const m = /DEPLOY_TOKEN=([A-Z]+-\d+)/.exec(lastText);
        seen.finalText = m ? `Deploying billing with ${m[1]}.` : "I could not recover the token.";
        return fauxAssistantMessage(seen.finalText);
      }
      if (last.role === "toolResult" && last.toolName === "history_search_contents") {
        const hit = jsonLines(lastText).find((r) => r.item_id && r.regions);
        assert.ok(hit, `search found the token: ${lastText}`);
        const region = hit.regions[0];
        return fauxAssistantMessage(
          [
            fauxToolCall(
              "history_read_item",
              { window_id: hit.window_id, item_id: hit.item_id, offset_chars: region.offset_chars, limit_chars: region.limit_chars },
              { id: id() },
            ),
          ],
          { stopReason: "toolUse" },
        );
      }
      if (last.role === "toolResult" && last.toolName === "notes_read_file") {
        assert.match(lastText, /DEPLOY_TOKEN/);
        return fauxAssistantMessage([fauxToolCall("history_search_contents", { query: "DEPLOY_TOKEN=" }, { id: id() })], {
          stopReason: "toolUse",
        });
      }
      if (seen.finalText) return fauxAssistantMessage("Done.");
      return fauxAssistantMessage([fauxToolCall("notes_read_file", { path: "checkpoint.md" }, { id: id() })], { stopReason: "toolUse" });
    }

    // Window w1.
    if (all.includes("<context_window_fallback")) {
      const blocked = msgs.find((m) => m.role === "toolResult" && m.toolName === "history_list_windows");
      if (!blocked) {
        // The fence: the read is blocked; the one own-notes write is admitted.
        return fauxAssistantMessage(
          [
            fauxToolCall("history_list_windows", {}, { id: id() }),
            fauxToolCall(
              "notes_write_file",
              {
                path: "checkpoint.md",
                text: `goal: migrate billing\ndone: steps 1..${seen.maxStep}\nnext: deploy; the DEPLOY_TOKEN is in the run_step 3 output (history)\n`,
              },
              { id: id() },
            ),
          ],
          { stopReason: "toolUse" },
        );
      }
      return fauxAssistantMessage("Checkpoint saved; waiting for the new window.");
    }
    if (last.role === "user" && lastText.includes("<context_window_reminder") && !all.includes("[tool_call notes_append_to_file]")) {
      return fauxAssistantMessage(
        [fauxToolCall("notes_append_to_file", { path: "plan.md", text: `- reminder seen after step ${seen.maxStep}\n` }, { id: id() })],
        { stopReason: "toolUse" },
      );
    }
    if (!all.includes("[tool_call notes_write_file]")) {
      return fauxAssistantMessage(
        [fauxText("Starting."), fauxToolCall("notes_write_file", { path: "plan.md", text: "goal: migrate billing\n" }, { id: id() })],
        { stopReason: "toolUse" },
      );
    }
    if (seen.maxStep >= 40) return fauxAssistantMessage("giving up: no fallback came");
    seen.maxStep++;
    return fauxAssistantMessage([fauxToolCall("run_step", { n: seen.maxStep }, { id: id() })], { stopReason: "toolUse" });
  };

  const { session } = await createPiSession({ extension, extraExtensions: [workTool], model });
  try {
    // The 11 tools are registered with memoryd's schemas and execution modes.
    const tools = Object.fromEntries(session.getAllTools().map((t) => [t.name, t]));
    const specs = await client.listTools();
    for (const s of specs) {
      assert.ok(tools[s.name], `${s.name} is registered`);
      assert.deepEqual(tools[s.name].parameters, s.parameters, `${s.name} has memoryd's schema`);
    }

    await session.prompt("Migrate the billing service step by step with run_step until it is done, then deploy it.");
    await waitFor(() => seen.finalText !== undefined, 60_000, "the model's answer in the new window");
    await waitFor(() => traces.filter((t) => t.event === "settled").length >= 2 && session.isIdle, 30_000, "the final settle");
    await session.waitForIdle();

    const kinds = traces.map((t) => t.event);
    const attached = traces.find((t) => t.event === "attached");
    const ctx = { task_id: attached.task_id, agent: attached.agent };

    // Reminder, then fallback, each delivered once, in window w1.
    const delivered = traces.filter((t) => t.event === "deliver").map((t) => [t.kind, t.windowId]);
    assert.deepEqual(delivered.slice(0, 2), [
      ["reminder", "w1"],
      ["fallback", "w1"],
    ]);
    // The fallback entered the branch: the fence armed.
    const arm = traces.find((t) => t.event === "arm");
    assert.equal(arm.phase, "FENCED");
    assert.equal(arm.stale, false);
    // The blocked read came back as an error with the fence's reason.
    const blockedMsg = session.sessionManager
      .getEntries()
      .find((e) => e.type === "message" && e.message.role === "toolResult" && e.message.toolName === "history_list_windows");
    assert.equal(blockedMsg.message.isError, true);
    assert.match(textOf(blockedMsg.message), /Checkpoint required/);
    // The rollover: prepared for the fallback, committed as w2.
    const prepared = traces.find((t) => t.event === "rollover_prepared");
    assert.deepEqual([prepared.reason, prepared.windowId], ["fallback", "w2"]);
    const committed = traces.find((t) => t.event === "rollover_committed");
    assert.deepEqual([committed.windowId, committed.previousWindowId], ["w2", "w1"]);
    assert.ok(kinds.indexOf("rollover_committed") > kinds.indexOf("blocked"));

    // Pi's session has the compaction whose summary is the bootstrap and that keeps nothing.
    const compaction = session.sessionManager.getEntries().find((e) => e.type === "compaction");
    assert.equal(compaction.id, committed.entry);
    assert.match(compaction.summary, /^<context_window_reset\/>/);
    assert.match(compaction.summary, /Current context window id: w2/);
    assert.match(compaction.summary, /\/root\/notes\/checkpoint\.md/);
    assert.equal(compaction.firstKeptEntryId, NO_KEPT_ENTRY);
    const projected = session.sessionManager.buildSessionProjection().messages.map(textOf).join("\n");
    assert.doesNotMatch(projected, /step 5 row batch 7/, "the new window keeps nothing of the old one");

    // Recovered from history in the new window.
    assert.match(seen.readContent, /DEPLOY_TOKEN=ZEBRA-42/);
    assert.equal(seen.finalText, "Deploying billing with ZEBRA-42.");

    // memoryd's view: window w2 is live and ready, w1 holds the work.
    const st = await client.state(ctx.task_id, ctx.agent);
    assert.equal(st.window_id, "w2");
    assert.equal(st.previous_window_id, "w1");
    assert.equal(st.fence_active, false);
    assert.ok(["READY", "REMINDED"].includes(st.phase), st.phase);
    const windows = await client.historyListWindows(ctx);
    assert.deepEqual(
      windows.details.windows.map((w) => [w.window_id, w.current]),
      [
        ["w1", false],
        ["w2", true],
      ],
    );
    const notes = await client.notesReadFile(ctx, { path: "checkpoint.md" });
    assert.match(notes.details.text, /DEPLOY_TOKEN is in the run_step 3 output/);
    const plan = await client.notesReadFile(ctx, { path: "plan.md" });
    assert.match(plan.details.text, /reminder seen after step \d+/);

    // The lifecycle events, in order.
    const events = [];
    for (let after = 0; ; ) {
      const page = await client.listEvents({ after, task_id: ctx.task_id, limit: 5000 });
      events.push(...page.events);
      if (page.events.length < 5000) break;
      after = page.next_after;
    }
    const lifecycle = events.map((e) => e.type).filter((t) => t.startsWith("lifecycle.") && t !== "lifecycle.usage_reported");
    const order = [
      "lifecycle.control_delivered",
      "lifecycle.control_delivered",
      "lifecycle.fence_armed",
      "lifecycle.call_blocked",
      "lifecycle.claim_taken",
      "lifecycle.checkpoint_saved",
      "lifecycle.rollover_prepared",
      "lifecycle.rollover_committed",
    ];
    let i = 0;
    for (const t of lifecycle) if (t === order[i]) i++;
    assert.equal(i, order.length, `lifecycle events in order: ${lifecycle.join(", ")}`);
    const compactionEntry = events.find((e) => e.type === "history.entry_recorded" && e.data.entry_id === compaction.id);
    assert.ok(compactionEntry, "the compaction entry was synced");

    // Export the log; it must replay clean, reads included.
    const exp = await runMemoryd(["export", "--db", md.db, "--task", ctx.task_id]);
    assert.equal(exp.code, 0, exp.stderr);
    const file = process.env.UPDATE_LOGS === "1" ? join(repoRoot, "testdata", "logs", "pi-sdk-rollover.jsonl") : join(md.dir, "pi-sdk-rollover.jsonl");
    mkdirSync(join(file, ".."), { recursive: true });
    writeFileSync(file, exp.stdout);
    const replay = await runMemoryd(["replay", file, "--check-reads"]);
    assert.equal(replay.code, 0, `replay --check-reads: ${replay.stdout}\n${replay.stderr}`);
    // The committed log (testdata/logs) replays clean too. It is part of the
    // repository: a missing file is a failure, not a skipped check.
    const committedLog = join(repoRoot, "testdata", "logs", "pi-sdk-rollover.jsonl");
    assert.ok(existsSync(committedLog), `${committedLog} is missing (regenerate it with UPDATE_LOGS=1)`);
    const r = await runMemoryd(["replay", committedLog, "--check-reads"]);
    assert.equal(r.code, 0, `replay --check-reads ${committedLog}: ${r.stdout}\n${r.stderr}`);
    if (process.env.MEMORYD_DEBUG === "1") console.log(traces.map((t) => JSON.stringify(t)).join("\n"), replay.stdout, replay.stderr);
  } finally {
    session.dispose();
  }
});
