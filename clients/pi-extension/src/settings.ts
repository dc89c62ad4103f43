// The token budget from Pi's settings (the `tokenBudget` key of settings.json)
// and the PI_TOKEN_BUDGET_* environment variables, as pi-token-budget read
// them: the reminder and hard-rollover triggers, per model where configured,
// and the output limits memoryd applies. Invalid values are ignored with a
// warning naming the setting, the value and what is used instead; the result
// is the budget of memoryd's attach, with nothing memoryd would refuse.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";

import type { Budget } from "@memoryd/client";

export type Env = Record<string, string | undefined>;

/** A warning for the user (the caller says it once: warnOnce). */
export type Warn = (line: string) => void;

/** The model a session runs on (Pi's ctx.model). */
export interface ModelRef {
  provider: string;
  id: string;
}

/** The budget's defaults: memoryd's (docs/behaviour.md §G). notesMaxFileBytes is also its ceiling. */
export const BUDGET_DEFAULTS = {
  reminderRemainingPercent: 0.25,
  reminderRemainingFloorTokens: 21384,
  reminderRemainingCeilingTokens: 60000,
  hardRolloverUsedTokens: 0,
  maxToolOutputChars: 12000,
  historyItemPreviewChars: 400,
  notesMaxFileBytes: 1_000_000,
} as const;

export type TokenBudget = { -readonly [K in keyof typeof BUDGET_DEFAULTS]: number };
type Field = keyof TokenBudget;

/** The fields tokenBudget.defaults and tokenBudget.models may set. */
const TRIGGER_FIELDS = ["reminderRemainingPercent", "reminderRemainingFloorTokens", "reminderRemainingCeilingTokens", "hardRolloverUsedTokens"] as const;
const isTrigger = (key: string) => (TRIGGER_FIELDS as readonly string[]).includes(key);

/** Each field's rule: whether v is valid, and the rule in words. */
const RULES: Record<Field, { valid: (v: number) => boolean; rule: string }> = {
  reminderRemainingPercent: { valid: (v) => v > 0 && v < 1, rule: "a number strictly between 0 and 1" },
  reminderRemainingFloorTokens: { valid: (v) => integerFrom(v, 1), rule: "an integer of at least 1" },
  reminderRemainingCeilingTokens: { valid: (v) => integerFrom(v, 1), rule: "an integer of at least 1" },
  hardRolloverUsedTokens: { valid: (v) => integerFrom(v, 0), rule: "an integer of at least 0 (0: off)" },
  maxToolOutputChars: { valid: (v) => integerFrom(v, 1), rule: "an integer of at least 1" },
  historyItemPreviewChars: { valid: (v) => integerFrom(v, 1), rule: "an integer of at least 1" },
  // memoryd refuses a larger cap: a setting may lower it, never raise it.
  notesMaxFileBytes: {
    valid: (v) => integerFrom(v, 1) && v <= BUDGET_DEFAULTS.notesMaxFileBytes,
    rule: `an integer from 1 to ${BUDGET_DEFAULTS.notesMaxFileBytes} (it can only lower memoryd's cap)`,
  },
};

/** The environment variables that set a field; they win over every settings file and model override. */
const ENV_FIELDS: Partial<Record<Field, string>> = {
  reminderRemainingPercent: "PI_TOKEN_BUDGET_REMINDER_PERCENT",
  hardRolloverUsedTokens: "PI_TOKEN_BUDGET_HARD_ROLLOVER_TOKENS",
};

const integerFrom = (v: number, min: number) => Number.isSafeInteger(v) && v >= min;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/** PI_TOKEN_BUDGET_DISABLED=1: the extension registers nothing and never starts memoryd. */
export function tokenBudgetDisabled(env: Env): boolean {
  return env.PI_TOKEN_BUDGET_DISABLED === "1";
}

/**
 * Pi's agent folder: PI_CODING_AGENT_DIR (where Pi itself reads settings.json,
 * config.js getAgentDir), else PI_AGENT_DIR (pi-token-budget's name), else
 * ~/.pi/agent. A leading ~ is the home folder.
 */
