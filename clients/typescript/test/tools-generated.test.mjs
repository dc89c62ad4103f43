// The tool names, execution modes and argument types of the client are
// generated from internal/tools/specs.json (scripts/gen-tools.mjs): the
// committed tools.generated.ts must be what the generator writes from that
// file, and from the specs a running memoryd serves (GET /v1/tools), so a
// changed spec that was not regenerated fails here.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { test } from "node:test";

import { MemorydClient, TOOL_EXECUTION_MODES, TOOL_NAMES } from "../dist/index.js";
import { GENERATED_PATH, generate, readSpecs } from "../../scripts/gen-tools.mjs";
import { memorydPerFile } from "../../testing/memoryd.mjs";

const STALE = "tools.generated.ts is stale: run `npm run gen` in clients/ and commit the result";

let md;
let client;
memorydPerFile(MemorydClient, (m, c) => {
  md = m;
  client = c;
});

test("tools.generated.ts is generated from internal/tools/specs.json", () => {
  assert.equal(readFileSync(GENERATED_PATH, "utf8"), generate(readSpecs()), STALE);
});

test("tools.generated.ts is what the specs memoryd serves generate", async () => {
  const served = await client.listTools();
  assert.equal(readFileSync(GENERATED_PATH, "utf8"), generate(served), STALE);
  assert.deepEqual(served.map((t) => t.name), [...TOOL_NAMES]);
  assert.deepEqual(Object.fromEntries(served.map((t) => [t.name, t.execution_mode])), TOOL_EXECUTION_MODES);
});

test("the generator refuses a schema keyword it does not know", () => {
  const specs = readSpecs();
  specs[0].parameters.properties.limit.pattern = "^[0-9]+$";
  assert.throws(() => generate(specs), /history_list_windows\.limit: unsupported schema keyword "pattern"/);
  const nested = readSpecs();
  nested[1].parameters.properties.role = { type: "array", items: { type: "string" } };
  assert.throws(() => generate(nested), /unsupported/);
});
