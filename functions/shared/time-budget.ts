// Time budgets for one table's work inside an invocation that serves many: the work is raced against a timer,
// and when the timer wins the caller goes on without it (TableTimeBudgetExceededError) instead of waiting.
//
// What it cannot do: stop the abandoned work (a promise cannot be cancelled; it runs on until it ends, its result
// dropped, so only read-only or idempotent work is raced) or interrupt a synchronous loop (the timer never fires
// while the thread is busy): the invocation's deadline does, and the next invocation finds the attempt the process
// left open (see core/isolation.ts).
import type { Context } from 'aws-lambda';
import { TableTimeBudgetExceededError } from '../core/isolation.js';

/** Runs `work`, or rejects with TableTimeBudgetExceededError once `budgetMs` passed; no budget: just runs it. */
export async function withTimeBudget<T>(
  work: () => Promise<T>,
  budgetMs: number | undefined,
  what: string,
): Promise<T> {
  if (budgetMs === undefined || !Number.isFinite(budgetMs)) return work();
  const running = work();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () =>
        reject(
          new TableTimeBudgetExceededError(
            `${what} did not finish within its time budget of ${formatSeconds(budgetMs)}: it was abandoned (what it did already stays, and is judged again next time) and the others went on. It goes last in line from now on; if it keeps happening, its metadata is too large or too slow to read for the function (see its log lines), or give it more time (tableTimeBudgetSeconds).`,
          ),
        ),
      Math.max(0, budgetMs),
    );
  });
  // The abandoned work may still fail later: that is no one's error any more.
  running.catch(() => undefined);
  try {
    return await Promise.race([running, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** Milliseconds left in the invocation, or undefined outside Lambda (no context). */
export function remainingMs(context: Context | undefined): number | undefined {
  return typeof context?.getRemainingTimeInMillis === 'function'
    ? context.getRemainingTimeInMillis()
    : undefined;
}

function formatSeconds(ms: number): string {
  return ms >= 10_000 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(1)} s`;
}
