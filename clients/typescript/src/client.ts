import { MemorydError, type MemorydErrorCode } from "./errors.js";
import { discoverBaseUrl, discoverToken, type Env } from "./discovery.js";
import type {
  AdmitRequest,
  AdmitResult,
  AgentState,
  AttachRequest,
  AttachResult,
  CallContext,
  CommitRequest,
  CommitResult,
  ContextRemainingDetails,
  ControlRequest,
  ControlResult,
  EventsPage,
  FailRequest,
  Health,
  HistoryListItemsArgs,
  HistoryListItemsDetails,
  HistoryListWindowsArgs,
  HistoryListWindowsDetails,
  HistoryReadItemArgs,
  HistoryReadItemDetails,
  HistorySearchContentsArgs,
  HistorySearchContentsDetails,
  IgnorableResult,
  LifecycleResult,
  ListEventsOptions,
  ManualRequest,
  NewContextDetails,
  NotesListFilesByPrefixArgs,
  NotesListFilesDetails,
  NotesReadFileArgs,
  NotesReadFileDetails,
  NotesSearchContentsArgs,
  NotesSearchContentsDetails,
  NotesWriteArgs,
  NotesWriteDetails,
  PrepareRequest,
  PrepareResult,
  SyncRequest,
  SyncResult,
  ToolResult,
  ToolResultRequest,
  ToolSpec,
  UsageRequest,
  UsageResult,
} from "./types.js";

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

/** Options every call accepts. */
export interface CallOptions {
  /** Overrides the client's timeout for this request. */
  timeoutMs?: number;
  /** Aborts the request (in addition to the timeout). */
  signal?: AbortSignal;
}

/** A request at the level of HTTP, for routes and bodies the typed methods do not cover. */
export interface RawRequest extends CallOptions {
  method: "GET" | "POST" | "PUT" | "DELETE";
  /** The path and query, e.g. /v1/state?task_id=... */
  path: string;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as it is (with contentType). */
  body?: string | Uint8Array;
  /** Content-Type of body (default application/json). */
  contentType?: string;
  /** Extra headers. */
  headers?: Record<string, string>;
  /** Send no Authorization header. */
  noAuth?: boolean;
}

/** A raw answer: status, headers and the body text. */
export interface RawResponse {
  status: number;
  headers: Headers;
  text: string;
}

/**
 * A client of memoryd: one method per route of API.md, each returning the
 * route's JSON and throwing a MemorydError for every non-2xx answer, for a
 * memoryd that cannot be reached and for a timeout.
 */
export class MemorydClient {
  readonly baseUrl: string;
  readonly timeoutMs: number;
  private readonly tokenSource: () => string | undefined;
  private readonly fetchImpl: typeof fetch;

