// Renewing a format's liveness signal while a long step runs (see PreparedGroup.keepAlive and
// TableFormat.groupKeepAlive): a timer, not a loop in the step, so the step's own code knows nothing of it.
import type { KeepAlive } from '../formats/table-format.js';

/**
 * Runs `work`, renewing `keepAlive` every `everyMs` until it settles — and once before it starts when `now` is set
 * (a step taking over a group another step left: the signal is as old as the gap between them). A renewal that
 * fails is dropped (the next one may land; the commit re-checks the table, so a lapsed signal costs at most the
 * group, never a row). When `work` settles no renewal is in flight any more: nothing renews the signal after the
 * caller goes on to remove it.
 */
export async function whileAlive<T>(
  keepAlive: KeepAlive | undefined,
  work: () => Promise<T>,
  options: { readonly now?: boolean } = {},
): Promise<T> {
  if (keepAlive === undefined) return work();
  if (options.now === true) await keepAlive.renew().catch(() => undefined);
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
