// Reaching memoryd and attaching the session: the client (replaced when the
// extension starts memoryd on another address), the task and agent the
// session is attached as, the last reason memoryd could not be reached (said
// once on stderr outside the TUI), the verdict when what answers is not a
// memoryd the session can use (another server on its port, or a memoryd
// refusing the token: no start, and connecting fails at once with it until
// the next check), the heartbeat that keeps the shared
// memoryd from its idle exit and notices a lost connection (memoryd started
// again when it can be, and the session attached again), and the requests in
// flight (awaited at shutdown, so no report is cut off).
import { AsyncLocalStorage } from "node:async_hooks";

import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { MemorydClient, isMemorydError, tokenFilePath, type CallContext } from "@memoryd/client";

import { trackedFetch } from "./fetch.js";
import { attachBudget, sessionKey, type MemorydExtensionOptions } from "./options.js";
import { spawnMemoryd, type SpawnOptions } from "./spawn.js";
import { errorMessage, type Trace } from "./trace.js";

/** The cause in the client's unreachable error ("memoryd is not reachable at URL (why)"). */
const why = (message: string) => /^memoryd is not reachable at \S+ \((.*)\)$/.exec(message)?.[1] ?? message;

/** memoryd's /healthz body (`status` and `position` alone: a memoryd older than the `service` field). */
const isMemorydHealth = (h: unknown): boolean => {
  const b = h as { service?: unknown; status?: unknown; position?: unknown } | null;
  return b?.service === "memoryd" || (b?.status === "ok" && Number.isInteger(b.position));
};

/**
 * What answers GET url/healthz when it is not memoryd's health: memoryd's
 * error (its envelope's message, e.g. its Host check), or another server's
 * status and content type ("HTTP 404, text/html"); undefined when nothing does.
 * A plain request: the client's error keeps the status, not what answered.
 */
async function whatAnswers(url: string): Promise<{ memoryd: boolean; what: string } | undefined> {
  let res: Response;
  try {
    res = await fetch(url + "/healthz", { signal: AbortSignal.timeout(3000) });
  } catch {
    return undefined;
  }
  const type = res.headers.get("content-type")?.split(";")[0]?.trim();
  // Only a JSON body can be memoryd's envelope; another server's page is not read.
  let error: string | undefined;
  if (type === "application/json") error = envelopeMessage(await res.text().catch(() => ""));
  else await res.body?.cancel().catch(() => {});
  if (error !== undefined) return { memoryd: true, what: error };
  return { memoryd: false, what: `HTTP ${res.status}${type ? `, ${type}` : ""}` };
}

