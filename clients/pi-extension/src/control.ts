// Control messages: what memoryd asks the model to do (the reminder, the
// fallback checkpoint, the manual checkpoint of a /compact) goes into the
// branch as a custom message of its window; usage reports decide when, the
// message entering the branch arms the fence, an ordinary user message is
// reported, and control messages memoryd's state makes stale are dropped
// from the model's copy.
import { randomUUID } from "node:crypto";

import type { ContextEvent, ExtensionAPI, ExtensionContext, MessageEndEvent } from "@earendil-works/pi-coding-agent";
import type { AgentState, ControlKind } from "@memoryd/client";

import type { Connection } from "./connection.js";
import { CUSTOM_TYPE, fallbackText, manualCheckpointText, reminderText } from "./messages.js";
import { contextWindow, type MemorydExtensionOptions } from "./options.js";
import type { AgentStateCache } from "./state.js";
import type { HistorySync } from "./sync.js";
import { quietly, type Trace } from "./trace.js";

const CONTROL_TYPES = new Set<string>([CUSTOM_TYPE.reminder, CUSTOM_TYPE.fallback, CUSTOM_TYPE.manualCheckpoint, CUSTOM_TYPE.notReset]);

/** The fields of a control message's details the extension reads back. */
export function controlDetails(details: unknown): { windowId?: string; requestId?: string } {
  if (typeof details !== "object" || details === null) return {};
  const out: { windowId?: string; requestId?: string } = {};
  if ("windowId" in details && typeof details.windowId === "string") out.windowId = details.windowId;
  if ("requestId" in details && typeof details.requestId === "string") out.requestId = details.requestId;
  return out;
}

export class ControlMessages {
  constructor(
    private readonly pi: ExtensionAPI,
    private readonly options: MemorydExtensionOptions,
    private readonly conn: Connection,
    private readonly state: AgentStateCache,
    private readonly history: HistorySync,
    private readonly trace: Trace,
  ) {}

  async reminder(): Promise<void> {
    await this.deliver("reminder", reminderText, CUSTOM_TYPE.reminder, "steer");
  }

  async fallback(): Promise<void> {
    await this.deliver("fallback", fallbackText, CUSTOM_TYPE.fallback, "steer");
  }

  /** A manual /compact: memoryd records the request (a repeat merges) and returns the state. */
  async manualRequest(): Promise<AgentState> {
    const requestId = `manual-${randomUUID().slice(0, 8)}`;
    await this.history.flush();
    const res = await this.conn.client.manual({ context: this.conn.context(), action: "request", request_id: requestId });
    return this.state.update(res.state);
  }

  /** Asks the model for the manual checkpoint in a turn of its own; false when memoryd refused it as stale. */
  manualCheckpoint(requestId: string): Promise<boolean> {
    return this.deliver("manual_checkpoint", manualCheckpointText, CUSTOM_TYPE.manualCheckpoint, "followUp", requestId);
  }

  /** message_end (after the sync): usage of an answer, a control message in the branch, a user message. */
  async messageEnded(m: MessageEndEvent["message"], ctx: ExtensionContext): Promise<void> {
    if (m.role === "assistant") {
      if (m.stopReason === "aborted" || m.stopReason === "error") return;
      const u = m.usage;
      const used = u ? u.input + u.output + u.cacheRead + u.cacheWrite : null;
      await quietly(this.trace, "usage", async () => {
        // With the syncs held since the last request (POST /v1/lifecycle/turn).
        const usage = { tokens_used: used, context_window: contextWindow(this.options, ctx) ?? null };
        const res = await this.history.turn(
          { usage },
          (r) => r.usage!,
          () => this.conn.client.usage({ context: this.conn.context(), ...usage }),
        );
        this.state.update(res.state);
        this.trace("usage", { tokens_used: used, due: res.due, phase: res.state.phase });
        if (res.due === "reminder") await this.reminder();
        else if (res.due === "fallback" || res.due === "hard_rollover") await this.fallback();
      });
    } else if (m.role === "custom" && (m.customType === CUSTOM_TYPE.fallback || m.customType === CUSTOM_TYPE.manualCheckpoint)) {
      // The fence is active once the message is in the branch.
      const d = controlDetails(m.details);
      const kind = m.customType === CUSTOM_TYPE.fallback ? "fallback" : "manual_checkpoint";
      await quietly(this.trace, "arm", async () => {
        await this.history.flush();
        const res = await this.conn.client.arm({ context: this.conn.context(), kind, window_id: d.windowId ?? "", request_id: d.requestId });
        this.state.update(res.state);
        this.trace("arm", { kind, windowId: d.windowId, stale: res.stale, phase: res.state.phase });
      });
    } else if (m.role === "user") {
      await quietly(this.trace, "user-input", async () => {
        await this.history.flush();
        this.state.update((await this.conn.client.userInput(this.conn.context())).state);
      });
    }
  }

