// The Pi extension of memoryd: registers the 11 token-budget tools with the
// schemas memoryd serves, forwards their calls, syncs the session history,
// reports usage, gates tool calls through the checkpoint fence and performs
// the window rollover at a settled boundary. All state lives in memoryd; if
// memoryd cannot be reached, the tools fail with a clear error (there is no
// local fallback).
import { randomUUID } from "node:crypto";

import type {
  ExtensionAPI,
  ExtensionContext,
  ExtensionFactory,
  SessionBeforeCompactEvent,
  SessionBeforeCompactResult,
} from "@earendil-works/pi-coding-agent";
import {
  MemorydClient,
  MemorydError,
  TOOL_NAMES,
  discoverBaseUrl,
  isMemorydError,
  type AgentState,
  type Budget,
  type CallContext,
  type ControlKind,
  type RolloverReason,
  type SessionEntry,
  type TaskRef,
  type ToolSpec,
} from "@memoryd/client";

import {
  CUSTOM_TYPE,
  GUIDANCE,
  NO_KEPT_ENTRY,
  continueText,
  fallbackText,
  manualCheckpointText,
  reminderText,
} from "./messages.js";
import { spawnMemoryd, type SpawnOptions, type SpawnedMemoryd } from "./spawn.js";

export { CUSTOM_TYPE, NO_KEPT_ENTRY } from "./messages.js";
export { spawnMemoryd } from "./spawn.js";
export type { SpawnOptions, SpawnedMemoryd } from "./spawn.js";

/** Options of the extension; every field is optional. */
export interface MemorydExtensionOptions {
  /** A ready client (tests); otherwise one is made from baseUrl, token and timeoutMs. */
  client?: MemorydClient;
  /** memoryd's URL (default MEMORYD_URL, else http://$MEMORYD_ADDR, else http://127.0.0.1:7411). */
  baseUrl?: string;
  /** The bearer token (default MEMORYD_TOKEN, else the token file beside the default database). */
  token?: string;
  /** Per-request timeout in ms (default 15000). */
  timeoutMs?: number;
  /**
   * Join an existing task as a child agent (API.md §3). A launcher that starts
   * a sub-agent session passes its parent's task here (or in MEMORYD_TASK as
   * JSON). Omitted: the session is its own task (/root), or resumes it.
   */
  task?: TaskRef | null;
  /** Budget sent with attach. context_window, when set, is also the window usage is measured against. */
  budget?: Budget;
  /** Start memoryd when it is not reachable at session start (default: MEMORYD_SPAWN, else never). */
  spawn?: SpawnOptions | false;
  /** The session key (default: the session file path, else "pi-session:<session id>"). */
  sessionKey?: (ctx: ExtensionContext) => string;
  /** Add the workflow guidance to the system prompt (default true). */
  guidance?: boolean;
  /** Observe what the extension does (tests, MEMORYD_DEBUG=1 logs to stderr). */
  onTrace?: (event: string, data?: Record<string, unknown>) => void;
}

/** Reads the extension's options from the environment (what the default export uses). */
export function optionsFromEnv(env: Record<string, string | undefined> = process.env): MemorydExtensionOptions {
  const opts: MemorydExtensionOptions = {};
  if (env.MEMORYD_TASK) {
    try {
      opts.task = JSON.parse(env.MEMORYD_TASK) as TaskRef;
    } catch {
      throw new Error("MEMORYD_TASK must be JSON like {\"task_id\":\"...\",\"parent_agent\":\"/root\",\"agent_name\":\"reviewer\"}");
    }
  }
  if (env.MEMORYD_SPAWN) {
    opts.spawn = {
      command: env.MEMORYD_SPAWN,
      cwd: env.MEMORYD_REPO || undefined,
    };
  }
  if (env.MEMORYD_CONTEXT_WINDOW) opts.budget = { context_window: Number(env.MEMORYD_CONTEXT_WINDOW) };
  if (env.MEMORYD_DEBUG === "1") {
    opts.onTrace = (event, data) => process.stderr.write(`[memoryd] ${event} ${data ? JSON.stringify(data) : ""}\n`);
  }
  return opts;
}

