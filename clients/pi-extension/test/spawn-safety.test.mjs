// The Pi extension runs no code from the folder pi runs in and opens its
// memoryd log as memoryd opens its token file (issue 31): no symbolic link,
// only the user's own regular file, mode 0600; and a log past its cap is moved
// aside at the next start (issue 32), so that it does not grow without bound.
import { test } from "node:test";
import assert from "node:assert/strict";
import { chmodSync, closeSync, lstatSync, mkdtempSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { openCappedLogFile, openLogFile, spawnMemoryd } from "../dist/spawn.js";

const folder = () => mkdtempSync(join(tmpdir(), "memoryd-spawn-safety-"));

test("MEMORYD_SPAWN=go without an absolute MEMORYD_REPO is refused, nothing run", async () => {
  for (const cwd of [undefined, "", "relative/checkout"]) {
    await assert.rejects(
      spawnMemoryd({ command: "go", cwd, logFile: join(folder(), "memoryd.log"), startTimeoutMs: 1000 }, "127.0.0.1:1"),
      /MEMORYD_SPAWN=go needs MEMORYD_REPO, the absolute path of a memoryd checkout/,
    );
  }
});

test("a symbolic link planted at the log's path is not followed", () => {
  const dir = folder();
  const target = join(dir, "target");
  writeFileSync(target, "untouched\n", { mode: 0o644 });
  const log = join(dir, "memoryd.log");
  symlinkSync(target, log);
  assert.throws(() => openLogFile(log), /refusing memoryd's log file .*symbolic link/);
  assert.equal(readFileSync(target, "utf8"), "untouched\n");
  assert.equal(statSync(target).mode & 0o777, 0o644);
  assert.ok(lstatSync(log).isSymbolicLink());
});

test("a log readable by others is made 0600; a new one is 0600", () => {
  const dir = folder();
  const planted = join(dir, "planted.log");
  writeFileSync(planted, "old\n");
  chmodSync(planted, 0o644);
  closeSync(openLogFile(planted));
  assert.equal(statSync(planted).mode & 0o777, 0o600);
  const fresh = join(dir, "fresh.log");
  closeSync(openLogFile(fresh));
  assert.equal(statSync(fresh).mode & 0o777, 0o600);
});

test("a log path that is not a regular file is refused", () => {
  assert.throws(() => openLogFile(folder()), /EISDIR|not a regular file/);
});

test("a log past its cap is moved to <log>.1 at the next start, the one before dropped", () => {
  const dir = folder();
  const log = join(dir, "memoryd.log");
  writeFileSync(log, "small\n");
  closeSync(openCappedLogFile(log, 10));
  assert.equal(readFileSync(log, "utf8"), "small\n", "a log within the cap is kept as it is");
  writeFileSync(log, "x".repeat(11));
  writeFileSync(log + ".1", "older\n");
  closeSync(openCappedLogFile(log, 10));
  assert.equal(readFileSync(log + ".1", "utf8"), "x".repeat(11));
  assert.equal(readFileSync(log, "utf8"), "");
  assert.equal(statSync(log).mode & 0o777, 0o600);
});
