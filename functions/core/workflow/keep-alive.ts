// Renewing a format's liveness signal while a long step runs (see PreparedGroup.keepAlive): a timer, not a loop in
// the step, so the rewrite's own code knows nothing of it.

/** A liveness signal renewed every `everyMs`. */
export interface KeepAlive {
  readonly everyMs: number;
  renew(): Promise<void>;
}

/**
 * Runs `work`, renewing `keepAlive` every `everyMs` until it settles. A renewal that fails is dropped (the next one
 * may land; the commit re-checks the table, so a lapsed signal costs at most the group, never a row). When `work`
 * settles no renewal is in flight any more: nothing renews the signal after the caller goes on to remove it.
 */
export async function whileAlive<T>(keepAlive: KeepAlive | undefined, work: () => Promise<T>): Promise<T> {
  if (keepAlive === undefined) return work();
  let inFlight: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    inFlight = inFlight.then(() => keepAlive.renew().catch(() => undefined));
  }, keepAlive.everyMs);
  // A CLI run must not be held open by the timer alone.
  timer.unref?.();
  try {
    return await work();
  } finally {
    clearInterval(timer);
    await inFlight;
  }
}
