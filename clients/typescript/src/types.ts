// Request and response shapes of memoryd's HTTP API (API.md): identity,
// sessions and history sync, events, tasks, health. The tools are in
// tools.ts, the lifecycle in lifecycle.ts. Field names are the wire names
// (snake_case), so values pass through unchanged.

/** An agent's fence phase, as GET /v1/state names it. */
export type Phase =
  | "READY"
  | "REMINDED"
  | "FALLBACK_QUEUED"
  | "FENCED"
  | "FENCED_CLAIMED"
  | "CHECKPOINT_SAVED"
  | "ROLLOVER_PENDING"
  | "ROLLING_OVER"
  | "MANUAL_AWAITING"
  | "MANUAL_SAVED"
  | "MANUAL_COMPACTING";

/** Identifies the caller of every call after attach (API.md §3). */
export interface CallContext {
  task_id: string;
  /** The agent address: /root or /root/<seg>... */
  agent: string;
  /** The host's tool-call id: excludes the in-flight call from history results; idempotency key of note writes. */
  call_id?: string;
}

/** Optional budget of an attach; omitted fields take memoryd's defaults. */
export interface Budget {
  context_window?: number;
  reminder_remaining_percent?: number;
  reminder_remaining_floor_tokens?: number;
  reminder_remaining_ceiling_tokens?: number;
  hard_rollover_used_tokens?: number;
  max_tool_output_chars?: number;
  notes_max_file_bytes?: number;
  history_item_preview_chars?: number;
}

/** Joins an existing task as a child agent. */
export interface TaskRef {
  task_id: string;
  /** Default /root. */
  parent_agent?: string;
  /** Omitted: /root/agent_<first 12 hex of sha256(session_key)>. */
  agent_name?: string;
}

export interface AttachRequest {
  session_key: string;
  session_id?: string;
  session_file?: string;
  task?: TaskRef | null;
  budget?: Budget | null;
}

export interface AttachResult {
  task_id: string;
  agent: string;
  resumed: boolean;
  window_id: string;
  registered_agents: string[];
}

/** A raw Pi session entry, stored verbatim. */
export interface SessionEntry {
  type: string;
  id: string;
  parentId?: string | null;
  timestamp?: string;
  [field: string]: unknown;
}

/**
 * A session entry as a host types it (e.g. Pi's SessionEntry, an interface
 * without an index signature): its other fields are sent as they are.
 */
export interface SessionEntryLike {
  type: string;
  id: string;
  parentId?: string | null;
  timestamp?: string;
}

/**
 * The branch as a change of the branch of a revision (API.md §4, an
 * addition): keep its first `keep` ids, then `append`. A turn sends what it
 * adds, not the whole branch. A base that is not the branch memoryd has is
 * 409 `conflict` with `details.reason` `"stale_base"` (`isStaleBase`): send
 * the whole branch then. `branchDelta` computes one.
 */
export interface SyncDelta {
  /** The revision a sync returned: the branch this one changes. */
  base_revision: number;
  /** How many ids of that branch stay, from its root (0 or more). */
  keep: number;
  /** The ids after them, root to leaf; empty: the branch is cut to `keep`. */
  append: string[];
}

interface SyncRequestBase {
  context: CallContext;
  entries: ReadonlyArray<SessionEntry | SessionEntryLike>;
}

/** A sync with the whole branch, or none. */
export interface WholeSyncRequest extends SyncRequestBase {
  /** The ordered entry ids of the current branch, root to leaf; omitted: the branch is unchanged. */
  branch?: string[];
  /** The branch revision the caller last saw; another is `conflict`. */
  expected_revision?: number;
  delta?: never;
}

/** A sync with the branch as a delta from the revision the last sync returned. */
export interface DeltaSyncRequest extends SyncRequestBase {
  delta: SyncDelta;
  branch?: never;
  expected_revision?: never;
}

/** The body of POST /v1/history/sync: the branch whole, as a delta, or unchanged. */
export type SyncRequest = WholeSyncRequest | DeltaSyncRequest;

export interface SyncResult {
  revision: number;
  stored: number;
  unchanged: number;
  window_id: string;
}

