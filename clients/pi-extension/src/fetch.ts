// The fetch of the extension's memoryd client: every request is kept in a set
// until it ends (session_shutdown awaits them, so no report is cut off), and a
// request refused because nothing listens (it never reached memoryd: memoryd
// was killed or crashed) waits for the connection to recover (memoryd started
// again or found again, the session attached again) and is sent once more.

/** A fetch tracking its requests in inFlight; a refused request is sent again once recover() resolves true. */
export function trackedFetch(inFlight: Set<Promise<unknown>>, recover: () => Promise<boolean>): typeof fetch {
  const send: typeof fetch = (input, init) => {
    const p = globalThis.fetch(input, init);
    inFlight.add(p);
    const done = () => inFlight.delete(p);
    p.then(done, done);
    return p;
  };
  return (input, init) =>
    send(input, init).catch(async (err: unknown) => {
      if (!refused(err) || !(await recover())) throw err;
      return send(input, init);
    });
}

/** fetch failed with ECONNREFUSED: the request was not sent. */
function refused(err: unknown): boolean {
  const cause = err instanceof Error ? (err.cause as { code?: unknown } | undefined) : undefined;
  return cause?.code === "ECONNREFUSED";
}
