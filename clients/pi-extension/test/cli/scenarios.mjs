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
  if (inW2(body)) return recoverInW2(body);
  const called = calledTools(body);
  if (!called.includes("read")) return { calls: Object.keys(BIG_FILES).map((path) => ["read", { path }]) };
  if (!called.includes("notes_write_file")) return { calls: [["notes_write_file", { path: "checkpoint.md", text: CHECKPOINT_TEXT }]] };
  if (!called.includes("new_context")) return { calls: [["new_context", {}]] };
  return { text: "unexpected: still in w1 after new_context" };
}

/** The index of the model's "RECOVERED" answer (w2) in pi's JSON/RPC events, or -1. */
export const recoveredAt = (events) =>
  events.findIndex((e) => e.type === "message_end" && e.message.role === "assistant" && textOf(e.message).startsWith("RECOVERED"));

/** pi's JSON/RPC events hold the "RECOVERED" answer and the agent_settled after it. */
export const settledAfterRecovery = (events) => {
  const at = recoveredAt(events);
  return at >= 0 && events.slice(at).some((e) => e.type === "agent_settled");
};

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

/**
 * Pi's defaults give the scripted model (no contextWindow in models.json) a
 * 128000-token window and compact above 128000 − 16384 = 111616 tokens
 * (core/compaction/compaction.js shouldCompact). memoryd's fallback is due at
 * 16000 tokens left (half the reminder's 32000): 112000 used.
 */
export const NEAR_FULL = 113000;
/** Above Pi's compaction threshold, below memoryd's fallback (the reminder is due). */
export const ABOVE_PI_THRESHOLD = 111800;

export const FALLBACK = "<context_window_fallback";
export const REMINDER = "<context_window_reminder";
export const hasText = (body, tag) => conversation(body).some((m) => textOf(m).includes(tag));

/** w2 of the rollover sessions: the recovery reads, then "RECOVERED". */
function recoverInW2(body) {
  const last = body.messages.at(-1);
  if (last.role !== "tool") {
    return { calls: [["notes_read_file", { path: "checkpoint.md" }], ["history_list_items", { window_id: "w1", role: "user" }]] };
  }
  const r = lastResults(body);
  if (r.history_list_items !== undefined) return { calls: [["history_read_item", { window_id: "w1", item_id: firstItemId(r.history_list_items) }]] };
  if (r.history_read_item !== undefined) return { text: "RECOVERED: back on " + TASK_MARKER };
  return { text: "unexpected results in w2: " + JSON.stringify(r) };
}

/**
 * The fallback session: the model reads the three files, then answers with
 * its context near full (NEAR_FULL): memoryd's fallback is due; asked for
 * the checkpoint, it writes it, still near full, so the rollover is carried
 * out by Pi's own threshold compaction at the end of the run; in w2 it
 * recovers. It never calls new_context.
 */
export function fallbackScript(body) {
  if (inW2(body)) return recoverInW2(body);
  const called = calledTools(body);
  if (!called.includes("read")) return { calls: Object.keys(BIG_FILES).map((path) => ["read", { path }]) };
  if (!hasText(body, FALLBACK)) return { text: "Read the three files; the parser is next.", promptTokens: NEAR_FULL };
  if (!called.includes("notes_write_file")) {
    return { calls: [["notes_write_file", { path: "checkpoint.md", text: CHECKPOINT_TEXT }]], promptTokens: NEAR_FULL + 500 };
  }
  return { text: "unexpected: still in w1 after the checkpoint", promptTokens: NEAR_FULL + 600 };
}

/**
 * new_context above Pi's threshold (ABOVE_PI_THRESHOLD: the reminder is due,
 * not the fallback): the model reads, writes its checkpoint and calls
 * new_context in one answer; whatever it is told next in w1 it answers
 * briefly, still above the threshold; in w2 it recovers.
 */
export function newContextNearFullScript(body) {
  if (inW2(body)) return recoverInW2(body);
  const called = calledTools(body);
  if (!called.includes("read")) return { calls: Object.keys(BIG_FILES).map((path) => ["read", { path }]) };
  if (!called.includes("new_context")) {
    return {
      calls: [["notes_write_file", { path: "checkpoint.md", text: CHECKPOINT_TEXT }], ["new_context", {}]],
      promptTokens: ABOVE_PI_THRESHOLD,
    };
  }
  return { text: "Noted; the window rolls over next.", promptTokens: ABOVE_PI_THRESHOLD + 100 };
}

/**
 * A small session near full: the model answers near full at once (the
 * fallback is due), writes its checkpoint when asked, and then says "OK"
 * to anything. Pi finds nothing to compact on so short a branch.
 */
export function shortFallbackScript(body) {
  if (calledTools(body).includes("notes_write_file")) return { text: "OK, continuing in this window." };
  if (hasText(body, FALLBACK)) return { calls: [["notes_write_file", { path: "checkpoint.md", text: CHECKPOINT_TEXT }]], promptTokens: NEAR_FULL };
  return { text: "Looking at it.", promptTokens: NEAR_FULL };
}

/** More than the 128000-token window: Pi reads a "stop" answer reporting it as a context overflow. */
export const OVERFLOWED = 130000;

/**
 * An overflow while new_context is pending: the model writes its checkpoint
 * and calls new_context beside a read (a mixed batch does not end the run),
 * then answers with a prompt past the window (OVERFLOWED), so Pi's overflow
 * compaction carries the rollover out; in w2 it recovers.
 */
export function overflowPendingScript(body) {
  if (inW2(body)) return recoverInW2(body);
  const called = calledTools(body);
  if (!called.includes("read")) return { calls: Object.keys(BIG_FILES).map((path) => ["read", { path }]) };
  if (!called.includes("new_context")) {
    return { calls: [["notes_write_file", { path: "checkpoint.md", text: CHECKPOINT_TEXT }], ["new_context", {}], ["read", { path: "a.txt" }]] };
  }
  return { text: "Read it again.", promptTokens: OVERFLOWED };
}