// ---- events (API.md §7) ---------------------------------------------------

export interface MemorydEvent {
  position: number;
  id: string;
  stream: string;
  stream_version: number;
  type: string;
  schema: number;
  recorded_at: string;
  data: Record<string, unknown>;
  request_id?: string;
}

export interface EventsPage {
  events: MemorydEvent[];
  next_after: number;
}

export interface ListEventsOptions {
  after?: number;
  limit?: number;
  task_id?: string;
}

// ---- tasks (API.md §7, an addition) ---------------------------------------

/** An agent of a task as GET /v1/tasks lists it. */
export interface TaskAgent {
  agent: string;
  /** null for /root. */
  parent_agent: string | null;
  session_key: string;
  session_id: string;
  session_file: string;
  registered_position: number;
  registered_at: string;
  /** The current window, as GET /v1/state shows it. */
  window_id: string;
  /** The fence phase, as GET /v1/state shows it. */
  phase: Phase;
  /** The latest event of the agent's own stream. */
  last_activity_position: number;
  last_activity_at: string;
  /** The first message the user typed to the agent on its current branch; null: none yet. */
  first_request: TaskRequest | null;
}

/** An agent's first request in GET /v1/tasks. */
export interface TaskRequest {
  /** Its history entry (history_read_item reads it whole). */
  entry_id: string;
  /** The position of its history.entry_recorded. */
  position: number;
  /** Its text, cut to 200 characters. */
  text: string;
  /** Whether the text was cut. */
  cut: boolean;
}

/** A task as GET /v1/tasks lists it. */
export interface TaskSummary {
  task_id: string;
  created_position: number;
  created_at: string;
  /** The task's latest event (audit records included). */
  last_activity_position: number;
  last_activity_at: string;
  /** In registration order, /root first. */
  agents: TaskAgent[];
}

/** A page of GET /v1/tasks: newest activity first. */
export interface TasksPage {
  tasks: TaskSummary[];
  /** The `before` of the next page; null when this page is the last. */
  next_before: number | null;
}

export interface ListTasksOptions {
  /** Only tasks whose last activity is before this position (a page's next_before). */
  before?: number;
  /** Default 50, max 500. */
  limit?: number;
}

export interface Health {
  status: "ok";
  /** Names memoryd, telling it from another server holding the address. */
  service: "memoryd";
  position: number;
}

// ---- forgetting a task (API.md, an addition; docs/forgetting.md) -----------

/** The body of POST /v1/tasks/{task_id}/forget. */
export interface ForgetRequest {
  /** Rebuild an SQLite database file afterwards (VACUUM), whatever its mark says; holds the write lock meanwhile. */
  vacuum?: boolean;
}

/** What the scrub after an erasure did to the database's files. */
export interface ForgetScrub {
  engine: "sqlite" | "postgres";
  /** SQLite: the erasure's transaction overwrote the free pages, then what it freed, with zeros. */
  secure_delete: boolean;
  /** SQLite: how many free pages it overwrote first. */
  free_pages_zeroed: number;
  /** SQLite: the WAL was checkpointed and truncated to 0 bytes. */
  wal_truncated: boolean;
  /** SQLite: the WAL's size afterwards. */
  wal_bytes: number;
  /** The tables rewritten (PostgreSQL: VACUUM FULL), or ["*"] for a whole SQLite file rebuilt. */
  vacuumed: string[];
  /** Why SQLite's file was rebuilt, when it was. */
  vacuum_reason?: string;
  /** What may still hold the erased content (a WAL readers kept, PostgreSQL's own WAL and copies); empty: nothing. */
  left: string[];
}

/** The answer of POST /v1/tasks/{task_id}/forget: what was erased. */
export interface ForgetResult {
  task_id: string;
  /** The position of the erasure's own event, task.erased. */
  position: number;
  /** How many of the task's events became tombstones (event.erased). */
  events: number;
  /** The task's agents. */
  agents: string[];
  /** The projection rows deleted, by table (only tables that held some). */
  rows: Record<string, number>;
  scrub: ForgetScrub;
}
