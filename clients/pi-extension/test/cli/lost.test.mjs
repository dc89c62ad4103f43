// The real pi CLI (RPC mode, Pi's default settings) when memoryd goes away in
// the middle of a session: the heartbeat (MEMORYD_HEARTBEAT=1s here, a minute
// by default), or a tool call that finds memoryd gone, notices it and says so
// in one stderr line; with a memoryd binary to start, the extension starts
// memoryd again and attaches the session again, and the tool call works
// against the new memoryd; with MEMORYD_AUTOSTART=0 the tool call fails with
// a clear reason until memoryd runs again, then the session attaches again by
// itself.
import assert from "node:assert/strict";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { freePort, hangGuardMs, memorydBinary, startMemoryd } from "../../../testing/memoryd.mjs";
import { attaches, healthz, killMemoryd, servingPids, waitFor } from "../start/pi-cli.mjs";
import { lastResults, startModelServer, textOf } from "./model-server.mjs";
import { freshSetup, startRpc, traced } from "./pi-cli.mjs";

/** The model writes a note, reads it back, then answers with what it read. */
function noteScript(path) {
  return (body) => {
    const last = body.messages.at(-1);
    if (last.role !== "tool") return { calls: [["notes_write_file", { path, text: `written to ${path}` }]] };
    const r = lastResults(body);
    if (r.notes_write_file !== undefined && !/fail|not available|could not/i.test(r.notes_write_file)) return { calls: [["notes_read_file", { path }]] };
    return { text: `DONE ${JSON.stringify(r)}` };
  };
}

/** Sends a prompt and resolves with the events of its run, up to agent_settled. */
async function ask(rpc, message) {
  const from = rpc.events.length;
  rpc.send({ type: "prompt", message });
  const ended = (ev) => ev.slice(from).some((e) => e.type === "agent_settled");
  await rpc.waitFor(ended, 60_000, `the run of "${message}" to settle`);
  return rpc.events.slice(from);
}

/**
 * The session is connected: its session_start sync, which follows the whole
 * connect (attach, then the state and the tools), is in the trace. Stopping
 * memoryd at the "attached" trace instead would cut the connect short.
 */
const connected = (stderr) => traced(stderr, "synced").some((s) => s.point === "session_start");

/** The lines of stderr that are not the extension's trace (MEMORYD_DEBUG) of the lost connection. */
const lostLines = (stderr) => stderr.split("\n").filter((l) => /^\[memoryd\] (lost the connection|memoryd at .* answers again)/.test(l));

/**
 * memoryd (started by the extension) is killed after the attach. heartbeat:
 * MEMORYD_HEARTBEAT; with one, the test waits for the heartbeat's line before
 * the prompt; without ("0"), the prompt's first call finds memoryd gone.
 */
async function killedMidSession(heartbeat) {
  const model = await startModelServer(noteScript("after-restart.md"));
  const setup = freshSetup(model.url);
  const url = `http://127.0.0.1:${await freePort()}`;
  const log = join(setup.dir, "xdg", "memoryd", "memoryd.log");
  const env = { MEMORYD_BIN: await memorydBinary(), MEMORYD_URL: url, XDG_DATA_HOME: join(setup.dir, "xdg"), MEMORYD_HEARTBEAT: heartbeat, MEMORYD_DEBUG: "1" };
  const rpc = startRpc(setup, { env });
  try {
    await waitFor(() => attaches(log).length >= 1 && connected(rpc.stderr()), 60_000, () => `the first attach; stderr:\n${rpc.stderr()}`);
    const [first] = servingPids(log);
    process.kill(first, "SIGKILL");
    if (heartbeat === "0") await waitFor(async () => !(await healthz(url)), 20_000, "the killed memoryd to stop answering");
    else await waitFor(() => lostLines(rpc.stderr()).length > 0, 30_000, () => `the lost-connection line; stderr:\n${rpc.stderr()}`);

    await ask(rpc, "take a note");
    const [line, ...more] = lostLines(rpc.stderr());
    assert.match(line ?? "", /^\[memoryd\] lost the connection to memoryd at http:\/\/127\.0\.0\.1:\d+ \(.+\); started it again \(its log: .+memoryd\.log\); the session is attached again$/, rpc.stderr());
    assert.deepEqual(more, [], "one line");
    const pids = servingPids(log);
    assert.equal(pids.length, 2, "a second memoryd serves");
    assert.notEqual(pids[1], first);
    const [attached] = traced(rpc.stderr(), "attached");
    const [reattached] = traced(rpc.stderr(), "reattached");
    assert.deepEqual([reattached?.task_id, reattached?.agent, reattached?.resumed], [attached.task_id, attached.agent, true]);
    // The write and the read went to the new memoryd.
    assert.equal(model.requests.length, 3);
    assert.match(lastResults(model.requests[2]).notes_read_file, /written to after-restart\.md/);
    assert.deepEqual(traced(rpc.stderr(), "error"), [], rpc.stderr());
  } finally {
    const exit = await rpc.stop();
    await model.close();
    for (const pid of servingPids(log)) await killMemoryd(pid, url);
    setup.remove();
    assert.equal(exit.code, 0, rpc.stderr());
  }
}