/** The message of memoryd's error envelope ({"error":{"code","message"}}) when body is one. */
function envelopeMessage(body: string): string | undefined {
  try {
    const e = (JSON.parse(body) as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    return typeof e?.code === "string" && typeof e.message === "string" ? e.message : undefined;
  } catch {
    return undefined;
  }
}

/** Why what answers at memoryd's address is of no use to the session; connecting fails with it until `until` (Date.now()). */
interface Verdict {
  /** What answers, e.g. "http://127.0.0.1:7411 is answered by something that is not memoryd (HTTP 404, text/html)". */
  cause: string;
  /** What the user does about it. */
  fix: string;
  until: number;
}

/** The verdict's line for the user. */
const lineOf = (v: Verdict) => `${v.cause}; ${v.fix}; the memory tools fail until then`;

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
  /** What answers is not a memoryd the session can use (set by the last check). */
  private verdict: Verdict | undefined;

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

  /**
   * The error the model sees: one short line, the cause, never an
   * instruction to start services (the user was told what to do).
   */
  unavailable(): Error {
    const cause = this.verdict ? this.verdict.cause : why(this.lastError || "not connected");
    return new Error(`memoryd is not available (${cause}). The memory tools do not work in this session; the user has been told how to fix it.`);
  }

  /** Connects (attach) once; later calls reuse the connection. Throws a clear error when memoryd is unreachable. */
  connect(ctx: ExtensionContext, steps: AttachSteps): Promise<void> {
    if (this.agentIds) return Promise.resolve();
    this.lastCtx = ctx;
    // Already found of no use: fail at once, no probe and no start, until the verdict expires.
    if (this.verdict && Date.now() < this.verdict.until) return Promise.reject(this.unavailable());
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
        if (isMemorydError(err, "unauthenticated", "no_token")) this.judge(this.tokenRefused(err.code === "no_token"));
        else if (isMemorydError(err, "unproven")) this.judge(this.unproven(String(err.details.what)));
        this.tellDown(ctx, this.verdict ? lineOf(this.verdict) : `memoryd is not reachable at ${this.current.baseUrl} (${why(this.lastError)}); the memory tools fail until it runs`);
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

  /** Keeps the verdict until the next check: a heartbeat's interval (a minute when there is none). */
  private judge(v: Omit<Verdict, "until">): void {
    this.verdict = { ...v, until: Date.now() + (this.options.heartbeatMs || 60_000) };
  }

  /** memoryd answers but refuses the token sent (unauthenticated), or no token was found (noToken). */
  private tokenRefused(noToken: boolean): Omit<Verdict, "until"> {
    const url = this.current.baseUrl;
    const file = tokenFilePath();
    const fix = "set MEMORYD_TOKEN to its token (the file token beside its database)";
    if (noToken) return { cause: `memoryd at ${url} is reachable, but there is no token for it (no MEMORYD_TOKEN, no ${file})`, fix };
    const sent = this.options.token ? "the token option" : process.env.MEMORYD_TOKEN ? "MEMORYD_TOKEN" : `the token file ${file}`;
    return { cause: `memoryd at ${url} is reachable, but the token is not its token (${sent})`, fix };
  }

  /**
   * What answers as memoryd did not prove it holds the token (port squatting,
   * or a memoryd with another token): nothing was sent to it.
   */
  private unproven(what: string): Omit<Verdict, "until"> {
    return {
      cause: `${this.current.baseUrl} answers as memoryd but did not prove it holds this session's token (${what}); the token and the session were not sent to it`,
      fix: "if it is your memoryd, set MEMORYD_TOKEN to its token; otherwise another program holds its port: stop it, or choose another port for memoryd (MEMORYD_ADDR=127.0.0.1:<port>, or MEMORYD_URL when it is set)",
    };
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
   * Pings /healthz every heartbeatMs, then sends one authenticated request (keepAlive: keeping the shared
   * memoryd from its idle exit, which counts only those). memoryd gone:
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
    const answer = await this.probe();
    if (answer !== "memoryd") {
      const cause = why(this.lastError);
      this.lost = true;
      const spawnOpts = answer === "nothing" ? this.options.spawn : undefined;
      const started = spawnOpts && (await this.start(spawnOpts).catch((err) => ((this.lastError = errorMessage(err)), false as const)));
      if (!started) {
        return this.tellDown(this.lastCtx, this.verdict ? lineOf(this.verdict) : `lost the connection to memoryd at ${url} (${cause}); the memory tools fail until it runs again`);
      }
      line = `lost the connection to memoryd at ${url} (${cause}); started it again (its log: ${this.spawnedLog}); the session is attached again`;
    } else if (this.toldDown) line = `memoryd at ${url} answers again; the session is attached again`;
    if (!this.lost) return this.keepAlive();
    if (!this.attachRequest) return;
    const res = await this.current.attach(this.attachRequest);
    this.agentIds = { taskId: res.task_id, agent: res.agent };
    this.trace("reattached", { ...res });
    this.lost = false;
    this.toldDown = false;
    this.lastError = "";
    if (line) this.say(this.lastCtx, line);
  }

  /**
   * One authenticated request (GET /v1/tools, answered from memory): only
   * those hold off memoryd's --idle-exit, /healthz does not. A failure is
   * traced, not lost: the next heartbeat probes again.
   */
  private async keepAlive(): Promise<void> {
    await this.current.listTools({ timeoutMs: 3000 }).catch((err) => this.trace("error", { what: "heartbeat keep-alive", error: errorMessage(err) }));
  }

  /**
   * Who answers GET /healthz at the address: memoryd; nothing (refused, or no
   * answer in time); or "other": another server (the verdict says so) or a
   * memoryd refusing the probe. lastError says why when it is not memoryd.
   */
  private async probe(): Promise<"memoryd" | "nothing" | "other"> {
    this.verdict = undefined;
    const url = this.current.baseUrl;
    try {
      if (isMemorydHealth(await this.current.health({ timeoutMs: 3000 }))) return "memoryd";
    } catch (err) {
      this.lastError = errorMessage(err);
      if (!isMemorydError(err) || err.status === 0) return "nothing";
    }
    const answer = await whatAnswers(url);
    if (!answer) return "nothing";
    if (answer.memoryd) {
      this.lastError = answer.what;
      return "other";
    }
    this.lastError = `${url} is answered by something that is not memoryd (${answer.what})`;
    this.judge({ cause: this.lastError, fix: "choose another port for memoryd (MEMORYD_ADDR=127.0.0.1:<port>, or MEMORYD_URL when it is set)" });
    return "other";
  }

  /**
   * Starts memoryd (shared, detached) when nothing answers and a binary is
   * configured; false: no memoryd answers (lastError says why). Where
   * something else answers, a memoryd started could not bind the address.
   */
  private async ensureRunning(): Promise<"reachable" | "started" | false> {
    const answer = await this.probe();
    if (answer === "memoryd") return "reachable";
    if (answer === "nothing" && !this.options.spawn) {
      const noStart = this.options.noStart;
      this.judge({
        cause: `nothing answers at ${this.current.baseUrl}, and memoryd was not started: ${noStart ?? "the extension was given no way to start it (its spawn option)"}`,
        fix: !noStart
          ? "start memoryd yourself (memoryd serve), or give the extension its spawn option"
          : noStart.startsWith("MEMORYD_AUTOSTART=0")
            ? "start memoryd yourself (memoryd serve), or unset MEMORYD_AUTOSTART"
            : "install the extension from npm (pi install npm:@memoryd/pi-extension brings memoryd for Linux and macOS), put memoryd on PATH (go build -o ~/.local/bin/memoryd ./cmd/server in a clone of memoryd) or set MEMORYD_BIN to it",
      });
      this.lastError = this.verdict!.cause;
      return false;
    }
    if (answer === "other" || !this.options.spawn) return false;
    return this.start(this.options.spawn);
  }

  /** Starts memoryd (one start at a time) and, when it answers at another address (port 0), uses that. */
  private async start(spawnOpts: SpawnOptions): Promise<"started"> {
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
