// The tools in Pi: registered with the schemas, descriptions and
// execution modes memoryd serves (GET /v1/tools); each call is relayed to
// memoryd with the model's arguments. When memoryd cannot be reached they are
// registered by name and fail with an error saying so (no local fallback).
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { TOOL_EXECUTION_MODES, TOOL_NAMES, isMemorydError, type MemorydClient, type ToolName, type ToolSpec } from "@memoryd/client";

import type { Connection } from "./connection.js";
import type { AgentStateCache } from "./state.js";
import type { HistorySync } from "./sync.js";
import { errorMessage, quietly, type Trace } from "./trace.js";

export class ToolRegistry {
  /** Registered from memoryd's specs (until then: none, or the placeholders). */
  private served = false;

  constructor(
    private readonly pi: ExtensionAPI,
    private readonly conn: Connection,
    private readonly state: AgentStateCache,
    private readonly history: HistorySync,
    private readonly trace: Trace,
    /** Connects the session (a tool may be called before session_start reached memoryd). */
    private readonly connect: (ctx: ExtensionContext) => Promise<void>,
  ) {}

  /** Registers the tools from the specs memoryd serves, once. */
  async registerServed(client: MemorydClient): Promise<void> {
    if (!this.served) this.register(await client.listTools());
  }

  /** memoryd could not be reached: the tools exist by name and fail until it can. */
  registerPlaceholders(): void {
    if (!this.served) this.register(undefined);
  }

  private register(specs: ToolSpec[] | undefined): void {
    const byName = new Map((specs ?? []).map((s) => [s.name, s]));
    for (const name of TOOL_NAMES) {
      const spec = byName.get(name);
      this.pi.registerTool({
        name,
        label: name,
        description: spec?.description ?? `memoryd tool ${name} (memoryd is not reachable: this tool fails until it is).`,
        parameters: spec?.parameters ?? { type: "object" },
        executionMode: spec?.execution_mode ?? TOOL_EXECUTION_MODES[name],
        execute: (toolCallId, params, signal, _onUpdate, ctx) => this.execute(name, toolCallId, params, signal, ctx),
      });
    }
    this.served = specs !== undefined;
  }

  private async execute(name: ToolName, toolCallId: string, params: unknown, signal: AbortSignal | undefined, ctx: ExtensionContext) {
    await this.connect(ctx);
    this.trace("tool_call", { name, toolCallId });
    try {
      // A parallel tool's result held since the admit goes first, so the call sees the history it would
      // have seen without held syncs; a failed sync goes again with the next and does not fail the call.
      await quietly(this.trace, "sync", () => this.history.flush());
      const res = await this.conn.client.relayToolCall(name, this.conn.context(toolCallId), params ?? {}, { signal });
      if (name === "new_context" || res.terminate) void quietly(this.trace, "state", () => this.state.refresh());
      return { content: res.content, details: res.details, terminate: res.terminate };
    } catch (err) {
      if (isMemorydError(err, "fenced")) {
        return {
          content: [{ type: "text" as const, text: err.message }],
          details: { error: err.code, ...err.details },
          isError: true,
          terminate: err.details.terminate === true,
        };
      }
      if (isMemorydError(err, "unreachable", "timeout", "no_token")) {
        this.conn.failed(err.message);
        throw new Error(`${name} failed: ${err.message}. Notes and history are only kept in memoryd; nothing was written.`);
      }
      throw new Error(errorMessage(err));
    }
  }
}
