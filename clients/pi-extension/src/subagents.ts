// The pi-subagents adapter. pi-subagents (npm pi-subagents) runs a foreground
// child as a Pi session inside the parent's process, within the parent's
// `subagent` tool call, and loads into it the extension files the agent's
// definition names (`subagentOnlyExtensions`); 0.67.0 has no API that adds an
// extension to every child. This extension's child entry (subagent-child.ts)
// is such a file. So that it finds the task to join, a session that runs
// pi-subagents registers its task in a process-wide registry keyed by its
// runtime session id (one owner per session) and counts its `subagent` calls
// in progress.
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

import type { TokenBudgetTask } from "./launcher.js";
import type { Trace } from "./trace.js";

/** pi-subagents' tool; foreground children start while a call of it runs. */
const SUBAGENT_TOOL = "subagent";
const PACKAGE_NAME = "pi-subagents";
/** Where pi-subagents is when its tool does not say (a host that loads it as an inline factory). */
const MODULE_ENV = "PI_TOKEN_BUDGET_SUBAGENTS_MODULE";
/** The registry's place on globalThis: the parent's build and the child entry's bundle are separate modules. */
const REGISTRY_KEY = Symbol.for("@memoryd/pi-extension.subagent-parents.v1");

/** The file an agent names in `subagentOnlyExtensions` so that its children join the parent's task. */
export const subagentChildEntry = join(dirname(fileURLToPath(import.meta.url)), "subagent-child.js");

interface ParentEntry {
  owner: symbol;
  task: TokenBudgetTask;
  /** `subagent` calls in progress in the session. */
  running: number;
}

function registry(): Map<string, ParentEntry> {
  const store = globalThis as { [REGISTRY_KEY]?: Map<string, ParentEntry> };
  return (store[REGISTRY_KEY] ??= new Map());
}

/** The folder of the installed pi-subagents: PI_TOKEN_BUDGET_SUBAGENTS_MODULE, else the package holding the `subagent` tool's source. */
export function findSubagentsModule(pi: Pick<ExtensionAPI, "getAllTools">, env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env[MODULE_ENV]) return env[MODULE_ENV];
  const source = pi.getAllTools().find((t) => t.name === SUBAGENT_TOOL)?.sourceInfo?.path;
  for (let dir = source ? dirname(source) : ""; dir && dir !== dirname(dir); dir = dirname(dir)) {
    const manifest = join(dir, "package.json");
    if (!existsSync(manifest)) continue;
    try {
      if (JSON.parse(readFileSync(manifest, "utf8")).name === PACKAGE_NAME) return dir;
    } catch {
      // not a readable manifest: look further up
    }
  }
  return undefined;
}

/** The parent side: registers the session's task for the children pi-subagents starts in it. */
export class SubagentsAdapter {
  private readonly owner = Symbol("memoryd pi-extension");
  /** The session looked at last (registered or not), so each session is looked at once. */
  private sessionId: string | undefined;

  constructor(
    private readonly pi: ExtensionAPI,
    private readonly trace: Trace,
  ) {}

  /**
   * Once the session is attached as task: registers it when pi-subagents is
   * installed. Another owner holding the session is kept, and said once.
   */
  register(ctx: ExtensionContext, task: TokenBudgetTask | undefined): void {
    const sessionId = ctx.sessionManager.getSessionId();
    if (!task || this.sessionId === sessionId) return;
    this.unregister();
    this.sessionId = sessionId;
    const module = findSubagentsModule(this.pi);
    if (!module) return;
    if (registry().has(sessionId)) {
      const line = `another extension already gives pi-subagents' children of session ${sessionId} their task; it is kept, and this one does not`;
      this.trace("subagents_taken", { session_id: sessionId, module });
      if (ctx.hasUI) ctx.ui.notify(`[memoryd] ${line}`, "warning");
      else process.stderr.write(`[memoryd] ${line}\n`);
      return;
    }
    registry().set(sessionId, { owner: this.owner, task, running: 0 });
    this.trace("subagents", { session_id: sessionId, module, child_entry: subagentChildEntry, task_id: task.context.taskId });
  }

  /** tool_execution_start / tool_execution_end of the session. */
  toolRunning(toolName: string, delta: 1 | -1): void {
    const entry = this.entry();
    if (entry && toolName === SUBAGENT_TOOL) entry.running = Math.max(0, entry.running + delta);
  }

  /** session_shutdown: the session's registration ends (only this owner's). */
  unregister(): void {
    if (this.entry()) registry().delete(this.sessionId!);
    this.sessionId = undefined;
  }

  private entry(): ParentEntry | undefined {
    const entry = this.sessionId ? registry().get(this.sessionId) : undefined;
    return entry?.owner === this.owner ? entry : undefined;
  }
}

/**
 * The child side: the task of the session in this process that started the
 * child, i.e. of the registered sessions whose `subagent` call runs (else of
 * all registered sessions) when they are of one task; none: undefined (the
 * child is its own task); several tasks: an error naming them.
 */
export function findParentTask(): { task?: TokenBudgetTask; error?: string } {
  const entries = [...registry().values()];
  const running = entries.filter((e) => e.running > 0);
  const candidates = running.length > 0 ? running : entries;
  const tasks = [...new Set(candidates.map((e) => e.task.context.taskId))];
  if (tasks.length > 1) return { error: `sessions of ${tasks.length} tasks (${tasks.join(", ")}) start sub-agents in this process; the child cannot tell which is its parent` };
  return { task: candidates[0]?.task };
}
