// Reaching memoryd and attaching the session: the client (replaced when the
// extension starts memoryd on another address), the task and agent the
// session is attached as, the last reason memoryd could not be reached (said
// once on stderr outside the TUI), the heartbeat that keeps the shared
// memoryd from its idle exit and notices a lost connection (memoryd started
// again when it can be, and the session attached again), and the requests in
// flight (awaited at shutdown, so no report is cut off).
import { AsyncLocalStorage } from "node:async_hooks";

import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { MemorydClient, type CallContext } from "@memoryd/client";

import { trackedFetch } from "./fetch.js";
import { attachBudget, sessionKey, type MemorydExtensionOptions } from "./options.js";
import { spawnMemoryd } from "./spawn.js";
import { errorMessage, type Trace } from "./trace.js";

/** The cause in the client's unreachable error ("memoryd is not reachable at URL (why); start it with ..."). */
const why = (message: string) => /^memoryd is not reachable at \S+ \((.*)\); start it with/.exec(message)?.[1] ?? message;

/** What connecting does besides attach, in order. */
export interface AttachSteps {
  /** memoryd answers, before attach (the tools are registered from its specs). */
  reached(client: MemorydClient): Promise<void>;
  /** Attached, still part of connecting (the state; a rollover an earlier process left prepared). */
  attached(): Promise<void>;
}

/** The caller memoryd knows the session as. */
export interface AgentIds {
  taskId: string;
  agent: string;
}

export class Connection {
  private current: MemorydClient;
  private starting: Promise<void> | undefined;
  private agentIds: AgentIds | undefined;
  private connecting: Promise<void> | undefined;
  private lastError = "";
  private readonly inFlight = new Set<Promise<unknown>>();
  private heartbeat: NodeJS.Timeout | undefined;
  private lastCtx: ExtensionContext | undefined;
  /** memoryd was said to be unreachable (once per outage). */
  private toldDown = false;
  /** The attach request (sent again when memoryd answers again after a lost connection). */
  private attachRequest: Parameters<MemorydClient["attach"]>[0] | undefined;
  /** memoryd was found gone; the session attaches again once it answers. */
  private lost = false;
  private beating: Promise<void> | undefined;
  private readonly recovering = new AsyncLocalStorage<boolean>();
  /** The log of the memoryd this process started last. */
  private spawnedLog = "";

  constructor(
    private readonly options: MemorydExtensionOptions,
    private readonly trace: Trace,
  ) {
    this.current = options.client ?? this.newClient({ baseUrl: options.baseUrl, token: options.token });
  }

  /** A client whose requests are tracked (stop() awaits them) and sent again once after a recovery (trackedFetch). */
  private newClient(o: { baseUrl?: string; token?: string; env?: NodeJS.ProcessEnv }): MemorydClient {
    // Only once attached (connect starts memoryd itself), and not from inside the recovery (its own requests).
    const recover = () => (this.agentIds && !this.recovering.getStore() ? this.recover() : Promise.resolve(false));
    return new MemorydClient({ ...o, timeoutMs: this.options.timeoutMs, fetch: trackedFetch(this.inFlight, recover) });
  }

  /** The client of the memoryd the session uses (read it at each call: spawning may replace it). */
  get client(): MemorydClient {
    return this.current;
  }

  /** The session was attached (once attached it stays so: later failures fail the calls, closed). */
  get attached(): boolean {
    return this.agentIds !== undefined;
  }

  get ids(): AgentIds | undefined {
    return this.agentIds;
  }

  /** The context of a call; throws the unavailable error before the session is attached. */
  context(callId?: string): CallContext {
    const ids = this.agentIds;
    if (!ids) throw this.unavailable();
    return { task_id: ids.taskId, agent: ids.agent, ...(callId ? { call_id: callId } : {}) };
  }

  /** Remembers why memoryd could not be reached (named by the unavailable error). */
  failed(message: string): void {
    this.lastError = message;
  }

  get failure(): string {
    return this.lastError;
  }

  unavailable(): Error {
    return new Error(
      `memoryd is not available (${this.lastError || "not connected"}). Start it (memoryd serve, or go run ./cmd/server in the memoryd repository; or put memoryd on PATH or set MEMORYD_BIN and the extension starts it) and retry; notes and history are only kept in memoryd.`,
    );
  }

  /** Connects (attach) once; later calls reuse the connection. Throws a clear error when memoryd is unreachable. */
  connect(ctx: ExtensionContext, steps: AttachSteps): Promise<void> {
    if (this.agentIds) return Promise.resolve();
    this.lastCtx = ctx;
    this.connecting ??= (async () => {
      try {
        if (!(await this.ensureRunning())) throw new Error(this.lastError);
        await steps.reached(this.current);
        this.attachRequest = {
          session_key: sessionKey(this.options, ctx),
          session_id: ctx.sessionManager.getSessionId(),
          session_file: ctx.sessionManager.getSessionFile() ?? "",
          task: this.options.task ?? null,
          budget: attachBudget(this.options, ctx),
        };
        const res = await this.current.attach(this.attachRequest);
        this.agentIds = { taskId: res.task_id, agent: res.agent };
        this.lastError = "";
        this.trace("attached", { ...res });
        this.toldDown = false;
        this.startHeartbeat();
        await steps.attached();
      } catch (err) {
        this.lastError = errorMessage(err);
        this.tellDown(ctx, `memoryd is not reachable at ${this.current.baseUrl} (${why(this.lastError)}); the memory tools fail until it runs`);
        throw this.unavailable();
      } finally {
        this.connecting = undefined;
      }
    })();
    return this.connecting;
  }

