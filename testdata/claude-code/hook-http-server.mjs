// Receiver for Claude Code `http` hooks. Logs method, url, headers, body to $CC/logs/http-hooks.jsonl.
// For SessionStart bodies it answers with hookSpecificOutput.additionalContext (marker HTTP_HOOK_MARKER).
// Usage: node hook-http-server.mjs [port]   (default 8788)
import http from 'node:http';
import fs from 'node:fs';
const port = Number(process.argv[2] || 8788);
const logFile = process.env.HH_LOG || (process.env.CC ?? '.') + '/logs/http-hooks.jsonl';
fs.mkdirSync((process.env.CC ?? '.') + '/logs', { recursive: true });
http.createServer((req, res) => {
  let raw = '';
  req.on('data', c => (raw += c));
  req.on('end', () => {
    let body; try { body = JSON.parse(raw); } catch { body = raw; }
    fs.appendFileSync(logFile, JSON.stringify({ time: new Date().toISOString(), method: req.method, url: req.url, headers: req.headers, body, remotePort: req.socket.remotePort }) + '\n');
    res.writeHead(200, { 'content-type': 'application/json' });
    if (body && body.hook_event_name === 'SessionStart') {
      return res.end(JSON.stringify({ hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: 'HTTP_HOOK_MARKER source=' + body.source } }));
    }
    res.end('{}');
  });
}).listen(port, '127.0.0.1', () => console.error('hook-http-server on ' + port));
