// Starting memoryd as a shared background service: detached (its own
// process group and session, its output in a log file), so that it outlives
// the pi process that started it and every pi process (and sub-agent) on the
// machine shares it. It stops by itself after --idle-exit without requests;
// the extension never stops it.
import { spawn, type ChildProcess } from "node:child_process";
import { closeSync, constants, fchmodSync, fstatSync, mkdirSync, openSync, readFileSync, renameSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";

import { defaultDbPath } from "@memoryd/client";

/** How to start memoryd when it is not running. */
export interface SpawnOptions {
  /** The program: a memoryd binary, or "go" to run `go run ./cmd/server` in cwd (a memoryd checkout; required, absolute). */
  command: string;
  /** Arguments before `serve --addr ...`; default [] for a binary, ["run", "./cmd/server"] for "go". */
  args?: string[];
  /** Working directory (for "go": the memoryd checkout, an absolute path: never the pi process's own, which may be an untrusted project). */
  cwd?: string;
  /** Extra environment (e.g. MEMORYD_DB, MEMORYD_TOKEN). */
  env?: Record<string, string>;
  /** The listen address; default the host:port of the client's base URL. "127.0.0.1:0" picks a free port. */
  addr?: string;
  /** How long to wait until /healthz answers (default 120 s: `go run` may compile first). */
  startTimeoutMs?: number;
  /** memoryd's --idle-exit (default "30m"; "0": never). */
  idleExit?: string;
  /** Where its output goes (appended; default `memoryd.log` beside its database). */
  logFile?: string;
}

/** A memoryd answering at url, started by this process or, when two started at once, by the other. */
export interface SpawnedMemoryd {
  /** Its base URL (the configured address, or the one it printed for port 0). */
  url: string;
  /** The process this call started (it may have lost the race for the address and exit: another one answers then). */
  child: ChildProcess;
  /** Its log file. */
  logFile: string;
  /** What it wrote to its log since this call started it. */
  log(): string;
  /** Stops the memoryd this call started (SIGTERM to its process group; tests). The extension never calls it. */
  stop(): Promise<void>;
}

/** The log file of a memoryd started with env: `memoryd.log` beside its database. */
export function defaultLogFile(env: Record<string, string | undefined> = process.env): string {
  return join(dirname(defaultDbPath(env)), "memoryd.log");
}

/**
 * Opens the log file for appending as memoryd creates its token file: never
 * through a symbolic link (O_NOFOLLOW), only a regular file of this user, and
 * made 0600 if it was readable by others (its text is the notes' metadata).
 */
export function openLogFile(path: string): number {
  const flags = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;
  let fd: number;
  try {
    fd = openSync(path, flags, 0o600);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ELOOP") {
      throw new Error(`refusing memoryd's log file ${path}: it is a symbolic link; remove it (a new log is made at the next start)`);
    }
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new Error(`refusing memoryd's log file ${path}: it is not a regular file; remove it`);
    const uid = process.getuid?.();
    if (uid !== undefined && st.uid !== uid) {
      throw new Error(`refusing memoryd's log file ${path}: it belongs to user ${st.uid}, not to you (${uid}); remove it`);
    }
    if ((st.mode & 0o077) !== 0) fchmodSync(fd, 0o600);
    return fd;
  } catch (err) {
    closeSync(fd);
    throw err;
  }
}

/** How large memoryd's log may grow before a start moves it to `<log>.1`. */
export const LOG_CAP_BYTES = 10 << 20;

/**
 * openLogFile, but a log past capBytes is first moved to `<path>.1` (the
 * one before it is dropped), so that the log of a shared memoryd started
 * again and again stays within about twice the cap.
 */
export function openCappedLogFile(path: string, capBytes = LOG_CAP_BYTES): number {
  const fd = openLogFile(path);
  if (fstatSync(fd).size <= capBytes) return fd;
  closeSync(fd);
  renameSync(path, path + ".1"); // a memoryd still writing keeps its file, now <path>.1
  return openLogFile(path);
}

