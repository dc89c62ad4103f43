// Request and response shapes of memoryd's HTTP API (API.md). Field names are
// the wire names (snake_case), so values pass through unchanged.

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

export interface SyncRequest {
  context: CallContext;
  entries: SessionEntry[];
  /** The ordered entry ids of the current branch, root to leaf; omitted: the branch is unchanged. */
  branch?: string[];
  expected_revision?: number;
}

export interface SyncResult {
  revision: number;
  stored: number;
  unchanged: number;
  window_id: string;
}

export type ExecutionMode = "parallel" | "sequential";

/** One of the 11 tools as GET /v1/tools lists it. */
export interface ToolSpec {
  name: ToolName;
  description: string;
  execution_mode: ExecutionMode;
  /** The tool's JSON Schema (draft 2020-12), the same the model is shown. */
  parameters: Record<string, unknown>;
}

export const TOOL_NAMES = [
  "history_list_windows",
  "history_list_items",
  "history_read_item",
  "history_search_contents",
  "notes_list_files_by_prefix",
  "notes_read_file",
  "notes_search_contents",
  "notes_append_to_file",
  "notes_write_file",
  "get_context_remaining",
  "new_context",
] as const;

export type ToolName = (typeof TOOL_NAMES)[number];

export interface TextContent {
  type: "text";
  text: string;
}

export interface ImageContent {
  type: "image";
  /** Base64 bytes. */
  data: string;
  mimeType: string;
}

export type ToolContent = TextContent | ImageContent;

/** The 200 answer of POST /v1/tools/{name}. */
export interface ToolResult<D = Record<string, unknown>> {
  content: ToolContent[];
  details: D;
  terminate: boolean;
}

export interface ToolCallRequest<A = Record<string, unknown>> {
  context: CallContext;
  arguments: A;
}

export type Role = "user" | "assistant" | "tool" | "system" | "developer";

// ---- tool arguments -------------------------------------------------------

export interface HistoryListWindowsArgs {
  agent_name?: string | null;
  limit?: number | null;
  recent_first?: boolean | null;
}

export interface HistoryListItemsArgs {
  agent_name?: string | null;
  window_id?: string | null;
  role?: Role | null;
  tool_namespace?: string | null;
  tool_name?: string | null;
  limit?: number | null;
  recent_first?: boolean | null;
  max_chars_per_item?: number | null;
}

export interface HistoryReadItemArgs {
  agent_name?: string | null;
  window_id: string;
  item_id: string;
  offset_chars?: number | null;
  limit_chars?: number | null;
}

export interface HistorySearchContentsArgs {
  agent_name?: string | null;
  query: string;
  window_id?: string | null;
  role?: Role | null;
  tool_namespace?: string | null;
  tool_name?: string | null;
  limit?: number | null;
  recent_first?: boolean | null;
}

export interface NotesListFilesByPrefixArgs {
  prefix?: string | null;
  max_results?: number | null;
  file_order_by?: "name" | "created_at" | "updated_at" | null;
  file_order?: "ascending" | "descending" | null;
}

export interface NotesReadFileArgs {
  path: string;
  start_line?: number | null;
  stop_line?: number | null;
  offset_chars?: number | null;
  limit_chars?: number | null;
}

export interface NotesSearchContentsArgs {
  query: string;
  path_prefix?: string | null;
  max_files?: number | null;
  max_matches_per_file?: number | null;
  recent_file_first?: boolean | null;
}

export interface NotesWriteArgs {
  path: string;
  text: string;
}

export type NoArgs = Record<string, never>;

// ---- tool details (API.md §5) ---------------------------------------------

export interface HistoryListWindowsDetails {
  windows: { window_id: string; item_count: number; current: boolean }[];
  n_returned: number;
  omitted: number;
}

export interface HistoryItemSummary {
  item_id: string;
  window_id: string;
  role: Role;
  tool_namespace: string | null;
  tool_name: string | null;
  n_chars: number;
  images: number;
  truncated_content: string;
}

export interface HistoryListItemsDetails {
  results: HistoryItemSummary[];
  n_returned: number;
  omitted: number;
}

export interface HistoryReadItemDetails {
  agent: string;
  item_id: string;
  window_id: string;
  role: Role;
  content: string;
  offset_chars: number;
  end_chars: number;
  n_chars: number;
  next_offset_chars: number | null;
  images: number;
}

export interface HistorySearchRegion {
  offset_chars: number;
  limit_chars: number;
  preview: string;
  matches: { start: number; end: number }[];
}

