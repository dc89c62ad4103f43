export { MemorydClient, DEFAULT_TIMEOUT_MS } from "./client.js";
export type { MemorydClientOptions, CallOptions, RawRequest, RawResponse } from "./client.js";
export { MemorydError, isMemorydError } from "./errors.js";
export type { MemorydErrorCode, ServerErrorCode, ClientErrorCode } from "./errors.js";
export { defaultDbPath, tokenFilePath, discoverToken, discoverBaseUrl, DEFAULT_ADDR } from "./discovery.js";
export type { Env } from "./discovery.js";
export * from "./types.js";
export * from "./tools.js";
export * from "./lifecycle.js";
