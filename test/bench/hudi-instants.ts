// The Hudi bench's count of our instants won and lost, from the timeline files our run wrote (the keys of its puts):
// pure, so the count is unit-tested apart from any timing. A table service instant is ours once its plan is put
// (`T.replacecommit.requested` on v6 or `T.clustering.requested` on v8+ for a clustering, `T.compaction.requested`
// for a compaction); it is won when its completed instant file is put (`T.replacecommit` / `T_C.replacecommit`, or
// `T.commit` / `T_C.commit` for a compaction, both named by the plan's instant time T), and lost otherwise — aborted
// by a conflict check, failed, or rolled back. Putting the completed instant file is the commit's atomic step, so
// the put itself says the instant was won.

/** The table services the bench runs. */
export type HudiTableService = 'clustering' | 'compaction';

/** Our instants of one service in one run, by instant time (17 digits), each list in time order. */
export interface HudiInstantTally {
  /** Instants whose plan we put. */
  readonly planned: readonly string[];
  /** Of those, the ones we completed. */
  readonly won: readonly string[];
  /** Of those, the ones never completed. */
  readonly lost: readonly string[];
}

const PLAN: Readonly<Record<HudiTableService, RegExp>> = {
  clustering: /(?:^|\/)(\d{17})\.(?:replacecommit|clustering)\.requested$/,
  compaction: /(?:^|\/)(\d{17})\.compaction\.requested$/,
};

const COMPLETED: Readonly<Record<HudiTableService, RegExp>> = {
  clustering: /(?:^|\/)(\d{17})(?:_\d{17})?\.replacecommit$/,
  compaction: /(?:^|\/)(\d{17})(?:_\d{17})?\.commit$/,
};

/** The instant time a completed `service` instant file names (its begin time T), or undefined for any other key. */
export function completedInstantOf(key: string, service: HudiTableService): string | undefined {
  return COMPLETED[service].exec(key)?.[1];
}

/**
 * Our `service` instants among the keys a run put (any order; a key put twice counts once). A completed file whose
 * plan the run did not put (another writer's commit, seen only if it shares our store) is not ours and not counted.
 */
export function tallyHudiInstants(putKeys: Iterable<string>, service: HudiTableService): HudiInstantTally {
  const planned = new Set<string>();
  const completed = new Set<string>();
  for (const key of putKeys) {
    const plan = PLAN[service].exec(key)?.[1];
    if (plan !== undefined) planned.add(plan);
    const done = completedInstantOf(key, service);
    if (done !== undefined) completed.add(done);
  }
  const times = [...planned].sort();
  return {
    planned: times,
    won: times.filter((t) => completed.has(t)),
    lost: times.filter((t) => !completed.has(t)),
  };
}
