// A scripted OpenAI-compatible model server for the real pi CLI: POST
// /v1/chat/completions answered with SSE chunks (text or tool calls, then a
// usage chunk), every request body recorded for the tests to assert on. The
// script is a function of the request: script(body, n) returns
// { text } or { calls: [[name, args], ...] } (n counts requests from 1), either
// with promptTokens to report instead of the estimate, or a Promise of one (a
// reply held back, e.g. while a test presses keys).
import { createServer } from "node:http";

/** Starts the server on 127.0.0.1:0. Returns { url (the /v1 base), requests, close() }. */
export async function startModelServer(script) {
  const requests = [];
  let ids = 0;
  const server = createServer((req, res) => {
    let raw = "";
    req.setEncoding("utf8");
    req.on("data", (s) => (raw += s));
    req.on("end", async () => {
      if (req.method !== "POST" || !req.url.endsWith("/chat/completions")) {
        res.writeHead(404, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: `no route ${req.method} ${req.url}` } }));
        return;
      }
      const body = JSON.parse(raw);
      requests.push(body);
      let reply;
      try {
        reply = await script(body, requests.length);
      } catch (err) {
        reply = { text: `script error: ${err.stack ?? err}` };
      }
      if (res.destroyed) return; // the client gave up (aborted) while the reply was held
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      const chunk = (delta, finish = null) => ({
        id: `chatcmpl-${requests.length}`,
        object: "chat.completion.chunk",
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [{ index: 0, delta, finish_reason: finish }],
      });
      const send = (obj) => res.write(`data: ${JSON.stringify(obj)}\n\n`);
      let out = "";
      send(chunk({ role: "assistant", content: "" }));
      if (reply.calls) {
        reply.calls.forEach(([name, args], index) => {
          const a = JSON.stringify(args ?? {});
          out += name + a;
          send(chunk({ tool_calls: [{ index, id: `call_${++ids}`, type: "function", function: { name, arguments: a } }] }));
        });
        send(chunk({}, "tool_calls"));
      } else {
        out = reply.text ?? "";
        send(chunk({ content: out }));
        send(chunk({}, "stop"));
      }
      // Token accounting as a real server would report it (about 4 characters a token),
      // unless the reply names its prompt tokens (reply.promptTokens: a context near its limit).
      const prompt = reply.promptTokens ?? Math.ceil(JSON.stringify(body.messages).length / 4);
      const completion = Math.ceil(out.length / 4);
      send({ ...chunk({}), choices: [], usage: { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion } });
      res.end("data: [DONE]\n\n");
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}/v1`,
    requests,
    close: () =>
      new Promise((r) => {
        server.close(r);
        server.closeAllConnections();
      }),
  };
}

/** The text of a chat message (string or content parts). */
export function textOf(message) {
  const c = message?.content;
  if (typeof c === "string") return c;
  if (Array.isArray(c)) return c.map((p) => (p.type === "text" ? p.text : "")).join("\n");
  return "";
}

/** The conversation of a request: its messages without the system prompt. */
export function conversation(body) {
  return body.messages.filter((m) => m.role !== "system" && m.role !== "developer");
}

/** The tool results of a request's last batch, by tool name (the calls they answer). */
export function lastResults(body) {
  const msgs = body.messages;
  const out = {};
  let i = msgs.length - 1;
  while (i >= 0 && msgs[i].role === "tool") i--;
  const call = msgs[i];
  for (const m of msgs.slice(i + 1)) {
    const tc = call?.tool_calls?.find((c) => c.id === m.tool_call_id);
    out[tc?.function.name ?? m.tool_call_id] = textOf(m);
  }
  return out;
}
