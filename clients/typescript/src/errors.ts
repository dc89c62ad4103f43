/**
 * The error of every failed memoryd call.
 *
 * For an answer of memoryd itself, `code`, `message`, `details` and `status`
 * are the error envelope of API.md §2 (`invalid_argument` 400,
 * `unauthenticated` 401, `forbidden` 403, `not_found` 404, `conflict` 409,
 * `too_large` 413, `fenced` 423, `unavailable` 503, `internal` 500; 405 and
 * 415 carry `invalid_argument`). `message` is one sentence a model can act on.
 *
 * Failures on the client side have `status` 0 and one of the codes
 * `unreachable` (memoryd is not running or refused the connection),
 * `timeout` (no answer within the request timeout), `aborted` (the caller's
 * signal), `no_token` (no token could be discovered), `bad_response` (the
 * answer was not memoryd's JSON) or `unproven` (what answers did not prove
 * it holds the token, so neither the token nor any data was sent to it).
 */
export class MemorydError extends Error {
  override readonly name = "MemorydError";
  /** The error code: one of API.md §2, or a client-side code. */
  readonly code: MemorydErrorCode;
  /** The HTTP status; 0 when memoryd gave no answer. */
  readonly status: number;
  /** Structured details, e.g. `{reason, terminate}` of `fenced`, `{bytes, limit, remaining}` of `too_large`. */
  readonly details: Record<string, unknown>;
  /** The request id memoryd logged the call under (X-Request-Id), when known. */
  readonly requestId: string | undefined;

  constructor(
    code: MemorydErrorCode,
    message: string,
    status: number,
    details: Record<string, unknown> = {},
    options: { cause?: unknown; requestId?: string } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = status;
    this.details = details;
    this.requestId = options.requestId;
  }
}

/** Codes of the error envelope (API.md §2). */
export type ServerErrorCode =
  | "invalid_argument"
  | "unauthenticated"
  | "forbidden"
  | "not_found"
  | "conflict"
  | "fenced"
  | "too_large"
  | "unavailable"
  | "internal";

/** Codes of failures that happen before memoryd answers. */
export type ClientErrorCode = "unreachable" | "timeout" | "aborted" | "no_token" | "bad_response" | "unproven";

export type MemorydErrorCode = ServerErrorCode | ClientErrorCode;

/** Reports whether err is a MemorydError, optionally of one of the given codes. */
export function isMemorydError(err: unknown, ...codes: MemorydErrorCode[]): err is MemorydError {
  return err instanceof MemorydError && (codes.length === 0 || codes.includes(err.code));
}
