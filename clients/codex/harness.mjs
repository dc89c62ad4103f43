// The harness of the tests with the real `codex` CLI (npm @openai/codex, a native binary): the scripted
// Responses-API server (testdata/codex/model-server.mjs), a throwaway CODEX_HOME set up by `memoryd setup
// codex`, and `codex exec` with memoryd as its MCP server and hook (docs/codex.md).
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { hangGuardMs, repoRoot } from "../testing/memoryd.mjs";
import { startScriptedServer } from "../testing/scripted-server.mjs";

export const codexBin = join(repoRoot, "clients", "node_modules", ".bin", "codex");
const modelServer = join(repoRoot, "testdata", "codex", "model-server.mjs");

/** Starts the scripted model server (see startScriptedServer); resolves {port, stop()}. */
export const startModelServer = (log, env = {}) => startScriptedServer(modelServer, log, env);

/** The provider block that points codex at the scripted model server on port (docs/codex.md §1). */
const provider = (port) => `model = "scripted-model"
model_provider = "scripted"

[model_providers.scripted]
name = "Scripted"
base_url = "http://127.0.0.1:${port}/v1"
wire_api = "responses"
env_key = "SCRIPTED_API_KEY"
request_max_retries = 0
stream_max_retries = 0
`;

/**
 * A fresh CODEX_HOME under dir: the scripted provider on port, then `memoryd setup codex` for memoryd md
 * (its MCP server, hooks and their trust), as a user runs it. Returns the folder.
 */
export function codexHome(dir, name, md, port) {
  const home = join(dir, name);
  mkdirSync(home, { recursive: true });
  writeFileSync(join(home, "config.toml"), provider(port));
  const r = spawnSync(md.bin, ["setup", "codex", "--addr", new URL(md.url).host, "--bin", md.bin],
    { env: { ...process.env, CODEX_HOME: home }, encoding: "utf8" });
  if (r.status !== 0) throw new Error(`memoryd setup codex: ${r.stdout}${r.stderr}`);
  return home;
}

/**
 * Runs `codex exec --skip-git-repo-check ...args` in project with CODEX_HOME home; resolves {code,
 * stdout, stderr, session} (the session id codex printed). The model server is the one of home's config,
 * or port's when given.
 */
export function codexExec({ md, home, project, args, port, env: extra = {} }) {
  const flags = ["exec", "--skip-git-repo-check"];
  if (port) flags.push("-c", `model_providers.scripted.base_url="http://127.0.0.1:${port}/v1"`);
  const env = {
    ...process.env, CODEX_HOME: home, HOME: join(home, "user-home"), SCRIPTED_API_KEY: "sk-dummy", MEMORYD_TOKEN: md.token,
    // The test's memoryd is the one: no hook or MCP server starts another.
    MEMORYD_AUTOSTART: "0",
    ...extra,
  };
  mkdirSync(env.HOME, { recursive: true });
  mkdirSync(project, { recursive: true });
  // stdin is closed: codex exec reads a piped stdin as more of the prompt.
  const child = spawn(codexBin, [...flags, ...args], { cwd: project, env, stdio: ["ignore", "pipe", "pipe"] });
  let stdout = "";
  let stderr = "";
  child.stdout.setEncoding("utf8").on("data", (s) => (stdout += s));
  child.stderr.setEncoding("utf8").on("data", (s) => (stderr += s));
  return new Promise((res, rej) => {
    // The timer only ends a hung CLI; a run that works returns at once.
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      rej(new Error(`codex ${args.join(" ")} did not exit in ${hangGuardMs} ms; stderr:\n${stderr}`));
    }, hangGuardMs);
    child.once("error", rej);
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      const m = /session id: ([0-9a-f-]{36})/.exec(stderr);
      res({ code: code ?? signal, stdout, stderr, session: m?.[1] });
    });
  });
}
