// A scripted npm registry for the install tests: it serves the packages of
// the given tarballs (npm pack's) as the public registry would, on
// 127.0.0.1:0, so that `pi install npm:@memoryd/pi-extension` runs exactly
// as a user's (npm resolves the packument, picks the platform package by
// os/cpu, fetches and checks the tarballs). Any other name is a 404, as an
// unpublished package is; requests are recorded.
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { basename } from "node:path";
import { gunzipSync } from "node:zlib";

/** The text of the file named name in a .tgz (ustar, as npm pack writes it). */
export function fileInTarball(tgz, name) {
  const tar = gunzipSync(readFileSync(tgz));
  for (let off = 0; off + 512 <= tar.length; ) {
    const header = tar.subarray(off, off + 512);
    if (header.every((b) => b === 0)) break;
    const field = (start, len) => header.subarray(start, start + len).toString("utf8").replace(/\0.*$/s, "");
    const prefix = field(345, 155);
    const path = (prefix ? prefix + "/" : "") + field(0, 100);
    const size = parseInt(field(124, 12).trim() || "0", 8);
    if (path === name) return tar.subarray(off + 512, off + 512 + size).toString("utf8");
    off += 512 + Math.ceil(size / 512) * 512;
  }
  throw new Error(`${name} is not in ${tgz}`);
}

/** Starts the registry serving tarballs. Returns { url, requests, close() }. */
export async function startRegistry(tarballs) {
  const packages = new Map(); // name -> { manifest, file, bytes }
  for (const file of tarballs) {
    const manifest = JSON.parse(fileInTarball(file, "package/package.json"));
    packages.set(manifest.name, { manifest, file: basename(file), bytes: readFileSync(file) });
  }
  const requests = [];
  let url;
  const server = createServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    const path = decodeURIComponent(new URL(req.url, "http://registry").pathname).slice(1);
    const json = (status, body) => {
      res.writeHead(status, { "content-type": "application/json" });
      res.end(JSON.stringify(body));
    };
    if (req.method !== "GET") return json(405, { error: "method not allowed" });
    const tarball = /^-\/tarballs\/(.+)$/.exec(path);
    if (tarball) {
      const p = [...packages.values()].find((p) => p.file === tarball[1]);
      if (!p) return json(404, { error: "not found" });
      res.writeHead(200, { "content-type": "application/octet-stream", "content-length": p.bytes.length });
      return res.end(p.bytes);
    }
    const p = packages.get(path);
    if (!p) return json(404, { error: "not found" });
    const { manifest, bytes } = p;
    json(200, {
      name: manifest.name,
      "dist-tags": { latest: manifest.version },
      versions: {
        [manifest.version]: {
          ...manifest,
          _id: `${manifest.name}@${manifest.version}`,
          dist: {
            tarball: `${url}/-/tarballs/${encodeURIComponent(p.file)}`,
            shasum: createHash("sha1").update(bytes).digest("hex"),
            integrity: `sha512-${createHash("sha512").update(bytes).digest("base64")}`,
          },
        },
      },
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  url = `http://127.0.0.1:${server.address().port}`;
  return { url, requests, close: () => new Promise((r) => server.close(r)) };
}
