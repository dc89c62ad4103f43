// The real pi-subagents package (npm pi-subagents, a devDependency) in the real
// pi CLI beside the extension: the scripted parent writes a note and delegates
// to the agent "memo" through pi-subagents' own `subagent` tool (foreground);
// memo names this extension's child entry in subagentOnlyExtensions, or Pi's
// settings name it for every agent (subagents.defaultExtensions), so the
// child joins the parent's task as /root/agent_<hash of its session key>,
// reads the parent's note, lists and searches the parent's history by
// agent_name and writes its own note, which the parent then reads, and
// searches the child's history by a relative agent_name.
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

import { MemorydClient } from "@memoryd/client";
import { hangGuardMs, startMemoryd } from "../../../testing/memoryd.mjs";
import { lastResults, startModelServer, textOf } from "../cli/model-server.mjs";
import { freshSetup, MODEL, PROVIDER, runPi, traced } from "../cli/pi-cli.mjs";

const subagentsEntry = fileURLToPath(import.meta.resolve("pi-subagents"));
const childEntry = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "dist", "subagent-child.js");

const CHILD_PROMPT = "CHILD-AGENT memo: read the plan, look at the parent's history, report.";
const PARENT_PROMPT = "Delegate the review (parent marker PARENT-7731).";
const PLAN = "plan: review the parser\n";
const CHILD_TASK = "Review it (child marker CHILD-4409).";
const REPORT = "report: the parser is fine\n";

test("a child started by pi-subagents joins the parent's task (the agent's subagentOnlyExtensions), and the two read each other's notes and history", { timeout: hangGuardMs }, () =>
  delegate({ agentFields: [`subagentOnlyExtensions: ${childEntry}`] }),
);

test("every agent's child joins through Pi's settings: subagents.defaultExtensions names the child entry", { timeout: hangGuardMs }, () =>
  delegate({ settings: { subagents: { defaultExtensions: [childEntry] } } }),
);

/**
 * The delegation session: the agent "memo" with agentFields in its
 * definition, Pi's settings.json (in the agent folder) settings; the
 * assertions of the file's header.
 */
async function delegate({ agentFields = [], settings }) {
  const md = await startMemoryd();
  const client = new MemorydClient({ baseUrl: md.url, token: md.token });
  /** The child's agent, as GET /v1/tasks lists it once the parent's subagent call returned. */
  let childAgent;
  const model = await startModelServer(async (body) => {
    const done = lastResults(body);
    if (textOf(body.messages[0]).includes("CHILD-AGENT")) {
      if (done.notes_write_file) return { text: "child done" };
      if (done.notes_read_file) return { calls: [["notes_write_file", { path: "report.md", text: REPORT }]] };
      return {
        calls: [
          ["notes_read_file", { path: "/root/notes/plan.md" }],
          ["history_list_items", { agent_name: "/root" }],
          ["history_search_contents", { agent_name: "/root", query: "PARENT-7731" }],
        ],
      };
    }
    if (done.notes_read_file) return { text: "parent done" };
    if (done.subagent) {
      const { tasks } = await client.listTasks();
      childAgent = tasks[0].agents.find((a) => a.agent !== "/root");
      if (!childAgent) throw new Error(`no child in the task; the subagent call returned: ${done.subagent}`);
      const relative = childAgent.agent.slice("/root/".length);
      return {
        calls: [
          ["notes_read_file", { path: `${childAgent.agent}/notes/report.md` }],
          ["history_search_contents", { agent_name: relative, query: "CHILD-4409" }],
        ],
      };
    }
    if (done.notes_write_file) return { calls: [["subagent", { agent: "memo", task: CHILD_TASK, async: false }]] };
    return { calls: [["notes_write_file", { path: "plan.md", text: PLAN }]] };
  });
  const setup = freshSetup(model.url);
  try {
    // A user agent; no `tools` allowlist: pi-subagents 0.67.0 keeps only Pi's builtin tools of one.
    mkdirSync(join(setup.agentDir, "agents"));
    writeFileSync(
      join(setup.agentDir, "agents", "memo.md"),
      [
        "---",
        "name: memo",
        "description: reads the plan and reports",
        `model: ${PROVIDER}/${MODEL}`,
        ...agentFields,
        "---",
        CHILD_PROMPT,
        "",
      ].join("\n"),
    );
    if (settings) writeFileSync(join(setup.agentDir, "settings.json"), JSON.stringify(settings));
    const run = await runPi(setup, ["-e", subagentsEntry, "-p", PARENT_PROMPT], {
      env: { MEMORYD_URL: md.url, MEMORYD_TOKEN: md.token, MEMORYD_DEBUG: "1" },
      timeoutMs: 150_000,
    });
    assert.equal(run.code, 0, run.stderr);
    assert.match(run.stdout, /parent done/);
    assert.deepEqual(traced(run.stderr, "error"), [], run.stderr);

    // One task: the parent /root and the child /root/agent_<first 12 hex of sha256(its session key)>.
    const [parent, child] = traced(run.stderr, "attached");
    assert.equal(parent.agent, "/root");
    assert.equal(child.task_id, parent.task_id, run.stderr);
    const { tasks } = await client.listTasks();
    const task = tasks.find((t) => t.task_id === parent.task_id);
    assert.deepEqual(task.agents.map((a) => [a.agent, a.parent_agent]), [["/root", null], [child.agent, "/root"]]);
    const hash = createHash("sha256").update(childAgent.session_key).digest("hex").slice(0, 12);
    assert.equal(child.agent, `/root/agent_${hash}`);

    // The child read the parent's note and history; the parent read the child's note and history.
    const childResults = resultsOf(model.requests, true);
    assert.match(childResults.notes_read_file, /review the parser/);
    assert.match(childResults.history_list_items, /PARENT-7731/);
    assert.match(childResults.history_search_contents, /PARENT-7731/);
    const parentResults = resultsOf(model.requests, false);
    assert.match(parentResults.notes_read_file, /the parser is fine/);
    assert.match(parentResults.history_search_contents, /CHILD-4409/);
    const report = await client.notesReadFile({ task_id: parent.task_id, agent: "/root" }, { path: `${child.agent}/notes/report.md` });
    assert.equal(report.details.text, REPORT);
  } finally {
    await model.close();
    setup.remove();
    assert.equal((await md.stop()).code, 0);
  }
}

/** The tool results the child's (child: true) or the parent's requests carried, by tool name. */
function resultsOf(requests, child) {
  const out = {};
  for (const body of requests) {
    if (textOf(body.messages[0]).includes("CHILD-AGENT") === child) Object.assign(out, lastResults(body));
  }
  return out;
}
