// The real `pi` CLI (Node >= 22.19) with the extension loaded as a user loads
// it: memoryd started automatically as one shared background service by
// several pi processes at once, outliving the first; the package as `npm
// pack` makes it, and this repository from a git URL, installed with `pi
// install` into a fresh agent folder; and
// the one stderr line when memoryd cannot be reached. No model is needed:
// session_start (attach) runs when pi starts, in every mode.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { test } from "node:test";
import { promisify } from "node:util";

import { freePort, hangGuardMs, memorydBinary } from "../../../testing/memoryd.mjs";
import { attaches, extensionDir, healthz, killMemoryd, logLines, piEnv, sandbox, servingPids, startPi, waitFor } from "./pi-cli.mjs";

const execFileP = promisify(execFile);

function setUp() {
  const box = sandbox();
  for (const d of [box.agent, box.home, box.work]) mkdirSync(d, { recursive: true });
  return box;
}

test("two pi processes started at once share one automatically started memoryd, which outlives the first", { timeout: hangGuardMs }, async () => {
  const box = setUp();
  const url = `http://127.0.0.1:${await freePort()}`;
  const env = piEnv(box, { MEMORYD_BIN: await memorydBinary(), MEMORYD_URL: url });
  const pis = [0, 1].map(() => startPi(["-e", extensionDir, "--mode", "rpc"], { env, cwd: box.work }));
  let pids = [];
  try {
    await waitFor(() => attaches(box.log).length >= 2, 60_000, () => `two attaches in ${box.log}; stderr:\n${pis.map((p) => p.stderr).join("\n")}`);
    pids = servingPids(box.log);
    assert.equal(pids.length, 1, `one memoryd serves (a second one lost the race for the address); log:\n${JSON.stringify(logLines(box.log))}`);
    assert.ok(await healthz(url));
    for (const p of pis) assert.doesNotMatch(p.stderr, /\[memoryd\]/, "no unreachable line");

    // The first pi exits; the shared memoryd stays, and the second pi still uses it.
    const first = await pis[0].stop();
    assert.equal(first.code, 0, pis[0].stderr);
    assert.ok(await healthz(url), "memoryd answers after the first pi exited");
    const res = await pis[1].rpc({ type: "new_session" });
    assert.equal(res.success, true, JSON.stringify(res));
    await waitFor(() => attaches(box.log).length >= 3, 30_000, "the second pi's new session to attach");
    await pis[1].stop();
    assert.ok(await healthz(url), "memoryd answers after every pi exited");
    assert.deepEqual(servingPids(box.log), pids, "still the same single memoryd");
  } finally {
    for (const p of pis) if (p.child.exitCode === null) p.child.kill("SIGKILL");
    for (const pid of servingPids(box.log)) await killMemoryd(pid, url);
    box.cleanup();
  }
});

test("npm pack of the extension installs with pi install into a fresh agent folder and loads", { timeout: hangGuardMs }, async () => {
  const box = setUp();
  const packDir = mkdtempSync(join(tmpdir(), "memoryd-pack-"));
  const url = `http://127.0.0.1:${await freePort()}`;
  try {
    // npm pack runs prepack (builds the client and the bundled entry): no manual build step.
    await execFileP("npm", ["pack", "--pack-destination", packDir, "--no-audit", "--no-fund"], { cwd: extensionDir, maxBuffer: 16 << 20 });
    const [tgz] = readdirSync(packDir).filter((f) => f.endsWith(".tgz"));
    assert.ok(tgz, "npm pack made a tarball");
    const env = piEnv(box, { MEMORYD_BIN: await memorydBinary(), MEMORYD_URL: url });
    const install = startPi(["install", `npm:@memoryd/pi-extension@file:${join(packDir, tgz)}`], { env, cwd: box.work });
    const done = await install.exited;
    assert.equal(done.code, 0, `pi install: ${install.stderr}`);

    // No -e: the extension loads from the installed package (settings.json), starts memoryd and attaches.
    const pi = startPi(["--mode", "rpc"], { env, cwd: box.work });
    try {
      await waitFor(() => attaches(box.log).length >= 1, 60_000, () => `an attach from the installed extension; stderr:\n${pi.stderr}`);
      const tools = await pi.rpc({ type: "get_state" });
      assert.equal(tools.success, true);
    } finally {
      await pi.stop();
    }
  } finally {
    for (const pid of servingPids(box.log)) await killMemoryd(pid, url);
    rmSync(packDir, { recursive: true, force: true });
    box.cleanup();
  }
});

