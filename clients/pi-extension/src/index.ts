// The Pi extension of memoryd: registers the token-budget tools with the
// schemas memoryd serves, forwards their calls, syncs the session history,
// reports usage, gates tool calls through the checkpoint fence and performs
// the window rollover at a settled boundary. All state lives in memoryd; if
// memoryd cannot be reached, the tools fail with a clear error (there is no
// local fallback).
//
// This file wires Pi's hooks to the parts, each of which owns its state:
// Connection (reaching memoryd, attach), AgentStateCache (the agent's
// lifecycle state as memoryd last returned it), ToolRegistry (the tools),
// HistorySync (history sync), ControlMessages (reminder, fallback and manual
// checkpoint messages; usage), FenceGate (admitting tool calls), Rollover
// (preparing, compacting and committing windows), ManualCompaction (a /compact
// held open for its checkpoint turn) and the window-reset notice of the TUI.
import type { ExtensionAPI, ExtensionContext, ExtensionFactory } from "@earendil-works/pi-coding-agent";
import { discoverBaseUrl } from "@memoryd/client";

import { Connection, type AttachSteps } from "./connection.js";
import { ControlMessages } from "./control.js";
import { FenceGate } from "./gate.js";
import { ManualCompaction } from "./manual.js";
import { answerTaskRequests, type TokenBudgetTask } from "./launcher.js";
import { GUIDANCE } from "./messages.js";
import { registerWindowResetRenderer } from "./notice.js";
import type { MemorydExtensionOptions } from "./options.js";
import { Rollover } from "./rollover.js";
import { AgentStateCache } from "./state.js";
import { SubagentsAdapter } from "./subagents.js";
import { HistorySync } from "./sync.js";
import { ToolRegistry } from "./tools.js";
import { errorMessage, quietly } from "./trace.js";

export { createTokenBudgetExtension, getTokenBudgetTask } from "./launcher.js";
export type { TokenBudgetExtensionOptions, TokenBudgetTask, TokenBudgetTaskContext, TokenBudgetTaskOption } from "./launcher.js";
export { CUSTOM_TYPE, NO_KEPT_ENTRY } from "./messages.js";
export { optionsFromEnv } from "./options.js";
export type { MemorydExtensionOptions } from "./options.js";
export { spawnMemoryd } from "./spawn.js";
export type { SpawnOptions, SpawnedMemoryd } from "./spawn.js";
export { subagentChildEntry } from "./subagents.js";

/** Returns the extension factory. */
export function createMemorydExtension(options: MemorydExtensionOptions = {}): ExtensionFactory {
  return (pi: ExtensionAPI) => installMemoryd(pi, options);
}

/** Installs the extension on pi (what the factory does). */
export function installMemoryd(pi: ExtensionAPI, options: MemorydExtensionOptions = {}): void {
  const trace = options.onTrace ?? (() => {});
  const conn = new Connection(options, trace);
  const state = new AgentStateCache(conn);
  const history = new HistorySync(conn, trace);
  const control = new ControlMessages(pi, options, conn, state, history, trace);
  const gate = new FenceGate(conn, state, history, trace);
  const manual = new ManualCompaction(conn, state, control, history, trace);
  const rollover = new Rollover(pi, conn, state, history, control, manual, trace);
  const tools = new ToolRegistry(pi, conn, state, history, trace, connect);
  const subagents = new SubagentsAdapter(pi, trace);
  const attachSteps: AttachSteps = {
    reached: (client) => tools.registerServed(client),
    attached: async () => {
      await state.refresh();
      await rollover.abandonStale();
      await manual.abandonStale();
    },
  };

  /** Connects the session once: at session_start, or at a tool call that comes first. */
  async function connect(ctx: ExtensionContext): Promise<void> {
    await conn.connect(ctx, attachSteps);
    subagents.register(ctx, attachedTask());
  }

  /** The session's task as attached: for getTokenBudgetTask and pi-subagents' children. */
  function attachedTask(): TokenBudgetTask | undefined {
    const ids = conn.ids;
    return ids && { context: { taskId: ids.taskId, baseUrl: conn.client.baseUrl }, agentName: ids.agent };
  }

  answerTaskRequests(pi, attachedTask);

  registerWindowResetRenderer(pi);

  pi.on("session_start", async (_event, ctx) => {
    try {
      await connect(ctx);
      await history.sync(ctx, "session_start");
    } catch (err) {
      tools.registerPlaceholders();
      trace("unavailable", { error: conn.failure });
      if (ctx.hasUI) ctx.ui.notify(errorMessage(err), "error");
    }
  });

  pi.on("before_agent_start", async (event, ctx) => {
    if (options.guidance !== false) event.systemPromptOptions.sections["pi_token_budget_guidance"] = GUIDANCE;
    if (!conn.attached) await connect(ctx).catch(() => {});
  });

  pi.on("context", async (event, ctx) => {
    if (!conn.attached) return;
    // Held: it goes with the usage report of the answer (one request per model turn).
    await quietly(trace, "sync", () => history.hold(ctx, "context"));
    const messages = control.dropStale(event.messages);
    return messages ? { messages } : undefined;
  });

  pi.on("message_end", async (event, ctx) => {
    if (!conn.attached) return;
    // Held at an answer (for its usage report) and at a tool result (for the next admit or usage).
    const held = event.message.role === "assistant" || event.message.role === "toolResult";
    await quietly(trace, "sync", () => (held ? history.hold(ctx, "message_end") : history.sync(ctx, "message_end")));
    await control.messageEnded(event.message, ctx);
  });

  pi.on("tool_call", (event) => gate.admit(event));

  pi.on("tool_execution_start", (event) => subagents.toolRunning(event.toolName, 1));

  pi.on("tool_execution_end", (event) => subagents.toolRunning(event.toolName, -1));

  pi.on("tool_result", (event) => gate.result(event));

  pi.on("agent_settled", async (_event, ctx) => {
    if (!conn.attached) return;
    await quietly(trace, "settle", async () => {
      await history.sync(ctx, "agent_settled");
      const st = await state.refresh();
      if (!st) return;
      trace("settled", { phase: st.phase });
      control.resendLostFallback(ctx);
      await rollover.settled(ctx, st);
    });
  });

  pi.on("session_tree", async (_event, ctx) => {
    if (!conn.attached) return;
    await quietly(trace, "tree", async () => {
      await history.sync(ctx, "tree");
      await control.branchChanged(ctx);
    });
  });

  pi.on("session_before_compact", async (event, ctx) => {
    if (!conn.attached) return undefined;
    return rollover.beforeCompact(event, ctx);
  });

  pi.on("session_compact", (event, ctx) => rollover.compacted(event, ctx));

  pi.on("session_compact_failed", (event, ctx) => rollover.compactFailed(event, ctx));

  pi.on("session_shutdown", async (_event, ctx) => {
    if (conn.attached) await quietly(trace, "sync", () => history.sync(ctx, "shutdown"));
    await rollover.shutdown();
    await manual.shutdown();
    gate.reset();
    subagents.unregister();
    await conn.stop();
  });
}

/** The default base URL (for documentation and diagnostics). */
export const defaultBaseUrl = (): string => discoverBaseUrl();
