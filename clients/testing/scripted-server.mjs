// Starts one of the scripted model servers of testdata/ (claude-code/ and codex/ each have a
// model-server.mjs) for the tests with a real coding-agent CLI.
import { spawn } from "node:child_process";

import { waitFloorMs } from "./memoryd.mjs";

/**
 * Starts the scripted model server script on a free port, logging each request to log, with env added to
 * its environment (MS_INPUT_TOKENS=N: every answer reports N input tokens); resolves {port, stop()}.
 */
export async function startScriptedServer(script, log, env = {}) {
  const child = spawn(process.execPath, [script, "0", log], { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  let stderr = "";
  child.stderr.on("data", (s) => (stderr += s));
  const port = await new Promise((res, rej) => {
    let out = "";
    const timer = setTimeout(() => rej(new Error(`the model server printed no port; stderr:\n${stderr}`)), waitFloorMs);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (s) => {
      out += s;
      const m = /^\{"port":(\d+)\}$/m.exec(out);
      if (m) {
        clearTimeout(timer);
        res(Number(m[1]));
      }
    });
    child.once("exit", (code) => rej(new Error(`the model server exited (${code}); stderr:\n${stderr}`)));
  });
  return { port, stop: () => child.kill() };
}
