// Generates typescript/src/tools.generated.ts (the tool names, execution
// modes, argument types and result details types of @memoryd/client) from
// internal/tools/specs.json, the one source of memoryd's tools, which
// GET /v1/tools serves.
//
//   node scripts/gen-tools.mjs          rewrites the file
//   node scripts/gen-tools.mjs --check  exits 1 when the committed file differs
//
// typescript/test/tools-generated.test.mjs runs the check on every npm test,
// and generates the file again from the specs a running memoryd serves.
import { readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const clients = join(dirname(fileURLToPath(import.meta.url)), "..");
export const SPECS_PATH = join(clients, "..", "internal", "tools", "specs.json");
export const GENERATED_PATH = join(clients, "typescript", "src", "tools.generated.ts");

// The schema keywords the generator understands; anything else fails, so a
// new keyword in specs.json is a decision for this file, not silently lost.
const OBJECT_KEYS = new Set(["type", "additionalProperties", "required", "properties"]);
const PROPERTY_KEYS = new Set(["type", "enum", "description", "minimum", "maximum", "minLength", "maxLength"]);
const JSON_TYPES = { string: "string", integer: "number", number: "number", boolean: "boolean", null: "null" };
const CONSTRAINTS = ["minimum", "maximum", "minLength", "maxLength"];

const pascal = (name) => name.replace(/(^|_)([a-z])/g, (_, __, c) => c.toUpperCase());
export const argsTypeName = (tool) => pascal(tool) + "Args";
export const detailsTypeName = (tool) => pascal(tool) + "Details";

// The keywords of a result schema the generator understands.
const RESULT_KEYS = new Set(["type", "additionalProperties", "required", "properties", "items", "enum", "const", "description", "minimum"]);

function fail(where, message) {
  throw new Error(`gen-tools: ${where}: ${message}`);
}

function propertyType(where, schema) {
  for (const key of Object.keys(schema)) {
    if (!PROPERTY_KEYS.has(key)) fail(where, `unsupported schema keyword ${JSON.stringify(key)}`);
  }
  if (schema.enum !== undefined) {
    if (schema.type !== undefined) fail(where, "both type and enum");
    return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  }
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return types
    .map((t) => JSON_TYPES[t] ?? fail(where, `unsupported type ${JSON.stringify(t)}`))
    .join(" | ");
}

function docComment(indent, schema) {
  const parts = [];
  if (schema.description) parts.push(schema.description);
  const constraints = CONSTRAINTS.filter((k) => schema[k] !== undefined).map((k) => `${k} ${schema[k]}`);
  if (constraints.length > 0) parts.push(`Schema: ${constraints.join(", ")}.`);
  if (parts.length === 0) return "";
  return `${indent}/** ${parts.join(" ").replaceAll("*/", "*\\/")} */\n`;
}

function argsType(spec) {
  const where = spec.name;
  const schema = spec.parameters;
  for (const key of Object.keys(schema)) {
    if (!OBJECT_KEYS.has(key)) fail(where, `unsupported schema keyword ${JSON.stringify(key)} on the arguments`);
  }
  if (schema.type !== "object") fail(where, "the arguments are not an object");
  if (schema.additionalProperties !== false) fail(where, "the arguments allow additional properties");
  const required = new Set(schema.required ?? []);
  const props = Object.entries(schema.properties ?? {});
  for (const r of required) {
    if (!props.some(([name]) => name === r)) fail(where, `required ${r} is not a property`);
  }
  const head = `/** The arguments of ${spec.name} (${spec.execution_mode}). */\n`;
  const name = argsTypeName(spec.name);
  if (props.length === 0) return `${head}export type ${name} = Record<string, never>;\n`;
  const fields = props.map(([prop, ps]) => {
    const optional = required.has(prop) ? "" : "?";
    return `${docComment("  ", ps)}  ${prop}${optional}: ${propertyType(`${where}.${prop}`, ps)};\n`;
  });
  return `${head}export interface ${name} {\n${fields.join("")}}\n`;
}

// resultType is the TypeScript type of a result schema, its object
// fields indented under indent.
function resultType(where, schema, indent) {
  for (const key of Object.keys(schema)) {
    if (!RESULT_KEYS.has(key)) fail(where, `unsupported result schema keyword ${JSON.stringify(key)}`);
  }
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum !== undefined) return schema.enum.map((v) => JSON.stringify(v)).join(" | ");
  const types = Array.isArray(schema.type) ? schema.type : [schema.type];
  return types
    .map((t) => {
      if (t === "array") {
        if (!schema.items) fail(where, "an array without items");
        const item = resultType(`${where}[]`, schema.items, indent);
        return /[| ]/.test(item) && !item.startsWith("{") ? `(${item})[]` : `${item}[]`;
      }
      if (t === "object") return objectType(where, schema, indent);
      return JSON_TYPES[t] ?? fail(where, `unsupported type ${JSON.stringify(t)}`);
    })
    .join(" | ");
}