test("memoryd killed mid-session: the heartbeat starts it again and attaches the session again; the next tool call works", { timeout: hangGuardMs }, () =>
  killedMidSession("1s"),
);

test("memoryd killed mid-session, no heartbeat (MEMORYD_HEARTBEAT=0): the next tool call starts it again and works", { timeout: hangGuardMs }, () =>
  killedMidSession("0"),
);

test("memoryd stopped mid-session with MEMORYD_AUTOSTART=0: one line, a clear tool failure, then attached again when it is back", { timeout: hangGuardMs }, async () => {
  const model = await startModelServer(noteScript("while-down.md"));
  const setup = freshSetup(model.url);
  let md = await startMemoryd();
  const env = { MEMORYD_URL: md.url, MEMORYD_TOKEN: md.token, MEMORYD_AUTOSTART: "0", MEMORYD_HEARTBEAT: "1s", MEMORYD_DEBUG: "1" };
  const rpc = startRpc(setup, { env });
  const { db, dir } = md;
  try {
    await waitFor(() => connected(rpc.stderr()), 60_000, () => `the connected session; stderr:\n${rpc.stderr()}`);
    await md.stop({ keep: true });
    await waitFor(() => lostLines(rpc.stderr()).length > 0, 30_000, () => `the lost-connection line; stderr:\n${rpc.stderr()}`);
    assert.match(lostLines(rpc.stderr())[0], /^\[memoryd\] lost the connection to memoryd at http:\/\/127\.0\.0\.1:\d+ \(.+\); the memory tools fail until it runs again$/);

    // The tool call fails closed (the fence cannot be checked: the run ends there) with the reason as its result.
    const events = await ask(rpc, "take a note while memoryd is down");
    const ended = events.filter((e) => e.type === "tool_execution_end");
    assert.deepEqual(ended.map((e) => [e.toolName, e.isError]), [["notes_write_file", true]]);
    assert.match(textOf(ended[0].result), /^memoryd could not check the checkpoint fence \(memoryd is not reachable at .*\); retry when memoryd is back\.$/);
    assert.equal(lostLines(rpc.stderr()).length, 1, "said once per outage");

    // memoryd runs again (same address and database): the heartbeat attaches the session again.
    md = await startMemoryd({ token: md.token, args: ["--addr", new URL(md.url).host, "--db", db] });
    await waitFor(() => lostLines(rpc.stderr()).length > 1, 30_000, () => `the line saying memoryd is back; stderr:\n${rpc.stderr()}`);
    assert.match(lostLines(rpc.stderr())[1], /^\[memoryd\] memoryd at http:\/\/127\.0\.0\.1:\d+ answers again; the session is attached again$/);
    // The model saw the failure in the next request, and the note is written now.
    const n = model.requests.length;
    await ask(rpc, "take a note now");
    assert.match(JSON.stringify(model.requests[n].messages), /memoryd could not check the checkpoint fence/);
    assert.match(lastResults(model.requests.at(-1)).notes_read_file ?? "", /written to while-down\.md/);
  } finally {
    const exit = await rpc.stop();
    await model.close();
    await md.stop();
    rmSync(dir, { recursive: true, force: true });
    setup.remove();
    assert.equal(exit.code, 0, rpc.stderr());
  }
});
