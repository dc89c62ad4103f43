#!/usr/bin/env node
// Tiny MCP stdio server (newline-delimited JSON-RPC) that records how the host started it.
// On start it writes $CC/logs/mcp-<pid>.json with: pid, ppid, parent's cmdline/exe, argv, cwd, full env,
// and start time; every stdin line and every reply is appended to $CC/logs/mcp-<pid>.io.jsonl.
// Tools: "note" (echoes input, and returns its own pid/ppid and env session ids) and "whoami".
import fs from 'node:fs';
import readline from 'node:readline';

const dir = process.env.MCP_LOG_DIR || (process.env.CC ?? '.') + '/logs';
fs.mkdirSync(dir, { recursive: true });
const rd = p => { try { return fs.readFileSync(p, 'utf8'); } catch (e) { return 'ERR ' + e.code; } };
const ppid = process.ppid;
const info = {
  pid: process.pid,
  ppid,
  parent_cmdline: rd(`/proc/${ppid}/cmdline`).split('\0').join(' '),
  parent_exe: (() => { try { return fs.readlinkSync(`/proc/${ppid}/exe`); } catch (e) { return 'ERR ' + e.code; } })(),
  parent_stat: rd(`/proc/${ppid}/stat`),
  argv: process.argv,
  cwd: process.cwd(),
  started: new Date().toISOString(),
  env: process.env,
};
fs.writeFileSync(`${dir}/mcp-${process.pid}.json`, JSON.stringify(info, null, 2));
const io = `${dir}/mcp-${process.pid}.io.jsonl`;
const log = (dirn, obj) => fs.appendFileSync(io, JSON.stringify({ t: new Date().toISOString(), dir: dirn, msg: obj }) + '\n');
process.on('exit', (c) => log('exit', { code: c }));
process.on('SIGTERM', () => { log('signal', 'SIGTERM'); process.exit(0); });
process.on('SIGINT', () => { log('signal', 'SIGINT'); process.exit(0); });
process.stdin.on('end', () => { log('stdin', 'EOF'); process.exit(0); });

const send = (obj) => { log('out', obj); process.stdout.write(JSON.stringify(obj) + '\n'); };
const sessionEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => /SESSION|CLAUDE|ANTHROPIC|ENTRYPOINT|PPID/i.test(k)));
const tools = [
  { name: 'note', description: 'Write a note.', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
  { name: 'whoami', description: 'Report the MCP server process identity.', inputSchema: { type: 'object', properties: {} } },
];

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  let m; try { m = JSON.parse(line); } catch { log('in-bad', line); return; }
  log('in', m);
  if (m.id === undefined) return; // notification
  switch (m.method) {
    case 'initialize':
      return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: m.params?.protocolVersion || '2025-06-18', capabilities: { tools: {} }, serverInfo: { name: 'probe', version: '0.0.1' } } });
    case 'tools/list':
      return send({ jsonrpc: '2.0', id: m.id, result: { tools } });
    case 'tools/call': {
      // Claude Code keeps ~/.claude/sessions/<pid>.json (pid -> current sessionId, procStart); read it at call time.
      const cfg = process.env.CLAUDE_CONFIG_DIR || `${process.env.HOME}/.claude`;
      let hostSession = null;
      try { hostSession = JSON.parse(fs.readFileSync(`${cfg}/sessions/${ppid}.json`, 'utf8')); } catch (e) { hostSession = 'ERR ' + e.code; }
      const parentStart = rd(`/proc/${ppid}/stat`).split(') ')[1]?.split(' ')[19];
      const payload = { tool: m.params?.name, args: m.params?.arguments, _meta: m.params?._meta ?? null, pid: process.pid, ppid,
        hostSessionId: hostSession?.sessionId, hostProcStart: hostSession?.procStart, parentStart, envSessionId: process.env.CLAUDE_CODE_SESSION_ID };
      // Is the model's tool_use already in the transcript when the call arrives? (slug = cwd with non-alnum -> '-')
      const tuid = m.params?._meta?.['claudecode/toolUseId'];
      if (tuid && hostSession?.sessionId) {
        const tp = `${cfg}/projects/${(hostSession.cwd || process.cwd()).replace(/[^A-Za-z0-9]/g, '-')}/${hostSession.sessionId}.jsonl`;
        let txt = ''; try { txt = fs.readFileSync(tp, 'utf8'); } catch {}
        payload.toolUseInTranscriptAtCall = txt.includes(`"id":"${tuid}"`);
      }
      log('call-binding', payload);
      return send({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: JSON.stringify(payload) }] } });
    }
    case 'ping':
      return send({ jsonrpc: '2.0', id: m.id, result: {} });
    default:
      return send({ jsonrpc: '2.0', id: m.id, error: { code: -32601, message: 'method not found: ' + m.method } });
  }
});
