// History sync (docs/behaviour.md §E): the raw entries of the branch memoryd has
// not seen yet, and the branch, at each sync point. Syncs run one at a time, in
// the order they were asked for.
//
// The branch goes as a delta from the branch memoryd last answered for (its
// revision, the ids kept, the ids appended: API.md §4), so that a turn costs
// what it adds, not the session's length. The whole branch goes at the first
// sync of the process (after attach), after a failed sync, and when memoryd
// answers that the delta's base is stale (another client moved the branch, or
// memoryd lost it).
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import { branchDelta, isStaleBase, type SyncDelta, type SyncResult } from "@memoryd/client";

import type { Connection } from "./connection.js";
import type { Trace } from "./trace.js";

const MAX_ENTRIES_PER_SYNC = 5000;

/** The branch memoryd has, as its last sync answered, and the agent it is of. */
interface SyncedBranch {
  revision: number;
  ids: string[];
  agent: string;
}

export class HistorySync {
  /** Ids of the entries memoryd stored. */
  private readonly synced = new Set<string>();
  /** The branch memoryd was last told; undefined: not known, the next sync sends it whole. */
  private base: SyncedBranch | undefined;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly conn: Connection,
    private readonly trace: Trace,
  ) {}

  /** Syncs after every sync asked for before it; point names the sync point (traces). */
  sync(ctx: ExtensionContext, point: string): Promise<void> {
    const run = this.chain.then(() => this.syncNow(ctx, point));
    this.chain = run.catch(() => {});
    return run;
  }

  private async syncNow(ctx: ExtensionContext, point: string): Promise<void> {
    if (!this.conn.attached) return;
    const branch = ctx.sessionManager.getBranch();
    const ids = branch.map((e) => e.id);
    const fresh = branch.filter((e) => !this.synced.has(e.id));
    const context = this.conn.context();
    // A base of another attach (memoryd answered for another task or agent) is no base.
    const agent = `${context.task_id}${context.agent}`;
    const base = this.base?.agent === agent ? this.base : undefined;
    const delta = base && branchDelta(base.ids, ids, base.revision);
    if (fresh.length === 0 && base && !delta) return;
    const chunks: (typeof fresh)[] = [];
    for (let i = 0; i < fresh.length; i += MAX_ENTRIES_PER_SYNC) chunks.push(fresh.slice(i, i + MAX_ENTRIES_PER_SYNC));
    if (chunks.length === 0) chunks.push([]);
    this.base = undefined; // until this sync succeeds
    let res: SyncResult | undefined;
    let form = "whole";
    for (const [i, chunk] of chunks.entries()) {
      const last = i === chunks.length - 1;
      if (!last) {
        await this.conn.client.historySync({ context: this.conn.context(), entries: chunk });
      } else {
        // The branch goes with the last chunk: every id it names is known by then.
        ({ res, form } = await this.syncBranch(chunk, ids, base, delta));
      }
      for (const e of chunk) this.synced.add(e.id);
    }
    // Entries alone leave the branch as it was: it is still base's only if the revision did not move.
    if (res && (form !== "entries" || res.revision === base?.revision)) this.base = { revision: res.revision, ids, agent };
    this.trace("synced", { point, form, stored: res?.stored, revision: res?.revision, window_id: res?.window_id, branch: ids.length });
  }

  /**
   * Sends entries with the branch: as a delta from base when there is one (and
   * the branch changed), whole when there is none or memoryd says it is stale.
   */
  private async syncBranch(
    entries: ReturnType<ExtensionContext["sessionManager"]["getBranch"]>,
    ids: string[],
    base: SyncedBranch | undefined,
    delta: SyncDelta | undefined,
  ): Promise<{ res: SyncResult; form: string }> {
    const context = this.conn.context();
    if (base && !delta) return { res: await this.conn.client.historySync({ context, entries }), form: "entries" };
    if (delta) {
      try {
        return { res: await this.conn.client.historySync({ context, entries, delta }), form: "delta" };
      } catch (err) {
        if (!isStaleBase(err)) throw err;
        this.trace("sync-stale-base", { base_revision: delta.base_revision, revision: err.details["revision"] });
      }
    }
    return { res: await this.conn.client.historySync({ context, entries, branch: ids }), form: "whole" };
  }
}
