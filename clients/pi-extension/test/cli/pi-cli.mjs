// Runs the real `pi` CLI (the package's bin, on the Node running the tests,
// which must be >= 22.19) as a user would: a fresh agent folder holding only
// models.json for the scripted provider, Pi's default settings, the memoryd
// extension loaded with -e from its build, memoryd found through MEMORYD_URL
// and MEMORYD_TOKEN. Print/JSON mode: runPi() resolves at exit. RPC mode:
// startRpc() returns a handle that sends commands and collects events.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { MemorydClient } from "@memoryd/client";
import { hangGuardMs, memorydPerFile, waitFloorMs } from "../../../testing/memoryd.mjs";

/** The folder of the pi package this workspace installed (its main is dist/index.js). */
function packageDir(name) {
  let dir = dirname(fileURLToPath(import.meta.resolve(name)));
  while (!existsSync(join(dir, "package.json")) || JSON.parse(readFileSync(join(dir, "package.json"), "utf8")).name !== name) {
    const up = dirname(dir);
    if (up === dir) throw new Error(`no package.json of ${name}`);
    dir = up;
  }
  return dir;
}
const piPackage = packageDir("@earendil-works/pi-coding-agent");
/** The pi CLI script (package.json "bin".pi). */
export const piBin = join(piPackage, JSON.parse(readFileSync(join(piPackage, "package.json"), "utf8")).bin.pi);
/** The extension entry a user loads with `pi -e` (built by npm test's pretest). */
export const extensionEntry = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "dist", "extension.js");

export const PROVIDER = "scripted";
export const MODEL = "scripted-model";

/**
 * A fresh user setup: home/agent with models.json naming the scripted server,
 * and an empty project folder (the working directory). files: extra files of
 * the project. Returns { dir, agentDir, cwd, remove() }.
 */
export function freshSetup(modelUrl, files = {}) {
  const dir = mkdtempSync(join(tmpdir(), "pi-cli-test-"));
  const agentDir = join(dir, "agent");
  const cwd = join(dir, "project");
  mkdirSync(agentDir, { recursive: true });
  mkdirSync(cwd, { recursive: true });
  const models = {
    providers: {
      [PROVIDER]: {
        baseUrl: modelUrl,
        api: "openai-completions",
        apiKey: "unused",
        models: [{ id: MODEL }],
      },
    },
  };
  writeFileSync(join(agentDir, "models.json"), JSON.stringify(models, null, 2));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(cwd, name), text);
  return { dir, agentDir, cwd, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** The environment of pi: the test's, minus memoryd settings that would change what is tested, plus env. */
export function piEnv(setup, env) {
  const e = { ...process.env };
  for (const k of Object.keys(e)) if (k.startsWith("MEMORYD_") || k.startsWith("PI_")) delete e[k];
  return {
    ...e,
    HOME: setup.dir,
    PI_CODING_AGENT_DIR: setup.agentDir,
    PI_OFFLINE: "1",
    PI_SKIP_VERSION_CHECK: "1",
    PI_TELEMETRY: "0",
    ...env,
  };
}

export function piArgs(args) {
  return [piBin, "--model", `${PROVIDER}/${MODEL}`, "-e", extensionEntry, ...args];
}

/**
 * Runs pi to its exit (print or JSON mode). Resolves { code, signal, stdout, stderr };
 * rejects if it has not exited within timeoutMs (it is then killed).
 */
export function runPi(setup, args, { env = {}, timeoutMs = hangGuardMs } = {}) {
  // The limit only ends a hung pi: a loaded machine makes a run slow, not failed.
  timeoutMs = Math.max(timeoutMs, hangGuardMs);
  const child = spawn(process.execPath, piArgs(args), { cwd: setup.cwd, env: piEnv(setup, env), stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (s) => (stdout += s));
  child.stderr.setEncoding("utf8").on("data", (s) => (stderr += s));
  return new Promise((res, rej) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      rej(new Error(`pi ${args.join(" ")} did not exit in ${timeoutMs} ms; stderr:\n${stderr}\nstdout:\n${stdout.slice(-4000)}`));
    }, timeoutMs);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      res({ code, signal, stdout, stderr });
    });
  });
}

