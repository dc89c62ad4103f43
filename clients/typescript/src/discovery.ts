import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";

/** An environment to read configuration from (process.env by default). */
export type Env = Record<string, string | undefined>;

/** The default listen address of memoryd (API.md §1). */
export const DEFAULT_ADDR = "127.0.0.1:7411";

/**
 * The database path memoryd uses by default: MEMORYD_DB, else
 * $XDG_DATA_HOME/memoryd/memory.db, else ~/.local/share/memoryd/memory.db.
 */
export function defaultDbPath(env: Env = process.env): string {
  if (env.MEMORYD_DB) return env.MEMORYD_DB;
  if (env.XDG_DATA_HOME) return join(env.XDG_DATA_HOME, "memoryd", "memory.db");
  const home = env.HOME || homedir();
  return join(home, ".local", "share", "memoryd", "memory.db");
}

/** The token file memoryd creates beside a database. */
export function tokenFilePath(dbPath: string = defaultDbPath()): string {
  return join(dirname(dbPath), "token");
}

/**
 * Discovers the bearer token the way memoryd chooses it (API.md §1):
 * MEMORYD_TOKEN, else the file `token` beside the database. Returns
 * undefined when neither exists (memoryd writes the file on its first start).
 */
export function discoverToken(env: Env = process.env, dbPath?: string): string | undefined {
  if (env.MEMORYD_TOKEN) return env.MEMORYD_TOKEN;
  const file = tokenFilePath(dbPath ?? defaultDbPath(env));
  try {
    const token = readFileSync(file, "utf8").trim();
    return token === "" ? undefined : token;
  } catch {
    return undefined;
  }
}

/**
 * The base URL of memoryd: MEMORYD_URL (e.g. http://127.0.0.1:7411), else
 * http:// plus MEMORYD_ADDR, else http://127.0.0.1:7411.
 */
export function discoverBaseUrl(env: Env = process.env): string {
  if (env.MEMORYD_URL) return env.MEMORYD_URL.replace(/\/+$/, "");
  const addr = env.MEMORYD_ADDR || DEFAULT_ADDR;
  return `http://${addr.startsWith(":") ? "127.0.0.1" + addr : addr}`;
}
