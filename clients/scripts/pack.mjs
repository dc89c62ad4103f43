// Makes the npm packages a Pi user installs with one command
// (`pi install npm:@memoryd/pi-extension`):
//
//   - @memoryd/memoryd-<os>-<cpu>, one per platform: the memoryd binary,
//     cross-compiled by `go build` (CGO off, -trimpath, -buildvcs=false, the
//     version and commit stamped with -ldflags -X), with "os" and "cpu" so
//     that npm installs only the user's;
//   - @memoryd/pi-extension: the built extension, whose package.json names
//     every platform package as an optional dependency of the same version
//     (the esbuild way). The workspace's package.json does not: npm ci would
//     look for them in the registry before they are published.
//
// Usage: node scripts/pack.mjs [--out DIR] [--targets all|host|linux-x64,...]
//                              [--version X.Y.Z] [--reproducible]
//
// The tarballs land in DIR (default clients/release), with SHA256SUMS. The
// build is reproducible: the same commit and Go toolchain give the same
// bytes (--reproducible builds the host's binary a second time, with an
// empty Go build cache, and compares).
import { execFileSync, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { chmodSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const clients = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const repo = resolve(clients, "..");
const extensionDir = join(clients, "pi-extension");

/** The platforms a package is made for, as Node names them (process.platform-process.arch): keep in step with PACKAGED_PLATFORMS in pi-extension/src/options.ts. */
export const TARGETS = ["linux-x64", "linux-arm64", "darwin-x64", "darwin-arm64"];
const GOARCH = { x64: "amd64", arm64: "arm64" };

/** The platform package's name for a target. */
export const platformPackage = (target) => `@memoryd/memoryd-${target}`;

/** The host's target, or undefined when no package is made for it. */
export function hostTarget() {
  const t = `${process.platform}-${process.arch}`;
  return TARGETS.includes(t) ? t : undefined;
}

/** The platform package's package.json. */
export function platformManifest(target, version) {
  const [os, cpu] = target.split("-");
  return {
    name: platformPackage(target),
    version,
    description: `The memoryd binary for ${os} ${cpu}, installed by @memoryd/pi-extension on this platform`,
    license: "MIT",
    os: [os],
    cpu: [cpu],
    files: ["bin/memoryd", "README.md"],
    preferUnplugged: true,
  };
}

/**
 * Builds memoryd for target into file: reproducible flags, the version and
 * commit stamped. env: extra environment (e.g. GOCACHE).
 */
export function buildBinary(target, file, { version, commit, env = {} }) {
  const [os, cpu] = target.split("-");
  const pkg = "github.com/memoryd/memoryd/internal/version";
  const ldflags = `-s -w -buildid= -X ${pkg}.stamped=v${version} -X ${pkg}.stampedCommit=${commit}`;
  const r = spawnSync("go", ["build", "-trimpath", "-buildvcs=false", "-ldflags", ldflags, "-o", file, "./cmd/server"], {
    cwd: repo,
    env: { ...process.env, GOOS: os, GOARCH: GOARCH[cpu], CGO_ENABLED: "0", GOFLAGS: "", ...env },
    stdio: ["ignore", "inherit", "inherit"],
  });
  if (r.status !== 0) throw new Error(`go build for ${target} failed (exit ${r.status ?? r.signal})`);
}

/** The sha256 of a file, hex. */
export function sha256(file) {
  return createHash("sha256").update(readFileSync(file)).digest("hex");
}

/** Runs npm pack in dir, writing the tarball to out; returns its file name. */
function npmPack(dir, out) {
  const stdout = execFileSync("npm", ["pack", "--json", "--pack-destination", out, "--ignore-scripts"], {
    cwd: dir,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "inherit"],
  });
  return JSON.parse(stdout)[0].filename;
}

/** The commit of the checkout (the full hash), or "unknown" outside one. */
function headCommit() {
  const r = spawnSync("git", ["rev-parse", "HEAD"], { cwd: repo, encoding: "utf8" });
  return r.status === 0 ? r.stdout.trim() : "unknown";
}

/**
 * Makes the tarballs: the platform packages of targets and the extension.
 * Returns { version, commit, extension: file, platforms: { target: file } }
 * (absolute paths in out). log: where progress goes (a line at a time).
 */
export function pack({ out, targets = TARGETS, version, log = (line) => process.stderr.write(line + "\n") }) {
  const manifest = JSON.parse(readFileSync(join(extensionDir, "package.json"), "utf8"));
  version ??= manifest.version;
  const commit = headCommit();
  mkdirSync(out, { recursive: true });
  const stage = mkdtempSync(join(tmpdir(), "memoryd-pack-"));
  try {
    const platforms = {};
    for (const target of targets) {
      log(`building memoryd v${version} for ${target} (go build; the first build of a platform takes a minute or two)`);
      const dir = join(stage, target);
      mkdirSync(join(dir, "bin"), { recursive: true });
      buildBinary(target, join(dir, "bin", "memoryd"), { version, commit });
      chmodSync(join(dir, "bin", "memoryd"), 0o755);
      writeFileSync(join(dir, "package.json"), JSON.stringify(platformManifest(target, version), null, 2) + "\n");
      writeFileSync(
        join(dir, "README.md"),
        `# ${platformPackage(target)}\n\nThe memoryd v${version} binary for ${target} (commit ${commit.slice(0, 12)}), ` +
          `built with \`go build -trimpath\` and CGO off. @memoryd/pi-extension depends on it (optionally, ` +
          `for this platform only) and starts it when nothing answers at its address.\n`,
      );
      platforms[target] = join(out, npmPack(dir, out));
      log(`  ${relative(process.cwd(), platforms[target])}`);
    }

    log("building the extension (npm run build)");
    execFileSync("npm", ["run", "build"], { cwd: clients, stdio: ["ignore", "ignore", "inherit"] });
    const dir = join(stage, "pi-extension");
    mkdirSync(dir);
    for (const f of manifest.files) cpSync(join(extensionDir, f), join(dir, f), { recursive: true });
    const published = { ...manifest, version };
    delete published.scripts; // prepack builds in the workspace; the staged copy is built
    delete published.devDependencies;
    published.optionalDependencies = Object.fromEntries(TARGETS.map((t) => [platformPackage(t), version]));
    writeFileSync(join(dir, "package.json"), JSON.stringify(published, null, 2) + "\n");
    const extension = join(out, npmPack(dir, out));
    log(`  ${relative(process.cwd(), extension)}`);

    const sums = [extension, ...Object.values(platforms)].map((f) => `${sha256(f)}  ${relative(out, f)}`);
    writeFileSync(join(out, "SHA256SUMS"), sums.join("\n") + "\n");
    return { version, commit, extension, platforms };
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

/** Builds the host's binary twice (the second time with an empty build cache) and compares. */
function checkReproducible(version) {
  const target = hostTarget();
  if (!target) throw new Error(`no package is made for ${process.platform}-${process.arch}`);
  const dir = mkdtempSync(join(tmpdir(), "memoryd-repro-"));
  try {
    const commit = headCommit();
    process.stderr.write(`building memoryd for ${target} twice, the second time with an empty Go build cache (a few minutes)\n`);
    buildBinary(target, join(dir, "a"), { version, commit });
    buildBinary(target, join(dir, "b"), { version, commit, env: { GOCACHE: join(dir, "cache") } });
    const [a, b] = [sha256(join(dir, "a")), sha256(join(dir, "b"))];
    if (a !== b) throw new Error(`not reproducible: ${a} then ${b}`);
    console.log(`reproducible: both builds are sha256 ${a}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function main(argv) {
  const usage = "usage: node scripts/pack.mjs [--out DIR] [--targets all|host|linux-x64,...] [--version X.Y.Z] [--reproducible]";
  let out = join(clients, "release");
  let targets = TARGETS;
  let version;
  let reproducible = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const value = () => {
      if (i + 1 >= argv.length) throw new Error(`${a} needs a value\n${usage}`);
      return argv[++i];
    };
    if (a === "--out") out = resolve(value());
    else if (a === "--version") version = value();
    else if (a === "--reproducible") reproducible = true;
    else if (a === "--targets") {
      const v = value();
      if (v === "all") targets = TARGETS;
      else if (v === "host") {
        const h = hostTarget();
        if (!h) throw new Error(`no package is made for this machine (${process.platform}-${process.arch}); targets: ${TARGETS.join(", ")}`);
        targets = [h];
      } else {
        targets = v.split(",");
        const unknown = targets.filter((t) => !TARGETS.includes(t));
        if (unknown.length) throw new Error(`unknown target ${unknown.join(", ")}; targets: ${TARGETS.join(", ")}, all or host`);
      }
    } else if (a === "-h" || a === "--help") {
      console.log(usage);
      return;
    } else throw new Error(`unknown argument ${a}\n${usage}`);
  }
  if (version !== undefined && !/^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$/.test(version)) throw new Error(`--version must look like 1.2.3, not ${version}`);
  if (reproducible) return checkReproducible(version ?? JSON.parse(readFileSync(join(extensionDir, "package.json"), "utf8")).version);
  const made = pack({ out, targets, version });
  console.log(readFileSync(join(out, "SHA256SUMS"), "utf8").trimEnd());
  if (targets.length < TARGETS.length) console.log(`(only ${targets.join(", ")}: the extension names all ${TARGETS.length} platform packages, publish them all)`);
  return made;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    console.error(`pack: ${err.message}`);
    process.exit(1);
  }
}
