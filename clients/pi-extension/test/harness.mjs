// Drives the real Pi SDK (createAgentSession) offline: a scripted model from
// pi-ai's faux provider, an in-memory session and settings, and the memoryd
// extension under test as an inline extension factory.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { fauxAssistantMessage, fauxProvider, fauxText, fauxToolCall } from "@earendil-works/pi-ai";
import { waitFloorMs } from "../../testing/memoryd.mjs";
import {
  createAgentSession,
  DefaultResourceLoader,
  ModelRuntime,
  SessionManager,
  SettingsManager,
} from "@earendil-works/pi-coding-agent";

export { fauxAssistantMessage, fauxText, fauxToolCall };

/**
 * Creates a Pi session. model(context, call) is the scripted model: it gets
 * the transcript Pi sends and returns an assistant message.
 * extraExtensions are more inline factories (e.g. test tools).
 */
export async function createPiSession({ extension, extensionPaths = [], extraExtensions = [], model, contextWindow = 128000, sessionFile } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "pi-sdk-test-"));
  const agentDir = join(dir, "agent");
  const faux = fauxProvider({ provider: "faux", models: [{ id: "scripted", contextWindow, maxTokens: 4096 }] });
  let calls = 0;
  const script = async (context) => model(context, ++calls);
  faux.setResponses(Array.from({ length: 200 }, () => script));
  const settingsManager = SettingsManager.inMemory({
    // Pi's own threshold compaction stays off: memoryd's thresholds decide; the
    // rollover compaction keeps (almost) nothing, so any session can compact.
    compaction: { enabled: false, keepRecentTokens: 50, reserveTokens: 1000 },
    retry: { enabled: false },
  });
  const providerExt = (pi) => pi.registerProvider(faux.provider);
  const resourceLoader = new DefaultResourceLoader({
    cwd: dir,
    agentDir,
    settingsManager,
    extensionFactories: [providerExt, ...(extension ? [extension] : []), ...extraExtensions],
    additionalExtensionPaths: extensionPaths,
    noSkills: true,
    noPromptTemplates: true,
    noThemes: true,
    noContextFiles: true,
  });
  await resourceLoader.reload();
  const modelRuntime = await ModelRuntime.create({ authPath: join(dir, "auth.json"), modelsPath: null, refreshOnCreate: false });
  const sessionManager = sessionFile ? SessionManager.open(sessionFile, join(dir, "sessions")) : SessionManager.inMemory(dir);
  const { session } = await createAgentSession({
    cwd: dir,
    agentDir,
    model: faux.getModel(),
    thinkingLevel: "off",
    modelRuntime,
    resourceLoader,
    sessionManager,
    settingsManager,
    noTools: "builtin",
  });
  await session.bindExtensions({});
  return { session, faux, dir, calls: () => calls };
}

/** The text of a transcript message (Pi's LLM context), for the scripted model. */
export function textOf(message) {
  if (typeof message.content === "string") return message.content;
  if (!Array.isArray(message.content)) return "";
  return message.content
    .map((b) => (b.type === "text" ? b.text : b.type === "toolCall" ? `[tool_call ${b.name}] ${JSON.stringify(b.arguments)}` : ""))
    .join("\n");
}

/** Waits until cond() is true (polling), or fails after ms. */
export async function waitFor(cond, ms = 20_000, what = "condition") {
  ms = Math.max(ms, waitFloorMs);
  const deadline = Date.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