test("pi install from a git URL clones this repository, builds the extension (prepare) and loads it", { timeout: hangGuardMs }, async () => {
  const box = setUp();
  const served = mkdtempSync(join(tmpdir(), "memoryd-git-"));
  const url = `http://127.0.0.1:${await freePort()}`;
  const port = await freePort();
  // This repository's HEAD, served by git daemon on loopback: Pi takes git:// URLs of two path parts.
  const repoRoot = join(extensionDir, "..", "..");
  await execFileP("git", ["clone", "--bare", "--quiet", repoRoot, join(served, "memoryd", "memoryd.git")]);
  const daemon = spawn("git", ["daemon", "--reuseaddr", "--export-all", `--base-path=${served}`, "--listen=127.0.0.1", `--port=${port}`, served], { stdio: "ignore" });
  const source = `git:git://127.0.0.1:${port}/memoryd/memoryd.git`;
  try {
    await waitFor(() => execFileP("git", ["ls-remote", source.slice(4)]).then(() => true, () => false), 20_000, "git daemon to serve");
    const env = piEnv(box, { MEMORYD_BIN: await memorydBinary(), MEMORYD_URL: url });
    // The clone's package.json (the repository root's) builds clients/ in its prepare script.
    const install = startPi(["install", source], { env, cwd: box.work });
    const done = await install.exited;
    assert.equal(done.code, 0, `pi install: ${install.stderr}`);

    const pi = startPi(["--mode", "rpc"], { env, cwd: box.work });
    try {
      await waitFor(() => attaches(box.log).length >= 1, 60_000, () => `an attach from the extension installed from git; stderr:\n${pi.stderr}`);
      assert.equal((await pi.rpc({ type: "get_state" })).success, true);
    } finally {
      await pi.stop();
    }
  } finally {
    daemon.kill();
    for (const pid of servingPids(box.log)) await killMemoryd(pid, url);
    rmSync(served, { recursive: true, force: true });
    box.cleanup();
  }
});

/** How many times stderr says nothing answers and memoryd was not started, for this reason and fix (the line the extension writes without a TUI). */
const unreachableLines = (stderr, why = "MEMORYD_AUTOSTART=0 turns starting it off; start memoryd yourself \\(memoryd serve\\), or unset MEMORYD_AUTOSTART") =>
  (stderr.match(new RegExp(`^\\[memoryd\\] nothing answers at http://127\\.0\\.0\\.1:\\d+, and memoryd was not started: ${why}; the memory tools fail until then$`, "gm")) ?? []).length;

test("no memoryd binary anywhere: the user's line says none was found and where to put one", { timeout: hangGuardMs }, async () => {
  const box = setUp();
  // PATH holds only an empty folder: no memoryd on it, and no MEMORYD_BIN nor MEMORYD_SPAWN.
  const env = piEnv(box, { PATH: box.work, MEMORYD_URL: `http://127.0.0.1:${await freePort()}` });
  const why =
    `no memoryd binary was found to start: MEMORYD_SPAWN and MEMORYD_BIN are unset, @memoryd/memoryd-${process.platform}-${process.arch} is not installed beside the extension, and none of the 1 folders of PATH holds memoryd; ` +
    "install the extension from npm \\(pi install npm:@memoryd/pi-extension brings memoryd for Linux and macOS\\), " +
    "put memoryd on PATH \\(go build -o ~/\\.local/bin/memoryd \\./cmd/server in a clone of memoryd\\) or set MEMORYD_BIN to it";
  try {
    const rpc = startPi(["-e", extensionDir, "--mode", "rpc"], { env, cwd: box.work });
    await waitFor(() => unreachableLines(rpc.stderr, why) > 0, 30_000, () => `the no-binary line; stderr:\n${rpc.stderr}`);
    await rpc.stop();
    assert.equal(unreachableLines(rpc.stderr, why), 1, rpc.stderr);
    assert.equal(servingPids(box.log).length, 0, "nothing was started");
  } finally {
    box.cleanup();
  }
});