/** Parses JSONL (split on LF only, as Pi's docs ask). */
export function jsonLines(text) {
  return text
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l));
}

/** Starts `pi --mode rpc`. Returns { events, send(cmd), waitFor(pred, ms, what), stderr(), kill(signal), stop() }. */
export function startRpc(setup, { env = {}, args = [] } = {}) {
  const child = spawn(process.execPath, piArgs(["--mode", "rpc", ...args]), { cwd: setup.cwd, env: piEnv(setup, env), stdio: ["pipe", "pipe", "pipe"] });
  const events = [];
  let buf = "";
  let stderr = "";
  child.stderr.setEncoding("utf8").on("data", (s) => (stderr += s));
  child.stdout.setEncoding("utf8").on("data", (s) => {
    buf += s;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i).replace(/\r$/, "");
      buf = buf.slice(i + 1);
      if (line.trim()) events.push(JSON.parse(line));
    }
  });
  const exited = new Promise((r) => child.once("exit", (code, signal) => r({ code, signal })));
  return {
    events,
    stderr: () => stderr,
    send: (cmd) => child.stdin.write(JSON.stringify(cmd) + "\n"),
    /** Kills pi with signal (e.g. SIGKILL: no session_shutdown); resolves { code, signal } at its exit. */
    kill: (signal) => (child.kill(signal), exited),
    /** Waits until pred(events) is true, or fails after ms with the recent events. */
    async waitFor(pred, ms, what) {
      const deadline = Date.now() + Math.max(ms, waitFloorMs);
      while (!pred(events)) {
        if (Date.now() > deadline) {
          throw new Error(`timed out waiting for ${what}; last events: ${JSON.stringify(events.slice(-8).map((e) => e.type))}; stderr:\n${stderr}`);
        }
        await new Promise((r) => setTimeout(r, 25));
      }
    },
    /** Ends the session (stdin closed, then SIGTERM after 10 s); resolves { code, signal }. */
    async stop() {
      child.stdin.end();
      const timer = setTimeout(() => child.kill("SIGTERM"), 10_000);
      const r = await exited;
      clearTimeout(timer);
      return r;
    },
  };
}

/** The extension's trace lines of one event (pi's stderr with MEMORYD_DEBUG=1), their JSON decoded. */
export function traced(stderr, event) {
  return stderr
    .split("\n")
    .filter((l) => l.startsWith(`[memoryd] ${event} `))
    .map((l) => JSON.parse(l.slice(`[memoryd] ${event} `.length)));
}

/** The memoryd state of the session pi attached as (from its "attached" trace), read with client. */
export async function stateOf(client, stderr) {
  const [attached] = traced(stderr, "attached");
  if (!attached) throw new Error(`pi never attached to memoryd:\n${stderr}`);
  return client.state(attached.task_id, attached.agent);
}

/** No extension error, no stale context, nothing Pi reports about extensions. */
export function assertCleanStderr(stderr) {
  const errors = traced(stderr, "error");
  if (errors.length > 0) throw new Error(`extension errors: ${JSON.stringify(errors)}\n${stderr}`);
  // Pi's own lines (the extension's trace lines name "stale" in their data).
  const pis = stderr.split("\n").filter((l) => !l.startsWith("[memoryd] "));
  if (pis.some((l) => /stale|Extension error/.test(l))) throw new Error(`pi's stderr reports a stale context or an extension error:\n${stderr}`);
}

/**
 * One memoryd for a test file (memorydPerFile: started before its first
 * test, checked to exit 0 after its last), and what the tests need of it:
 * env(extra) for pi (its URL and token, the extension's trace on stderr),
 * the client, and stateOf(stderr), the state of the session pi attached as.
 */
export function memorydForPi() {
  let md;
  let client;
  memorydPerFile(MemorydClient, (m, c) => {
    md = m;
    client = c;
  });
  return {
    env: (extra = {}) => ({ MEMORYD_URL: md.url, MEMORYD_TOKEN: md.token, MEMORYD_DEBUG: "1", ...extra }),
    get client() {
      return client;
    },
    stateOf: (stderr) => stateOf(client, stderr),
  };
}
