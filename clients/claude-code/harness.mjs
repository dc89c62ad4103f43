// The harness of the tests with the real `claude` CLI (npm @anthropic-ai/claude-code): the scripted
// Anthropic-Messages server (testdata/claude-code/model-server.mjs), a throwaway HOME for claude, and
// `claude -p` with memoryd as its MCP server and hook (docs/claude-code.md).
import { execFile } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

import { hangGuardMs, repoRoot } from "../testing/memoryd.mjs";
import { startScriptedServer } from "../testing/scripted-server.mjs";

export const claudeBin = join(repoRoot, "clients", "node_modules", ".bin", "claude");
const modelServer = join(repoRoot, "testdata", "claude-code", "model-server.mjs");

/** Starts the scripted model server (see startScriptedServer); resolves {port, stop()}. */
export const startModelServer = (log, env = {}) => startScriptedServer(modelServer, log, env);

/** A fresh HOME under dir for claude: onboarding done, project trusted, settings given. */
export function claudeHome(dir, name, project, settings) {
  const home = join(dir, name);
  mkdirSync(join(home, ".claude"), { recursive: true });
  writeFileSync(join(home, ".claude.json"), JSON.stringify({
    hasCompletedOnboarding: true,
    customApiKeyResponses: { approved: ["sk-ant-dummy"], rejected: [] },
    projects: { [project]: { hasTrustDialogAccepted: true, hasCompletedProjectOnboarding: true } },
  }));
  writeFileSync(join(home, ".claude", "settings.json"), JSON.stringify(settings));
  return home;
}

/** memoryd as Claude Code's MCP server: over HTTP with the token, or `memoryd mcp` on stdio without it. */
export function mcpServer(md, transport) {
  if (transport === "stdio") return { type: "stdio", command: md.bin, args: ["mcp", "--addr", new URL(md.url).host] };
  return { type: "http", url: `${md.url}/v1/mcp`, headers: { Authorization: `Bearer ${md.token}` } };
}

/**
 * Runs `claude ...args` in project with HOME home against the model server on port; resolves {code,
 * stdout, stderr}. With mcpConfig, memoryd md is its MCP server over transport, given in that file;
 * without, claude uses the servers of its settings.
 */
export function claude({ md, port, home, project, args, transport = "http", mcpConfig, env: extra = {} }) {
  const flags = [];
  if (mcpConfig) {
    writeFileSync(mcpConfig, JSON.stringify({ mcpServers: { memoryd: mcpServer(md, transport) } }));
    flags.push("--mcp-config", mcpConfig);
  }
  const env = {
    ...process.env, HOME: home, MEMORYD_TOKEN: md.token,
    ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}`, ANTHROPIC_API_KEY: "sk-ant-dummy",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1", DISABLE_AUTOUPDATER: "1",
    // claude -p connects its MCP servers without waiting for them unless this is falsy, and a prompt sent
    // before memoryd's server is connected is sent without its tools (docs/claude-code.md, §8).
    MCP_CONNECTION_NONBLOCKING: "0",
    // The test's memoryd is the one: no hook starts another (autostart.test.mjs tests that).
    MEMORYD_AUTOSTART: "0",
    ...extra,
  };
  return new Promise((res, rej) => {
    // The timeout only ends a hung CLI; a run that works returns at once.
    execFile(claudeBin, [...flags, ...args], { cwd: project, env, timeout: hangGuardMs, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      if (err && typeof err.code !== "number") return rej(err);
      res({ code: err ? err.code : 0, stdout, stderr });
    });
  });
}
