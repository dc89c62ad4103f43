// Scripted OpenAI-Responses-compatible model server for driving the real `codex` CLI offline.
// Usage: node model-server.mjs [port] [logfile]   (port 0: a free one, printed as {"port":N} on stdout)
// Every request (method, url, headers, parsed body) is appended to the log as one JSON line, with the decision.
// POST .../responses answers with SSE (response.created, output_item.added/done, output_text.delta, response.completed),
// deciding from body.input (first rule wins):
//   - the TUI's title request ("Generate a concise, single-line task title")  -> text "Scripted title"
//   - the last user message is Codex's compaction prompt          -> text "SCRIPTED SUMMARY ..."
//   - the last input item is the output of spawn_agent             -> function_call wait_agent {targets:[agent_id]}
//   - the last input item is a function_call_output               -> text "TOOL_RESULT_SEEN: <first 300 chars>"
//   - the last user text has "CALL_TOOL <name> <json>"           -> function_call name=<name> (namespace split if
//                                                                    the offered tool is inside a namespace)
//   - otherwise                                                   -> text "SCRIPTED_REPLY to: <first 80 chars>"
// The last user text containing "REASON" adds a reasoning item (summary + encrypted_content) before the answer.
// env MS_INPUT_TOKENS=N: report usage.input_tokens=N on every answer (drives auto-compaction).
// POST .../responses/compact answers {output:[...]} (remote compaction endpoint), logged too.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const port = Number(process.argv[2] || process.env.MS_PORT || 8790);
const logFile = process.argv[3] || process.env.MS_LOG;
if (!logFile) throw new Error('usage: model-server.mjs PORT LOGFILE (or MS_LOG)');
fs.mkdirSync(path.dirname(logFile), { recursive: true });
let seq = 0;

const textOf = (content) => typeof content === 'string' ? content
  : Array.isArray(content) ? content.map(b => b.text ?? '').join('\n') : '';

// All tool names offered, flattening namespaces: [{name, namespace}]
function offeredTools(body) {
  const out = [];
  for (const t of body.tools || []) {
    if (t.type === 'namespace' && Array.isArray(t.tools)) for (const s of t.tools) out.push({ name: s.name, namespace: t.name });
    else if (t.name) out.push({ name: t.name });
  }
  return out;
}

function decide(body) {
  const input = Array.isArray(body.input) ? body.input : [];
  const last = input[input.length - 1] || {};
  const users = input.filter(i => i.type === 'message' && i.role === 'user');
  const lu = textOf(users[users.length - 1]?.content);
  const reason = /REASON/.test(lu);
  // TUI thread-title request (tools: [], a separate window): answer a plain title.
  if (/Generate a concise, single-line task title/.test(lu)) return { kind: 'text', text: 'Scripted title' };
  if (/CONTEXT CHECKPOINT COMPACTION|handoff summary|summariz(e|ation) (the|this) conversation/i.test(lu)) {
    return { kind: 'text', text: 'SCRIPTED SUMMARY of the conversation so far (compaction).' };
  }
  if (last.type === 'function_call_output' || last.type === 'custom_tool_call_output' || last.type === 'mcp_tool_call_output') {
    const o = typeof last.output === 'string' ? last.output : JSON.stringify(last.output);
    // After spawn_agent: wait for the sub-agent (so that `codex exec` does not end before it).
    const call = input.find(i => i.type === 'function_call' && i.call_id === last.call_id);
    const aid = /"agent_id":"([^"]+)"/.exec(o);
    if (call?.name === 'spawn_agent' && aid) {
      return { kind: 'function_call', name: 'wait_agent', namespace: call.namespace, args: JSON.stringify({ targets: [aid[1]], timeout_ms: 30000 }), offered: true };
    }
    return { kind: 'text', text: 'TOOL_RESULT_SEEN: ' + String(o).slice(0, 300), reason };
  }
  const m = lu.match(/CALL_TOOL (\S+) (\{.*\})/);
  if (m) {
    const tools = offeredTools(body);
    const t = tools.find(t => t.name === m[1]) || tools.find(t => (t.namespace || '') + t.name === m[1] || `${t.namespace}__${t.name}` === m[1])
      || tools.find(t => t.name.endsWith(m[1]));
    return { kind: 'function_call', name: t ? t.name : m[1], namespace: t?.namespace, args: m[2], offered: !!t, reason };
  }
  return { kind: 'text', text: 'SCRIPTED_REPLY to: ' + lu.slice(0, 80).replace(/\s+/g, ' '), reason };
}