  constructor(options: MemorydClientOptions = {}) {
    const env = options.env ?? process.env;
    this.baseUrl = (options.baseUrl ?? discoverBaseUrl(env)).replace(/\/+$/, "");
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const token = options.token;
    this.tokenSource =
      typeof token === "function" ? token : token !== undefined ? () => token : () => discoverToken(env);
    this.fetchImpl = options.fetch ?? globalThis.fetch;
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

  /** POST /v1/history/sync. */
  historySync(req: SyncRequest, options?: CallOptions): Promise<SyncResult> {
    return this.post("/v1/history/sync", req, options);
  }

  // ---- tools --------------------------------------------------------------

  /** GET /v1/tools: the 11 tools with their JSON Schemas and execution modes. */
  async listTools(options?: CallOptions): Promise<ToolSpec[]> {
    const body = await this.json<{ tools: ToolSpec[] }>({ method: "GET", path: "/v1/tools", ...options });
    return body.tools;
  }

  /** POST /v1/tools/{name}: any tool by name. */
  callTool<D = Record<string, unknown>>(
    name: string,
    context: CallContext,
    args: unknown = {},
    options?: CallOptions,
  ): Promise<ToolResult<D>> {
    return this.post(`/v1/tools/${encodeURIComponent(name)}`, { context, arguments: args ?? {} }, options);
  }

  historyListWindows(context: CallContext, args: HistoryListWindowsArgs = {}, options?: CallOptions) {
    return this.callTool<HistoryListWindowsDetails>("history_list_windows", context, args, options);
  }

  historyListItems(context: CallContext, args: HistoryListItemsArgs = {}, options?: CallOptions) {
    return this.callTool<HistoryListItemsDetails>("history_list_items", context, args, options);
  }

  historyReadItem(context: CallContext, args: HistoryReadItemArgs, options?: CallOptions) {
    return this.callTool<HistoryReadItemDetails>("history_read_item", context, args, options);
  }

  historySearchContents(context: CallContext, args: HistorySearchContentsArgs, options?: CallOptions) {
    return this.callTool<HistorySearchContentsDetails>("history_search_contents", context, args, options);
  }

  notesListFilesByPrefix(context: CallContext, args: NotesListFilesByPrefixArgs = {}, options?: CallOptions) {
    return this.callTool<NotesListFilesDetails>("notes_list_files_by_prefix", context, args, options);
  }

  notesReadFile(context: CallContext, args: NotesReadFileArgs, options?: CallOptions) {
    return this.callTool<NotesReadFileDetails>("notes_read_file", context, args, options);
  }

  notesSearchContents(context: CallContext, args: NotesSearchContentsArgs, options?: CallOptions) {
    return this.callTool<NotesSearchContentsDetails>("notes_search_contents", context, args, options);
  }

  notesAppendToFile(context: CallContext, args: NotesWriteArgs, options?: CallOptions) {
    return this.callTool<NotesWriteDetails>("notes_append_to_file", context, args, options);
  }

  notesWriteFile(context: CallContext, args: NotesWriteArgs, options?: CallOptions) {
    return this.callTool<NotesWriteDetails>("notes_write_file", context, args, options);
  }

  getContextRemaining(context: CallContext, options?: CallOptions) {
    return this.callTool<ContextRemainingDetails>("get_context_remaining", context, {}, options);
  }

  newContext(context: CallContext, options?: CallOptions) {
    return this.callTool<NewContextDetails>("new_context", context, {}, options);
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

  /** GET /v1/state?task_id=&agent=. */
  state(taskId: string, agent: string, options?: CallOptions): Promise<AgentState> {
    const q = new URLSearchParams({ task_id: taskId, agent });
    return this.json({ method: "GET", path: "/v1/state?" + q.toString(), ...options });
  }

  // ---- lifecycle ----------------------------------------------------------

  /** POST /v1/lifecycle/usage. */
  usage(req: UsageRequest, options?: CallOptions): Promise<UsageResult> {
    return this.post("/v1/lifecycle/usage", req, options);
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

  private post<T>(path: string, body: unknown, options?: CallOptions): Promise<T> {
    return this.json<T>({ method: "POST", path, json: body, ...options });
  }

  /** Sends a request and parses its 2xx JSON answer. */
  async json<T>(req: RawRequest): Promise<T> {
    const res = await this.request(req);
    try {
      return JSON.parse(res.text) as T;
    } catch (cause) {
      throw new MemorydError("bad_response", `memoryd answered ${req.method} ${req.path} with a body that is not JSON`, res.status, {}, { cause });
    }
  }

  /**
   * Sends one request and returns its 2xx answer; any other answer becomes a
   * MemorydError from its error envelope.
   */
  async request(req: RawRequest): Promise<RawResponse> {
    const headers: Record<string, string> = { Accept: "application/json", ...req.headers };
    if (!req.noAuth) {
      const token = this.tokenSource();
      if (!token) {
        throw new MemorydError(
          "no_token",
          "no memoryd token: set MEMORYD_TOKEN, or start memoryd once so that it writes the token file beside its database",
          0,
        );
      }
      headers.Authorization = `Bearer ${token}`;
    }
    let body: string | Uint8Array | undefined;
    if (req.json !== undefined) {
      body = JSON.stringify(req.json);
      headers["Content-Type"] = req.contentType ?? "application/json";
    } else if (req.body !== undefined) {
      body = req.body;
      headers["Content-Type"] = req.contentType ?? "application/json";
    }
    const timeoutMs = req.timeoutMs ?? this.timeoutMs;
    const timeout = AbortSignal.timeout(timeoutMs);
    const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
    const url = this.baseUrl + req.path;
    let res: Response;
    let text: string;
    try {
      res = await this.fetchImpl(url, { method: req.method, headers, body, signal });
      text = await res.text();
    } catch (cause) {
      throw transportError(cause, req, url, timeoutMs, timeout);
    }
    if (res.status >= 200 && res.status < 300) {
      return { status: res.status, headers: res.headers, text };
    }
    throw envelopeError(res, text, req);
  }
}

function transportError(cause: unknown, req: RawRequest, url: string, timeoutMs: number, timeout: AbortSignal): MemorydError {
  if (timeout.aborted) {
    return new MemorydError("timeout", `memoryd did not answer ${req.method} ${req.path} within ${timeoutMs} ms`, 0, {}, { cause });
  }
  if (req.signal?.aborted) {
    return new MemorydError("aborted", `the request ${req.method} ${req.path} to memoryd was aborted`, 0, {}, { cause });
  }
  const detail = cause instanceof Error && cause.cause instanceof Error ? cause.cause.message : String(cause);
  return new MemorydError(
    "unreachable",
    `memoryd is not reachable at ${new URL(url).origin} (${detail}); start it with "go run ./cmd/server" or the memoryd binary`,
    0,
    {},
    { cause },
  );
}

const statusCodes: Record<number, MemorydErrorCode> = {
  400: "invalid_argument",
  401: "unauthenticated",
  403: "forbidden",
  404: "not_found",
  405: "invalid_argument",
  409: "conflict",
  413: "too_large",
  415: "invalid_argument",
  423: "fenced",
  500: "internal",
  503: "unavailable",
};

function envelopeError(res: Response, text: string, req: RawRequest): MemorydError {
  const requestId = res.headers.get("x-request-id") ?? undefined;
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
    const e = body.error;
    if (e && typeof e.code === "string" && typeof e.message === "string") {
      const details = e.details && typeof e.details === "object" ? (e.details as Record<string, unknown>) : {};
      return new MemorydError(e.code as MemorydErrorCode, e.message, res.status, details, { requestId });
    }
  } catch {
    // not the envelope: fall through
  }
  const code = statusCodes[res.status] ?? (res.status >= 500 ? "internal" : "bad_response");
  return new MemorydError(code, `memoryd answered ${req.method} ${req.path} with HTTP ${res.status}`, res.status, {}, { requestId });
}
