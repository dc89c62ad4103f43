// What every module of the extension shares: the trace callback and the
// helpers of background bookkeeping.

/** Observes what the extension does (tests; MEMORYD_DEBUG=1 logs it to stderr). */
export type Trace = (event: string, data?: Record<string, unknown>) => void;

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Runs fn, logging (not throwing) memoryd failures of background bookkeeping. */
export async function quietly(trace: Trace, what: string, fn: () => Promise<unknown>): Promise<void> {
  try {
    await fn();
  } catch (err) {
    trace("error", { what, error: errorMessage(err) });
  }
}
