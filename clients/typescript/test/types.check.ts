// Type-level tests of the client (npm test compiles this file, `npm run
// typecheck`, and runs nothing): callTool takes a tool's name and that tool's
// argument type and resolves to that tool's details; every @ts-expect-error
// below must stay an error.
import { MemorydClient, TOOL_NAMES, type CallContext, type ToolArgs, type ToolDetails, type ToolName } from "../src/index.js";

declare const client: MemorydClient;
declare const ctx: CallContext;

export async function checks(): Promise<void> {
  const read = await client.callTool("history_read_item", ctx, { window_id: "w1", item_id: "e1", limit_chars: 10 });
  const next: number | null = read.details.next_offset_chars;
  const written = await client.callTool("notes_write_file", ctx, { path: "checkpoint.md", text: "" });
  const revision: number = written.details.revision;
  await client.callTool("new_context", ctx, {});
  void [next, revision];

  // @ts-expect-error an unknown tool
  await client.callTool("notes_delete", ctx, {});
  // @ts-expect-error a required argument missing
  await client.callTool("history_read_item", ctx, { window_id: "w1" });
  // @ts-expect-error an argument of another tool
  await client.callTool("notes_read_file", ctx, { path: "a.md", query: "x" });
  // @ts-expect-error a value outside the schema's enum
  await client.callTool("history_list_items", ctx, { role: "robot" });
  // @ts-expect-error a tool without arguments
  await client.callTool("get_context_remaining", ctx, { limit: 1 });
  // The history sync: the branch whole, or as a delta, not both.
  await client.historySync({ context: ctx, entries: [], branch: ["e1"], expected_revision: 1 });
  await client.historySync({ context: ctx, entries: [], delta: { base_revision: 1, keep: 1, append: ["e2"] } });
  // @ts-expect-error a delta with the whole branch
  await client.historySync({ context: ctx, entries: [], branch: ["e1"], delta: { base_revision: 1, keep: 1, append: [] } });
  // @ts-expect-error a delta with expected_revision (its base is base_revision)
  await client.historySync({ context: ctx, entries: [], expected_revision: 1, delta: { base_revision: 1, keep: 1, append: [] } });
  // @ts-expect-error a delta without its base
  await client.historySync({ context: ctx, entries: [], delta: { keep: 1, append: [] } });

  // A turn: each sync whole or a delta, without its own context.
  const turn = await client.turn({ context: ctx, syncs: [{ entries: [], delta: { base_revision: 1, keep: 1, append: ["e2"] } }], usage: { tokens_used: 5 } });
  const revisions: number[] = turn.syncs.map((s) => s.revision);
  void revisions;
  // @ts-expect-error a sync of a turn with its own context
  await client.turn({ context: ctx, syncs: [{ context: ctx, entries: [] }] });
  // @ts-expect-error a sync of a turn with a delta and the whole branch
  await client.turn({ context: ctx, syncs: [{ entries: [], branch: ["e1"], delta: { base_revision: 1, keep: 1, append: [] } }] });

  // Forgetting a task: typed answer, a body of vacuum only.
  const erased = await client.forgetTask("01JEXAMPLE0000000000000000", { vacuum: true });
  const tombstones: number = erased.events;
  const left: string[] = erased.scrub.left;
  void [tombstones, left];
  // @ts-expect-error a field the route does not take
  await client.forgetTask("01JEXAMPLE0000000000000000", { notes_of: "/root" });

  // @ts-expect-error the details of another tool
  const wrong: ToolDetails["notes_read_file"] = written.details;
  void wrong;
}

// Every tool has arguments and details, and nothing else does.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
export const argsCoverTools: Same<keyof ToolArgs, ToolName> = true;
export const detailsCoverTools: Same<keyof ToolDetails, ToolName> = true;
export const namesAreTools: Same<(typeof TOOL_NAMES)[number], ToolName> = true;
