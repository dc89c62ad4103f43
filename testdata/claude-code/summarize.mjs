// Summarize one experiment's logs in $CC/logs (or argv[2]) in time order:
// hooks (event, source/reason, session_id, claude pid), MCP server starts/exits (pid, ppid, env session id),
// MCP tool calls (_meta), model requests (session header, marker hits, decision).
import fs from 'node:fs';
const dir = process.argv[2] || (process.env.CC ?? '.') + '/logs';
const rows = [];
for (const f of fs.readdirSync(dir)) {
  const p = `${dir}/${f}`;
  let m;
  if ((m = f.match(/^hook-(\w+)-(\d+)\.json$/))) {
    const j = JSON.parse(fs.readFileSync(p, 'utf8') || '{}');
    const proc = fs.readFileSync(p.replace(/\.json$/, '.proc'), 'utf8');
    const env = fs.readFileSync(p.replace(/\.json$/, '.env'), 'utf8');
    const gp = (proc.match(/^grandparent=(\d+)/m) || [])[1];
    const envSid = (env.match(/^CLAUDE_CODE_SESSION_ID=(.*)$/m) || [])[1];
    const t = new Date(fs.statSync(p).mtimeMs).toISOString();
    rows.push([t, `HOOK ${m[1]} src=${j.source || j.reason || j.trigger || ''} sid=${j.session_id} env_sid=${envSid} claude_pid=${gp} ${j.tool_use_id ? 'tool_use_id=' + j.tool_use_id : ''}${j.custom_instructions !== undefined ? ' custom_instructions=' + JSON.stringify(j.custom_instructions) : ''}`]);
  } else if ((m = f.match(/^mcp-(\d+)\.json$/))) {
    const j = JSON.parse(fs.readFileSync(p, 'utf8'));
    rows.push([j.started, `MCP START pid=${j.pid} ppid=${j.ppid} scope=${j.env.PROBE_SCOPE} env_sid=${j.env.CLAUDE_CODE_SESSION_ID}`]);
    const io = `${dir}/mcp-${m[1]}.io.jsonl`;
    if (fs.existsSync(io)) for (const l of fs.readFileSync(io, 'utf8').trim().split('\n')) {
      const e = JSON.parse(l);
      if (e.dir === 'in' && e.msg.method === 'tools/call') rows.push([e.t, `MCP CALL pid=${j.pid} ${e.msg.params.name} _meta=${JSON.stringify(e.msg.params._meta)}`]);
      if (e.dir === 'in' && e.msg.method === 'initialize') rows.push([e.t, `MCP INIT pid=${j.pid}`]);
      if (e.dir === 'signal' || e.dir === 'exit' || (e.dir === 'stdin')) rows.push([e.t, `MCP ${e.dir} pid=${j.pid} ${JSON.stringify(e.msg)}`]);
    }
  } else if (f === 'model-requests.jsonl') {
    for (const l of fs.readFileSync(p, 'utf8').trim().split('\n').filter(Boolean)) {
      const e = JSON.parse(l);
      if (!e.url.startsWith('/v1/messages')) continue;
      const s = JSON.stringify(e.body);
      const markers = [...new Set(s.match(/(MEMORYD_BOOTSTRAP_MARKER|HTTP_HOOK_MARKER) source=\w+/g) || [])];
      rows.push([e.time, `MODEL #${e.seq} sid=${e.headers['x-claude-code-session-id']} model=${e.body?.model} msgs=${e.body?.messages?.length} markers=${JSON.stringify(markers)} -> ${JSON.stringify(e.decision || '').slice(0, 90)}`]);
    }
  } else if (f === 'http-hooks.jsonl') {
    for (const l of fs.readFileSync(p, 'utf8').trim().split('\n').filter(Boolean)) {
      const e = JSON.parse(l);
      rows.push([e.time, `HTTPHOOK ${e.url} ${e.body.hook_event_name} src=${e.body.source || e.body.reason || e.body.trigger || ''} sid=${e.body.session_id} auth=${e.headers.authorization || ''}`]);
    }
  }
}
rows.sort((a, b) => a[0].localeCompare(b[0]));
for (const [t, s] of rows) console.log(t.slice(11, 23), s);
