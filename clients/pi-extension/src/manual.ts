// A manual /compact (docs/behaviour.md §D.3 rows 18–22). Pi's
// session_before_compact handler holds the compaction open (a Promise) while
// the model saves its manual checkpoint in a turn of its own; the same
// compaction then builds the new window from the latest branch. No
// "cancel, then compact again", so Pi shows no "Compaction cancelled".
//
// Why this cannot deadlock in Pi 1.6.0 (core/agent-session.js):
// - compact() first awaits abort(), so the agent is idle when the handler
//   runs, and it emits session_before_compact without holding the agent loop;
// - pi.sendMessage(..., {triggerTurn: true}) while idle and outside
//   agent_settled calls _startRun() at once (sendCustomMessage), which runs the
//   turn and, in its finally, emits agent_settled: that boundary resolves the
//   held Promise;
// - while it is held, isCompacting is true: interactive mode queues what the
//   user types (flushCompactionQueue after compaction_end) and routes Escape
//   to abortCompaction(), which aborts event.signal: the turn is then aborted
//   with ctx.abort() and the manual checkpoint cancelled.
// A nested threshold/overflow compaction during the turn is cancelled (row 23).
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { AgentState } from "@memoryd/client";

import type { Connection } from "./connection.js";
import type { ControlMessages } from "./control.js";
import type { AgentStateCache } from "./state.js";
import type { HistorySync } from "./sync.js";
import { quietly, type Trace } from "./trace.js";

/** How a held manual compaction's checkpoint turn ended. */
type Outcome = "saved" | "not_saved" | "aborted" | "shutdown";

export class ManualCompaction {
  private finish: ((o: Outcome) => void) | undefined;

  constructor(
    private readonly conn: Connection,
    private readonly state: AgentStateCache,
    private readonly control: ControlMessages,
    private readonly history: HistorySync,
    private readonly trace: Trace,
  ) {}

  /** True while a manual compaction waits for its checkpoint turn. */
  get holding(): boolean {
    return this.finish !== undefined;
  }

  /**
   * session_before_compact of a manual /compact: asks memoryd for the manual
   * checkpoint and, unless a saved one is reused, waits for the model's
   * checkpoint turn. True when the checkpoint is saved (the caller prepares
   * the manual_compact rollover); false when it was not, after cancelling the
   * manual request in memoryd.
   */
  async checkpoint(ctx: ExtensionContext, signal: AbortSignal): Promise<boolean> {
    const st = await this.control.manualRequest();
    if (st.rollover_due === "manual_compact") return true;
    // Not due yet: the checkpoint is awaited (memoryd's request in progress), or there is none.
    const requestId = st.manual_in_progress;
    if (!requestId) return false;
    const outcome = new Promise<Outcome>((resolve) => {
      const onAbort = () => {
        this.trace("manual_aborted", { requestId });
        ctx.abort();
        this.finish?.("aborted");
      };
      this.finish = (o) => {
        this.finish = undefined;
        signal.removeEventListener("abort", onAbort);
        resolve(o);
      };
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    });
    if (this.finish && !(await this.control.manualCheckpoint(requestId))) this.finish?.("not_saved");
    const o = await outcome;
    this.trace("manual_turn", { requestId, outcome: o });
    if (o === "saved") return true;
    if (o === "not_saved" && ctx.hasUI) ctx.ui.notify("memoryd: no checkpoint was saved, so /compact did not compact", "warning");
    if (o !== "shutdown") await this.cancel(o);
    return false;
  }

  /** agent_settled: the held compaction's checkpoint turn ended; true when it was one. */
  settled(st: AgentState): boolean {
    if (!this.finish) return false;
    this.finish(st.rollover_due === "manual_compact" ? "saved" : "not_saved");
    return true;
  }

  /** At attach: a manual request left by an earlier process (quit during its turn) is cancelled. */
  async abandonStale(): Promise<void> {
    if (!this.finish) await this.cancelActive("attach");
  }

  /** session_shutdown: the held compaction ends and memoryd's manual request is cancelled. */
  async shutdown(): Promise<void> {
    this.finish?.("shutdown");
    if (this.conn.attached) await this.cancelActive("shutdown");
  }

  /** Cancels the manual request memoryd has in progress, if any (not while its window is prepared). */
  private async cancelActive(why: string): Promise<void> {
    const st = this.state.current;
    if (!st?.manual_in_progress || st.pending_window_id) return;
    await this.cancel(why);
  }

  private async cancel(why: string): Promise<void> {
    await quietly(this.trace, "manual-cancel", async () => {
      await this.history.flush();
      const res = await this.conn.client.manual({ context: this.conn.context(), action: "cancel" });
      this.state.update(res.state);
      this.trace("manual_cancelled", { why, phase: res.state.phase });
    });
  }
}
