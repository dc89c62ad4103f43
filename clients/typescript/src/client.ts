import { discoverBaseUrl, discoverToken, type Env } from "./discovery.js";
import type {
  AdmitRequest,
  AdmitResult,
  AgentState,
  BranchRequest,
  CommitRequest,
  CommitResult,
  ControlRequest,
  ControlResult,
  FailRequest,
  IgnorableResult,
  LifecycleResult,
  ManualRequest,
  PrepareRequest,
  PrepareResult,
  ToolResultRequest,
  TurnRequest,
  TurnResult,
  UsageRequest,
  UsageResult,
} from "./lifecycle.js";
import type { ToolArgs, ToolDetails, ToolName, ToolResult, ToolSpec } from "./tools.js";
import { parseJson, send, type CallOptions, type RawRequest, type RawResponse, type Transport } from "./transport.js";
import type {
  AttachRequest,
  AttachResult,
  CallContext,
  EventsPage,
  ForgetRequest,
  ForgetResult,
  Health,
  ListEventsOptions,
  ListTasksOptions,
  SyncRequest,
  SyncResult,
  TasksPage,
} from "./types.js";

export type { CallOptions, RawRequest, RawResponse } from "./transport.js";

/** Default per-request timeout, in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 15_000;

export interface MemorydClientOptions {
  /** Base URL, e.g. http://127.0.0.1:7411. Default: MEMORYD_URL, else http://$MEMORYD_ADDR, else http://127.0.0.1:7411. */
  baseUrl?: string;
  /**
   * The bearer token, or a function returning it. Default: MEMORYD_TOKEN, else
   * the file `token` beside the default database, read at the first request
   * that needs it (memoryd creates the file on its first start).
   */
  token?: string | (() => string | undefined);
  /** Per-request timeout in milliseconds (default 15000); each call can override it. */
  timeoutMs?: number;
  /** The environment discovery reads (default process.env). */
  env?: Env;
  /** The fetch implementation (default globalThis.fetch). */
  fetch?: typeof fetch;
}

/**
 * A client of memoryd: one method per route of API.md, each returning the
 * route's JSON and throwing a MemorydError for every non-2xx answer, for a
 * memoryd that cannot be reached and for a timeout.
 */
export class MemorydClient {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  private readonly transport: Transport;

  constructor(options: MemorydClientOptions = {}) {
    const env = options.env ?? process.env;
    this.baseUrl = (options.baseUrl ?? discoverBaseUrl(env)).replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const token = options.token;
    this.transport = {
      baseUrl: this.baseUrl,
      timeoutMs: this.timeoutMs,
      token: typeof token === "function" ? token : token !== undefined ? () => token : () => discoverToken(env),
      fetch: options.fetch ?? globalThis.fetch,
      proof: {},
    };
  }

  // ---- process ------------------------------------------------------------

  /** GET /healthz (no token). */
  health(options?: CallOptions): Promise<Health> {
    return this.json<Health>({ method: "GET", path: "/healthz", noAuth: true, ...options });
  }

  /** GET /metrics: Prometheus text format. */
  async metrics(options?: CallOptions): Promise<string> {
    const res = await this.request({ method: "GET", path: "/metrics", ...options });
    return res.text;
  }

  // ---- sessions and history -----------------------------------------------

  /** POST /v1/sessions/attach. */
  attach(req: AttachRequest, options?: CallOptions): Promise<AttachResult> {
    return this.post("/v1/sessions/attach", req, options);
  }

  /**
   * POST /v1/history/sync: new entries and the branch, whole (`branch`) or as
   * a delta from the last sync's revision (`delta`, see `branchDelta`; a
   * stale base rejects with a conflict that `isStaleBase` recognises).
   */
  historySync(req: SyncRequest, options?: CallOptions): Promise<SyncResult> {
    return this.post("/v1/history/sync", req, options);
  }

  // ---- tools --------------------------------------------------------------

  /** GET /v1/tools: the tools with their JSON Schemas and execution modes. */
  async listTools(options?: CallOptions): Promise<ToolSpec[]> {
    const body = await this.json<{ tools: ToolSpec[] }>({ method: "GET", path: "/v1/tools", ...options });
    return body.tools;
  }

