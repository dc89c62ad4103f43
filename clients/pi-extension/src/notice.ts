// The rollover as a user of Pi's TUI sees it. Pi shows every compaction as
// its own "[compaction] Compacted from N tokens" block (the bootstrap when
// expanded with Ctrl+O), which no extension can hide; so memoryd adds no
// second block to the chat: N is the old window's real usage (memoryd's
// last usage report, see rollover.ts), and the footer says which window
// is live and why it began (ctx.ui.setStatus), e.g. "memoryd: context
// window reset w1 → w2 (the model called new_context)".
//
// Sessions written by earlier versions hold window-reset entries
// (pi.appendEntry); their renderer stays registered so they still show
// their line and, expanded, the bootstrap.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";

import { CUSTOM_TYPE, windowResetLine } from "./messages.js";

/** The data of a window-reset entry (written by earlier versions). */
export interface WindowResetData {
  previousWindowId: string;
  windowId: string;
  reason: string;
  bootstrap: string;
}

/** Registers the renderer of the window-reset entries of earlier versions' sessions. */
export function registerWindowResetRenderer(pi: ExtensionAPI): void {
  pi.registerEntryRenderer<WindowResetData>(CUSTOM_TYPE.windowReset, (entry, options, theme) => {
    const d = entry.data;
    if (!d) return undefined;
    const head = windowResetLine(d.previousWindowId, d.windowId, d.reason);
    const key = options.keyText("app.tools.expand");
    const hint = options.expanded || !key ? "" : ` (${key} to show the bootstrap)`;
    const body = options.expanded ? d.bootstrap.split("\n") : [];
    return {
      render: (width: number) => [
        ...wrap(head + hint, width).map((l) => theme.fg("accent", l)),
        ...body.flatMap((l) => wrap(l, width)).map((l) => theme.fg("dim", l)),
      ],
      invalidate: () => {},
    };
  });
}

/** The footer status after a committed rollover (with a UI). */
export function showWindowReset(ctx: ExtensionContext, d: Omit<WindowResetData, "bootstrap">): void {
  if (ctx.hasUI) ctx.ui.setStatus("memoryd", windowResetLine(d.previousWindowId, d.windowId, d.reason));
}

/** Splits plain text into lines at most width columns wide (Pi's TUI refuses wider lines). */
function wrap(text: string, width: number): string[] {
  const w = Math.max(2, width);
  const out: string[] = [];
  let line = "";
  let used = 0;
  for (const ch of text.replace(/\t/g, "  ").replace(/[\u0000-\u001f\u007f]/g, " ")) {
    const cw = columns(ch.codePointAt(0) ?? 0);
    if (used + cw > w) {
      out.push(line);
      line = "";
      used = 0;
    }
    line += ch;
    used += cw;
  }
  out.push(line);
  return out;
}

/** Terminal columns of a code point: 2 for East Asian wide and emoji ranges, else 1 (never less: a safe bound). */
function columns(cp: number): number {
  const wide =
    (cp >= 0x1100 && cp <= 0x115f) ||
    (cp >= 0x2600 && cp <= 0x27bf) ||
    (cp >= 0x2e80 && cp <= 0xa4cf) ||
    (cp >= 0xac00 && cp <= 0xd7a3) ||
    (cp >= 0xf900 && cp <= 0xfaff) ||
    (cp >= 0xfe30 && cp <= 0xfe4f) ||
    (cp >= 0xff00 && cp <= 0xff60) ||
    (cp >= 0xffe0 && cp <= 0xffe6) ||
    (cp >= 0x1f300 && cp <= 0x1faff) ||
    (cp >= 0x20000 && cp <= 0x3fffd);
  return wide ? 2 : 1;
}
