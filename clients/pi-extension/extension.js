// The entry Pi loads (package.json "pi.extensions"): the built extension,
// dist/extension.js. In a checkout that was installed without building it
// (pi install ./clients/pi-extension before npm run build), Pi would load
// nothing and run without memory, silently; this entry says so instead, once
// per session (a notification in the TUI, a line on stderr in print, JSON
// and RPC mode). Plain JavaScript, committed: it must load unbuilt.
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const built = join(here, "dist", "extension.js");

export default async function memoryd(pi) {
  if (existsSync(built)) {
    const { default: extension } = await import("./dist/extension.js");
    return extension(pi);
  }
  const line =
    `the memoryd extension in ${here} is not built (${built} is missing): run npm ci && npm run build in its clients folder, ` +
    `then start pi again (or install it from npm: pi install npm:@memoryd/pi-extension); pi runs without memory until then`;
  pi.on("session_start", (_event, ctx) => {
    if (ctx.hasUI) ctx.ui.notify(`memoryd: ${line}`, "error");
    if (ctx.mode !== "tui") process.stderr.write(`[memoryd] ${line}\n`);
  });
}
