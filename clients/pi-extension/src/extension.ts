// The entry Pi loads (package.json "pi.extensions"): the extension configured
// from the environment (MEMORYD_URL / MEMORYD_ADDR, MEMORYD_TOKEN, MEMORYD_DB,
// MEMORYD_AUTOSTART, MEMORYD_BIN, MEMORYD_SPAWN, MEMORYD_REPO, MEMORYD_IDLE_EXIT,
// MEMORYD_TASK, MEMORYD_CONTEXT_WINDOW, MEMORYD_HEARTBEAT, MEMORYD_DEBUG; see the
// README), with the budget of Pi's settings (tokenBudget) and PI_TOKEN_BUDGET_*.
// PI_TOKEN_BUDGET_DISABLED=1: an extension that registers nothing (no tools, no
// hooks, memoryd never started).
import type { ExtensionFactory } from "@earendil-works/pi-coding-agent";

import { createMemorydExtension, optionsFromEnv } from "./index.js";
import { tokenBudgetDisabled } from "./settings.js";

const disabled: ExtensionFactory = () => {};

export default tokenBudgetDisabled(process.env) ? disabled : createMemorydExtension(optionsFromEnv());
