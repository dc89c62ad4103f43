// Port squatting (SECURITY.md): a program on memoryd's address that answers
// like memoryd (its /healthz, 200 with JSON everywhere) but does not hold
// the user's token gets neither the token nor any data from the client:
// the client asks for the server's proof first (GET /v1/proof) and refuses
// with "unproven". Three rogues: one without the route, one with a made-up
// proof, and one relaying the nonce to the real memoryd listening on
// another port (its proof is for that other address).
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import { MemorydClient, isMemorydError } from "@memoryd/client";
import { startMemoryd } from "../../testing/memoryd.mjs";

let md;

before(async () => {
  md = await startMemoryd();
});

after(async () => {
  assert.equal((await md.stop()).code, 0);
});

/** A rogue on 127.0.0.1:0 that records every request; proof(nonce) answers /v1/proof. */
async function rogue(proof) {
  const seen = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c) => (body += c));
    req.on("end", async () => {
      seen.push({ path: req.url, authorization: req.headers.authorization, body });
      const url = new URL(req.url, "http://x");
      let answer = { status: "ok", service: "memoryd", position: 1 };
      if (url.pathname === "/v1/proof") answer = await proof(url.searchParams.get("nonce"));
      if (answer === undefined) {
        res.writeHead(404, { "content-type": "application/json" }).end('{"error":{"code":"not_found","message":"no such route","details":{}}}');
        return;
      }
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(answer));
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${server.address().port}`, seen, close: () => new Promise((r) => server.close(r)) };
}

const rogues = {
  "without /v1/proof": () => undefined,
  "with a made-up proof": () => ({ service: "memoryd", address: "127.0.0.1:1", proof: "00".repeat(32) }),
  "relaying to the real memoryd": async (nonce) => {
    const res = await fetch(`${md.url}/v1/proof?nonce=${nonce}`);
    return res.json();
  },
};

for (const [name, proof] of Object.entries(rogues)) {
  test(`a rogue ${name} gets neither the token nor the session`, async () => {
    const r = await rogue(proof);
    try {
      const client = new MemorydClient({ baseUrl: r.url, token: md.token });
      assert.equal((await client.health()).service, "memoryd", "it answers /healthz as memoryd would");
      const err = await client
        .attach({ session_key: "/home/u/secret-session.jsonl", session_id: "s1", session_file: "/home/u/secret-session.jsonl", task: null, budget: {} })
        .then(() => undefined, (e) => e);
      assert.ok(isMemorydError(err, "unproven"), `attach: ${err}`);
      assert.match(err.message, new RegExp(`^${r.url} answered, but did not prove it is the memoryd holding this token`));
      assert.match(err.message, /neither the token nor any session data was sent/);
      assert.ok(!r.seen.some((s) => s.authorization), `a request carried the token: ${JSON.stringify(r.seen)}`);
      assert.ok(!r.seen.some((s) => s.body.includes("secret-session")), "the session key was sent");
      assert.deepEqual(
        r.seen.map((s) => new URL(s.path, "http://x").pathname),
        ["/healthz", "/v1/proof"],
      );
    } finally {
      await r.close();
    }
  });
}

test("the real memoryd proves itself and the session attaches", async () => {
  const client = new MemorydClient({ baseUrl: md.url, token: md.token });
  const a = await client.attach({ session_key: "/s/proof.jsonl", session_id: "p1", session_file: "", task: null, budget: {} });
  assert.equal(a.agent, "/root");
});
