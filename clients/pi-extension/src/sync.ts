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
//
// The sync points of a model turn (before the model call, at a tool result)
// are held and go with the turn's next request, the usage report or an admit
// (POST /v1/lifecycle/turn), each as the sync it would have been, in order: one
// request per model turn and one per tool call, the same events in the log.
// Every other request of the extension sends what is held first, on its own.
// A memoryd without the turn route (404) gets the separate syncs as before.
import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import {
  MemorydError,
  branchDelta,
  isMemorydError,
  isStaleBase,
  type SyncDelta,
  type SyncResult,
  type TurnRequest,
  type TurnResult,
  type TurnSync,
} from "@memoryd/client";

import type { Connection } from "./connection.js";
import { quietly, type Trace } from "./trace.js";

const MAX_ENTRIES_PER_SYNC = 5000;

/** The branch memoryd has, as its last sync answered, and the agent it is of. */
interface SyncedBranch {
  revision: number;
  ids: string[];
  agent: string;
}

type Entry = ReturnType<ExtensionContext["sessionManager"]["getBranch"]>[number];

/** A sync point's branch and the entries new at it, as the sync would send them. */
interface Snapshot {
  point: string;
  ids: string[];
  fresh: Entry[];
}

export class HistorySync {
  /** Ids of the entries memoryd stored, or that a held sync sends. */
  private readonly synced = new Set<string>();
  /** The branch memoryd was last told; undefined: not known, the next sync sends it whole. */
  private base: SyncedBranch | undefined;
  /** Sync points not sent yet, oldest first. */
  private held: Snapshot[] = [];
  /** false once memoryd answered that it has no turn route. */
  private turns = true;
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly conn: Connection,
    private readonly trace: Trace,
  ) {}

  /** Syncs after every sync asked for before it; point names the sync point (traces). */
  sync(ctx: ExtensionContext, point: string): Promise<void> {
    return this.serial(async () => {
      await this.sendHeld();
      await this.syncNow(this.snapshot(ctx, point));
    });
  }

  /** A sync point of a model turn: held for the turn's next request (sent now by a memoryd without it). */
  hold(ctx: ExtensionContext, point: string): Promise<void> {
    if (!this.turns) return this.sync(ctx, point);
    return this.serial(async () => {
      if (!this.conn.attached) return;
      const snap = this.snapshot(ctx, point);
      const prev = this.held.at(-1)?.ids ?? this.currentBase()?.ids;
      if (snap.fresh.length === 0 && prev && !branchDelta(prev, snap.ids, 0)) return;
      for (const e of snap.fresh) this.synced.add(e.id);
      this.held.push(snap);
    });
  }

  /** Sends the held syncs, each on its own (before any other request to memoryd). */
  flush(): Promise<void> {
    return this.serial(() => this.sendHeld());
  }

  /**
   * Sends the held syncs with parts of a turn (usage, admit) in one request,
   * or, when they cannot go together, the held syncs and then separate(): a
   * memoryd without the turn route, no known base, a stale base.
   */
  turn<R>(parts: Omit<TurnRequest, "context" | "syncs">, pick: (res: TurnResult) => R, separate: () => Promise<R>): Promise<R> {
    return this.serial(async () => {
      const held = this.held;
      const syncs = this.turns && held.length > 0 ? this.chained(held) : undefined;
      if (!syncs) {
        await quietly(this.trace, "sync", () => this.sendHeld());
        return separate();
      }
      this.held = [];
      let res: TurnResult;
      try {
        res = await this.conn.client.turn({ context: this.conn.context(), syncs: syncs.map((s) => s.body), ...parts });
      } catch (err) {
        this.base = undefined;
        if (!(err instanceof MemorydError) || err.status === 0) {
          // No answer: whether the turn was done is not known. Its entries go again with the next sync.
          for (const s of held) for (const e of s.fresh) this.synced.delete(e.id);
          throw err;
        }
        // memoryd refused the turn, which did nothing (a turn is one transaction): the separate
        // requests as before, the syncs first. not_found is a memoryd older than the turn route
        // only if the separate requests then answer (an unknown agent is not_found on both).
        const missing = isMemorydError(err, "not_found");
        if (isStaleBase(err)) this.trace("sync-stale-base", { revision: err.details["revision"] });
        this.held = held;
        await quietly(this.trace, "sync", () => this.sendHeld());
        const res = await separate();
        if (missing) this.turns = false;
        return res;
      }
      this.answered(syncs, res.syncs);
      return pick(res);
    });
  }

  private serial<R>(fn: () => Promise<R>): Promise<R> {
    const run = this.chain.then(fn);
    this.chain = run.catch(() => {});
    return run;
  }

  /** The base, if it is of the attached agent (a base of another attach is no base). */
  private currentBase(): SyncedBranch | undefined {
    const context = this.conn.context();
    const agent = `${context.task_id}${context.agent}`;
    return this.base?.agent === agent ? this.base : undefined;
  }

  private snapshot(ctx: ExtensionContext, point: string): Snapshot {
    const branch = ctx.sessionManager.getBranch();
    return { point, ids: branch.map((e) => e.id), fresh: branch.filter((e) => !this.synced.has(e.id)) };
  }

  /**
   * The held syncs as a turn sends them: each a delta (or entries) from the
   * branch the one before it leaves, whose revision is the base's plus one
   * per branch change. Undefined when there is no base to start from or a
   * sync is too large for one request.
   */
  private chained(held: Snapshot[]): { snap: Snapshot; body: TurnSync; revision: number }[] | undefined {
    let base = this.currentBase();
    const out: { snap: Snapshot; body: TurnSync; revision: number }[] = [];
    for (const snap of held) {
      if (!base || snap.fresh.length > MAX_ENTRIES_PER_SYNC) return undefined;
      const delta = branchDelta(base.ids, snap.ids, base.revision);
      const body: TurnSync = delta ? { entries: snap.fresh, delta } : { entries: snap.fresh };
      base = { revision: base.revision + (delta ? 1 : 0), ids: snap.ids, agent: base.agent };
      out.push({ snap, body, revision: base.revision });
    }
    return out;
  }

  /** Keeps the branch the turn's syncs left (unknown if a revision is not the one expected). */
  private answered(syncs: { snap: Snapshot; body: TurnSync; revision: number }[], results: SyncResult[]): void {
    const agent = this.currentBase()?.agent;
    for (const [i, s] of syncs.entries()) {
      const res = results[i];
      const form = s.body.delta ? "delta" : "entries";
      this.trace("synced", { point: s.snap.point, form, stored: res?.stored, revision: res?.revision, window_id: res?.window_id, branch: s.snap.ids.length, turn: true });
      if (!res || res.revision !== s.revision || !agent) {
        this.base = undefined;
        return;
      }
      this.base = { revision: res.revision, ids: s.snap.ids, agent };
    }
  }

  /** Sends the held syncs one by one, as the sync points would have. */
  private async sendHeld(): Promise<void> {
    while (this.held.length > 0) {
      const snap = this.held.shift()!;
      try {
        await this.syncNow(snap);
      } catch (err) {
        // This and what is still held go again with the next sync.
        for (const s of [snap, ...this.held]) for (const e of s.fresh) this.synced.delete(e.id);
        this.held = [];
        throw err;
      }
    }
  }

  private async syncNow(snap: Snapshot): Promise<void> {
    if (!this.conn.attached) return;
    const { point, ids } = snap;
    const fresh = snap.fresh;
    const context = this.conn.context();
    const agent = `${context.task_id}${context.agent}`;
    const base = this.currentBase();
    const delta = base && branchDelta(base.ids, ids, base.revision);
    if (fresh.length === 0 && base && !delta) return;
    const chunks: Entry[][] = [];
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
    entries: Entry[],
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