  /** POST /v1/tools/{name}: a tool by name, with its arguments' type and its details' type. */
  callTool<N extends ToolName>(name: N, context: CallContext, args: ToolArgs[N], options?: CallOptions): Promise<ToolResult<ToolDetails[N]>> {
    return this.post(`/v1/tools/${encodeURIComponent(name)}`, { context, arguments: args ?? {} }, options);
  }

  /**
   * POST /v1/tools/{name} with arguments as a model wrote them, for a host
   * relaying a model's tool call: memoryd checks them against the tool's
   * schema (invalid_argument when they do not match). Typed code uses callTool.
   */
  relayToolCall(name: ToolName, context: CallContext, args: unknown, options?: CallOptions): Promise<ToolResult<unknown>> {
    return this.post(`/v1/tools/${encodeURIComponent(name)}`, { context, arguments: args ?? {} }, options);
  }

  historyListWindows(context: CallContext, args: ToolArgs["history_list_windows"] = {}, options?: CallOptions) {
    return this.callTool("history_list_windows", context, args, options);
  }

  historyListItems(context: CallContext, args: ToolArgs["history_list_items"] = {}, options?: CallOptions) {
    return this.callTool("history_list_items", context, args, options);
  }

  historyReadItem(context: CallContext, args: ToolArgs["history_read_item"], options?: CallOptions) {
    return this.callTool("history_read_item", context, args, options);
  }

  historySearchContents(context: CallContext, args: ToolArgs["history_search_contents"], options?: CallOptions) {
    return this.callTool("history_search_contents", context, args, options);
  }

  notesListFilesByPrefix(context: CallContext, args: ToolArgs["notes_list_files_by_prefix"] = {}, options?: CallOptions) {
    return this.callTool("notes_list_files_by_prefix", context, args, options);
  }

  notesReadFile(context: CallContext, args: ToolArgs["notes_read_file"], options?: CallOptions) {
    return this.callTool("notes_read_file", context, args, options);
  }

  notesSearchContents(context: CallContext, args: ToolArgs["notes_search_contents"], options?: CallOptions) {
    return this.callTool("notes_search_contents", context, args, options);
  }

  notesAppendToFile(context: CallContext, args: ToolArgs["notes_append_to_file"], options?: CallOptions) {
    return this.callTool("notes_append_to_file", context, args, options);
  }

  notesWriteFile(context: CallContext, args: ToolArgs["notes_write_file"], options?: CallOptions) {
    return this.callTool("notes_write_file", context, args, options);
  }

  getContextRemaining(context: CallContext, options?: CallOptions) {
    return this.callTool("get_context_remaining", context, {}, options);
  }

  newContext(context: CallContext, options?: CallOptions) {
    return this.callTool("new_context", context, {}, options);
  }

  // ---- events and state ---------------------------------------------------

  /** GET /v1/events?after=&limit=&task_id=. */
  listEvents(query: ListEventsOptions = {}, options?: CallOptions): Promise<EventsPage> {
    const q = new URLSearchParams();
    if (query.after !== undefined) q.set("after", String(query.after));
    if (query.limit !== undefined) q.set("limit", String(query.limit));
    if (query.task_id !== undefined) q.set("task_id", query.task_id);
    const qs = q.toString();
    return this.json({ method: "GET", path: "/v1/events" + (qs ? "?" + qs : ""), ...options });
  }

  /** GET /v1/tasks?before=&limit= (an addition to the spec): tasks and their agents, newest activity first. */
  listTasks(query: ListTasksOptions = {}, options?: CallOptions): Promise<TasksPage> {
    const q = new URLSearchParams();
    if (query.before !== undefined) q.set("before", String(query.before));
    if (query.limit !== undefined) q.set("limit", String(query.limit));
    const qs = q.toString();
    return this.json({ method: "GET", path: "/v1/tasks" + (qs ? "?" + qs : ""), ...options });
  }

  /** GET /v1/state?task_id=&agent=. */
  state(taskId: string, agent: string, options?: CallOptions): Promise<AgentState> {
    const q = new URLSearchParams({ task_id: taskId, agent });
    return this.json({ method: "GET", path: "/v1/state?" + q.toString(), ...options });
  }

