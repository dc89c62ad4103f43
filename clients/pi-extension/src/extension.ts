// The entry Pi loads (package.json "pi.extensions"): the extension configured
// from the environment (MEMORYD_URL / MEMORYD_ADDR, MEMORYD_TOKEN, MEMORYD_DB,
// MEMORYD_SPAWN, MEMORYD_REPO, MEMORYD_TASK, MEMORYD_CONTEXT_WINDOW, MEMORYD_DEBUG).
import { createMemorydExtension, optionsFromEnv } from "./index.js";

export default createMemorydExtension(optionsFromEnv());
