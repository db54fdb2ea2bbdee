// How many seeded-random trials a fault suite draws: its quick count in `npm test`, a multiple of it in a soak run.

/**
 * The soak factor: 1 in `npm test`, `LAKE_COMPACTOR_SOAK` in a soak run (`npm run test:soak`).
 * @throws Error when `LAKE_COMPACTOR_SOAK` is set to anything but a positive integer (a typo must not quietly run
 *   the quick count).
 */
export function soakFactor(): number {
  const raw = process.env.LAKE_COMPACTOR_SOAK;
  if (raw === undefined || raw === '') return 1;
  const factor = Number(raw);
  if (!Number.isInteger(factor) || factor < 1)
    throw new Error(
      `LAKE_COMPACTOR_SOAK must be a positive integer (a multiple of each suite's trials), not ${raw}`,
    );
  return factor;
}

/**
 * The number of seeded-random trials a fault suite runs: `quick` times the soak factor.
 *
 * Why two counts: `npm test` runs on every change (CI, on a 2-core machine, in a budget well under 15 minutes), and the
 * crash-trial suites were its largest share — each trial is a compaction with its verification, a kill and a
 * recovery. A suite's quick count still reaches every phase its own draw targets (each suite asserts that where it
 * draws by phase); a soak run (`npm run test:soak`, `LAKE_COMPACTOR_SOAK=<factor>`) draws `factor` times as many
 * from the same seeds — the quick run's trials first, then new ones — before a release or after a change to the
 * commit protocol, where more crash points are worth the time.
 * @throws Error when `LAKE_COMPACTOR_SOAK` is set to anything but a positive integer.
 */
export function trialCount(quick: number): number {
  return quick * soakFactor();
}

/**
 * How often a suite repeats one crash point (a phase, a kind of kill) with other random draws: `once` in `npm test`
 * (each distinct point is still reached there), `soak` times the factor in a soak run, where the repeats — the same
 * point at other request numbers or other moments — are worth their time.
 * @throws Error when `LAKE_COMPACTOR_SOAK` is set to anything but a positive integer.
 */
export function repeatsPerPoint(soak: number, once = 1): number {
  const factor = soakFactor();
  return factor === 1 ? once : soak * factor;
}
