// Driving the real `pi` CLI (the package's bin) for the start tests: a fresh
// agent folder, HOME and XDG data folder per test, the RPC protocol (JSON
// lines on stdin/stdout), memoryd's log beside its database, and bounded
// waits on conditions.
import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { waitFloorMs } from "../../../testing/memoryd.mjs";

export const extensionDir = join(dirname(fileURLToPath(import.meta.url)), "..", "..");
/** The real `pi` bin of the installed @earendil-works/pi-coding-agent (its package.json "bin"). */
export const piCli = (() => {
  let dir = dirname(fileURLToPath(import.meta.resolve("@earendil-works/pi-coding-agent")));
  while (!existsSync(join(dir, "package.json"))) dir = dirname(dir);
  const { bin } = JSON.parse(readFileSync(join(dir, "package.json"), "utf8"));
  return join(dir, typeof bin === "string" ? bin : bin.pi);
})();

/** A folder with agent/, home/, xdg/ and work/ (the cwd), removed by cleanup(). */
export function sandbox() {
  const root = mkdtempSync(join(tmpdir(), "memoryd-pi-start-"));
  return {
    root,
    agent: join(root, "agent"),
    home: join(root, "home"),
    xdg: join(root, "xdg"),
    work: join(root, "work"),
    /** memoryd's log when started by the extension with this XDG_DATA_HOME. */
    log: join(root, "xdg", "memoryd", "memoryd.log"),
    cleanup: () => rmSync(root, { recursive: true, force: true }),
  };
}

/** The environment of a pi process in box: no MEMORYD_* of the caller, only what is given. */
export function piEnv(box, extra = {}) {
  const env = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("MEMORYD_") && !k.startsWith("PI_")) env[k] = v;
  return { ...env, HOME: box.home, PI_CODING_AGENT_DIR: box.agent, XDG_DATA_HOME: box.xdg, PI_OFFLINE: "1", ...extra };
}


/** Waits for cond; what (a string, or a function for what is known only at the timeout, such as stderr) names it. */
export async function waitFor(cond, timeoutMs, what) {
  timeoutMs = Math.max(timeoutMs, waitFloorMs);
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await cond();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === "function" ? what() : what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs the pi CLI with args; collects stdout lines (parsed JSON where possible) and stderr. */
export function startPi(args, { env, cwd }) {
  const child = spawn(process.execPath, [piCli, ...args], { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
  const p = { child, stdout: "", stderr: "", records: [] };
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (s) => {
    p.stdout += s;
    let i;
    while ((i = p.stdout.indexOf("\n")) >= 0) {
      const line = p.stdout.slice(0, i);
      p.stdout = p.stdout.slice(i + 1);
      try {
        p.records.push(JSON.parse(line));
      } catch {
        // not a record
      }
    }
  });
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (s) => (p.stderr += s));
  p.exited = new Promise((r) => child.once("exit", (code, signal) => r({ code, signal })));
  let n = 0;
  /** Sends an RPC command and resolves with its response. */
  p.rpc = async (command, timeoutMs = 30_000) => {
    const id = `t${++n}`;
    child.stdin.write(JSON.stringify({ id, ...command }) + "\n");
    return waitFor(() => p.records.find((r) => r.type === "response" && r.id === id), timeoutMs, () => `the response to ${command.type}; stderr:\n${p.stderr}`);
  };
  /** Ends it: stdin closed, then SIGTERM if it is still running after 10 s. */
  p.stop = async () => {
    child.stdin.end();
    const timer = setTimeout(() => child.kill("SIGTERM"), 10_000);
    const r = await p.exited;
    clearTimeout(timer);
    return r;
  };
  return p;
}

/** memoryd's JSON log lines (the extension's memoryd writes them to box.log). */
export function logLines(file) {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .flatMap((l) => {
      try {
        return [JSON.parse(l)];
      } catch {
        return [];
      }
    });
}

export const attaches = (file) => logLines(file).filter((l) => l.msg === "request" && l.route === "/v1/sessions/attach" && l.status === 200);

/** The pids of the memoryds that logged "serving" in file. */
export const servingPids = (file) => logLines(file).filter((l) => l.msg === "serving").map((l) => l.pid);

export async function healthz(url) {
  try {
    return (await fetch(url + "/healthz", { signal: AbortSignal.timeout(2000) })).ok;
  } catch {
    return false;
  }
}

/** Stops a detached memoryd the extension started (it outlives pi by design) and waits until url stops answering. */
export async function killMemoryd(pid, url) {
  try {
    process.kill(pid, "SIGTERM");
  } catch {
    return;
  }
  await waitFor(async () => !(await healthz(url)), 20_000, `memoryd ${pid} to stop`);
}