export function piAgentDir(env: Env): string {
  const dir = env.PI_CODING_AGENT_DIR || env.PI_AGENT_DIR;
  if (!dir) return join(homedir(), ".pi", "agent");
  if (dir === "~") return homedir();
  return dir.startsWith("~/") ? join(homedir(), dir.slice(2)) : dir;
}

/**
 * The settings files Pi reads, lowest precedence first: the agent folder's
 * settings.json, then the project's .pi/settings.json when Pi trusts the
 * project (Pi's SettingsManager reads the project file only then).
 */
export function settingsFiles(env: Env, cwd: string, projectTrusted: boolean): string[] {
  const files = [join(piAgentDir(env), "settings.json")];
  if (projectTrusted) files.push(join(cwd, ".pi", "settings.json"));
  return files;
}

/**
 * The tokenBudget object of the files, merged as Pi merges its settings (a
 * later file's values win; nested objects merge key by key). A missing file is
 * none; an unreadable file, invalid JSON or a tokenBudget that is not an object
 * is warned about and skipped.
 */
export function readTokenBudget(files: string[], warn: Warn): Record<string, unknown> {
  let merged: Record<string, unknown> = {};
  for (const file of files) {
    let text: string;
    try {
      text = readFileSync(file, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") continue;
      warn(`could not read ${file} (${(err as Error).message}); its tokenBudget settings are not used`);
      continue;
    }
    let settings: unknown;
    try {
      settings = JSON.parse(text.replace(/^\uFEFF/, ""));
    } catch (err) {
      warn(`${file} is not valid JSON (${(err as Error).message}); its tokenBudget settings are not used`);
      continue;
    }
    const tokenBudget = isObject(settings) ? settings.tokenBudget : undefined;
    if (tokenBudget === undefined) continue;
    if (!isObject(tokenBudget)) {
      warn(`tokenBudget in ${file} is ${JSON.stringify(tokenBudget)}, not an object; its tokenBudget settings are not used`);
      continue;
    }
    merged = mergeObjects(merged, tokenBudget);
  }
  return merged;
}

function mergeObjects(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base };
  for (const [k, v] of Object.entries(over)) {
    if (v === undefined) continue;
    const b = out[k];
    out[k] = isObject(b) && isObject(v) ? mergeObjects(b, v) : v;
  }
  return out;
}

/** A value given for one field, and where (for the warning). */
interface Candidate {
  where: string;
  value: unknown;
}

/**
 * The effective budget for model. The four trigger fields, lowest precedence
 * first: the default, tokenBudget.<field>, tokenBudget.defaults, then the
 * tokenBudget.models entries that match the model ("*", "<provider>",
 * "<provider>/*", "<provider>/<id>"), then the environment
 * (PI_TOKEN_BUDGET_REMINDER_PERCENT, PI_TOKEN_BUDGET_HARD_ROLLOVER_TOKENS).
 * The other fields: tokenBudget.<field>, else the default. The highest valid
 * value wins; each invalid one is warned about, naming the value used.
 */
export function resolveTokenBudget(tokenBudget: Record<string, unknown>, model: ModelRef | undefined, env: Env, warn: Warn): TokenBudget {
  for (const key of Object.keys(tokenBudget)) {
    if (key !== "defaults" && key !== "models" && !(key in BUDGET_DEFAULTS)) {
      warn(`tokenBudget.${key} is not a token budget setting; ignored (the settings: ${[...Object.keys(BUDGET_DEFAULTS), "defaults", "models"].join(", ")})`);
    }
  }
  const layers: { where: string; values: Record<string, unknown> }[] = [];
  const defaults = triggerLayer("tokenBudget.defaults", tokenBudget.defaults, warn);
  if (defaults) layers.push({ where: "tokenBudget.defaults", values: defaults });
  for (const key of modelKeys(tokenBudget.models, model, warn)) {
    const where = `tokenBudget.models[${JSON.stringify(key)}]`;
    const values = triggerLayer(where, (tokenBudget.models as Record<string, unknown>)[key], warn);
    if (values) layers.push({ where, values });
  }

  const out: TokenBudget = { ...BUDGET_DEFAULTS };
  for (const field of Object.keys(BUDGET_DEFAULTS) as Field[]) {
    const candidates: Candidate[] = [];
    if (tokenBudget[field] !== undefined) candidates.push({ where: `tokenBudget.${field}`, value: tokenBudget[field] });
    if (isTrigger(field)) {
      for (const l of layers) if (l.values[field] !== undefined) candidates.push({ where: `${l.where}.${field}`, value: l.values[field] });
    }
    const envName = ENV_FIELDS[field];
    const envText = envName ? env[envName] : undefined;
    if (envName && envText !== undefined && envText !== "") candidates.push({ where: envName, value: envNumber(envText) ?? envText });

    const { valid, rule } = RULES[field];
    const isValid = (c: Candidate) => typeof c.value === "number" && valid(c.value);
    const winner = [...candidates].reverse().find(isValid);
    if (winner) out[field] = winner.value as number;
    for (const c of candidates) {
      if (!isValid(c)) warn(`${c.where} is ${JSON.stringify(c.value)}, not ${rule}; using ${out[field]}`);
    }
  }
  return out;
}