  /**
   * POST /v1/tasks/{task_id}/forget (an addition, issue 36): erases the task
   * (docs/forgetting.md): its events become tombstones, its projection rows
   * are deleted and the database's files scrubbed; resolves to what was
   * erased. An unknown task, or one erased already, rejects with `not_found`
   * (404). Not undone: the task's content is gone from the database.
   */
  forgetTask(taskId: string, req: ForgetRequest = {}, options?: CallOptions): Promise<ForgetResult> {
    return this.post(`/v1/tasks/${encodeURIComponent(taskId)}/forget`, req, options);
  }

  // ---- lifecycle ----------------------------------------------------------

  /** POST /v1/lifecycle/usage. */
  usage(req: UsageRequest, options?: CallOptions): Promise<UsageResult> {
    return this.post("/v1/lifecycle/usage", req, options);
  }

  /**
   * POST /v1/lifecycle/branch: the host moved to another branch (Pi's /tree);
   * due "fallback": send the fallback message again, into that branch.
   */
  branch(req: BranchRequest, options?: CallOptions): Promise<UsageResult> {
    return this.post("/v1/lifecycle/branch", req, options);
  }

  /** POST /v1/lifecycle/delivered. */
  delivered(req: ControlRequest, options?: CallOptions): Promise<ControlResult> {
    return this.post("/v1/lifecycle/delivered", req, options);
  }

  /** POST /v1/lifecycle/arm. */
  arm(req: ControlRequest, options?: CallOptions): Promise<ControlResult> {
    return this.post("/v1/lifecycle/arm", req, options);
  }

  /** POST /v1/lifecycle/admit. */
  admit(req: AdmitRequest, options?: CallOptions): Promise<AdmitResult> {
    return this.post("/v1/lifecycle/admit", req, options);
  }

  /**
   * POST /v1/lifecycle/turn: syncs, usage and admit in one request (an
   * addition; a memoryd older than it answers 404 not_found).
   */
  turn(req: TurnRequest, options?: CallOptions): Promise<TurnResult> {
    return this.post("/v1/lifecycle/turn", req, options);
  }

  /** POST /v1/lifecycle/tool-result. */
  toolResult(req: ToolResultRequest, options?: CallOptions): Promise<LifecycleResult> {
    return this.post("/v1/lifecycle/tool-result", req, options);
  }

  /** POST /v1/lifecycle/user-input. */
  userInput(context: CallContext, options?: CallOptions): Promise<IgnorableResult> {
    return this.post("/v1/lifecycle/user-input", { context }, options);
  }

  /** POST /v1/lifecycle/rollover/prepare. */
  rolloverPrepare(req: PrepareRequest, options?: CallOptions): Promise<PrepareResult> {
    return this.post("/v1/lifecycle/rollover/prepare", req, options);
  }

  /** POST /v1/lifecycle/rollover/commit. */
  rolloverCommit(req: CommitRequest, options?: CallOptions): Promise<CommitResult> {
    return this.post("/v1/lifecycle/rollover/commit", req, options);
  }

  /** POST /v1/lifecycle/rollover/fail. */
  rolloverFail(req: FailRequest, options?: CallOptions): Promise<IgnorableResult> {
    return this.post("/v1/lifecycle/rollover/fail", req, options);
  }

  /** POST /v1/lifecycle/manual. */
  manual(req: ManualRequest, options?: CallOptions): Promise<LifecycleResult> {
    return this.post("/v1/lifecycle/manual", req, options);
  }

  // ---- transport ----------------------------------------------------------

  /** Sends a request and parses its 2xx JSON answer. */
  async json<T>(req: RawRequest): Promise<T> {
    return parseJson<T>(await this.request(req), req);
  }

  /**
   * Sends one request and returns its 2xx answer; any other answer becomes a
   * MemorydError from its error envelope.
   */
  request(req: RawRequest): Promise<RawResponse> {
    return send(this.transport, req);
  }

  private post<T>(path: string, body: unknown, options?: CallOptions): Promise<T> {
    return this.json<T>({ method: "POST", path, json: body, ...options });
  }
}
