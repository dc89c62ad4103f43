// The real pi CLI (print mode, one tool call) when memoryd's address is
// answered by something the session cannot use: another HTTP server holding
// the port, a memoryd that cannot prove it holds the session's token, or a
// rogue answering like memoryd (port squatting), which gets neither the
// token nor any session data. The extension says what answers in one stderr
// line and in the tool result the model sees, starts no memoryd (one could
// not bind the port; MEMORYD_BIN is set, so it could try), and does not ask
// again at every request: the other server sees at most two /healthz
// requests from the pi process, whatever the number of requests (session
// start, the prompt, the tool call).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { join } from "node:path";
import { test } from "node:test";

import { hangGuardMs, memorydBinary, startMemoryd } from "../../../testing/memoryd.mjs";
import { lastResults, startModelServer } from "../cli/model-server.mjs";
import { freshSetup, runPi, traced } from "../cli/pi-cli.mjs";

/** An HTTP server that is not memoryd: 404 with an HTML page to every request, each one recorded. */
async function startForeignServer() {
  const requests = [];
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    res.writeHead(404, { "content-type": "text/html; charset=utf-8" });
    res.end("<!doctype html><title>Not Found</title><h1>Not Found</h1>");
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    requests,
    close: () =>
      new Promise((r) => {
        server.close(r);
        server.closeAllConnections();
      }),
  };
}

/** The model writes a note once, then answers with what the tool returned. */
const oneToolCall = (body) =>
  body.messages.at(-1).role === "tool" ? { text: `DONE ${JSON.stringify(lastResults(body))}` } : { calls: [["notes_write_file", { path: "a.md", text: "a" }]] };

