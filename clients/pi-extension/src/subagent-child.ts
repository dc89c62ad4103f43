// The entry pi-subagents loads into a child session when the agent names it in
// `subagentOnlyExtensions` (the README's Sub-agents section): the memoryd
// extension joined to the task of the session that started the child, as
// /root/agent_<first 12 hex of sha256(the child's session key)> (every
// descendant flat under /root). Without such a session in this process the
// child is its own task. Configured from the environment like the default
// entry, MEMORYD_TASK aside.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

import { createTokenBudgetExtension } from "./launcher.js";
import { optionsFromEnv } from "./options.js";
import { findParentTask } from "./subagents.js";

export default function memorydSubagentChild(pi: ExtensionAPI): void {
  const { task, error } = findParentTask();
  const { onTrace } = optionsFromEnv({ MEMORYD_DEBUG: process.env.MEMORYD_DEBUG });
  onTrace?.("subagent_parent", task ? { task_id: task.context.taskId, parent_agent: task.agentName } : { error: error ?? "no session of this process registered its task" });
  createTokenBudgetExtension(task ? { task: { ...task.context, parentAgentName: "/root" } } : {})(pi);
}
