// The real `claude` CLI (npm @anthropic-ai/claude-code) against a scripted
// Anthropic-Messages server (testdata/claude-code/model-server.mjs) and a real
// memoryd: memoryd's tools over MCP at /v1/mcp, and Claude Code's PreToolUse
// hook `memoryd hook claude-code`, which names each MCP call before it runs, so
// that the call runs as its own session's agent (docs/claude-code.md, §6).
import assert from "node:assert/strict";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { startMemoryd } from "../../testing/memoryd.mjs";
import { claude as runClaude, claudeHome as home0, startModelServer } from "../harness.mjs";

let md;
let model;
let dir;

/** A fresh HOME for claude with these hooks. */
const claudeHome = (name, project, hooks) => home0(dir, name, project, { hooks });

/** memoryd's PreToolUse hook for its MCP tools (docs/API.md, the hook verb). */
function memorydHooks() {
  const addr = new URL(md.url).host;
  return {
    PreToolUse: [{ matcher: "mcp__memoryd__.*", hooks: [{ type: "command", command: `${md.bin} hook claude-code --addr ${addr}` }] }],
  };
}

/** Runs `claude -p prompt` in project with HOME home. */
function claude(home, project, prompt, transport = "http") {
  const args = ["-p", prompt, "--allowedTools", "mcp__memoryd__notes_write_file,mcp__memoryd__notes_read_file"];
  return runClaude({ md, port: model.port, home, project, args, transport, mcpConfig: join(dir, "mcp.json") });
}

const writeNote = (text) => `CALL_TOOL mcp__memoryd__notes_write_file ${JSON.stringify({ path: "checkpoint.md", text })}`;

async function get(path) {
  const r = await fetch(md.url + path, { headers: { Authorization: `Bearer ${md.token}` } });
  assert.equal(r.status, 200, `GET ${path}`);
  return r.json();
}

/** The note.written events, as {stream, callId, text}. */
async function noteWrites() {
  const { events } = await get("/v1/events?limit=5000");
  return events.filter((e) => e.type === "note.written").map((e) => ({ stream: e.stream, callId: e.data.call_id, text: e.data.text }));
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "memoryd-claude-"));
  md = await startMemoryd();
  model = await startModelServer(join(dir, "model.jsonl"));
});

after(async () => {
  model?.stop();
  await md?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("an MCP call from the real claude runs as its session's agent, and two sessions in one folder stay apart", async () => {
  const project = join(dir, "project");
  mkdirSync(project, { recursive: true });
  const home = claudeHome("home", project, memorydHooks());
  for (const text of ["session one's fact: 42", "session two's fact: 7"]) {
    const r = await claude(home, project, writeNote(text));
    assert.equal(r.code, 0, `claude -p: ${r.stderr}`);
    assert.match(r.stdout, /TOOL_RESULT_SEEN: \{"path":"\/root\/notes\/checkpoint\.md","bytes":\d+,"created":true,"revision":1\}/);
  }
  const { tasks } = await get("/v1/tasks");
  const sessions = tasks.flatMap((t) => t.agents.map((a) => ({ task: t.task_id, agent: a.agent, key: a.session_key, file: a.session_file })));
  assert.equal(sessions.length, 2, JSON.stringify(sessions));
  for (const s of sessions) {
    assert.equal(s.agent, "/root");
    assert.match(s.key, /^claude-code\/[0-9a-f-]{36}$/);
    assert.ok(s.file.startsWith(join(home, ".claude", "projects")) && s.file.endsWith(".jsonl"), s.file);
  }
  assert.notEqual(sessions[0].task, sessions[1].task);
  // Each note is in its own session's task, written with Claude Code's tool_use id as its call id.
  const writes = await noteWrites();
  assert.equal(writes.length, 2);
  assert.notEqual(writes[0].stream, writes[1].stream);
  for (const w of writes) assert.match(w.callId, /^toolu_/);
});

test("memoryd mcp on stdio serves the real claude the same tools, bound by the same hook", async () => {
  const project = join(dir, "stdio");
  mkdirSync(project, { recursive: true });
  const home = claudeHome("home-stdio", project, memorydHooks());
  const before = await noteWrites();
  const r = await claude(home, project, writeNote("a fact over stdio"), "stdio");
  assert.equal(r.code, 0, `claude -p: ${r.stderr}`);
  assert.match(r.stdout, /TOOL_RESULT_SEEN: \{"path":"\/root\/notes\/checkpoint\.md","bytes":\d+,"created":true,"revision":1\}/);
  const added = (await noteWrites()).filter((w) => !before.some((b) => b.callId === w.callId));
  assert.equal(added.length, 1);
  assert.equal(added[0].text, "a fact over stdio");
  assert.match(added[0].callId, /^toolu_/);
  assert.ok(!before.some((b) => b.stream === added[0].stream), "the stdio session wrote into another session's task");
});

test("without memoryd's hook, the real claude's MCP call is refused and the model is told why", async () => {
  const project = join(dir, "unhooked");
  mkdirSync(project, { recursive: true });
  const home = claudeHome("home-unhooked", project, {});
  const before = (await noteWrites()).length;
  const r = await claude(home, project, writeNote("nobody's fact"));
  assert.equal(r.code, 0, `claude -p: ${r.stderr}`);
  assert.match(r.stdout, /TOOL_RESULT_SEEN: .*"code":"forbidden".*memoryd does not know this call/);
  assert.equal((await noteWrites()).length, before, "a call no hook announced wrote a note");
});