  /**
   * session_shutdown: stops the heartbeat and waits (up to 10 s) for the
   * requests in flight, e.g. a rollover report. The shared memoryd keeps
   * running (it stops after its --idle-exit).
   */
  async stop(): Promise<void> {
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    if (this.inFlight.size === 0) return;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...this.inFlight]),
      new Promise((r) => (timer = setTimeout(r, 10_000))),
    ]);
    clearTimeout(timer);
  }

  /** Says once per outage that memoryd is unreachable. */
  private tellDown(ctx: ExtensionContext | undefined, line: string): void {
    if (this.toldDown) return;
    this.toldDown = true;
    this.trace("unreachable", { line });
    this.say(ctx, line);
  }

  /** A line for the user: stderr without the TUI; a notification once attached (session_start notifies at start). */
  private say(ctx: ExtensionContext | undefined, line: string): void {
    let mode: string | undefined;
    try {
      mode = ctx?.mode;
      if (ctx?.hasUI && this.agentIds) ctx.ui.notify(line, "warning");
    } catch {
      // a stale ctx (the session was replaced): stderr below
    }
    if (mode !== "tui") process.stderr.write(`[memoryd] ${line}\n`);
  }

  /**
   * Pings /healthz every heartbeatMs (keeping the shared memoryd from its idle exit). memoryd gone:
   * starts it again if it can (else says once that the connection is lost); once it answers again
   * the session attaches again (the same session key: the same task and agent), said in one line.
   */
  private startHeartbeat(): void {
    const every = this.options.heartbeatMs ?? 60_000;
    if (this.heartbeat || every <= 0) return;
    this.heartbeat = setInterval(() => void this.recover(), every);
    this.heartbeat.unref();
  }

  /** A heartbeat now (a request was refused): true when memoryd answers and the session is attached. */
  async recover(): Promise<boolean> {
    this.beating ??= this.recovering
      .run(true, () => this.beat())
      .catch((err) => this.trace("error", { what: "heartbeat", error: errorMessage(err) }))
      .finally(() => (this.beating = undefined));
    await this.beating;
    return !this.lost;
  }

  private async beat(): Promise<void> {
    const url = this.current.baseUrl;
    let line = "";
    if (!(await this.reachable())) {
      const cause = why(this.lastError);
      this.lost = true;
      const how = await this.ensureRunning().catch((err) => ((this.lastError = errorMessage(err)), false as const));
      if (!how) return this.tellDown(this.lastCtx, `lost the connection to memoryd at ${url} (${cause}); the memory tools fail until it runs again`);
      const again = how === "started" ? `started it again (its log: ${this.spawnedLog}); ` : "";
      line = `lost the connection to memoryd at ${url} (${cause}); ${again}the session is attached again`;
    } else if (this.toldDown) line = `memoryd at ${url} answers again; the session is attached again`;
    if (!this.lost || !this.attachRequest) return;
    const res = await this.current.attach(this.attachRequest);
    this.agentIds = { taskId: res.task_id, agent: res.agent };
    this.trace("reattached", { ...res });
    this.lost = false;
    this.toldDown = false;
    this.lastError = "";
    if (line) this.say(this.lastCtx, line);
  }

  private async reachable(): Promise<boolean> {
    try {
      await this.current.health({ timeoutMs: 3000 });
      return true;
    } catch (err) {
      this.lastError = errorMessage(err);
      return false;
    }
  }

  /** Starts memoryd (shared, detached) when nothing answers and a binary is configured; false: none answers. */
  private async ensureRunning(): Promise<"reachable" | "started" | false> {
    if (await this.reachable()) return "reachable";
    const spawnOpts = this.options.spawn;
    if (!spawnOpts) return false;
    this.starting ??= (async () => {
      const addr = new URL(this.current.baseUrl).host;
      this.trace("spawn", { command: spawnOpts.command, addr: spawnOpts.addr ?? addr });
      const spawned = await spawnMemoryd(spawnOpts, addr);
      this.trace("spawned", { url: spawned.url, pid: spawned.child.pid, logFile: spawned.logFile });
      this.spawnedLog = spawned.logFile;
      if (spawned.url !== this.current.baseUrl) {
        const env = spawnOpts.env?.MEMORYD_DB ? { ...process.env, MEMORYD_DB: spawnOpts.env.MEMORYD_DB } : undefined;
        this.current = this.newClient({ baseUrl: spawned.url, token: this.options.token ?? spawnOpts.env?.MEMORYD_TOKEN, env });
      }
    })().finally(() => (this.starting = undefined));
    await this.starting;
    return "started";
  }
}
