// The server proves it is the user's memoryd before the client sends the
// token or any data (SECURITY.md, port squatting): GET /v1/proof with a
// fresh nonce answers HMAC-SHA256(token, "memoryd proof v1\n" + nonce +
// "\n" + the address it was reached at), which only a holder of the token
// can compute; the address must be the one the client dialled, so that a
// squatter relaying the nonce to a memoryd elsewhere fails too.
import { isIP } from "node:net";

import { MemorydError } from "./errors.js";
import type { Transport } from "./transport.js";

/** The message's label (internal/api ProofLabel). */
const LABEL = "memoryd proof v1\n";

/** What a transport remembers of its proof: the token it was made for. */
export interface ProofState {
  token?: string;
  proven?: Promise<void>;
}

/**
 * Resolves once the server at t.baseUrl proved that it holds token (one
 * proof per token, asked again after it failed or after forget()).
 */
export function ensureProven(t: Transport, token: string, send: (path: string) => Promise<{ text: string }>): Promise<void> {
  const s = t.proof;
  if (s.proven && s.token === token) return s.proven;
  s.token = token;
  s.proven = prove(t.baseUrl, token, send).catch((err) => {
    if (s.token === token) s.proven = undefined;
    throw err;
  });
  return s.proven;
}

/** The server is gone or did not answer: it proves itself again before the next token is sent. */
export function forgetProof(t: Transport): void {
  t.proof.proven = undefined;
}

async function prove(baseUrl: string, token: string, send: (path: string) => Promise<{ text: string }>): Promise<void> {
  const nonce = hex(globalThis.crypto.getRandomValues(new Uint8Array(32)));
  let answer: { service?: unknown; address?: unknown; proof?: unknown };
  try {
    answer = JSON.parse((await send(`/v1/proof?nonce=${nonce}`)).text);
  } catch (err) {
    if (err instanceof MemorydError && (err.code === "unreachable" || err.code === "timeout" || err.code === "aborted")) throw err;
    throw unproven(baseUrl, err instanceof MemorydError ? `${err.status ? `HTTP ${err.status}` : err.code} to GET /v1/proof` : "an answer that is not JSON");
  }
  const address = typeof answer?.address === "string" ? answer.address : "";
  if (!reachedAt(address, new URL(baseUrl))) throw unproven(baseUrl, `a proof for ${address || "no address"}`);
  const want = await mac(token, LABEL + nonce + "\n" + address);
  if (typeof answer.proof !== "string" || !sameText(answer.proof, want)) throw unproven(baseUrl, "a proof that does not match this token");
}

function unproven(baseUrl: string, what: string): MemorydError {
  const origin = new URL(baseUrl).origin;
  return new MemorydError(
    "unproven",
    `${origin} answered, but did not prove it is the memoryd holding this token (${what}); neither the token nor any session data was sent. If it is your memoryd, its token differs: set MEMORYD_TOKEN to the token beside its database; otherwise another program holds the port: stop it, or run memoryd on another port (MEMORYD_ADDR=127.0.0.1:<port>, or MEMORYD_URL)`,
    0,
    { address: origin, what },
  );
}

/** Whether the server's own address is the one base names: its port, and its IP when base names one (a loopback one for localhost). */
function reachedAt(address: string, base: URL): boolean {
  const m = /^\[?([^\]]+?)\]?:(\d+)$/.exec(address);
  if (!m) return false;
  const [, ip, port] = m;
  if (port !== (base.port || (base.protocol === "https:" ? "443" : "80"))) return false;
  const host = base.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host)) return ip === host;
  if (host === "localhost") return ip === "::1" || ip.startsWith("127.");
  return true; // a host name this client cannot resolve the same way: the port decides
}

async function mac(key: string, message: string): Promise<string> {
  const enc = new TextEncoder();
  const k = await globalThis.crypto.subtle.importKey("raw", enc.encode(key), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return hex(new Uint8Array(await globalThis.crypto.subtle.sign("HMAC", k, enc.encode(message))));
}

function hex(b: Uint8Array): string {
  return Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

/** Compares two strings in time independent of where they differ. */
function sameText(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let d = 0;
  for (let i = 0; i < a.length; i++) d |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return d === 0;
}
