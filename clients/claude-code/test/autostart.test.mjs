// The README's "Use it with Claude Code", with nothing serving: `memoryd setup claude-code`, then the real
// `claude`. The first hook (or `memoryd mcp`) finds no memoryd on the address and starts one, as the Pi
// extension does (in the background, its log beside the database, stopping 30 minutes after the last
// request); the session's note is written into it, with the token it made, which no configuration holds.
import assert from "node:assert/strict";
import { execFile, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { freePort, hangGuardMs, memorydBinary } from "../../testing/memoryd.mjs";
import { claudeBin, claudeHome, startModelServer } from "../harness.mjs";

let model;
let dir;
let bin;
let addr;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "memoryd-claude-autostart-"));
  bin = await memorydBinary();
  model = await startModelServer(join(dir, "model.jsonl"));
  addr = `127.0.0.1:${await freePort()}`;
});

after(async () => {
  if (addr) spawnSync(bin, ["stop", "--addr", addr], { env: { ...process.env, HOME: join(dir, "home") } });
  model?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("with nothing serving, the real claude's first hook starts memoryd and the session writes its note", async () => {
  const project = join(dir, "project");
  mkdirSync(project, { recursive: true });
  const home = claudeHome(dir, "home", project, {});
  const env = { ...process.env, HOME: home };
  delete env.MEMORYD_TOKEN;
  delete env.MEMORYD_DB;
  delete env.XDG_DATA_HOME;
  const setup = spawnSync(bin, ["setup", "claude-code", "--addr", addr], { env, encoding: "utf8" });
  assert.equal(setup.status, 0, setup.stderr);

  const prompt = `CALL_TOOL mcp__memoryd__notes_write_file ${JSON.stringify({ path: "a.md", text: "started by the hook" })}`;
  const r = await new Promise((res, rej) => {
    execFile(claudeBin, ["-p", prompt], {
      cwd: project, timeout: hangGuardMs,
      env: { ...env, ANTHROPIC_BASE_URL: `http://127.0.0.1:${model.port}`, ANTHROPIC_API_KEY: "sk-ant-dummy",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_AUTOUPDATER: "1", MCP_CONNECTION_NONBLOCKING: "0" },
    }, (err, stdout, stderr) => (err && typeof err.code !== "number" ? rej(err) : res({ code: err ? err.code : 0, stdout, stderr })));
  });
  assert.equal(r.code, 0, `claude -p: ${r.stdout}\n${r.stderr}`);
  assert.match(r.stdout, /TOOL_RESULT_SEEN: \{"path":"\/root\/notes\/a\.md","bytes":19,"created":true,"revision":1\}/);

  const data = join(home, ".local", "share", "memoryd");
  assert.ok(existsSync(join(data, "memory.db")) && existsSync(join(data, "token")) && existsSync(join(data, "memoryd.log")),
    "the started memoryd's database, token and log are not in the default data folder");
  const health = await (await fetch(`http://${addr}/healthz`)).json();
  assert.equal(health.service, "memoryd");
  const stop = spawnSync(bin, ["stop", "--addr", addr], { env, encoding: "utf8" });
  assert.equal(stop.status, 0, stop.stderr);
});