test("an extension installed unbuilt says so: pi install of a checkout without dist/ and pi tell the user, once", { timeout: hangGuardMs }, async () => {
  const box = setUp();
  // The package as a clone has it before npm run build: package.json, its entry, no dist/.
  const pkg = join(box.root, "unbuilt");
  mkdirSync(pkg);
  for (const f of ["package.json", "extension.js"]) copyFileSync(join(extensionDir, f), join(pkg, f));
  const env = piEnv(box, { MEMORYD_AUTOSTART: "0" });
  try {
    const install = startPi(["install", pkg], { env, cwd: box.work });
    install.child.stdin.end();
    assert.equal((await install.exited).code, 0, install.stderr);
    const line = `[memoryd] the memoryd extension in ${pkg} is not built (${join(pkg, "dist", "extension.js")} is missing): ` +
      "run npm ci && npm run build in its clients folder, then start pi again (or install it from npm: pi install npm:@memoryd/pi-extension); pi runs without memory until then";
    const rpc = startPi(["--mode", "rpc"], { env, cwd: box.work });
    await waitFor(() => rpc.stderr.includes(line), 30_000, () => `the unbuilt line; stderr:\n${rpc.stderr}`);
    assert.equal((await rpc.rpc({ type: "get_state" })).success, true, "pi runs");
    await rpc.stop();
    assert.equal(rpc.stderr.split(line).length - 1, 1, rpc.stderr);
  } finally {
    box.cleanup();
  }
});

test("memoryd unreachable (MEMORYD_AUTOSTART=0): one stderr line in RPC, print and JSON mode", { timeout: hangGuardMs }, async () => {
  const box = setUp();
  const env = piEnv(box, { MEMORYD_AUTOSTART: "0", MEMORYD_BIN: await memorydBinary(), MEMORYD_URL: `http://127.0.0.1:${await freePort()}` });
  try {
    const rpc = startPi(["-e", extensionDir, "--mode", "rpc"], { env, cwd: box.work });
    await waitFor(() => unreachableLines(rpc.stderr) > 0, 30_000, () => `the unreachable line; stderr:\n${rpc.stderr}`);
    assert.equal((await rpc.rpc({ type: "get_state" })).success, true);
    await rpc.stop();
    assert.equal(unreachableLines(rpc.stderr), 1, rpc.stderr);

    // Print and JSON mode without a model: Pi fails the prompt, but session_start ran first.
    for (const mode of [["-p"], ["--mode", "json"]]) {
      const p = startPi(["-e", extensionDir, ...mode, "hello"], { env, cwd: box.work });
      p.child.stdin.end(); // print mode reads piped stdin as part of the prompt
      const timer = setTimeout(() => p.child.kill("SIGKILL"), 60_000);
      await p.exited;
      clearTimeout(timer);
      assert.equal(unreachableLines(p.stderr), 1, `${mode}: ${p.stderr}`);
    }
    assert.equal(servingPids(box.log).length, 0, "nothing was started");
  } finally {
    box.cleanup();
  }
});

test("two starts racing for one address: the loser cannot bind, exits, and both find the winner healthy", { timeout: hangGuardMs }, async () => {
  const { spawnMemoryd } = await import("../../dist/index.js");
  const box = setUp();
  const addr = `127.0.0.1:${await freePort()}`;
  const opts = { command: await memorydBinary(), env: { XDG_DATA_HOME: box.xdg, MEMORYD_DB: "", MEMORYD_TOKEN: "" } };
  try {
    const both = await Promise.all([spawnMemoryd(opts, addr), spawnMemoryd(opts, addr)]);
    assert.deepEqual(both.map((s) => s.url), [`http://${addr}`, `http://${addr}`]);
    // One of the two exits (it could not bind); the other serves.
    const loser = await waitFor(() => both.find((s) => s.child.exitCode !== null), 20_000, "the loser to exit");
    assert.match(loser.log(), /address already in use/);
    assert.equal(servingPids(box.log).length, 1);
    assert.ok(await healthz(`http://${addr}`));
  } finally {
    for (const pid of servingPids(box.log)) await killMemoryd(pid, `http://${addr}`);
    box.cleanup();
  }
});
