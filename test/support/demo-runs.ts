// What the demos' tests expect of the runs the local cloud started: one compaction per partition, and any other
// run of a partition a no-op.
import { expect } from 'vitest';
import type { DemoRun } from '../../functions/tools/demo-run.js';

/**
 * Every partition in `partitions` compacted by exactly one run (`filesBefore` files into one, every row verified),
 * every other run `SUCCEEDED` with nothing to do, and every run started by a trigger with its reasons. A run's release makes its partition due at once (demo-run.ts's
 * sweep re-decides every second), and for a table whose log is its changes only the profiler, reading the run's own
 * commit, lowers the counters: the sweep waits for the version the run committed (`awaitedVersion`). Where a format
 * counts versions coarser than commits (Hudi: the second an instant completed) that wait may end before the commit is
 * read, and a second run of the partition finds it compacted.
 */
export function expectOneCompactionPerPartition(
  runs: readonly DemoRun[],
  partitions: readonly string[],
  filesBefore: number,
): void {
  const described = JSON.stringify(runs);
  const compacted = runs.filter((r) => r.outcome === 'compacted');
  expect(compacted.map((r) => r.partition).sort(), described).toEqual([...partitions].sort());
  for (const run of compacted) {
    expect(run, described).toMatchObject({ status: 'SUCCEEDED', filesBefore, filesAfter: 1 });
    expect(run.rowsVerified, described).toBe(run.rows);
  }
  for (const run of runs.filter((r) => r.outcome !== 'compacted'))
    expect(run, described).toMatchObject({ status: 'SUCCEEDED', outcome: 'nothing-to-do', filesAfter: 1 });
  // Every run was started by a trigger, which says why (what a run that should not have started is traced by).
  for (const run of runs) {
    expect(['profiler', 'sweep'], described).toContain(run.trigger);
    expect(run.reasons.length, described).toBeGreaterThan(0);
  }
}