export interface HistorySearchContentsDetails {
  results: {
    item_id: string;
    window_id: string;
    role: Role;
    tool_namespace: string | null;
    tool_name: string | null;
    n_chars: number;
    regions: HistorySearchRegion[];
  }[];
  n_returned: number;
  omitted: number;
}

export interface NotesListFilesDetails {
  files: { path: string; bytes: number; created_at: string; updated_at: string }[];
  n_returned: number;
  omitted: number;
}

export interface NotesReadFileDetails {
  path: string;
  text: string;
  start_line: number;
  stop_line: number;
  total_lines: number;
  offset_chars: number;
  end_chars: number;
  total_chars: number;
  next_offset_chars: number | null;
}

export interface NotesSearchContentsDetails {
  files: {
    path: string;
    created_at: string;
    matches: { line: number; text: string }[];
    omitted_matches: number;
  }[];
  n_returned: number;
  omitted: number;
}

export interface NotesWriteDetails {
  path: string;
  bytes: number;
  created: boolean;
  revision: number;
}

export interface ContextRemainingDetails {
  agent: string;
  window_id: string;
  remaining_tokens: number | null;
  hard_remaining_tokens: number | null;
  registered_agents: string[];
}

export interface NewContextDetails {
  pending: true;
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

// ---- lifecycle (API.md §6) ------------------------------------------------

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

/** The whole lifecycle state of an agent (GET /v1/state). */
export interface AgentState {
  task_id: string;
  agent: string;
  phase: Phase;
  window_id: string;
  window_number: number;
  previous_window_id?: string;
  reminder_due: boolean;
  fallback_due: boolean;
  reminder_delivered: boolean;
  fallback_delivered: boolean;
  fence_active: boolean;
  fence_kind?: "fallback" | "manual_checkpoint";
  fence_request_id?: string;
  /** The call id holding the fence's one admitted write. */
  claim?: string;
  checkpoint_saved: boolean;
  checkpoint_call_id?: string;
  pending_new_context: boolean;
  rollover_requested: boolean;
  hard_rollover_latched: boolean;
  manual?: { request_id: string; window_id: string; phase: "awaiting" | "saved" | "compacting" | "reusable" };
  pending_window_id?: string;
  pending_reason?: RolloverReason;
  pending_bootstrap?: string;
  tokens_used: number | null;
  context_window: number | null;
}

export type Due = "reminder" | "fallback" | "hard_rollover";
export type ControlKind = "reminder" | "fallback" | "manual_checkpoint";
export type RolloverReason = "new_context" | "fallback" | "hard_rollover" | "manual_compact" | "overflow";
export type ManualAction = "request" | "saved" | "compacting" | "cancel";

export interface LifecycleResult {
  state: AgentState;
}

export interface UsageRequest {
  context: CallContext;
  /** null: unknown. */
  tokens_used: number | null;
  context_window?: number | null;
}

export interface UsageResult extends LifecycleResult {
  /** The threshold first crossed in this window by this report, if any. */
  due: Due | null;
}

export interface ControlRequest {
  context: CallContext;
  kind: ControlKind;
  window_id: string;
  request_id?: string;
}

export interface ControlResult extends LifecycleResult {
  /** The window id was not the current one: nothing changed. */
  stale: boolean;
}

export interface AdmitRequest {
  context: CallContext;
  call_id: string;
  tool_name: string;
  arguments?: unknown;
}

export interface AdmitResult extends LifecycleResult {
  allow: boolean;
  terminate: boolean;
  reason: string;
}

export interface ToolResultRequest {
  context: CallContext;
  call_id: string;
  is_error: boolean;
}

export interface IgnorableResult extends LifecycleResult {
  ignored: boolean;
}

export interface PrepareRequest {
  context: CallContext;
  reason: RolloverReason;
}

export interface PrepareResult extends LifecycleResult {
  window_id: string;
  previous_window_id: string;
  bootstrap: string;
}

export interface CommitRequest {
  context: CallContext;
  window_id: string;
  compaction_entry_id?: string;
}

export interface CommitResult extends LifecycleResult {
  window_id: string;
  previous_window_id?: string;
}

export interface FailRequest {
  context: CallContext;
  aborted: boolean;
  error?: string;
}

export interface ManualRequest {
  context: CallContext;
  action: ManualAction;
  request_id?: string;
}

export interface Health {
  status: "ok";
  position: number;
}