/** Answers GET /healthz within timeoutMs. */
export async function healthy(url: string, timeoutMs = 2000): Promise<boolean> {
  try {
    const res = await fetch(url + "/healthz", { signal: AbortSignal.timeout(timeoutMs) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Starts `<command> [args] serve --addr <addr> --idle-exit <idleExit>` detached,
 * its stdout and stderr appended to the log file, and resolves once a memoryd
 * answers GET /healthz at the address: this one, or (two pi processes started
 * one at once; the loser cannot bind and exits) the winner.
 */
export async function spawnMemoryd(options: SpawnOptions, defaultAddr: string): Promise<SpawnedMemoryd> {
  const env = { ...process.env, ...options.env };
  const addr = options.addr ?? defaultAddr;
  const isGo = options.command === "go";
  if (isGo && !(options.cwd && isAbsolute(options.cwd))) {
    throw new Error(
      `MEMORYD_SPAWN=go needs MEMORYD_REPO, the absolute path of a memoryd checkout (got ${JSON.stringify(options.cwd ?? "")}): ` +
        "without it `go run ./cmd/server` would run the code of whatever folder pi runs in",
    );
  }
  const idleExit = options.idleExit ?? "30m";
  const args = [...(options.args ?? (isGo ? ["run", "./cmd/server"] : [])), "serve", "--addr", addr];
  if (idleExit !== "0") args.push("--idle-exit", idleExit);
  const logFile = options.logFile ?? defaultLogFile(env);
  mkdirSync(dirname(logFile), { recursive: true, mode: 0o700 });
  const fd = openCappedLogFile(logFile);
  const from = fstatSync(fd).size;
  let child: ChildProcess;
  try {
    child = spawn(options.command, args, { cwd: options.cwd, env, stdio: ["ignore", fd, fd], detached: true });
  } finally {
    closeSync(fd);
  }
  child.unref();
  let exit: string | undefined;
  let spawnError: string | undefined;
  child.once("error", (err) => (spawnError = err.message));
  child.once("exit", (code, signal) => (exit = `code ${code}, signal ${signal}`));
  const log = () => {
    try {
      return readFileSync(logFile, "utf8").slice(from);
    } catch {
      return "";
    }
  };
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid && exit === undefined) process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  const timeoutMs = options.startTimeoutMs ?? 120_000;
  const deadline = Date.now() + timeoutMs;
  const fixed = !/:0$/.test(addr);
  let exitedAt: number | undefined;
  for (;;) {
    if (spawnError) throw new Error(`cannot start memoryd (${options.command}): ${spawnError}`);
    // Port 0 (tests): the address it printed in its log; otherwise the configured one.
    const url = fixed ? `http://${addr}` : /^listening on (http:\/\/\S+)\s*$/m.exec(log())?.[1];
    if (url && (await healthy(url))) {
      return {
        url,
        child,
        logFile,
        log,
        async stop() {
          if (exit !== undefined) return;
          const exited = new Promise((r) => child.once("exit", r));
          killGroup("SIGTERM");
          const timer = setTimeout(() => killGroup("SIGKILL"), 12_000);
          await exited;
          clearTimeout(timer);
        },
      };
    }
    if (exit !== undefined) {
      // It exited: lost the bind race (the winner may still be opening the
      // database), or failed. Give the winner a few seconds, then report.
      exitedAt ??= Date.now();
      if (!fixed || Date.now() - exitedAt > 5_000) {
        throw new Error(`memoryd (${options.command}) exited (${exit}) and nothing answers at ${addr}; its log (${logFile}):\n${log().slice(-4000)}`);
      }
    }
    if (Date.now() > deadline) {
      killGroup("SIGKILL");
      throw new Error(`memoryd (${options.command}) did not answer at ${addr} within ${timeoutMs} ms; its log (${logFile}):\n${log().slice(-4000)}`);
    }
    await sleep(100);
  }
}
