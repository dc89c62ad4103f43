import { spawn, type ChildProcess } from "node:child_process";

/** How to start memoryd when it is not running. */
export interface SpawnOptions {
  /** The program: a memoryd binary, or "go" to run `go run ./cmd/server` in cwd (a memoryd checkout). */
  command: string;
  /** Arguments before `serve --addr ...`; default [] for a binary, ["run", "./cmd/server"] for "go". */
  args?: string[];
  /** Working directory (for "go": the memoryd checkout). */
  cwd?: string;
  /** Extra environment (e.g. MEMORYD_DB, MEMORYD_TOKEN). */
  env?: Record<string, string>;
  /** The listen address; default the host:port of the client's base URL. "127.0.0.1:0" picks a free port. */
  addr?: string;
  /** How long to wait for the listening line and /healthz (default 120 s: `go run` may compile first). */
  startTimeoutMs?: number;
}

/** A memoryd this process started. */
export interface SpawnedMemoryd {
  /** The base URL it printed (`listening on http://HOST:PORT`). */
  url: string;
  child: ChildProcess;
  /** Output it wrote to stderr so far (its logs). */
  stderr(): string;
  /** Stops it (SIGTERM to its process group) and waits for it to exit. */
  stop(): Promise<void>;
}

/**
 * Starts memoryd as `<command> [args] serve --addr <addr>` and resolves once it
 * printed its listening line and answers GET /healthz.
 */
export async function spawnMemoryd(options: SpawnOptions, defaultAddr: string): Promise<SpawnedMemoryd> {
  const isGo = options.command === "go";
  const args = [...(options.args ?? (isGo ? ["run", "./cmd/server"] : [])), "serve", "--addr", options.addr ?? defaultAddr];
  const child = spawn(options.command, args, {
    cwd: options.cwd,
    env: { ...process.env, ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true, // its own process group, so that stop() also ends the binary `go run` starts
  });
  let stderr = "";
  child.stderr!.setEncoding("utf8");
  child.stderr!.on("data", (s: string) => {
    stderr = (stderr + s).slice(-64_000);
  });
  const exited = new Promise<void>((res) => child.once("exit", () => res()));
  const killGroup = (signal: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, signal);
    } catch {
      // already gone
    }
  };
  const onExit = () => killGroup("SIGTERM");
  process.once("exit", onExit);
  const timeoutMs = options.startTimeoutMs ?? 120_000;
  let url: string;
  try {
    url = await new Promise<string>((resolve, reject) => {
      let out = "";
      const timer = setTimeout(
        () => reject(new Error(`memoryd (${options.command}) did not start within ${timeoutMs} ms; its stderr:\n${stderr}`)),
        timeoutMs,
      );
      child.stdout!.setEncoding("utf8");
      child.stdout!.on("data", (s: string) => {
        out += s;
        const m = /^listening on (http:\/\/\S+)\s*$/m.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
      child.once("error", (err) => {
        clearTimeout(timer);
        reject(new Error(`cannot start memoryd (${options.command}): ${err.message}`));
      });
      child.once("exit", (code, signal) => {
        clearTimeout(timer);
        reject(new Error(`memoryd (${options.command}) exited (code ${code}, signal ${signal}) before listening; its stderr:\n${stderr}`));
      });
    });
    child.stdout!.resume();
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        const res = await fetch(url + "/healthz", { signal: AbortSignal.timeout(2000) });
        if (res.ok) break;
      } catch {
        // not yet
      }
      if (Date.now() > deadline) throw new Error(`memoryd printed ${url} but /healthz does not answer`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    killGroup("SIGKILL");
    process.removeListener("exit", onExit);
    throw err;
  }
  let stopping: Promise<void> | undefined;
  return {
    url,
    child,
    stderr: () => stderr,
    stop() {
      stopping ??= (async () => {
        process.removeListener("exit", onExit);
        if (child.exitCode !== null || child.signalCode !== null) return;
        killGroup("SIGTERM");
        const timer = setTimeout(() => killGroup("SIGKILL"), 12_000);
        await exited;
        clearTimeout(timer);
      })();
      return stopping;
    },
  };
}