function sse(res, data) {
  res.write(`event: ${data.type}\ndata: ${JSON.stringify(data)}\n\n`);
}

function usageFor(n) {
  const inTok = Number(process.env.MS_INPUT_TOKENS || 0) || 1000 + n;
  return { input_tokens: inTok, input_tokens_details: { cached_tokens: 0 }, output_tokens: 20,
    output_tokens_details: { reasoning_tokens: 5 }, total_tokens: inTok + 20 };
}

const server = http.createServer((req, res) => {
  let raw = '';
  req.on('data', c => (raw += c));
  req.on('end', () => {
    let body = null;
    try { body = raw ? JSON.parse(raw) : null; } catch { body = { _unparsed: raw.slice(0, 2000) }; }
    const n = ++seq;
    const entry = { seq: n, time: new Date().toISOString(), method: req.method, url: req.url, headers: req.headers, body };
    const url = req.url.split('?')[0];
    if (req.method === 'POST' && url.endsWith('/responses/compact')) {
      entry.decision = { kind: 'remote-compact' };
      fs.appendFileSync(logFile, JSON.stringify(entry) + '\n');
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ output: [
        { type: 'message', role: 'user', content: [{ type: 'input_text', text: 'REMOTE COMPACTED SUMMARY' }] },
      ] }));
    }
    if (req.method === 'POST' && url.endsWith('/responses')) {
      const d = decide(body || {});
      entry.decision = d;
      fs.appendFileSync(logFile, JSON.stringify(entry) + '\n');
      const rid = 'resp_scripted_' + n;
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'x-request-id': 'req_' + n });
      sse(res, { type: 'response.created', response: { id: rid } });
      const items = [];
      if (d.reason) {
        items.push({ type: 'reasoning', id: 'rs_scripted_' + n, summary: [{ type: 'summary_text', text: 'SCRIPTED REASONING ' + n }],
          content: null, encrypted_content: 'ENCRYPTED_' + n });
      }
      if (d.kind === 'function_call') {
        const fc = { type: 'function_call', id: 'fc_scripted_' + n, call_id: 'call_scripted_' + n, name: d.name, arguments: d.args, status: 'completed' };
        if (d.namespace) fc.namespace = d.namespace;
        items.push(fc);
      } else {
        items.push({ type: 'message', id: 'msg_scripted_' + n, role: 'assistant', status: 'completed',
          content: [{ type: 'output_text', text: d.text, annotations: [] }] });
      }
      items.forEach((item, i) => {
        if (item.type === 'message') {
          sse(res, { type: 'response.output_item.added', output_index: i, item: { ...item, content: [] } });
          sse(res, { type: 'response.output_text.delta', item_id: item.id, output_index: i, content_index: 0, delta: item.content[0].text });
        } else {
          sse(res, { type: 'response.output_item.added', output_index: i, item });
        }
        sse(res, { type: 'response.output_item.done', output_index: i, item });
      });
      sse(res, { type: 'response.completed', response: { id: rid, usage: usageFor(n) } });
      return res.end();
    }
    fs.appendFileSync(logFile, JSON.stringify(entry) + '\n');
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { message: 'scripted server: no route ' + url, type: 'not_found' } }));
  });
});
server.listen(port, '127.0.0.1', () => {
  console.log(JSON.stringify({ port: server.address().port }));
  console.error(`model-server listening on 127.0.0.1:${server.address().port}, log ${logFile}`);
});