// objectType is an object schema's fields as a TypeScript type literal.
function objectType(where, schema, indent) {
  if (schema.additionalProperties !== false) fail(where, "a result object allows additional properties");
  const required = new Set(schema.required ?? []);
  const props = Object.entries(schema.properties ?? {});
  for (const r of required) {
    if (!props.some(([name]) => name === r)) fail(where, `required ${r} is not a property`);
  }
  const inner = indent + "  ";
  const fields = props.map(([prop, ps]) => {
    const optional = required.has(prop) ? "" : "?";
    const doc = ps.description ? `${inner}/** ${ps.description.replaceAll("*/", "*\\/")} */\n` : "";
    return `${doc}${inner}${prop}${optional}: ${resultType(`${where}.${prop}`, ps, inner)};\n`;
  });
  return `{\n${fields.join("")}${indent}}`;
}

function detailsType(spec) {
  if (!spec.result) fail(spec.name, "no result schema");
  if (spec.result.type !== "object") fail(spec.name, "the result is not an object");
  const body = objectType(`${spec.name}.result`, spec.result, "");
  return `/** The details of a ${spec.name} result. */\nexport interface ${detailsTypeName(spec.name)} ${body}\n`;
}

/** The text of tools.generated.ts for the given specs (as specs.json or GET /v1/tools has them). */
export function generate(specs) {
  const names = specs.map((s) => s.name);
  if (new Set(names).size !== names.length) fail("specs", "duplicate tool names");
  for (const s of specs) {
    if (!/^[a-z][a-z_]*$/.test(s.name)) fail(s.name, "not a snake_case name");
    if (s.execution_mode !== "parallel" && s.execution_mode !== "sequential") fail(s.name, "unknown execution_mode");
  }
  const out = [
    "// Code generated by clients/scripts/gen-tools.mjs from internal/tools/specs.json. DO NOT EDIT.",
    "// Regenerate with `npm run gen` in clients/; npm test fails when this file is stale.",
    "",
    "/** memoryd's tools in their fixed order (GET /v1/tools). */",
    "export const TOOL_NAMES = [",
    ...names.map((n) => `  ${JSON.stringify(n)},`),
    "] as const;",
    "",
    "export type ToolName = (typeof TOOL_NAMES)[number];",
    "",
    "/** How Pi may run each tool: alongside other calls, or one at a time. */",
    "export const TOOL_EXECUTION_MODES = {",
    ...specs.map((s) => `  ${s.name}: ${JSON.stringify(s.execution_mode)},`),
    '} as const satisfies Record<ToolName, "parallel" | "sequential">;',
    "",
    ...specs.map(argsType),
    "/** The arguments of each tool, by name: callTool(name, context, args: ToolArgs[name]). */",
    "export interface ToolArgs {",
    ...names.map((n) => `  ${n}: ${argsTypeName(n)};`),
    "}",
    "",
    ...specs.map(detailsType),
    "/** The details of each tool's result, by name: callTool(name, ...) resolves to ToolResult<ToolDetails[name]>. */",
    "export interface ToolDetails {",
    ...names.map((n) => `  ${n}: ${detailsTypeName(n)};`),
    "}",
    "",
  ];
  return out.join("\n");
}

export function readSpecs(path = SPECS_PATH) {
  return JSON.parse(readFileSync(path, "utf8"));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const text = generate(readSpecs());
  if (process.argv.includes("--check")) {
    if (readFileSync(GENERATED_PATH, "utf8") !== text) {
      console.error("typescript/src/tools.generated.ts is stale: run `npm run gen` in clients/");
      process.exit(1);
    }
  } else {
    writeFileSync(GENERATED_PATH, text);
  }
}