/** The extension's lines for the user on stderr (its MEMORYD_DEBUG trace, `[memoryd] <event> {...}`, left out). */
const said = (stderr) => stderr.split("\n").filter((l) => l.startsWith("[memoryd] ") && !/^\[memoryd\] \w+ (\{.*)?$/.test(l));

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Runs `pi -p` with one tool call against env; returns pi's stderr and the result the model got from the tool. */
async function promptOnce(env) {
  const model = await startModelServer(oneToolCall);
  const setup = freshSetup(model.url);
  try {
    const run = await runPi(setup, ["-p", "take a note"], {
      env: { MEMORYD_BIN: await memorydBinary(), XDG_DATA_HOME: join(setup.dir, "xdg"), MEMORYD_DEBUG: "1", ...env },
    });
    assert.equal(run.code, 0, run.stderr);
    assert.equal(model.requests.length, 2, "the tool call, then the answer");
    assert.deepEqual(traced(run.stderr, "spawn"), [], `no memoryd was started; stderr:\n${run.stderr}`);
    return { stderr: run.stderr, result: lastResults(model.requests[1]).notes_write_file };
  } finally {
    await model.close();
    setup.remove();
  }
}

test("another HTTP server on memoryd's address: one line naming it and how to choose another port, no start, no probe per request", { timeout: hangGuardMs }, async () => {
  const foreign = await startForeignServer();
  try {
    const { stderr, result } = await promptOnce({ MEMORYD_URL: foreign.url });
    const cause = `${escape(foreign.url)} is answered by something that is not memoryd \\(HTTP 404, text/html\\)`;
    const fix = "choose another port for memoryd \\(MEMORYD_ADDR=127\\.0\\.0\\.1:<port>, or MEMORYD_URL when it is set\\)";
    const lines = said(stderr);
    assert.equal(lines.length, 1, stderr);
    assert.match(lines[0], new RegExp(`^\\[memoryd\\] ${cause}; ${fix}; the memory tools fail until then$`));
    assert.match(result, new RegExp(`^memoryd is not available \\(${cause}\\)\\. The memory tools do not work in this session; the user has been told how to fix it\\.$`));
    // The verdict is kept: session start asks (its /healthz, then a look at what answered); the prompt and the tool call do not.
    const probes = foreign.requests.filter((r) => r === "GET /healthz");
    assert.ok(probes.length >= 1 && probes.length <= 2, `${probes.length} /healthz requests`);
    assert.deepEqual(foreign.requests, probes, "nothing but /healthz was asked");
  } finally {
    await foreign.close();
  }
});

/** The verdict's fix when what answers as memoryd does not prove it holds the token. */
const unprovenFix =
  "if it is your memoryd, set MEMORYD_TOKEN to its token; otherwise another program holds its port: stop it, or choose another port for memoryd \\(MEMORYD_ADDR=127\\.0\\.0\\.1:<port>, or MEMORYD_URL when it is set\\)";

test("a memoryd that does not prove it holds the token (another token), or no token: one line, no start", { timeout: hangGuardMs }, async () => {
  const md = await startMemoryd();
  const url = escape(md.url);
  try {
    const wrong = await promptOnce({ MEMORYD_URL: md.url, MEMORYD_TOKEN: `not-${md.token}` });
    const cause = `${url} answers as memoryd but did not prove it holds this session's token \\(a proof that does not match this token\\); the token and the session were not sent to it`;
    assert.deepEqual(said(wrong.stderr).length, 1, wrong.stderr);
    assert.match(said(wrong.stderr)[0], new RegExp(`^\\[memoryd\\] ${cause}; ${unprovenFix}; the memory tools fail until then$`));
    assert.match(wrong.result, new RegExp(`^memoryd is not available \\(${cause}\\)\\. The memory tools do not work in this session; the user has been told how to fix it\\.$`));

    // No MEMORYD_TOKEN, and no token file where the extension looks (memoryd's database is elsewhere).
    const none = await promptOnce({ MEMORYD_URL: md.url });
    assert.deepEqual(said(none.stderr).length, 1, none.stderr);
    const fix = "set MEMORYD_TOKEN to its token \\(the file token beside its database\\)";
    assert.match(said(none.stderr)[0], new RegExp(`^\\[memoryd\\] memoryd at ${url} is reachable, but there is no token for it \\(no MEMORYD_TOKEN, no \\S+/token\\); ${fix}; `));
  } finally {
    assert.equal((await md.stop()).code, 0, md.stderr());
  }
});

/**
 * A rogue on memoryd's address that answers everything as memoryd would
 * (its /healthz, 200 and JSON to every route, a made-up /v1/proof), every
 * request recorded with its Authorization header and body.
 */
async function startRogue() {
  const requests = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", () => {
      requests.push({ path: new URL(req.url, "http://x").pathname, authorization: req.headers.authorization, body });
      const answer = req.url.startsWith("/v1/proof")
        ? { service: "memoryd", address: `127.0.0.1:${server.address().port}`, proof: "ab".repeat(32) }
        : { status: "ok", service: "memoryd", position: 7, tools: [] };
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}`, requests, close: () => new Promise((r) => (server.close(r), server.closeAllConnections())) };
}

test("a rogue answering like memoryd on its address (port squatting) gets neither the token nor the session; the user is told", { timeout: hangGuardMs }, async () => {
  const rogue = await startRogue();
  try {
    const { stderr, result } = await promptOnce({ MEMORYD_URL: rogue.url, MEMORYD_TOKEN: "the-users-secret-token" });
    assert.ok(!rogue.requests.some((r) => r.authorization), `the rogue got an Authorization header: ${JSON.stringify(rogue.requests)}`);
    assert.ok(!rogue.requests.some((r) => r.body !== ""), `the rogue got a request body: ${JSON.stringify(rogue.requests)}`);
    assert.deepEqual([...new Set(rogue.requests.map((r) => r.path))].sort(), ["/healthz", "/v1/proof"]);
    const cause = `${escape(rogue.url)} answers as memoryd but did not prove it holds this session's token \\(a proof that does not match this token\\)`;
    assert.equal(said(stderr).length, 1, stderr);
    assert.match(said(stderr)[0], new RegExp(`^\\[memoryd\\] ${cause}`));
    assert.match(result, new RegExp(`^memoryd is not available \\(${cause}`));
  } finally {
    await rogue.close();
  }
});
