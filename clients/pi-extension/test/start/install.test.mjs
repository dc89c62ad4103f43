// The one-command install of a Pi user, as the user meets it: the packages
// scripts/pack.mjs makes (the extension, and memoryd for this platform,
// cross-compiled with its version stamped) served by a scripted npm registry,
// `pi install npm:@memoryd/pi-extension` (the real pi CLI, which runs npm)
// into a fresh agent folder, with a PATH that holds node and npm only: no Go,
// no memoryd, no clone. Then `pi -p` against a scripted model: the model is
// offered the tools memoryd serves, a call works, and the memoryd that
// answers is the package's binary, started by the extension.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { test } from "node:test";

import { PACKAGED_PLATFORMS } from "../../dist/options.js";
import { TARGETS, hostTarget, pack, platformPackage } from "../../../scripts/pack.mjs";
import { freePort, hangGuardMs, repoRoot } from "../../../testing/memoryd.mjs";
import { fileInTarball, startRegistry } from "../../../testing/registry.mjs";
import { startModelServer } from "../cli/model-server.mjs";
import { logLines, piEnv, sandbox, servingPids, startPi, killMemoryd } from "./pi-cli.mjs";

/** The first file named name in the folders of PATH (resolved through links). */
function onPath(name) {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    try {
      const f = join(dir, name);
      if (statSync(f).isFile()) return realpathSync(f);
    } catch {
      // not here
    }
  }
  throw new Error(`no ${name} on PATH`);
}

/** Every file named name under dir. */
function findAll(dir, name) {
  return readdirSync(dir, { recursive: true })
    .filter((f) => f === name || f.endsWith(`/${name}`))
    .map((f) => join(dir, f));
}

/** p's exit, or a kill and a failure naming its stderr after ms. */
async function exitWithin(p, ms, what) {
  let timer;
  const late = new Promise((_, rej) => {
    timer = setTimeout(() => {
      p.child.kill("SIGKILL");
      rej(new Error(`${what} did not exit in ${ms} ms; stderr:\n${p.stderr}`));
    }, ms);
  });
  try {
    return await Promise.race([p.exited, late]);
  } finally {
    clearTimeout(timer);
  }
}

test("the extension looks for a package on exactly the platforms pack.mjs makes one for", () => {
  assert.deepEqual(PACKAGED_PLATFORMS, TARGETS);
});

const toolNames = JSON.parse(readFileSync(join(repoRoot, "internal", "tools", "specs.json"), "utf8")).map((t) => t.name);

test("pi install npm:@memoryd/pi-extension brings memoryd inside the package: no Go, no memoryd on PATH, pi -p has the tools", { timeout: hangGuardMs, skip: hostTarget() ? false : `no memoryd package is made for ${process.platform}-${process.arch}` }, async () => {
  const box = sandbox();
  for (const d of [box.agent, box.home, box.work]) mkdirSync(d, { recursive: true });
  const release = mkdtempSync(join(tmpdir(), "memoryd-release-"));
  let registry, model;
  const url = `http://127.0.0.1:${await freePort()}`;
  try {
    const made = pack({ out: release, targets: [hostTarget()], log: () => {} });
    const published = JSON.parse(fileInTarball(made.extension, "package/package.json"));
    assert.equal(published.optionalDependencies[platformPackage(hostTarget())], made.version, "the extension names the platform package");
    assert.equal(published.scripts, undefined, "no build script runs at the user's install");
    const platform = JSON.parse(fileInTarball(made.platforms[hostTarget()], "package/package.json"));
    assert.deepEqual([platform.os, platform.cpu], [[process.platform], [process.arch]]);
    registry = await startRegistry([made.extension, ...Object.values(made.platforms)]);

    // A PATH of node (this one, >= 22.19) and npm only.
    const bin = join(box.root, "bin");
    mkdirSync(bin);
    symlinkSync(process.execPath, join(bin, "node"));
    symlinkSync(onPath("npm"), join(bin, "npm"));
    const env = piEnv(box, { PATH: bin, MEMORYD_URL: url, npm_config_registry: registry.url, npm_config_cache: join(box.root, "npm-cache"), npm_config_update_notifier: "false" });
    for (const k of Object.keys(env)) if (k.startsWith("npm_") && !["npm_config_registry", "npm_config_cache", "npm_config_update_notifier"].includes(k)) delete env[k];
    delete env.PI_OFFLINE; // installing needs the (scripted) registry

    const install = startPi(["install", "npm:@memoryd/pi-extension"], { env, cwd: box.work });
    install.child.stdin.end();
    const installed = await exitWithin(install, 300_000, "pi install");
    assert.equal(installed.code, 0, `pi install: ${install.stderr}`);
    const binaries = findAll(box.agent, "memoryd").filter((f) => f.endsWith(join(platformPackage(hostTarget()), "bin", "memoryd")));
    assert.equal(binaries.length, 1, `one packaged memoryd under the agent folder; registry requests:\n${registry.requests.join("\n")}`);
    const packaged = realpathSync(binaries[0]);
    const stamped = execFileSync(packaged, ["version"], { encoding: "utf8" });
    assert.match(stamped, new RegExp(`^memoryd v${made.version.replaceAll(".", "\\.")} \\(commit ${made.commit.slice(0, 12)}, go`));

    // pi -p: the first model request offers memoryd's tools; the model calls one, then answers.
    model = await startModelServer((body, n) => (n === 1 ? { calls: [["get_context_remaining", {}]] } : { text: "done" }));
    writeFileSync(
      join(box.agent, "models.json"),
      JSON.stringify({ providers: { scripted: { baseUrl: model.url, api: "openai-completions", apiKey: "unused", models: [{ id: "scripted-model" }] } } }),
    );
    const pi = startPi(["--model", "scripted/scripted-model", "-p", "How much context is left?"], { env: { ...env, PI_OFFLINE: "1" }, cwd: box.work });
    pi.child.stdin.end(); // print mode reads a piped stdin to its end
    const ran = await exitWithin(pi, 120_000, "pi -p");
    assert.equal(ran.code, 0, `pi -p: ${pi.stderr}`);
    assert.doesNotMatch(pi.stderr, /\[memoryd\]/, "no line about memoryd not answering");

    const offered = (model.requests[0].tools ?? []).map((t) => t.function.name);
    for (const name of toolNames) assert.ok(offered.includes(name), `the model is offered ${name}; offered: ${offered.join(", ")}`);
    const result = model.requests[1].messages.find((m) => m.role === "tool");
    assert.ok(result, "the tool result reaches the model");
    assert.match(JSON.stringify(result.content), /remaining/i, `get_context_remaining answered: ${JSON.stringify(result.content)}`);

    // The memoryd that answered is the package's, started by the extension, with the version stamped.
    const [pid] = servingPids(box.log);
    assert.ok(pid, `memoryd logged serving in ${box.log}: ${JSON.stringify(logLines(box.log))}`);
    const health = await (await fetch(`${url}/healthz`)).json();
    assert.equal(health.pid, pid);
    assert.equal(health.version, `v${made.version}`);
    assert.equal(health.commit, made.commit.slice(0, 12));
    if (process.platform === "linux") assert.equal(realpathSync(`/proc/${pid}/exe`), packaged, "memoryd runs from the package");
  } finally {
    for (const pid of servingPids(box.log)) await killMemoryd(pid, url);
    await model?.close();
    await registry?.close();
    rmSync(release, { recursive: true, force: true });
    box.cleanup();
  }
});
