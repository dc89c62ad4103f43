// Reaching memoryd and attaching the session: the client (replaced when the
// extension starts its own memoryd on another address), the memoryd it
// started, the task and agent the session is attached as, and the last
// reason memoryd could not be reached.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { MemorydClient, type CallContext } from "@memoryd/client";

import { contextWindow, sessionKey, type MemorydExtensionOptions } from "./options.js";
import { spawnMemoryd, type SpawnedMemoryd } from "./spawn.js";
import { errorMessage, type Trace } from "./trace.js";

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
  private spawned: SpawnedMemoryd | undefined;
  private agentIds: AgentIds | undefined;
  private connecting: Promise<void> | undefined;
  private lastError = "";

  constructor(
    private readonly options: MemorydExtensionOptions,
    private readonly trace: Trace,
  ) {
    this.current =
      options.client ?? new MemorydClient({ baseUrl: options.baseUrl, token: options.token, timeoutMs: options.timeoutMs });
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
      `memoryd is not available (${this.lastError || "not connected"}). Start it (go run ./cmd/server in the memoryd repository, or set MEMORYD_SPAWN) and retry; notes and history are only kept in memoryd.`,
    );
  }

  /** Connects (attach) once; later calls reuse the connection. Throws a clear error when memoryd is unreachable. */
  connect(ctx: ExtensionContext, steps: AttachSteps): Promise<void> {
    if (this.agentIds) return Promise.resolve();
    this.connecting ??= (async () => {
      try {
        await this.ensureRunning();
        await steps.reached(this.current);
        const w = contextWindow(this.options, ctx);
        const res = await this.current.attach({
          session_key: sessionKey(this.options, ctx),
          session_id: ctx.sessionManager.getSessionId(),
          session_file: ctx.sessionManager.getSessionFile() ?? "",
          task: this.options.task ?? null,
          budget: { ...this.options.budget, ...(w ? { context_window: w } : {}) },
        });
        this.agentIds = { taskId: res.task_id, agent: res.agent };
        this.lastError = "";
        this.trace("attached", { ...res });
        await steps.attached();
      } catch (err) {
        this.lastError = errorMessage(err);
        throw this.unavailable();
      } finally {
        this.connecting = undefined;
      }
    })();
    return this.connecting;
  }

  /** Stops the memoryd this extension started, if any. */
  async stop(): Promise<void> {
    const spawned = this.spawned;
    if (!spawned) return;
    await spawned.stop();
    this.spawned = undefined;
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

  private async ensureRunning(): Promise<void> {
    if (await this.reachable()) return;
    const spawnOpts = this.options.spawn;
    if (!spawnOpts || this.spawned) return;
    const addr = new URL(this.current.baseUrl).host;
    this.trace("spawn", { command: spawnOpts.command, addr: spawnOpts.addr ?? addr });
    const spawned = await spawnMemoryd(spawnOpts, addr);
    this.spawned = spawned;
    this.trace("spawned", { url: spawned.url, pid: spawned.child.pid });
    if (spawned.url !== this.current.baseUrl) {
      this.current = new MemorydClient({
        baseUrl: spawned.url,
        token: this.options.token ?? spawnOpts.env?.MEMORYD_TOKEN,
        timeoutMs: this.options.timeoutMs,
        env: spawnOpts.env?.MEMORYD_DB ? { ...process.env, MEMORYD_DB: spawnOpts.env.MEMORYD_DB } : undefined,
      });
    }
  }
}
