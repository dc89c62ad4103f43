// The real `claude` CLI, interactive (in tmux), set up by `memoryd setup claude-code`: `/clear` starts a
// new session in the same claude process (and the same `memoryd mcp` process), so its calls go to a new
// task; `/resume <id>` goes back, so its calls go to that session's task again (docs/claude-code.md, §2,
// §6). The binding follows the session because each call is named by the PreToolUse hook, which carries
// the session Claude Code runs now, never by the MCP process's environment, which is stale after both.
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { hangGuardMs, startMemoryd } from "../../testing/memoryd.mjs";
import { claudeBin, claudeHome, startModelServer } from "../harness.mjs";

let md;
let model;
let dir;
const pane = `memoryd-claude-${process.pid}`;

const tmux = (...args) => execFileSync("tmux", args, { encoding: "utf8" });
const screen = () => tmux("capture-pane", "-p", "-t", pane);

/** Waits until done() holds, checking every 200 ms; only a hang ends the wait. */
async function until(what, done) {
  const end = Date.now() + hangGuardMs;
  for (;;) {
    const v = await done();
    if (v) return v;
    if (Date.now() > end) throw new Error(`gave up waiting for ${what}; the screen:\n${screen()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Whether process pid still runs. */
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** The prompt's input line: the last line that starts with the prompt sign. */
const inputLine = (s) => s.split("\n").filter((l) => l.startsWith("❯")).at(-1) ?? "";

/**
 * Types a line into claude, presses Enter and waits until claude took it: the prompt's input line held
 * the line and is empty again. (Not "the line is above an empty prompt": `/resume` redraws the screen
 * with the resumed conversation, and `/clear` clears it, so the entered line may never show.) A bare
 * slash command is entered once its line shows in the command menu; if the Enter only completed the
 * command's name in the input (as it may while the menu is still settling), Enter again runs it.
 */
async function type(line) {
  tmux("send-keys", "-t", pane, "-l", line);
  await until(`"${line}" typed`, () => inputLine(screen()).includes(line));
  const slash = /^\/[\w-]+$/.test(line);
  if (slash) await until(`${line} in the menu`, () => new RegExp(`^${escape(line)}\\s{2,}\\S`, "m").test(screen()));
  tmux("send-keys", "-t", pane, "Enter");
  let pressed = Date.now();
  await until(`"${line}" entered`, () => {
    const s = screen();
    if (/^❯\s*$/.test(inputLine(s))) return true;
    const completed = slash && inputLine(s).startsWith(`❯ ${line} `) && !new RegExp(`^${escape(line)}\\s{2,}\\S`, "m").test(s);
    if (completed && Date.now() - pressed > 1000) {
      tmux("send-keys", "-t", pane, "Enter");
      pressed = Date.now();
    }
    return false;
  });
}

/** The note.written events, as {stream, callId, text}. */
async function noteWrites() {
  const r = await fetch(`${md.url}/v1/events?limit=5000`, { headers: { Authorization: `Bearer ${md.token}` } });
  const { events } = await r.json();
  return events.filter((e) => e.type === "note.written").map((e) => ({ stream: e.stream, callId: e.data.call_id, text: e.data.text }));
}

/** How many times the scripted model answered without a tool call on the screen. */
const plainReplies = () => screen().split("SCRIPTED_REPLY").length - 1;

/**
 * Has the model write text into a.md, and waits for the write. A prompt sent before claude connected
 * its MCP servers (a slow start) reaches the model without memoryd's tools, and the scripted model
 * answers it in plain text: the prompt is then sent again.
 */
async function writeNote(text) {
  const n = (await noteWrites()).length;
  for (;;) {
    const replies = plainReplies();
    await type(`CALL_TOOL mcp__memoryd__notes_write_file ${JSON.stringify({ path: "a.md", text })}`);
    const done = await until(`the note "${text}", or a reply without it`, async () =>
      (await noteWrites()).slice(n).find((w) => w.text === text) ?? (plainReplies() > replies ? "again" : undefined));
    if (done !== "again") return done;
  }
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "memoryd-claude-tui-"));
  md = await startMemoryd();
  model = await startModelServer(join(dir, "model.jsonl"));
});

after(async () => {
  // claude, hung up by the kill, still runs its SessionEnd hook, which writes under the test's home:
  // the folder is removed once claude is gone.
  const pid = Number(spawnSync("tmux", ["display-message", "-p", "-t", pane, "#{pane_pid}"], { encoding: "utf8" }).stdout);
  spawnSync("tmux", ["kill-session", "-t", pane]);
  if (pid > 0) await until("claude gone", () => !alive(pid));
  model?.stop();
  await md?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true, maxRetries: 10 });
});

test("in an interactive claude, /clear moves the calls to a new task and /resume brings them back", async () => {
  const project = join(dir, "project");
  mkdirSync(project, { recursive: true });
  const home = claudeHome(dir, "home", project, {});
  const setup = spawnSync(md.bin, ["setup", "claude-code", "--addr", new URL(md.url).host], { env: { ...process.env, HOME: home }, encoding: "utf8" });
  assert.equal(setup.status, 0, setup.stderr);
  const env = {
    HOME: home, MEMORYD_TOKEN: md.token, ANTHROPIC_BASE_URL: `http://127.0.0.1:${model.port}`, ANTHROPIC_API_KEY: "sk-ant-dummy",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_AUTOUPDATER: "1",
    // The test's memoryd is the one; a hook that outlives it (SessionEnd, once the pane is killed) starts none.
    MEMORYD_AUTOSTART: "0",
  };
  tmux("new-session", "-d", "-s", pane, "-x", "200", "-y", "50", "-c", project,
    "env", ...Object.entries(env).map(([k, v]) => `${k}=${v}`), claudeBin);
  await until("claude's prompt", () => screen().includes("for shortcuts"));

  const first = await writeNote("first session");
  await type("/clear");
  const second = await writeNote("after clear");
  assert.notEqual(second.stream, first.stream, "after /clear the call went to the first session's task");

  const transcripts = join(home, ".claude", "projects");
  const files = readdirSync(transcripts, { recursive: true }).filter((f) => f.endsWith(".jsonl")).map((f) => join(transcripts, f));
  const firstFile = files.find((f) => readFileSync(f, "utf8").includes("first session"));
  assert.ok(firstFile, "no transcript holds the first session");
  const firstID = firstFile.split("/").at(-1).replace(/\.jsonl$/, "");
  await type(`/resume ${firstID}`);
  await until("the first session resumed", () => screen().includes("first session"));
  const third = await writeNote("after resume");
  assert.equal(third.stream, first.stream, "after /resume the call did not go back to the first session's task");
  for (const w of [first, second, third]) assert.match(w.callId, /^toolu_/);

  // One claude process, so one memoryd mcp process served all three sessions.
  const { tasks } = await (await fetch(`${md.url}/v1/tasks`, { headers: { Authorization: `Bearer ${md.token}` } })).json();
  const keys = tasks.flatMap((t) => t.agents.map((a) => a.session_key)).sort();
  assert.equal(keys.length, 2, JSON.stringify(keys));
  assert.ok(keys.includes(`claude-code/${firstID}`));
});
