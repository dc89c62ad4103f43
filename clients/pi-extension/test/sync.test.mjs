// The extension's history sync in the real Pi SDK: the first sync of the
// process sends the whole branch, the next ones a delta from the revision
// memoryd answered; when another client moved the branch, memoryd answers
// the delta with a stale_base conflict and the extension sends the whole
// branch. memoryd's branch (rebuilt from its history.branch_changed events)
// is Pi's branch at every point.
import assert from "node:assert/strict";
import { test } from "node:test";

import { MemorydClient } from "@memoryd/client";
import { createMemorydExtension } from "../dist/index.js";
import { hangGuardMs, memorydPerFile } from "../../testing/memoryd.mjs";
import { createPiSession, fauxAssistantMessage } from "./harness.mjs";

let md;
let client;
memorydPerFile(MemorydClient, (m, c) => {
  md = m;
  client = c;
});

/** memoryd's current branch of the agent, rebuilt from its events (keep + append). */
async function memorydBranch(ids) {
  let branch = [];
  let after = 0;
  for (;;) {
    const page = await client.listEvents({ task_id: ids.task_id, after, limit: 500 });
    for (const ev of page.events) {
      if (ev.type !== "history.branch_changed" || ev.data.agent !== ids.agent) continue;
      branch = [...branch.slice(0, ev.data.keep), ...ev.data.append];
      assert.equal(branch.length, ev.data.length);
    }
    if (page.events.length === 0) return branch;
    after = page.events.at(-1).position;
  }
}

test("history sync: whole at the first sync, then deltas; a stale base falls back to the whole branch", { timeout: hangGuardMs }, async () => {
  const traces = [];
  const extension = createMemorydExtension({ client, onTrace: (event, data) => traces.push({ event, ...data }) });
  let n = 0;
  const { session } = await createPiSession({ extension, model: () => fauxAssistantMessage(`answer ${++n}`) });
  const synced = () => traces.filter((t) => t.event === "synced");
  const piBranch = () => session.sessionManager.getBranch().map((e) => e.id);
  try {
    await session.prompt("first turn");
    await session.waitForIdle();
    const attached = traces.find((t) => t.event === "attached");
    const ids = { task_id: attached.task_id, agent: attached.agent };
    assert.equal(synced()[0].form, "whole", "the first sync of the process sends the whole branch");
    await session.prompt("second turn");
    await session.waitForIdle();
    const forms = synced().map((t) => t.form);
    assert.ok(forms.length >= 3, `syncs: ${forms}`);
    assert.deepEqual(forms.slice(1).filter((f) => f === "whole"), [], `after the first, deltas (and entries) only: ${forms}`);
    assert.ok(forms.includes("delta"), `a delta was sent: ${forms}`);
    assert.deepEqual(await memorydBranch(ids), piBranch());

    // Another client of the agent moves memoryd's branch: the extension's base is stale.
    const res = await client.historySync({ context: ids, entries: [], branch: piBranch().slice(0, 1) });
    const before = synced().length;
    await session.prompt("third turn");
    await session.waitForIdle();
    const stale = traces.find((t) => t.event === "sync-stale-base");
    assert.ok(stale, "memoryd said the delta's base was stale");
    assert.equal(stale.revision, res.revision);
    const after = synced().slice(before).map((t) => t.form);
    assert.equal(after[0], "whole", `the sync after the conflict sent the whole branch: ${after}`);
    assert.ok(after.slice(1).every((f) => f !== "whole"), `then deltas again: ${after}`);
    assert.deepEqual(await memorydBranch(ids), piBranch());
  } finally {
    session.dispose();
  }
});
