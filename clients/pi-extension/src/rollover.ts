// The window rollover: memoryd's state names the rollover that is due
// (rollover_due, decided by its fence); at a settled boundary the extension
// prepares it and asks Pi to compact, answers Pi's session_before_compact
// with the bootstrap as the summary (keeping nothing of the old window),
// commits or fails the prepared window when the compaction ends, and
// decides what to do with the compactions Pi starts by itself.
import type {
  ExtensionAPI,
  ExtensionContext,
  SessionBeforeCompactEvent,
  SessionBeforeCompactResult,
  SessionCompactEvent,
  SessionCompactFailedEvent,
} from "@earendil-works/pi-coding-agent";
import type { AgentState, RolloverReason } from "@memoryd/client";

import type { Connection } from "./connection.js";
import type { ControlMessages } from "./control.js";
import type { ManualCompaction } from "./manual.js";
import { CUSTOM_TYPE, NO_KEPT_ENTRY, continueText, notResetText } from "./messages.js";
import { showWindowReset } from "./notice.js";
import type { AgentStateCache } from "./state.js";
import type { HistorySync } from "./sync.js";
import { errorMessage, quietly, type Trace } from "./trace.js";

/** A window memoryd prepared that Pi's compaction has not opened yet. */
interface PreparedWindow {
  windowId: string;
  previousWindowId: string;
  bootstrap: string;
  reason: RolloverReason;
}

/**
 * Rollovers after which the model is told to go on in the new window (not
 * after /compact, nor after an overflow without a pending request: that one
 * is prepared for the request's own reason).
 */
const CONTINUE_AFTER = new Set<RolloverReason>(["new_context", "fallback", "hard_rollover"]);

export class Rollover {
  private prepared: PreparedWindow | undefined;
  private starting = false;

  constructor(
    private readonly pi: ExtensionAPI,
    private readonly conn: Connection,
    private readonly state: AgentStateCache,
    private readonly history: HistorySync,
    private readonly control: ControlMessages,
    private readonly manual: ManualCompaction,
    private readonly trace: Trace,
  ) {}

  /** agent_settled: ends a held manual compaction's checkpoint turn, or starts the rollover memoryd says is due in st. */
  async settled(ctx: ExtensionContext, st: AgentState): Promise<void> {
    if (this.manual.settled(st)) return;
    if (st.rollover_due) await this.start(ctx, st.rollover_due);
  }

  /** session_before_compact: the prepared window's compaction, or what to do with Pi's own. */
  async beforeCompact(event: SessionBeforeCompactEvent, ctx: ExtensionContext): Promise<SessionBeforeCompactResult | undefined> {
    if (this.prepared) return this.compaction(this.prepared, event);
    // A compaction Pi starts during a manual checkpoint turn (row 23).
    if (this.manual.holding) return { cancel: true };
    try {
      await this.history.sync(ctx, "window-switch");
      const st = await this.state.refresh();
      if (!st) return { cancel: true };
      // Whatever compaction Pi started, a due rollover is the one it carries
      // out (an overflow too: its pending request gets its continuation).
      if (st.rollover_due) return this.compaction(await this.prepare(ctx, st.rollover_due), event);
      if (event.reason === "overflow") {
        if (st.manual_in_progress) return { cancel: true };
        return this.compaction(await this.prepare(ctx, "overflow"), event);
      }
      if (event.reason === "threshold") {
        // Pi's own threshold compaction would summarize: refuse it and send
        // the control message memoryd says is due instead, if any.
        if (st.threshold_due === "reminder") await this.control.reminder();
        else if (st.threshold_due === "fallback") await this.control.fallback();
        return { cancel: true };
      }
      // Manual /compact: held open until the model's checkpoint turn ends, then this compaction builds the window.
      if (!(await this.manual.checkpoint(ctx, event.signal))) return { cancel: true };
      return this.compaction(await this.prepare(ctx, "manual_compact"), event);
    } catch (err) {
      this.trace("error", { what: "session_before_compact", error: errorMessage(err) });
      return { cancel: true };
    }
  }

  /**
   * session_compact: the prepared window's compaction is in the branch;
   * memoryd commits the window, and after a new_context, fallback or hard
   * rollover the model is told to go on in it (sendContinue). Whichever
   * compaction carried the rollover out (the extension's own, Pi's
   * threshold or overflow compaction), this is the one place the
   * continuation is sent from.
   */
  async compacted(event: SessionCompactEvent, ctx: ExtensionContext): Promise<void> {
    const r = this.prepared;
    if (!this.conn.attached || !r || event.compactionEntry.summary !== r.bootstrap) return;
    let committed = false;
    await quietly(this.trace, "commit", async () => {
      await this.history.sync(ctx, "session_compact");
      const res = await this.conn.client.rolloverCommit({
        context: this.conn.context(),
        window_id: r.windowId,
        compaction_entry_id: event.compactionEntry.id,
      });
      this.state.update(res.state);
      this.trace("rollover_committed", { windowId: res.window_id, previousWindowId: res.previous_window_id, entry: event.compactionEntry.id, reason: r.reason });
      showWindowReset(ctx, { previousWindowId: r.previousWindowId, windowId: r.windowId, reason: r.reason });
      committed = true;
    });
    this.prepared = undefined;
    if (committed && CONTINUE_AFTER.has(r.reason)) this.sendContinue(r, event.reason);
  }