  /**
   * context: the model's copy without stale control messages (undefined: unchanged).
   * memoryd's state decides: a reminder, fallback or not-reset notice of
   * another window, a manual checkpoint request that is not the one memoryd
   * has in progress (dropped, cancelled, or already compacted).
   */
  dropStale(messages: ContextEvent["messages"]): ContextEvent["messages"] | undefined {
    const st = this.state.current;
    if (!st) return undefined;
    const kept = messages.filter((m) => m.role !== "custom" || !CONTROL_TYPES.has(m.customType) || !isStale(m.customType, m.details, st));
    return kept.length === messages.length ? undefined : kept;
  }

  /** Re-sends a fallback that was delivered but never entered the branch (docs/behaviour.md §D.3 row 6). */
  resendLostFallback(ctx: ExtensionContext): void {
    const st = this.state.current;
    if (!st || !st.fallback_delivered || st.fence_active || st.pending_window_id) return;
    if (fenceMessageInBranch(ctx, st)) return;
    this.sendFallbackAgain(st, { deliverAs: "followUp", triggerTurn: true });
  }

  /**
   * session_tree: the session moved to another branch. memoryd decides what
   * the fence does from that branch's usage and whether the fence's message
   * is on it (docs/behaviour.md §D.3 row 29): it lifts a fallback's fence, or
   * says the fallback is due again; then it is appended to the branch now in
   * context (no turn: it is there for the next one).
   */
  async branchChanged(ctx: ExtensionContext): Promise<void> {
    const st = this.state.current ?? (await this.state.refresh());
    if (!st) return;
    const usage = ctx.getContextUsage();
    await this.history.flush();
    const res = await this.conn.client.branch({
      context: this.conn.context(),
      tokens_used: usage?.tokens ?? null,
      context_window: contextWindow(this.options, ctx) ?? null,
      fence_in_branch: fenceMessageInBranch(ctx, st),
    });
    this.state.update(res.state);
    this.trace("branch", { tokens_used: usage?.tokens ?? null, due: res.due, phase: res.state.phase });
    if (res.due === "fallback") this.sendFallbackAgain(res.state, { triggerTurn: false });
  }

  /** The fallback of st's window again, with its fence's request id (it arms nothing new). */
  private sendFallbackAgain(st: AgentState, options: { deliverAs?: "followUp"; triggerTurn: boolean }): void {
    this.trace("resend_fallback", { windowId: st.window_id });
    this.pi.sendMessage(
      {
        customType: CUSTOM_TYPE.fallback,
        content: fallbackText(st.window_id),
        display: false,
        details: { windowId: st.window_id, source_context_window_id: st.window_id, requestId: st.fence_request_id, kind: "fallback" },
      },
      options,
    );
  }

  private async deliver(
    kind: ControlKind,
    text: (w: string) => string,
    customType: string,
    deliverAs: "steer" | "followUp",
    givenRequestId?: string,
  ): Promise<boolean> {
    const st = this.state.current ?? (await this.state.refresh());
    if (!st) return false;
    const windowId = st.window_id;
    const requestId = givenRequestId ?? `${kind}-${windowId}-${randomUUID().slice(0, 8)}`;
    await this.history.flush();
    const res = await this.conn.client.delivered({ context: this.conn.context(), kind, window_id: windowId, request_id: requestId });
    this.state.update(res.state);
    if (res.stale) return false;
    this.trace("deliver", { kind, windowId, requestId });
    this.pi.sendMessage(
      {
        customType,
        content: text(windowId),
        display: false,
        details: { windowId, source_context_window_id: windowId, requestId, kind },
      },
      { deliverAs, triggerTurn: true },
    );
    return true;
  }
}

/**
 * Whether memoryd's state makes a control message stale (see dropStale): one
 * of another window; a fallback no longer queued or fenced (its fence was
 * lifted); a manual checkpoint request that is not the one in progress.
 */
function isStale(customType: string, details: unknown, st: AgentState): boolean {
  const d = controlDetails(details);
  if (customType === CUSTOM_TYPE.manualCheckpoint) return d.requestId === undefined || d.requestId !== st.manual_in_progress;
  if (customType === CUSTOM_TYPE.fallback && !st.fallback_delivered) return true;
  return d.windowId !== st.window_id;
}

/** Whether the branch now in context holds the control message of st's fence (or of its queued fallback). */
function fenceMessageInBranch(ctx: ExtensionContext, st: AgentState): boolean {
  const type = st.fence_kind === "manual_checkpoint" ? CUSTOM_TYPE.manualCheckpoint : CUSTOM_TYPE.fallback;
  return ctx.sessionManager.getBranch().some((e) => {
    if (e.type !== "custom_message" || e.customType !== type) return false;
    const d = controlDetails(e.details);
    return d.windowId === st.window_id && (!st.fence_request_id || d.requestId === st.fence_request_id);
  });
}
