// History sync (docs/behaviour.md §E): the raw entries of the branch memoryd has
// not seen yet, and the branch's ids, at each sync point. Syncs run one at a
// time, in the order they were asked for.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { SyncResult } from "@memoryd/client";

import type { Connection } from "./connection.js";
import type { Trace } from "./trace.js";

const MAX_ENTRIES_PER_SYNC = 5000;

export class HistorySync {
  /** Ids of the entries memoryd stored. */
  private readonly synced = new Set<string>();
  /** The branch memoryd was last told, as its ids joined by newlines. */
  private lastBranch = "";
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
    const key = ids.join("\n");
    const fresh = branch.filter((e) => !this.synced.has(e.id));
    if (fresh.length === 0 && key === this.lastBranch) return;
    const chunks: (typeof fresh)[] = [];
    for (let i = 0; i < fresh.length; i += MAX_ENTRIES_PER_SYNC) chunks.push(fresh.slice(i, i + MAX_ENTRIES_PER_SYNC));
    if (chunks.length === 0) chunks.push([]);
    let res: SyncResult | undefined;
    for (const [i, chunk] of chunks.entries()) {
      const last = i === chunks.length - 1;
      // The branch goes with the last chunk: every id it names is known by then.
      res = await this.conn.client.historySync({ context: this.conn.context(), entries: chunk, ...(last ? { branch: ids } : {}) });
      for (const e of chunk) this.synced.add(e.id);
    }
    this.lastBranch = key;
    this.trace("synced", { point, stored: res?.stored, revision: res?.revision, window_id: res?.window_id, branch: ids.length });
  }
}
