// Drives the REAL interactive pi (no -p/--mode) in a tmux terminal: its own
// tmux server (-L, no config file), one 160x50 session running pi with the
// setup of pi-cli.mjs (a fresh agent folder, Pi's default settings, the
// extension loaded with -e), pi's stderr (the extension's MEMORYD_DEBUG trace)
// in a file. Screen conditions are waited for with bounded timeouts.
//
// tmux must be installed (the test does not install it): without it every
// test of test/tui/ fails with a message saying so.
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";

import { piArgs, piEnv } from "../cli/pi-cli.mjs";
import { waitFloorMs } from "../../../testing/memoryd.mjs";

/** Fails clearly when tmux is not on PATH. */
export function requireTmux() {
  const r = spawnSync("tmux", ["-V"], { encoding: "utf8" });
  if (r.error || r.status !== 0) {
    throw new Error(
      "tmux is required by the interactive pi tests (test/tui/) and was not found on PATH: install it (Debian/Ubuntu: apt-get install -y tmux).",
    );
  }
}

let sessions = 0;

/**
 * Starts interactive pi in tmux. args: extra pi arguments (e.g. ["-c"]).
 * Returns { screen(), waitFor(pred, ms, what), type(text), keys(...names),
 * stderr(), exited(), waitExit(ms), stop() }.
 */
export function startTui(setup, { env = {}, args = [] } = {}) {
  requireTmux();
  const socket = `pi-tui-test-${process.pid}-${++sessions}`;
  const stderrFile = join(setup.dir, `pi-stderr-${sessions}.log`);
  const fullEnv = piEnv(setup, env);
  const tmux = (...a) => {
    const r = spawnSync("tmux", ["-L", socket, "-f", "/dev/null", ...a], { encoding: "utf8", env: fullEnv });
    if (r.error) throw r.error;
    return r;
  };
  const command = [process.execPath, ...piArgs(args)].map(shellQuote).join(" ");
  const started = tmux("new-session", "-d", "-s", "pi", "-x", "160", "-y", "50", "-c", setup.cwd, `exec ${command} 2>>${shellQuote(stderrFile)}`);
  if (started.status !== 0) throw new Error(`tmux new-session failed: ${started.stderr}`);
  // Keep the pane after pi exits, so its exit is observable (pane_dead).
  tmux("set-option", "-t", "pi", "remain-on-exit", "on");

  const stderr = () => (existsSync(stderrFile) ? readFileSync(stderrFile, "utf8") : "");
  const screen = () => {
    const r = tmux("capture-pane", "-p", "-J", "-S", "-1000", "-t", "pi");
    return r.status === 0 ? r.stdout : "";
  };
  const exited = () => tmux("display-message", "-p", "-t", "pi", "#{pane_dead}").stdout.trim() === "1";
  const poll = async (pred, ms, what) => {
    ms = Math.max(ms, waitFloorMs);
    const deadline = Date.now() + ms;
    for (;;) {
      if (await pred()) return;
      if (Date.now() > deadline) {
        throw new Error(`timed out after ${ms} ms waiting for ${what}; screen:\n${screen()}\nstderr:\n${stderr().slice(-3000)}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  return {
    screen,
    stderr,
    exited,
    /** Waits until pred(screen text) is true. */
    waitFor: (pred, ms, what) => poll(() => pred(screen()), ms, what),
    /** Waits until pred() (any condition) is true. */
    waitUntil: poll,
    /** Types text literally, then Enter. */
    type(text) {
      tmux("send-keys", "-t", "pi", "-l", text);
      tmux("send-keys", "-t", "pi", "Enter");
    },
    /** Sends tmux key names (Escape, C-c, C-o, ...). */
    keys(...names) {
      for (const k of names) tmux("send-keys", "-t", "pi", k);
    },
    waitExit: (ms) => poll(() => exited(), ms, "pi to exit"),
    /** Ends the tmux server (and pi with it). */
    stop() {
      tmux("kill-server");
    },
  };
}

function shellQuote(s) {
  return `'${String(s).replace(/'/g, `'\\''`)}'`;
}
