// Test support shared by the client and the Pi extension tests: build the
// real memoryd binary from this repository (unless MEMORYD_BIN names one),
// start it on 127.0.0.1:0 with a temporary database and token, and stop it.
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";
import { after, before } from "node:test";
import { promisify } from "node:util";

const execFileP = promisify(execFile);

/** The repository root (clients/..). */
export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

let built;

/**
 * Returns the path of a memoryd binary: MEMORYD_BIN, else one built now with
 * `go build` into a temporary folder (once per process).
 */
export async function memorydBinary() {
  if (process.env.MEMORYD_BIN) {
    if (!existsSync(process.env.MEMORYD_BIN)) throw new Error(`MEMORYD_BIN=${process.env.MEMORYD_BIN} does not exist`);
    return process.env.MEMORYD_BIN;
  }
  if (!built) {
    built = (async () => {
      const dir = mkdtempSync(join(tmpdir(), "memoryd-bin-"));
      const bin = join(dir, "memoryd");
      await execFileP("go", ["build", "-o", bin, "./cmd/server"], { cwd: repoRoot, maxBuffer: 16 << 20 });
      process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
      return bin;
    })();
  }
  return built;
}

/**
 * One memoryd for a whole test file: started before its first test (then
 * set(md, client) with a client of Client for it), and checked to exit 0
 * after its last test.
 */
export function memorydPerFile(Client, set) {
  let md;
  before(async () => {
    md = await startMemoryd();
    set(md, new Client({ baseUrl: md.url, token: md.token }));
  });
  after(async () => {
    assert.equal((await md?.stop())?.code, 0);
  });
}

/**
 * Starts memoryd serving a new temporary database. Resolves once it printed
 * its "listening on" line. Returns {url, token, db, dir, bin, stderr(), stop()}.
 */
export async function startMemoryd({ args = [], token = randomBytes(16).toString("hex") } = {}) {
  // token null: no MEMORYD_TOKEN, so memoryd makes the token file beside its database.
  const bin = await memorydBinary();
  const dir = mkdtempSync(join(tmpdir(), "memoryd-test-"));
  const db = join(dir, "data", "memory.db");
  const child = spawn(bin, ["serve", "--addr", "127.0.0.1:0", "--db", db, "--log-level", "warn", ...args], {
    env: token === null ? withoutToken(process.env) : { ...process.env, MEMORYD_TOKEN: token },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr.setEncoding("utf8");
  child.stderr.on("data", (s) => (stderr += s));
  const exited = new Promise((res) => child.once("exit", (code, signal) => res({ code, signal })));
  const url = await new Promise((res, rej) => {
    let out = "";
    const timer = setTimeout(() => rej(new Error(`memoryd did not print its listening line in 30 s; stderr:\n${stderr}`)), 30_000);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (s) => {
      out += s;
      const m = /^listening on (http:\/\/\S+)$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        res(m[1]);
      }
    });
    exited.then(({ code, signal }) => {
      clearTimeout(timer);
      rej(new Error(`memoryd exited (code ${code}, signal ${signal}) before listening; stderr:\n${stderr}`));
    });
  });
  child.stdout.resume();
  let stopped;
  return {
    url,
    token,
    db,
    dir,
    bin,
    stderr: () => stderr,
    /** Stops memoryd (SIGTERM, then SIGKILL after 10 s); resolves with its exit. Removes the folder unless keep. */
    stop({ keep = false } = {}) {
      if (!stopped) {
        stopped = (async () => {
          if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
          const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
          const result = await exited;
          clearTimeout(timer);
          if (!keep) rmSync(dir, { recursive: true, force: true });
          return result;
        })();
      }
      return stopped;
    },
  };
}

function withoutToken(env) {
  const e = { ...env };
  delete e.MEMORYD_TOKEN;
  return e;
}

/** Runs the memoryd binary with args; resolves {code, stdout, stderr} (never rejects on a non-zero exit). */
export async function runMemoryd(args, { env } = {}) {
  const bin = await memorydBinary();
  return new Promise((res, rej) => {
    execFile(bin, args, { env: { ...process.env, ...env }, maxBuffer: 256 << 20 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== "number") return rej(err);
      res({ code: err ? err.code : 0, stdout, stderr });
    });
  });
}

/** A loopback port that nothing listens on now (listened on once, then closed). */
export async function freePort() {
  const srv = createServer();
  await new Promise((res) => srv.listen(0, "127.0.0.1", res));
  const { port } = srv.address();
  await new Promise((res) => srv.close(res));
  return port;
}

/**
 * The least a test waits for something that must happen (a reply, a line,
 * an exit) before it fails: a wait returns as soon as its condition holds,
 * so this floor costs nothing when all is well, and on a slow, loaded
 * machine a test is slow instead of failing.
 */
export const waitFloorMs = 60_000;

/**
 * How long one test may run before it is taken for hung and failed. It bounds
 * a hang, not a duration: on a slow, loaded machine a test is slow, not failed.
 */
export const hangGuardMs = 30 * 60_000;

/**
 * What the tests with a real coding-agent CLI ask of memoryd md over HTTP: tool(context, name, args), a
 * tool's result as context's agent; taskOf(sessionKey), the task that has an agent of that session key.
 */
export function memorydApi(md) {
  const headers = () => ({ Authorization: `Bearer ${md.token}`, "Content-Type": "application/json" });
  return {
    async tool(context, name, args = {}) {
      const r = await fetch(`${md.url}/v1/tools/${name}`, { method: "POST", headers: headers(), body: JSON.stringify({ context, arguments: args }) });
      assert.equal(r.status, 200, `${name}: ${await r.clone().text()}`);
      return r.json();
    },
    async taskOf(sessionKey) {
      const { tasks } = await (await fetch(`${md.url}/v1/tasks`, { headers: headers() })).json();
      const task = tasks.find((t) => t.agents.some((a) => a.session_key === sessionKey));
      assert.ok(task, `no task has the session ${sessionKey}: ${JSON.stringify(tasks)}`);
      return task;
    },
  };
}
