// The fence and rollover lifecycle of an agent (API.md §6): its state and
// the requests and answers of the /v1/lifecycle routes.
import type { CallContext, DeltaSyncRequest, Phase, SyncResult, WholeSyncRequest } from "./types.js";

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
  /**
   * The rollover to prepare at the next settled boundary, as memoryd's fence
   * decides it; omitted when none is due.
   */
  rollover_due?: RolloverDue;
  /**
   * The control message to send when Pi's own threshold compaction is
   * cancelled (it would summarize the window); omitted: cancel it and send
   * nothing (a fallback is queued or fenced, a manual checkpoint, a rollover
   * or a new_context request is in progress).
   */
  threshold_due?: "reminder" | "fallback";
  /** The request id of the manual /compact checkpoint in progress, if any. */
  manual_in_progress?: string;
}

export type Due = "reminder" | "fallback" | "hard_rollover";
export type ControlKind = "reminder" | "fallback" | "manual_checkpoint";
export type RolloverReason = "new_context" | "fallback" | "hard_rollover" | "manual_compact" | "overflow";
/** A rollover the state makes due (every reason but overflow, which only Pi's compaction gives). */
export type RolloverDue = Exclude<RolloverReason, "overflow">;
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

export interface BranchRequest {
  context: CallContext;
  /** The usage of the branch now in context; null: unknown. */
  tokens_used: number | null;
  context_window?: number | null;
  /** The active fence's control message is on the branch now in context. */
  fence_in_branch: boolean;
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

/** A sync of a turn request: the body of POST /v1/history/sync without its context. */
export type TurnSync = Omit<WholeSyncRequest, "context"> | Omit<DeltaSyncRequest, "context">;

/**
 * The body of POST /v1/lifecycle/turn: a model turn's syncs, usage report and
 * admit in one request, each the body of its own route without the context.
 * memoryd runs them in that order, as the separate calls would.
 */
export interface TurnRequest {
  context: CallContext;
  syncs?: TurnSync[];
  usage?: Omit<UsageRequest, "context">;
  admit?: Omit<AdmitRequest, "context">;
}

/** The answer of POST /v1/lifecycle/turn: each part as its own route answers. */
export interface TurnResult {
  syncs: SyncResult[];
  usage?: UsageResult;
  /** Omitted when not asked for, or when the usage made a control message due: deliver it, then admit. */
  admit?: AdmitResult;
}