const SEQUENTIAL_FALLBACK = new Set(["notes_append_to_file", "notes_write_file", "new_context"]);
const CONTROL_TYPES = new Set<string>([CUSTOM_TYPE.reminder, CUSTOM_TYPE.fallback, CUSTOM_TYPE.manualCheckpoint]);
const MAX_ENTRIES_PER_SYNC = 5000;

interface Connection {
  taskId: string;
  agent: string;
}

interface PendingRollover {
  windowId: string;
  previousWindowId: string;
  bootstrap: string;
  reason: RolloverReason;
}

/** Returns the extension factory. */
export function createMemorydExtension(options: MemorydExtensionOptions = {}): ExtensionFactory {
  return (pi: ExtensionAPI) => installMemoryd(pi, options);
}

/** Installs the extension on pi (what the factory does). */
export function installMemoryd(pi: ExtensionAPI, options: MemorydExtensionOptions = {}): void {
  const trace = options.onTrace ?? (() => {});
  let client =
    options.client ?? new MemorydClient({ baseUrl: options.baseUrl, token: options.token, timeoutMs: options.timeoutMs });
  let spawned: SpawnedMemoryd | undefined;
  let conn: Connection | undefined;
  let connecting: Promise<Connection> | undefined;
  let lastError = "";
  let toolsReal = false;
  let state: AgentState | undefined;
  const synced = new Set<string>();
  let lastBranch = "";
  let syncChain: Promise<unknown> = Promise.resolve();
  const claimed = new Set<string>();
  let rollover: PendingRollover | undefined;
  let rolloverStarting = false;

  const context = (callId?: string): CallContext => {
    if (!conn) throw unavailable();
    return { task_id: conn.taskId, agent: conn.agent, ...(callId ? { call_id: callId } : {}) };
  };

  function unavailable(): Error {
    return new Error(
      `memoryd is not available (${lastError || "not connected"}). Start it (go run ./cmd/server in the memoryd repository, or set MEMORYD_SPAWN) and retry; notes and history are only kept in memoryd.`,
    );
  }

  function contextWindow(ctx: ExtensionContext): number | undefined {
    return options.budget?.context_window ?? ctx.model?.contextWindow;
  }

  function sessionKey(ctx: ExtensionContext): string {
    if (options.sessionKey) return options.sessionKey(ctx);
    return ctx.sessionManager.getSessionFile() ?? `pi-session:${ctx.sessionManager.getSessionId()}`;
  }

  // ---- tools ----------------------------------------------------------------

  function registerTools(specs: ToolSpec[] | undefined) {
    const byName = new Map((specs ?? []).map((s) => [s.name as string, s]));
    for (const name of TOOL_NAMES) {
      const spec = byName.get(name);
      pi.registerTool({
        name,
        label: name,
        description: spec?.description ?? `memoryd tool ${name} (memoryd is not reachable: this tool fails until it is).`,
        parameters: (spec?.parameters ?? { type: "object" }) as never,
        executionMode: spec?.execution_mode ?? (SEQUENTIAL_FALLBACK.has(name) ? "sequential" : "parallel"),
        async execute(toolCallId, params, signal, _onUpdate, ctx) {
          await connect(ctx);
          trace("tool_call", { name, toolCallId });
          try {
            const res = await client.callTool(name, context(toolCallId), params ?? {}, { signal });
            if (name === "new_context" || res.terminate) void refreshState();
            return { content: res.content, details: res.details as unknown, terminate: res.terminate };
          } catch (err) {
            if (isMemorydError(err, "fenced")) {
              return {
                content: [{ type: "text", text: err.message }],
                details: { error: err.code, ...err.details } as unknown,
                isError: true,
                terminate: err.details.terminate === true,
              };
            }
            if (isMemorydError(err, "unreachable", "timeout", "no_token")) {
              lastError = err.message;
              throw new Error(`${name} failed: ${err.message}. Notes and history are only kept in memoryd; nothing was written.`);
            }
            throw new Error(err instanceof Error ? err.message : String(err));
          }
        },
      });
    }
    toolsReal = specs !== undefined;
  }

  // ---- connection ---------------------------------------------------------

  async function reachable(): Promise<boolean> {
    try {
      await client.health({ timeoutMs: 3000 });
      return true;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
      return false;
    }
  }

  async function ensureRunning(): Promise<void> {
    if (await reachable()) return;
    const spawnOpts = options.spawn;
    if (!spawnOpts || spawned) return;
    const addr = new URL(client.baseUrl).host;
    trace("spawn", { command: spawnOpts.command, addr: spawnOpts.addr ?? addr });
    spawned = await spawnMemoryd(spawnOpts, addr);
    trace("spawned", { url: spawned.url, pid: spawned.child.pid });
    if (spawned.url !== client.baseUrl) {
      client = new MemorydClient({
        baseUrl: spawned.url,
        token: options.token ?? spawnOpts.env?.MEMORYD_TOKEN,
        timeoutMs: options.timeoutMs,
        env: spawnOpts.env?.MEMORYD_DB ? { ...process.env, MEMORYD_DB: spawnOpts.env.MEMORYD_DB } : undefined,
      });
    }
  }

  /** Connects (attach) once; later calls reuse the connection. Throws a clear error when memoryd is unreachable. */
  function connect(ctx: ExtensionContext): Promise<Connection> {
    if (conn) return Promise.resolve(conn);
    connecting ??= (async () => {
      try {
        await ensureRunning();
        if (!toolsReal) registerTools(await client.listTools());
        const w = contextWindow(ctx);
        const res = await client.attach({
          session_key: sessionKey(ctx),
          session_id: ctx.sessionManager.getSessionId(),
          session_file: ctx.sessionManager.getSessionFile() ?? "",
          task: options.task ?? null,
          budget: { ...options.budget, ...(w ? { context_window: w } : {}) },
        });
        conn = { taskId: res.task_id, agent: res.agent };
        lastError = "";
        trace("attached", { ...res });
        const st = await refreshState();
        // A rollover prepared by an earlier process that ended before its
        // compaction: nothing will commit it. Report it aborted (the intent
        // is kept) so the next settled boundary prepares it again.
        if (st?.pending_window_id && !rollover) await abandonRollover("attach");
        return conn;
      } catch (err) {
        lastError = err instanceof Error ? err.message : String(err);
        throw unavailable();
      } finally {
        connecting = undefined;
      }
    })();
    return connecting;
  }

  /** Reports a prepared rollover that will never be committed as aborted (memoryd keeps the intent). */
  async function abandonRollover(why: string): Promise<void> {
    await quietly("fail", async () => {
      const res = await client.rolloverFail({ context: context(), aborted: true, error: `rollover abandoned at ${why}` });
      state = res.state;
      trace("rollover_abandoned", { why });
    });
  }

  async function refreshState(): Promise<AgentState | undefined> {
    if (!conn) return undefined;
    state = await client.state(conn.taskId, conn.agent);
    return state;
  }

  // ---- history sync (docs/behaviour.md §E) ----------------------------------

  function sync(ctx: ExtensionContext, point: string): Promise<void> {
    const run = syncChain.then(() => syncNow(ctx, point));
    syncChain = run.catch(() => {});
    return run;
  }

  async function syncNow(ctx: ExtensionContext, point: string): Promise<void> {
    if (!conn) return;
    const branch = ctx.sessionManager.getBranch() as unknown as SessionEntry[];
    const ids = branch.map((e) => e.id);
    const key = ids.join("\n");
    const fresh = branch.filter((e) => !synced.has(e.id));
    if (fresh.length === 0 && key === lastBranch) return;
    const chunks: SessionEntry[][] = [];
    for (let i = 0; i < fresh.length; i += MAX_ENTRIES_PER_SYNC) chunks.push(fresh.slice(i, i + MAX_ENTRIES_PER_SYNC));
    if (chunks.length === 0) chunks.push([]);
    let res;
    for (const [i, chunk] of chunks.entries()) {
      const last = i === chunks.length - 1;
      // The branch goes with the last chunk: every id it names is known by then.
      res = await client.historySync({ context: context(), entries: chunk, ...(last ? { branch: ids } : {}) });
      for (const e of chunk) synced.add(e.id);
    }
    lastBranch = key;
    trace("synced", { point, stored: res?.stored, revision: res?.revision, window_id: res?.window_id, branch: ids.length });
  }

  /** Runs fn, logging (not throwing) memoryd failures of background bookkeeping. */
  async function quietly(what: string, fn: () => Promise<unknown>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      trace("error", { what, error: err instanceof Error ? err.message : String(err) });
    }
  }

  // ---- control messages -----------------------------------------------------

  async function deliver(kind: ControlKind, text: (w: string) => string, customType: string, deliverAs: "steer" | "followUp") {
    const st = state ?? (await refreshState());
    if (!st) return;
    const windowId = st.window_id;
    const requestId = `${kind}-${windowId}-${randomUUID().slice(0, 8)}`;
    const res = await client.delivered({ context: context(), kind, window_id: windowId, request_id: requestId });
    state = res.state;
    if (res.stale) return;
    trace("deliver", { kind, windowId, requestId });
    pi.sendMessage(
      {
        customType,
        content: text(windowId),
        display: false,
        details: { windowId, source_context_window_id: windowId, requestId, kind },
      },
      { deliverAs, triggerTurn: true },
    );
  }

  const deliverReminder = () => deliver("reminder", reminderText, CUSTOM_TYPE.reminder, "steer");
  const deliverFallback = () => deliver("fallback", fallbackText, CUSTOM_TYPE.fallback, "steer");

  /** Re-sends a fallback that was delivered but never entered the branch (docs/behaviour.md §D.3 row 6). */
  async function resendLostFallback(ctx: ExtensionContext) {
    const st = state;
    if (!st || !st.fallback_delivered || st.fence_active || st.pending_window_id) return;
    const inBranch = ctx.sessionManager
      .getBranch()
      .some(
        (e) =>
          e.type === "custom_message" &&
          e.customType === CUSTOM_TYPE.fallback &&
          (e.details as { windowId?: string } | undefined)?.windowId === st.window_id,
      );
    if (inBranch) return;
    trace("resend_fallback", { windowId: st.window_id });
    pi.sendMessage(
      {
        customType: CUSTOM_TYPE.fallback,
        content: fallbackText(st.window_id),
        display: false,
        details: { windowId: st.window_id, source_context_window_id: st.window_id, requestId: st.fence_request_id, kind: "fallback" },
      },
      { deliverAs: "followUp", triggerTurn: true },
    );
  }

  // ---- rollover -----------------------------------------------------------

  /** The rollover reason the state calls for at a settled boundary, if any. */
  function dueRollover(st: AgentState): RolloverReason | undefined {
    if (st.pending_window_id) return undefined;
    if (st.manual && (st.manual.phase === "saved" || st.manual.phase === "compacting")) return "manual_compact";
    if (st.fence_active && !st.checkpoint_saved) return undefined;
    if (st.checkpoint_saved) return st.rollover_requested && st.hard_rollover_latched ? "hard_rollover" : "fallback";
    if (st.pending_new_context) return "new_context";
    return undefined;
  }

  async function prepare(ctx: ExtensionContext, reason: RolloverReason): Promise<PendingRollover> {
    await sync(ctx, "window-switch");
    if (reason === "manual_compact" && state?.manual?.phase === "saved") {
      state = (await client.manual({ context: context(), action: "compacting", request_id: state.manual.request_id })).state;
    }
    const res = await client.rolloverPrepare({ context: context(), reason });
    state = res.state;
    rollover = { windowId: res.window_id, previousWindowId: res.previous_window_id, bootstrap: res.bootstrap, reason };
    trace("rollover_prepared", { reason, windowId: res.window_id });
    return rollover;
  }

  function compactionFor(r: PendingRollover, event: SessionBeforeCompactEvent): SessionBeforeCompactResult {
    return {
      compaction: {
        summary: r.bootstrap,
        firstKeptEntryId: NO_KEPT_ENTRY,
        tokensBefore: event.preparation.tokensBefore,
        details: { memoryd: { window_id: r.windowId, previous_window_id: r.previousWindowId, reason: r.reason } },
      },
    };
  }

  async function startRollover(ctx: ExtensionContext, reason: RolloverReason) {
    if (rolloverStarting || rollover) return;
    rolloverStarting = true;
    try {
      const r = await prepare(ctx, reason);
      trace("compact", { reason, windowId: r.windowId });
      ctx.compact({
        onComplete: () => {
          trace("compact_complete", { windowId: r.windowId });
          if (r.reason === "new_context" || r.reason === "fallback" || r.reason === "hard_rollover") {
            pi.sendMessage(
              {
                customType: CUSTOM_TYPE.continue,
                content: continueText(r.windowId, r.previousWindowId),
                display: false,
                details: { windowId: r.windowId, previousWindowId: r.previousWindowId },
              },
              { deliverAs: "followUp", triggerTurn: true },
            );
          }
        },
        onError: (err) => trace("compact_error", { windowId: r.windowId, error: err.message }),
      });
    } finally {
      rolloverStarting = false;
    }
  }

  // ---- event hooks --------------------------------------------------------

  pi.on("session_start", async (_event, ctx) => {
    try {
      await connect(ctx);
      await sync(ctx, "session_start");
    } catch (err) {
      if (!toolsReal) registerTools(undefined);
      trace("unavailable", { error: lastError });
      if (ctx.hasUI) ctx.ui.notify(err instanceof Error ? err.message : String(err), "error");
    }
  });

  pi.on("before_agent_start", async (event, ctx) => {
    if (options.guidance !== false) event.systemPromptOptions.sections["pi_token_budget_guidance"] = GUIDANCE;
    if (!conn) await connect(ctx).catch(() => {});
  });

  pi.on("context", async (event, ctx) => {
    if (!conn) return;
    await quietly("sync", () => sync(ctx, "context"));
    // Stale control messages (of another window) are dropped from the model's copy.
    const current = state?.window_id;
    if (!current) return;
    const messages = event.messages.filter((m) => {
      if (m.role !== "custom" || !CONTROL_TYPES.has(m.customType)) return true;
      const w = (m.details as { windowId?: string } | undefined)?.windowId;
      return w === current;
    });
    return messages.length === event.messages.length ? undefined : { messages };
  });

  pi.on("message_end", async (event, ctx) => {
    if (!conn) return;
    const m = event.message;
    await quietly("sync", () => sync(ctx, "message_end"));
    if (m.role === "assistant") {
      if (m.stopReason === "aborted" || m.stopReason === "error") return;
      const u = m.usage;
      const used = u ? u.input + u.output + u.cacheRead + u.cacheWrite : null;
      await quietly("usage", async () => {
        const res = await client.usage({ context: context(), tokens_used: used, context_window: contextWindow(ctx) ?? null });
        state = res.state;
        trace("usage", { tokens_used: used, due: res.due, phase: res.state.phase });
        if (res.due === "reminder") await deliverReminder();
        else if (res.due === "fallback" || res.due === "hard_rollover") await deliverFallback();
      });
    } else if (m.role === "custom" && (m.customType === CUSTOM_TYPE.fallback || m.customType === CUSTOM_TYPE.manualCheckpoint)) {
      const d = (m.details ?? {}) as { windowId?: string; requestId?: string };
      const kind = m.customType === CUSTOM_TYPE.fallback ? "fallback" : "manual_checkpoint";
      await quietly("arm", async () => {
        const res = await client.arm({ context: context(), kind, window_id: d.windowId ?? "", request_id: d.requestId });
        state = res.state;
        trace("arm", { kind, windowId: d.windowId, stale: res.stale, phase: res.state.phase });
      });
    } else if (m.role === "user") {
      await quietly("user-input", async () => {
        state = (await client.userInput(context())).state;
      });
    }
  });

  pi.on("tool_call", async (event) => {
    if (!conn) return undefined; // memoryd never reached: its own tools fail in execute; others run.
    try {
      const res = await client.admit({
        context: context(),
        call_id: event.toolCallId,
        tool_name: event.toolName,
        arguments: event.input,
      });
      state = res.state;
      if (!res.allow) {
        trace("blocked", { tool: event.toolName, toolCallId: event.toolCallId, reason: res.reason });
        return { block: true, reason: res.reason, terminate: res.terminate };
      }
      if (res.state.claim === event.toolCallId) claimed.add(event.toolCallId);
      return undefined;
    } catch (err) {
      // The fence decision cannot be made: fail closed.
      const msg = err instanceof MemorydError ? err.message : String(err);
      return { block: true, reason: `memoryd could not check the checkpoint fence (${msg}); retry when memoryd is back.`, terminate: true };
    }
  });

  pi.on("tool_result", async (event) => {
    if (!conn || !claimed.has(event.toolCallId)) return undefined;
    claimed.delete(event.toolCallId);
    await quietly("tool-result", async () => {
      state = (await client.toolResult({ context: context(), call_id: event.toolCallId, is_error: event.isError })).state;
    });
    return undefined;
  });

  pi.on("agent_settled", async (_event, ctx) => {
    if (!conn) return;
    await quietly("settle", async () => {
      await sync(ctx, "agent_settled");
      const st = await refreshState();
      if (!st) return;
      trace("settled", { phase: st.phase });
      await resendLostFallback(ctx);
      const reason = dueRollover(st);
      if (reason) await startRollover(ctx, reason);
    });
  });

  pi.on("session_before_compact", async (event, ctx): Promise<SessionBeforeCompactResult | undefined> => {
    if (!conn) return undefined;
    if (rollover) return compactionFor(rollover, event);
    try {
      await sync(ctx, "window-switch");
      const st = (await refreshState())!;
      const manualActive = st.manual !== undefined && st.manual.phase !== "reusable";
      if (event.reason === "overflow") {
        if (manualActive) return { cancel: true };
        return compactionFor(await prepare(ctx, "overflow"), event);
      }
      const reason = dueRollover(st);
      if (reason) return compactionFor(await prepare(ctx, reason), event);
      if (event.reason === "threshold") {
        // Pi's own threshold compaction would summarize: refuse it and ask for a checkpoint instead.
        if (!st.reminder_delivered) await deliverReminder();
        else if (!st.fallback_delivered && !st.fence_active) await deliverFallback();
        return { cancel: true };
      }
      // Manual /compact without a saved checkpoint: ask for one; the compaction runs at the next settled boundary.
      if (!manualActive) {
        const requestId = `manual-${randomUUID().slice(0, 8)}`;
        state = (await client.manual({ context: context(), action: "request", request_id: requestId })).state;
        await deliver("manual_checkpoint", manualCheckpointText, CUSTOM_TYPE.manualCheckpoint, "followUp");
      }
      return { cancel: true };
    } catch (err) {
      trace("error", { what: "session_before_compact", error: err instanceof Error ? err.message : String(err) });
      return { cancel: true };
    }
  });

  pi.on("session_compact", async (event, ctx) => {
    const r = rollover;
    if (!conn || !r || event.compactionEntry.summary !== r.bootstrap) return;
    await quietly("commit", async () => {
      await sync(ctx, "session_compact");
      const res = await client.rolloverCommit({ context: context(), window_id: r.windowId, compaction_entry_id: event.compactionEntry.id });
      state = res.state;
      trace("rollover_committed", { windowId: res.window_id, previousWindowId: res.previous_window_id, entry: event.compactionEntry.id });
    });
    rollover = undefined;
  });

  pi.on("session_compact_failed", async (event) => {
    const r = rollover;
    if (!conn || !r) return;
    rollover = undefined;
    await quietly("fail", async () => {
      const res = await client.rolloverFail({ context: context(), aborted: event.aborted, error: event.errorMessage ?? "" });
      state = res.state;
      trace("rollover_failed", { windowId: r.windowId, aborted: event.aborted, error: event.errorMessage });
    });
  });

  pi.on("session_shutdown", async (_event, ctx) => {
    if (conn) await quietly("sync", () => sync(ctx, "shutdown"));
    if (conn && rollover) await abandonRollover("shutdown");
    rollover = undefined;
    claimed.clear();
    if (spawned) {
      await spawned.stop();
      spawned = undefined;
    }
  });
}

/** The default base URL (for documentation and diagnostics). */
export const defaultBaseUrl = (): string => discoverBaseUrl();