/** An environment variable's number (undefined: not a number). */
function envNumber(text: string): number | undefined {
  const n = Number(text.trim());
  return text.trim() !== "" && Number.isFinite(n) ? n : undefined;
}

/** The trigger fields of a defaults or models entry (undefined: none); other fields are warned about. */
function triggerLayer(where: string, entry: unknown, warn: Warn): Record<string, unknown> | undefined {
  if (entry === undefined) return undefined;
  if (!isObject(entry)) {
    warn(`${where} is ${JSON.stringify(entry)}, not an object; ignored`);
    return undefined;
  }
  for (const key of Object.keys(entry)) {
    if (!isTrigger(key)) {
      warn(`${where}.${key} is ignored: only ${TRIGGER_FIELDS.join(", ")} can be set there`);
    }
  }
  return entry;
}

/**
 * The keys of tokenBudget.models that apply to model, lowest precedence first:
 * "*", the bare provider, "<provider>/*", the exact "<provider>/<id>". A key
 * with a * elsewhere is a pattern no model matches: warned about.
 */
function modelKeys(models: unknown, model: ModelRef | undefined, warn: Warn): string[] {
  if (models === undefined) return [];
  if (!isObject(models)) {
    warn(`tokenBudget.models is ${JSON.stringify(models)}, not an object; ignored`);
    return [];
  }
  for (const key of Object.keys(models)) {
    if (key.includes("*") && key !== "*" && !/^[^*/]+\/\*$/.test(key)) {
      warn(`tokenBudget.models[${JSON.stringify(key)}] is ignored: a key is "<provider>/<model id>", "<provider>/*", "<provider>" or "*"`);
    }
  }
  const applying = ["*", ...(model ? [model.provider, `${model.provider}/*`, `${model.provider}/${model.id}`] : [])];
  return applying.filter((k) => k in models);
}

/** The budget as memoryd's attach takes it. */
export function attachFields(b: TokenBudget): Budget {
  return {
    reminder_remaining_percent: b.reminderRemainingPercent,
    reminder_remaining_floor_tokens: b.reminderRemainingFloorTokens,
    reminder_remaining_ceiling_tokens: b.reminderRemainingCeilingTokens,
    hard_rollover_used_tokens: b.hardRolloverUsedTokens,
    max_tool_output_chars: b.maxToolOutputChars,
    history_item_preview_chars: b.historyItemPreviewChars,
    notes_max_file_bytes: b.notesMaxFileBytes,
  };
}

/** Where budgetFromPiSettings reads: the environment, the session's folder and model, Pi's trust in the project. */
export interface SettingsSource {
  env: Env;
  cwd: string;
  projectTrusted: boolean;
  model: ModelRef | undefined;
}

/** The attach budget of Pi's settings and the environment for the session's model. */
export function budgetFromPiSettings(source: SettingsSource, warn: Warn): Budget {
  const tokenBudget = readTokenBudget(settingsFiles(source.env, source.cwd, source.projectTrusted), warn);
  return attachFields(resolveTokenBudget(tokenBudget, source.model, source.env, warn));
}

const warned = new Set<string>();

/** Says line with say unless the same line was said before in this process. */
export function warnOnce(line: string, say: (line: string) => void): void {
  if (warned.has(line)) return;
  warned.add(line);
  say(line);
}