  /**
   * session_compact_failed: the prepared window is reported failed (aborted
   * keeps the request). A failure that is not an abort (e.g. Pi's "Nothing to
   * compact (session too small)") is told to the model in one line, as its
   * next turn after a new_context/fallback rollover, and to a user with a UI.
   */
  async compactFailed(event: SessionCompactFailedEvent, ctx: ExtensionContext): Promise<void> {
    const r = this.prepared;
    if (!this.conn.attached || !r) return;
    this.prepared = undefined;
    await quietly(this.trace, "fail", async () => {
      await this.history.flush();
      const res = await this.conn.client.rolloverFail({ context: this.conn.context(), aborted: event.aborted, error: event.errorMessage ?? "" });
      this.state.update(res.state);
      this.trace("rollover_failed", { windowId: r.windowId, aborted: event.aborted, error: event.errorMessage });
    });
    if (event.aborted) return;
    const why = event.errorMessage || "the compaction failed";
    if (ctx.hasUI) ctx.ui.notify(`memoryd: the context window was not reset (${why})`, "warning");
    this.pi.sendMessage(
      {
        customType: CUSTOM_TYPE.notReset,
        content: notResetText(r.previousWindowId, why),
        display: false,
        details: { windowId: r.previousWindowId, reason: r.reason },
      },
      CONTINUE_AFTER.has(r.reason) ? { deliverAs: "followUp", triggerTurn: true } : { triggerTurn: false },
    );
  }

  /** At attach: a rollover prepared by an earlier process that ended before its compaction. */
  async abandonStale(): Promise<void> {
    // Nothing will commit it. Report it aborted (the intent is kept) so the
    // next settled boundary prepares it again.
    if (this.state.current?.pending_window_id && !this.prepared) await this.abandon("attach");
  }

  /** session_shutdown: a prepared window this process will not compact is reported aborted. */
  async shutdown(): Promise<void> {
    if (this.conn.attached && this.prepared) await this.abandon("shutdown");
    this.prepared = undefined;
  }

  /** Reports a prepared rollover that will never be committed as aborted (memoryd keeps the intent). */
  private async abandon(why: string): Promise<void> {
    await quietly(this.trace, "fail", async () => {
      await this.history.flush();
      const res = await this.conn.client.rolloverFail({ context: this.conn.context(), aborted: true, error: `rollover abandoned at ${why}` });
      this.state.update(res.state);
      this.trace("rollover_abandoned", { why });
    });
  }

  private async prepare(ctx: ExtensionContext, reason: RolloverReason): Promise<PreparedWindow> {
    await this.history.sync(ctx, "window-switch");
    const manual = this.state.current?.manual_in_progress;
    if (reason === "manual_compact" && manual) {
      // Saved → compacting (a repeat records nothing).
      const res = await this.conn.client.manual({ context: this.conn.context(), action: "compacting", request_id: manual });
      this.state.update(res.state);
    }
    const res = await this.conn.client.rolloverPrepare({ context: this.conn.context(), reason });
    this.state.update(res.state);
    this.prepared = { windowId: res.window_id, previousWindowId: res.previous_window_id, bootstrap: res.bootstrap, reason };
    this.trace("rollover_prepared", { reason, windowId: res.window_id });
    return this.prepared;
  }

  /**
   * The compaction Pi records: the bootstrap as its summary, nothing kept,
   * and as tokensBefore the old window's usage as the model last reported
   * it (memoryd's state), which Pi's TUI shows; Pi's own estimate only when
   * none was reported.
   */
  private compaction(r: PreparedWindow, event: SessionBeforeCompactEvent): SessionBeforeCompactResult {
    return {
      compaction: {
        summary: r.bootstrap,
        firstKeptEntryId: NO_KEPT_ENTRY,
        tokensBefore: this.state.current?.tokens_used ?? event.preparation.tokensBefore,
        details: { memoryd: { window_id: r.windowId, previous_window_id: r.previousWindowId, reason: r.reason } },
      },
    };
  }

  /**
   * Prepares the rollover and compacts, and returns only when the compaction
   * ended. It runs in agent_settled, which Pi awaits inside session.prompt()
   * (agent-session.js _emitAgentSettled); the continuation compacted() sends
   * meanwhile is deferred by Pi until the settled handlers end and then runs
   * inside that same prompt(), so print and JSON mode, which dispose the
   * runtime as soon as prompt() returns (modes/print-mode.js), see the new
   * window's turn too. ctx.compact() itself does not wait (it calls
   * session.compact() in the background): the promise below waits for its
   * onComplete/onError.
   */
  private async start(ctx: ExtensionContext, reason: RolloverReason): Promise<void> {
    if (this.starting || this.prepared) return;
    this.starting = true;
    try {
      const r = await this.prepare(ctx, reason);
      this.trace("compact", { reason, windowId: r.windowId });
      await new Promise<void>((resolve) =>
        ctx.compact({
          onComplete: () => {
            this.trace("compact_complete", { windowId: r.windowId });
            resolve();
          },
          onError: (err) => {
            this.trace("compact_error", { windowId: r.windowId, error: err.message });
            resolve();
          },
        }),
      );
    } finally {
      this.starting = false;
    }
  }

  /**
   * The continuation, a message that triggers a turn. Idle (the extension's
   * own compaction, from agent_settled) it starts that turn. During Pi's
   * own compaction at the end of a run it is queued, and Pi continues the
   * run once the compaction ends (agent-session.js _runAutoCompaction:
   * "continue once so queued messages are delivered"); queued as a steering
   * message, it is in the new window's first request (agent-loop.js polls
   * steering messages before the first turn, follow-ups only after it).
   */
  private sendContinue(r: PreparedWindow, compaction: string): void {
    this.trace("continue", { windowId: r.windowId, reason: r.reason, compaction });
    this.pi.sendMessage(
      {
        customType: CUSTOM_TYPE.continue,
        content: continueText(r.windowId, r.previousWindowId),
        display: false,
        details: { windowId: r.windowId, previousWindowId: r.previousWindowId },
      },
      { deliverAs: "steer", triggerTurn: true },
    );
  }
}
