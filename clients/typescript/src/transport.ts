// One HTTP request to memoryd: the bearer token (sent only to a server that
// proved it holds it, proof.ts), JSON bodies, the timeout, and every failure
// turned into a MemorydError (the error envelope of
// API.md §2, or a client-side code when memoryd gave no answer).
import { MemorydError, type MemorydErrorCode } from "./errors.js";
import { ensureProven, forgetProof, type ProofState } from "./proof.js";

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

/** Where and how requests are sent (what a client was configured with). */
export interface Transport {
  baseUrl: string;
  timeoutMs: number;
  token: () => string | undefined;
  fetch: typeof fetch;
  /** The server's proof that it holds the token, made before the token is first sent. */
  proof: ProofState;
}

/**
 * Sends one request and returns its 2xx answer; any other answer becomes a
 * MemorydError from its error envelope.
 */
export async function send(t: Transport, req: RawRequest): Promise<RawResponse> {
  const headers: Record<string, string> = { Accept: "application/json", ...req.headers };
  if (!req.noAuth) {
    const token = t.token();
    if (!token) {
      throw new MemorydError(
        "no_token",
        "no memoryd token: set MEMORYD_TOKEN, or start memoryd once so that it writes the token file beside its database",
        0,
      );
    }
    await ensureProven(t, token, (path) => send(t, { method: "GET", path, noAuth: true, timeoutMs: req.timeoutMs, signal: req.signal }));
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
  const timeoutMs = req.timeoutMs ?? t.timeoutMs;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = req.signal ? AbortSignal.any([req.signal, timeout]) : timeout;
  const url = t.baseUrl + req.path;
  let res: Response;
  let text: string;
  try {
    res = await t.fetch(url, { method: req.method, headers, body, signal });
    text = await res.text();
  } catch (cause) {
    // Whatever answers next proves itself again before it gets the token.
    if (!req.signal?.aborted) forgetProof(t);
    throw transportError(cause, req, url, timeoutMs, timeout);
  }
  if (res.status >= 200 && res.status < 300) {
    return { status: res.status, headers: res.headers, text };
  }
  throw envelopeError(res, text, req);
}

/** Parses a 2xx answer's JSON body as the route's documented shape. */
export function parseJson<T>(res: RawResponse, req: RawRequest): T {
  try {
    // The wire boundary: the body is the route's JSON (API.md), not checked field by field.
    return JSON.parse(res.text) as T;
  } catch (cause) {
    throw new MemorydError("bad_response", `memoryd answered ${req.method} ${req.path} with a body that is not JSON`, res.status, {}, { cause });
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
    // No advice to start it: the message may reach a model, which must not be asked to start services.
    `memoryd is not reachable at ${new URL(url).origin} (${detail})`,
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
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined; // not the envelope: fall through
  }
  const e = isRecord(body) ? body.error : undefined;
  if (isRecord(e) && typeof e.code === "string" && typeof e.message === "string") {
    const details = isRecord(e.details) ? e.details : {};
    // memoryd's own code, passed on as it is (a newer server may add one).
    return new MemorydError(e.code as MemorydErrorCode, e.message, res.status, details, { requestId });
  }
  const code = statusCodes[res.status] ?? (res.status >= 500 ? "internal" : "bad_response");
  return new MemorydError(code, `memoryd answered ${req.method} ${req.path} with HTTP ${res.status}`, res.status, {}, { requestId });
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
