// Helpers of the delta form of POST /v1/history/sync (API.md §4): the delta
// between two branches, and the conflict that asks for the whole branch.
import { MemorydError } from "./errors.js";
import type { SyncDelta } from "./types.js";

/** `details.reason` of the conflict of a delta whose base is not memoryd's branch. */
export const SYNC_STALE_BASE = "stale_base";

/**
 * The delta from `previous`, the branch memoryd has at `baseRevision` (the
 * revision the sync that sent it returned), to `current`: the longest
 * shared prefix is kept. Undefined when the branches are equal (nothing to
 * send).
 */
export function branchDelta(previous: readonly string[], current: readonly string[], baseRevision: number): SyncDelta | undefined {
  let keep = 0;
  const n = Math.min(previous.length, current.length);
  while (keep < n && previous[keep] === current[keep]) keep++;
  if (keep === previous.length && keep === current.length) return undefined;
  return { base_revision: baseRevision, keep, append: current.slice(keep) };
}

/** Reports whether err is the conflict of a stale delta: memoryd wants the whole branch. */
export function isStaleBase(err: unknown): err is MemorydError {
  return err instanceof MemorydError && err.code === "conflict" && err.details["reason"] === SYNC_STALE_BASE;
}
