// The launcher API: a launcher that starts sub-agent sessions asks the memoryd
// extension of its own session for the task context (getTokenBudgetTask) and
// gives each child session the extension joined to that task
// (createTokenBudgetExtension). The task travels as an argument, never
// through a process-wide environment variable.
import type { ExtensionAPI, ExtensionFactory } from "@earendil-works/pi-coding-agent";

import { createMemorydExtension } from "./index.js";
import { optionsFromEnv, type MemorydExtensionOptions } from "./options.js";

/** What a child needs to join its parent's task. */
export interface TokenBudgetTaskContext {
  taskId: string;
  /** The memoryd the parent session uses (the child uses the same one). */
  baseUrl: string;
}

/** A session's task as its memoryd extension attached it. */
export interface TokenBudgetTask {
  context: TokenBudgetTaskContext;
  /** The session's agent in the task, e.g. "/root" or "/root/reviewer". */
  agentName: string;
}

/** The task a child session joins: its parent's context, the parent agent and, optionally, its own name. */
export interface TokenBudgetTaskOption extends TokenBudgetTaskContext {
  /** The agent the child is registered under (with agentName: `<parentAgentName>/<agentName>`). */
  parentAgentName: string;
  /** Omitted: memoryd names the child /root/agent_<first 12 hex of sha256(session key)>. */
  agentName?: string;
}

export interface TokenBudgetExtensionOptions extends Omit<MemorydExtensionOptions, "task"> {
  /** The task to join; omitted: the session is its own task. */
  task?: TokenBudgetTaskOption;
}

/** The pi.events channel on which the memoryd extension of a session answers getTokenBudgetTask. */
const TASK_REQUEST_EVENT = "memoryd:token-budget-task:v1";

interface TaskRequest {
  result?: TokenBudgetTask;
}

/**
 * The task and agent the memoryd extension of pi's session is attached as;
 * undefined before it attached (call it after session_start) or without the
 * extension. pi is the caller's own ExtensionAPI: the question travels on the
 * session's event bus, whose delivery is synchronous.
 */
export function getTokenBudgetTask(pi: Pick<ExtensionAPI, "events">): TokenBudgetTask | undefined {
  const request: TaskRequest = {};
  pi.events.emit(TASK_REQUEST_EVENT, request);
  return request.result;
}

/** Answers getTokenBudgetTask in pi's session with current() (the first extension that answers wins). */
export function answerTaskRequests(pi: ExtensionAPI, current: () => TokenBudgetTask | undefined): void {
  pi.events.on(TASK_REQUEST_EVENT, (data) => {
    const request = data as TaskRequest;
    if (typeof request !== "object" || request === null || request.result) return;
    const task = current();
    if (task) request.result = task;
  });
}

/**
 * The extension factory for a child session: the options from the environment
 * (as the default entry reads them, MEMORYD_TASK aside), then options, joined
 * to options.task on the parent's memoryd.
 */
export function createTokenBudgetExtension(options: TokenBudgetExtensionOptions = {}): ExtensionFactory {
  const { task, ...rest } = options;
  const fromEnv = optionsFromEnv({ ...process.env, MEMORYD_TASK: undefined });
  const merged: MemorydExtensionOptions = { ...fromEnv, ...rest, task: null };
  if (task) {
    merged.baseUrl = rest.baseUrl ?? task.baseUrl;
    merged.task = { task_id: task.taskId, parent_agent: task.parentAgentName, ...(task.agentName ? { agent_name: task.agentName } : {}) };
  }
  return createMemorydExtension(merged);
}
