// The checkpoint fence at Pi's tool calls: every call, built-in tools too,
// is admitted or blocked by memoryd (POST /v1/lifecycle/admit), and the
// result of the call that holds the fence's claim is reported back.
import type { ToolCallEvent, ToolCallEventResult, ToolResultEvent } from "@earendil-works/pi-coding-agent";

import { MemorydError } from "@memoryd/client";

import type { Connection } from "./connection.js";
import type { AgentStateCache } from "./state.js";
import type { HistorySync } from "./sync.js";
import { quietly, type Trace } from "./trace.js";

export class FenceGate {
  /** Calls admitted as the fence's one checkpoint write, until their result is reported. */
  private readonly claimed = new Set<string>();

  constructor(
    private readonly conn: Connection,
    private readonly state: AgentStateCache,
    private readonly history: HistorySync,
    private readonly trace: Trace,
  ) {}

  /** tool_call: memoryd's verdict; an admit that cannot reach memoryd blocks the call (fail closed). */
  async admit(event: ToolCallEvent): Promise<ToolCallEventResult | undefined> {
    if (!this.conn.attached) return undefined; // memoryd never reached: its own tools fail in execute; others run.
    try {
      // With the syncs held since the last request (POST /v1/lifecycle/turn), if any.
      const admit = { call_id: event.toolCallId, tool_name: event.toolName, arguments: event.input };
      const res = await this.history.turn(
        { admit },
        (r) => r.admit!,
        () => this.conn.client.admit({ context: this.conn.context(), ...admit }),
      );
      this.state.update(res.state);
      if (!res.allow) {
        this.trace("blocked", { tool: event.toolName, toolCallId: event.toolCallId, reason: res.reason });
        return { block: true, reason: res.reason, terminate: res.terminate };
      }
      if (res.state.claim === event.toolCallId) this.claimed.add(event.toolCallId);
      return undefined;
    } catch (err) {
      // The fence decision cannot be made: fail closed.
      const msg = err instanceof MemorydError ? err.message : String(err);
      return {
        block: true,
        reason: `memoryd could not check the checkpoint fence (${msg}); retry when memoryd is back.`,
        terminate: true,
      };
    }
  }

  /** tool_result: the claimed call's outcome (a failed checkpoint write releases the claim). */
  async result(event: ToolResultEvent): Promise<undefined> {
    if (!this.conn.attached || !this.claimed.has(event.toolCallId)) return undefined;
    this.claimed.delete(event.toolCallId);
    await quietly(this.trace, "tool-result", async () => {
      await this.history.flush();
      const res = await this.conn.client.toolResult({ context: this.conn.context(), call_id: event.toolCallId, is_error: event.isError });
      this.state.update(res.state);
    });
    return undefined;
  }

  /** session_shutdown: no claim outlives the session's process. */
  reset(): void {
    this.claimed.clear();
  }
}
