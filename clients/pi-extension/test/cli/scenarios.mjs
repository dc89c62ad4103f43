// The scripted model's sessions for the CLI tests, and what they check.
//
// A rollover under Pi's default settings: Pi compacts only a session whose
// recent part (compaction.keepRecentTokens, 20000 tokens by default, counted
// as characters / 4 of the messages: core/compaction/compaction.js
// findProjectedCutPoint) leaves something older to summarize. So the model
// does what a real one does before a checkpoint: it reads three project files
// of 40 KB each (under the read tool's 50 KB cap), about 30000 tokens, then
// writes its checkpoint note and calls new_context.
import { conversation, lastResults, textOf } from "./model-server.mjs";

/** A marker in the user's first prompt, read back from w1's history after the rollover. */
export const TASK_MARKER = "TASK-7f3a-parser";
export const CHECKPOINT_TEXT = `Goal: ${TASK_MARKER}. Read a.txt, b.txt, c.txt; next: rewrite the parser.`;
export const BIG_FILES = Object.fromEntries(
  ["a.txt", "b.txt", "c.txt"].map((name) => [
    name,
    Array.from({ length: 400 }, (_, i) => `${name} line ${String(i).padStart(4, "0")} `.padEnd(99, "x")).join("\n") + "\n",
  ]),
);
export const PROMPT = `${TASK_MARKER}: read a.txt, b.txt and c.txt, checkpoint, then start a fresh context window.`;

/** The names of the tool calls in a request's conversation. */
export function calledTools(body) {
  return conversation(body).flatMap((m) => (m.tool_calls ?? []).map((c) => c.function.name));
}

export const inW2 = (body) => conversation(body).some((m) => textOf(m).includes("<context_window_reset/>"));

/** The first history item id in a history_list_items result (one JSON object per item and line). */
export function firstItemId(listText) {
  for (const line of listText.split("\n")) {
    if (!line.trim().startsWith("{")) continue;
    const item = JSON.parse(line);
    if (item.item_id) return item.item_id;
  }
  throw new Error(`no item in history_list_items: ${listText}`);
}

/** The large session: reads, checkpoint, new_context; in w2 the recovery reads, then "RECOVERED". */
export function rolloverScript(body) {
  if (inW2(body)) {
    const last = body.messages.at(-1);
    if (last.role !== "tool") {
      return { calls: [["notes_read_file", { path: "checkpoint.md" }], ["history_list_items", { window_id: "w1", role: "user" }]] };
    }
    const r = lastResults(body);
    if (r.history_list_items !== undefined) return { calls: [["history_read_item", { window_id: "w1", item_id: firstItemId(r.history_list_items) }]] };
    if (r.history_read_item !== undefined) return { text: "RECOVERED: back on " + TASK_MARKER };
    return { text: "unexpected results in w2: " + JSON.stringify(r) };
  }
  const called = calledTools(body);
  if (!called.includes("read")) return { calls: Object.keys(BIG_FILES).map((path) => ["read", { path }]) };
  if (!called.includes("notes_write_file")) return { calls: [["notes_write_file", { path: "checkpoint.md", text: CHECKPOINT_TEXT }]] };
  if (!called.includes("new_context")) return { calls: [["new_context", {}]] };
  return { text: "unexpected: still in w1 after new_context" };
}

/** The small session: new_context at once; then whatever the model is told, it answers "OK". */
export function smallScript(body) {
  if (!calledTools(body).includes("new_context")) return { calls: [["new_context", {}]] };
  return { text: "OK, continuing in this window." };
}

/**
 * Checks on the requests of a large rollover session; returns the parts
 * the tests assert on: the first request, the first w2 request, the w2
 * tool results.
 */
export function rolloverRequests(requests) {
  const firstW2 = requests.findIndex(inW2);
  const w2 = requests.slice(firstW2);
  const results = Object.assign({}, ...w2.map(lastResults));
  return { first: requests[0], firstW2: requests[firstW2], firstW2Index: firstW2, results, last: requests.at(-1) };
}

/** The manual checkpoint request's tag (the custom message of a manual /compact). */
export const MANUAL = "<manual_checkpoint";
export const READ_DONE = "Read all three files.";
export const hasManual = (body) => body.messages.some((m) => textOf(m).includes(MANUAL));
export const lastIsManual = (body) => textOf(body.messages.at(-1)).includes(MANUAL);

/**
 * The manual /compact session: the model reads the three big files (so Pi
 * can compact under its defaults), answers READ_DONE; asked for the manual
 * checkpoint it calls checkpoint(body) (a reply, or a Promise held back);
 * in w2: "ready in w2"; anything else: "hi".
 */
export function manualScript(checkpoint) {
  return (body) => {
    if (inW2(body)) return { text: "ready in w2" };
    if (lastIsManual(body)) return checkpoint(body);
    if (!calledTools(body).includes("read")) return { calls: Object.keys(BIG_FILES).map((path) => ["read", { path }]) };
    if (body.messages.at(-1).role === "tool") return { text: READ_DONE };
    return { text: "hi" };
  };
}

/** A reply held until release() (or the server closes). */
export function held() {
  let release;
  const promise = new Promise((r) => (release = r));
  return { promise, release: (reply) => release(reply) };
}
