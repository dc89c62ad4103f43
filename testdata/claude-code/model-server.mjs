// Scripted Anthropic-Messages-compatible model server for driving the real `claude` CLI offline.
// Usage: node model-server.mjs [port] [logfile]   (port 0: a free one, printed as {"port":N} on stdout)
//   env MS_PORT (default 8787), MS_LOG (default $CC/logs/model-requests.jsonl)
// Every request (method, path, headers, parsed body) is appended to the log as one JSON line.
// POST /v1/messages answers (streaming SSE if body.stream, else plain JSON) according to rules (first match wins,
// looking at the last role:"user" message):
//   - body.output_config.format is a json_schema (session-title request) -> text {"title":"Scripted session title"}
//   - it holds Claude Code's compaction prompt   -> text "<analysis>..</analysis><summary>SCRIPTED SUMMARY..</summary>"
//   - last user message is a tool_result            -> text "TOOL_RESULT_SEEN: <first 200 chars of result>"
//   - last user text contains "CALL_TOOL <name> <json>" and a tool named <name> is offered
//                                                   -> tool_use of that tool with that input
//   - otherwise                                     -> text "SCRIPTED_REPLY"
// env MS_INPUT_TOKENS=N: report usage.input_tokens=N on every answer (drives auto-compaction).
// POST /v1/messages/count_tokens answers {"input_tokens": N}.
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';

const port = Number(process.argv[2] || process.env.MS_PORT || 8787);
const logFile = process.argv[3] || process.env.MS_LOG || (process.env.CC ?? '.') + '/logs/model-requests.jsonl';
fs.mkdirSync(path.dirname(logFile), { recursive: true });
let seq = 0;

function textOf(content) {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content.map(b => (b.type === 'text' ? b.text : '')).join('\n');
}

function decide(body) {
  const msgs = body.messages || [];
  // Claude Code 2.1.x may append role:"system" messages (beta mid-conversation-system); use the last user message.
  const users = msgs.filter(m => m.role === 'user');
  const last = users[users.length - 1] || {};
  const tools = (body.tools || []).map(t => t.name);
  const lt = textOf(last.content);
  // Session-title request (interactive mode): tools=[], output_config.format is a JSON schema {title}.
  if (body.output_config?.format?.type === 'json_schema') {
    return { kind: 'text', text: JSON.stringify({ title: 'Scripted session title' }) };
  }
  // Compaction request (manual /compact or auto-compact): Claude Code appends its summary prompt as a text block
  // to the last user message (which may also hold tool_result blocks).
  if (/Please provide your summary based on the conversation so far|create a detailed summary of the conversation/i.test(lt)) {
    return { kind: 'text', text: '<analysis>scripted</analysis>\n<summary>SCRIPTED SUMMARY of the conversation so far.</summary>' };
  }
  if (Array.isArray(last.content)) {
    const tr = last.content.find(b => b.type === 'tool_result');
    if (tr) {
      const c = typeof tr.content === 'string' ? tr.content : textOf(tr.content);
      return { kind: 'text', text: 'TOOL_RESULT_SEEN: ' + String(c).slice(0, 200) };
    }
  }
  const m = lt.match(/CALL_TOOL (\S+) (\{.*\})/);
  if (m && tools.includes(m[1])) {
    return { kind: 'tool_use', name: m[1], input: JSON.parse(m[2]) };
  }
  return { kind: 'text', text: 'SCRIPTED_REPLY' };
}

function sse(res, event, data) {
  res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
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
    if (req.method === 'POST' && url === '/v1/messages/count_tokens') {
      fs.appendFileSync(logFile, JSON.stringify(entry) + '\n');
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ input_tokens: 1234 }));
    }
    if (req.method === 'POST' && url === '/v1/messages') {
      const d = decide(body || {});
      entry.decision = d;
      fs.appendFileSync(logFile, JSON.stringify(entry) + '\n');
      const id = 'msg_scripted_' + n;
      // MS_INPUT_TOKENS=N makes every answer report N input tokens (to push Claude Code into auto-compaction).
      const usage = { input_tokens: Number(process.env.MS_INPUT_TOKENS || 0) || 1000 + n, output_tokens: 20, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
      const content = d.kind === 'tool_use'
        ? [{ type: 'tool_use', id: 'toolu_scripted_' + n, name: d.name, input: d.input }]
        : [{ type: 'text', text: d.text }];
      const stop_reason = d.kind === 'tool_use' ? 'tool_use' : 'end_turn';
      if (!body || !body.stream) {
        res.writeHead(200, { 'content-type': 'application/json', 'request-id': 'req_' + n });
        return res.end(JSON.stringify({ id, type: 'message', role: 'assistant', model: body?.model || 'x', content, stop_reason, stop_sequence: null, usage }));
      }
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': 'req_' + n });
      sse(res, 'message_start', { type: 'message_start', message: { id, type: 'message', role: 'assistant', model: body.model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } } });
      content.forEach((b, i) => {
        if (b.type === 'text') {
          sse(res, 'content_block_start', { type: 'content_block_start', index: i, content_block: { type: 'text', text: '' } });
          sse(res, 'content_block_delta', { type: 'content_block_delta', index: i, delta: { type: 'text_delta', text: b.text } });
        } else {
          sse(res, 'content_block_start', { type: 'content_block_start', index: i, content_block: { type: 'tool_use', id: b.id, name: b.name, input: {} } });
          sse(res, 'content_block_delta', { type: 'content_block_delta', index: i, delta: { type: 'input_json_delta', partial_json: JSON.stringify(b.input) } });
        }
        sse(res, 'content_block_stop', { type: 'content_block_stop', index: i });
      });
      sse(res, 'message_delta', { type: 'message_delta', delta: { stop_reason, stop_sequence: null }, usage: { output_tokens: 20 } });
      sse(res, 'message_stop', { type: 'message_stop' });
      return res.end();
    }
    // anything else: log and 404 (the CLI may probe other endpoints)
    fs.appendFileSync(logFile, JSON.stringify(entry) + '\n');
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ type: 'error', error: { type: 'not_found_error', message: 'scripted server: ' + url } }));
  });
});
server.listen(port, '127.0.0.1', () => {
  // Port 0 takes a free port: the first line on stdout says which.
  console.log(JSON.stringify({ port: server.address().port }));
  console.error(`model-server listening on 127.0.0.1:${server.address().port}, log ${logFile}`);
});
