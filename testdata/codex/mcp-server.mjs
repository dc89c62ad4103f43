#!/usr/bin/env node
// Tiny MCP stdio server (newline-delimited JSON-RPC) recording how Codex started it.
// On start: $MCP_LOG_DIR/mcp-<pid>.json (pid, ppid, parent exe/cmdline, argv, cwd, full env);
// all JSON-RPC in/out to $MCP_LOG_DIR/mcp-<pid>.io.jsonl.
// Tools: note, whoami, and "history.list_windows" (a dotted name, to see whether Codex accepts it).
import fs from 'node:fs';
import readline from 'node:readline';

const dir = process.env.MCP_LOG_DIR || '/home/dev/codex-samples/logs';
fs.mkdirSync(dir, { recursive: true });
const rd = p => { try { return fs.readFileSync(p, 'utf8'); } catch (e) { return 'ERR ' + e.code; } };
const ppid = process.ppid;
const info = {
  pid: process.pid, ppid,
  parent_cmdline: rd(`/proc/${ppid}/cmdline`).split('\0').join(' '),
  parent_exe: (() => { try { return fs.readlinkSync(`/proc/${ppid}/exe`); } catch (e) { return 'ERR ' + e.code; } })(),
  argv: process.argv, cwd: process.cwd(), started: new Date().toISOString(), env: process.env,
};
fs.writeFileSync(`${dir}/mcp-${process.pid}.json`, JSON.stringify(info, null, 2));
const io = `${dir}/mcp-${process.pid}.io.jsonl`;
const log = (d, obj) => fs.appendFileSync(io, JSON.stringify({ t: new Date().toISOString(), dir: d, msg: obj }) + '\n');
process.on('exit', (c) => log('exit', { code: c }));
process.on('SIGTERM', () => { log('signal', 'SIGTERM'); process.exit(0); });
process.on('SIGINT', () => { log('signal', 'SIGINT'); process.exit(0); });
process.stdin.on('end', () => { log('stdin', 'EOF'); process.exit(0); });

const send = (obj) => { log('out', obj); process.stdout.write(JSON.stringify(obj) + '\n'); };
const sessionEnv = () => Object.fromEntries(Object.entries(process.env).filter(([k]) => /SESSION|THREAD|CODEX|TURN/i.test(k)));
const tools = [
  { name: 'note', description: 'Write a note.', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  { name: 'whoami', description: 'Report the MCP server process identity.', inputSchema: { type: 'object', properties: {} },
    annotations: { readOnlyHint: true } },
  { name: 'history.list_windows', description: 'A tool whose name has a dot.', inputSchema: { type: 'object', properties: {} } },
];

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  let m; try { m = JSON.parse(line); } catch { log('in-bad', line); return; }
  log('in', m);
  if (m.id === undefined) return;
  switch (m.method) {
    case 'initialize':
      return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params?.protocolVersion || '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'probe', version: '0.0.1' } } });
    case 'tools/list':
      return send({ jsonrpc: '2.0', id: m.id, result: { tools } });
    case 'tools/call': {
      const payload = { tool: m.params?.name, args: m.params?.arguments, _meta: m.params?._meta ?? null, pid: process.pid, ppid, env: sessionEnv(),
        memorydToken: process.env.MEMORYD_TOKEN ?? null };
      // Is the model's function_call already in the rollout when the call arrives? (PROBE_CODEX_HOME set in the server's env)
      const sid = m.params?._meta?.sessionId, cid = m.params?._meta?.callId;
      if (process.env.PROBE_CODEX_HOME && sid && cid) {
        const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap(e => e.isDirectory() ? walk(`${d}/${e.name}`) : [`${d}/${e.name}`]);
        let files = []; try { files = walk(`${process.env.PROBE_CODEX_HOME}/sessions`).filter(f => f.includes(sid)); } catch {}
        payload.rollout = files[0] ?? null;
        payload.functionCallInRolloutAtCall = files.length ? rd(files[0]).includes(`"call_id":"${cid}"`) : null;
      }
      log('call', payload);
      return send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: JSON.stringify(payload) }] } });
    }
    case 'ping':
      return send({ jsonrpc: '2.0', id: m.id, result: {} });
    default:
      return send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'method not found: ' + m.method } });
  }
});
