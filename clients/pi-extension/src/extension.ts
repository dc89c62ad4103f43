// The entry Pi loads (package.json "pi.extensions"): the extension configured
// from the environment (MEMORYD_URL / MEMORYD_ADDR, MEMORYD_TOKEN, MEMORYD_DB,
// MEMORYD_AUTOSTART, MEMORYD_BIN, MEMORYD_SPAWN, MEMORYD_REPO, MEMORYD_IDLE_EXIT,
// MEMORYD_TASK, MEMORYD_CONTEXT_WINDOW, MEMORYD_HEARTBEAT, MEMORYD_DEBUG; see the
// README).
import { createMemorydExtension, optionsFromEnv } from "./index.js";

export default createMemorydExtension(optionsFromEnv());
