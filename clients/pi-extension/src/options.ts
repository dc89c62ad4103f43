// The extension's options, from the caller or from the environment.
import { accessSync, constants, statSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join } from "node:path";

import type { ExtensionContext } from "@earendil-works/pi-coding-agent";
import type { Budget, MemorydClient, TaskRef } from "@memoryd/client";

import { budgetFromPiSettings, warnOnce, type Env } from "./settings.js";
import type { SpawnOptions } from "./spawn.js";
import type { Trace } from "./trace.js";

/** Options of the extension; every field is optional. */
export interface MemorydExtensionOptions {
  /** A ready client (tests); otherwise one is made from baseUrl, token and timeoutMs. */
  client?: MemorydClient;
  /** memoryd's URL (default MEMORYD_URL, else http://$MEMORYD_ADDR, else http://127.0.0.1:7411). */
  baseUrl?: string;
  /** The bearer token (default MEMORYD_TOKEN, else the token file beside the default database). */
  token?: string;
  /** Per-request timeout in ms (default 15000). */
  timeoutMs?: number;
  /**
   * Join an existing task as a child agent (API.md §3). A launcher that starts
   * a sub-agent session passes its parent's task here (or in MEMORYD_TASK as
   * JSON). Omitted: the session is its own task (/root), or resumes it.
   */
  task?: TaskRef | null;
  /** Budget sent with attach (its fields win over piSettings'). context_window, when set, is also the window usage is measured against. */
  budget?: Budget;
  /**
   * Take the budget from Pi's settings (tokenBudget) and the PI_TOKEN_BUDGET_*
   * variables of env at attach, for the session's model (settings.ts). The
   * entry Pi loads sets it (optionsFromEnv); unset: only `budget` is sent.
   */
  piSettings?: { env: Env };
  /**
   * Start memoryd as a shared background service when it is not reachable
   * (default from the environment: MEMORYD_SPAWN, else MEMORYD_BIN, else
   * `memoryd` on PATH, unless MEMORYD_AUTOSTART=0; none: never).
   */
  spawn?: SpawnOptions | false;
  /** Why no memoryd is started when none answers (with no spawn): said to the user. */
  noStart?: string;
  /** How often an attached session pings memoryd's /healthz (default 60000 ms, MEMORYD_HEARTBEAT; 0: never). */
  heartbeatMs?: number;
  /** The session key (default: the session file path, else "pi-session:<session id>"). */
  sessionKey?: (ctx: ExtensionContext) => string;
  /** Add the workflow guidance to the system prompt (default true). */
  guidance?: boolean;
  /** Observe what the extension does (tests, MEMORYD_DEBUG=1 logs to stderr). */
  onTrace?: Trace;
}

const TASK_USAGE = "MEMORYD_TASK must be JSON like {\"task_id\":\"...\",\"parent_agent\":\"/root\",\"agent_name\":\"reviewer\"}";

/** Reads the extension's options from the environment (what the default export uses). */
export function optionsFromEnv(env: Record<string, string | undefined> = process.env): MemorydExtensionOptions {
  const opts: MemorydExtensionOptions = { piSettings: { env } };
  if (env.MEMORYD_TASK) opts.task = parseTask(env.MEMORYD_TASK);
  const spawn = autostart(env);
  if (spawn) opts.spawn = spawn;
  else if (env.MEMORYD_AUTOSTART === "0") opts.noStart = "MEMORYD_AUTOSTART=0 turns starting it off";
  else {
    const dirs = (env.PATH ?? "").split(delimiter).filter(Boolean).length;
    const pkg = packagedBinary();
    const packaged = pkg.name
      ? `${pkg.name} is not installed beside the extension`
      : `no memoryd package is made for ${process.platform}-${process.arch}`;
    opts.noStart = `no memoryd binary was found to start: MEMORYD_SPAWN and MEMORYD_BIN are unset, ${packaged}, and none of the ${dirs} folders of PATH holds memoryd`;
  }
  if (env.MEMORYD_CONTEXT_WINDOW) opts.budget = { context_window: Number(env.MEMORYD_CONTEXT_WINDOW) };
  if (env.MEMORYD_HEARTBEAT) opts.heartbeatMs = durationMs(env.MEMORYD_HEARTBEAT);
  if (env.MEMORYD_DEBUG === "1") {
    opts.onTrace = (event, data) => process.stderr.write(`[memoryd] ${event} ${data ? JSON.stringify(data) : ""}\n`);
  }
  return opts;
}

/**
 * How to start memoryd when nothing answers: MEMORYD_SPAWN (a binary, or "go"
 * with MEMORYD_REPO), else MEMORYD_BIN, else the binary of this platform's
 * package (packagedBinary), else `memoryd` on PATH; none with
 * MEMORYD_AUTOSTART=0. MEMORYD_IDLE_EXIT overrides its --idle-exit (30m).
 */
