// memoryd's MCP server as the official MCP Inspector's CLI (npm @modelcontextprotocol/inspector) sees it,
// offline, over both transports: streamable HTTP at /v1/mcp (the token in a header) and `memoryd mcp` on
// stdio (no token given: it finds it). Both list the 11 tools with their schemas, and a call answers what
// POST /v1/tools/{name} answers; the call names the host's call id in _meta["claudecode/toolUseId"] as
// Claude Code does, and one no hook announced is refused.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";

import { hangGuardMs, repoRoot, startMemoryd } from "../../testing/memoryd.mjs";

const inspector = join(repoRoot, "clients", "node_modules", ".bin", "mcp-inspector");

let md;
let dir;

/**
 * Runs the Inspector's CLI against transport with args; resolves its parsed JSON output. A tool error
 * makes it exit 5, still printing the result on stdout.
 */
function inspect(transport, ...args) {
  const target = transport === "http"
    ? [`${md.url}/v1/mcp`, "--transport", "http", "--header", `Authorization: Bearer ${md.token}`]
    : ["-e", `MEMORYD_TOKEN=${md.token}`, md.bin, "mcp", "--addr", new URL(md.url).host];
  return new Promise((res, rej) => {
    execFile(inspector, ["--cli", ...target, ...args], { env: { ...process.env, MCP_CATALOG_PATH: join(dir, "catalog.json") }, timeout: hangGuardMs },
      (err, stdout, stderr) => {
        if (err && !(err.code === 5 && /"tool_is_error"/.test(stderr))) {
          return rej(new Error(`mcp-inspector ${args.join(" ")}: ${err.message}\n${stdout}\n${stderr}`));
        }
        res(JSON.parse(stdout));
      });
  });
}

const auth = { Authorization: "", "Content-Type": "application/json" };

/** Announces a call as Claude Code's PreToolUse hook does. */
async function announce(session, toolUseID) {
  const r = await fetch(`${md.url}/v1/hooks/claude-code`, {
    method: "POST", headers: { ...auth, Authorization: `Bearer ${md.token}` },
    body: JSON.stringify({ hook_event_name: "PreToolUse", session_id: session, tool_use_id: toolUseID, tool_name: "mcp__memoryd__x" }),
  });
  assert.equal(r.status, 200);
}

/** The same call over POST /v1/tools/{name}. */
async function route(name, args, toolUseID) {
  const r = await fetch(`${md.url}/v1/tools/${name}`, {
    method: "POST", headers: { ...auth, Authorization: `Bearer ${md.token}` }, body: JSON.stringify({ host_call_id: toolUseID, arguments: args }),
  });
  return r.json();
}

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "memoryd-inspector-"));
  md = await startMemoryd();
});

after(async () => {
  await md?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

for (const transport of ["http", "stdio"]) {
  test(`the MCP Inspector's CLI over ${transport}: the 11 tools, and calls that answer as the route does`, async () => {
    const r = await fetch(`${md.url}/v1/tools`, { headers: { Authorization: `Bearer ${md.token}` } });
    const { tools: specs } = await r.json();
    const { tools } = await inspect(transport, "--method", "tools/list");
    assert.deepEqual(tools.map((t) => t.name).sort(), specs.map((s) => s.name).sort());
    for (const t of tools) {
      const spec = specs.find((s) => s.name === t.name);
      assert.deepEqual(t.inputSchema, spec.parameters, `${t.name}'s input schema`);
      assert.deepEqual(t.outputSchema, spec.result, `${t.name}'s output schema`);
    }

    const session = `inspector-${transport}`;
    await announce(session, `toolu_${transport}_1`);
    const wrote = await inspect(transport, "--method", "tools/call", "--tool-name", "notes_write_file",
      "--tool-arg", "path=a.md", `text=written over ${transport}`, "--tool-metadata", `claudecode/toolUseId=toolu_${transport}_1`);
    assert.deepEqual(wrote.structuredContent, { path: "/root/notes/a.md", bytes: `written over ${transport}`.length, created: true, revision: 1 });

    await announce(session, `toolu_${transport}_2`);
    const read = await inspect(transport, "--method", "tools/call", "--tool-name", "notes_read_file",
      "--tool-arg", "path=a.md", "--tool-metadata", `claudecode/toolUseId=toolu_${transport}_2`);
    const viaRoute = await route("notes_read_file", { path: "a.md" }, `toolu_${transport}_2`);
    assert.deepEqual(read.structuredContent, viaRoute.details);
    assert.deepEqual(read.content, viaRoute.content);

    const refused = await inspect(transport, "--method", "tools/call", "--tool-name", "notes_read_file",
      "--tool-arg", "path=a.md", "--tool-metadata", "claudecode/toolUseId=toolu_never_announced");
    assert.equal(refused.isError, true);
    assert.match(refused.content[0].text, /"code":"forbidden".*memoryd does not know this call/);
  });
}