function autostart(env: Record<string, string | undefined>): SpawnOptions | undefined {
  if (env.MEMORYD_AUTOSTART === "0") return undefined;
  let spawn: SpawnOptions | undefined;
  if (env.MEMORYD_SPAWN) spawn = { command: env.MEMORYD_SPAWN, cwd: env.MEMORYD_REPO || undefined };
  else if (env.MEMORYD_BIN) spawn = { command: env.MEMORYD_BIN };
  else {
    const found = packagedBinary().path ?? onPath("memoryd", env.PATH);
    if (found) spawn = { command: found };
  }
  if (spawn && env.MEMORYD_IDLE_EXIT) spawn.idleExit = env.MEMORYD_IDLE_EXIT;
  return spawn;
}

/** The platforms a memoryd package is made for (clients/scripts/pack.mjs), as Node names them. */
export const PACKAGED_PLATFORMS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64"];

/**
 * The memoryd binary of this platform's package: @memoryd/memoryd-<platform>-<arch>,
 * an optional dependency of the published extension that npm installs only on
 * its platform (os/cpu), resolved from the extension's own folder. name is
 * undefined for a platform no package is made for; path when it is installed.
 */
export function packagedBinary(): { name?: string; path?: string } {
  const platform = `${process.platform}-${process.arch}`;
  if (!PACKAGED_PLATFORMS.includes(platform)) return {};
  const name = `@memoryd/memoryd-${platform}`;
  try {
    const manifest = createRequire(import.meta.url).resolve(`${name}/package.json`);
    const file = join(dirname(manifest), "bin", "memoryd");
    accessSync(file, constants.X_OK);
    return { name, path: file };
  } catch {
    return { name };
  }
}

/** MEMORYD_HEARTBEAT in ms: "500ms", "10s", "2m", or seconds ("10"); "0": no heartbeat. */
function durationMs(text: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m)?$/.exec(text.trim());
  if (!m) throw new Error(`MEMORYD_HEARTBEAT must be a duration like 30s, 500ms or 2m (0: off), not ${JSON.stringify(text)}`);
  return Math.round(Number(m[1]) * { ms: 1, s: 1000, m: 60_000 }[m[2] ?? "s"]!);
}

/** The first executable file named name in the PATH's folders. */
function onPath(name: string, path: string | undefined): string | undefined {
  for (const dir of (path ?? "").split(delimiter)) {
    if (!dir) continue;
    const file = join(dir, name);
    try {
      if (!statSync(file).isFile()) continue;
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** MEMORYD_TASK as a TaskRef; anything attach would refuse is refused here, with the usage. */
function parseTask(text: string): TaskRef {
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new Error(TASK_USAGE);
  }
  if (typeof v !== "object" || v === null || Array.isArray(v)) throw new Error(TASK_USAGE);
  const fields = new Map(Object.entries(v));
  const task_id = fields.get("task_id");
  const parent_agent = fields.get("parent_agent");
  const agent_name = fields.get("agent_name");
  const known = ["task_id", "parent_agent", "agent_name"];
  if (
    typeof task_id !== "string" ||
    (parent_agent !== undefined && typeof parent_agent !== "string") ||
    (agent_name !== undefined && typeof agent_name !== "string") ||
    [...fields.keys()].some((k) => !known.includes(k))
  ) {
    throw new Error(TASK_USAGE);
  }
  return { task_id, ...(parent_agent !== undefined ? { parent_agent } : {}), ...(agent_name !== undefined ? { agent_name } : {}) };
}

/** The context window usage is measured against: the configured one, else the model's. */
export function contextWindow(options: MemorydExtensionOptions, ctx: ExtensionContext): number | undefined {
  return options.budget?.context_window ?? ctx.model?.contextWindow;
}

/** The budget of attach: Pi's settings for the session's model (piSettings), then the configured budget, then the context window. */
export function attachBudget(options: MemorydExtensionOptions, ctx: ExtensionContext): Budget {
  const model = ctx.model ? { provider: ctx.model.provider, id: ctx.model.id } : undefined;
  const fromSettings = options.piSettings
    ? budgetFromPiSettings({ env: options.piSettings.env, cwd: ctx.cwd, projectTrusted: ctx.isProjectTrusted(), model }, (line) =>
        warnOnce(line, (l) => settingsWarning(ctx, l)),
      )
    : {};
  const w = contextWindow(options, ctx);
  return { ...fromSettings, ...options.budget, ...(w ? { context_window: w } : {}) };
}

/** A settings warning: a notification with Pi's UI, and a stderr line outside the TUI. */
function settingsWarning(ctx: ExtensionContext, line: string): void {
  const text = `Pi settings: ${line}`;
  if (ctx.hasUI) ctx.ui.notify(text, "warning");
  if (ctx.mode !== "tui") process.stderr.write(`[memoryd] ${text}\n`);
}

/** The session key of attach: the configured function, else the session file, else "pi-session:<id>". */
export function sessionKey(options: MemorydExtensionOptions, ctx: ExtensionContext): string {
  if (options.sessionKey) return options.sessionKey(ctx);
  return ctx.sessionManager.getSessionFile() ?? `pi-session:${ctx.sessionManager.getSessionId()}`;
}
