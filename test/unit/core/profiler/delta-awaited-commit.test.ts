// A Delta partition released by its run before the profiler has read the run's own OPTIMIZE commit: its counters still
// count the six files the run retired, and the release makes the partition due at once. The sweep must not start a
// run on them (it would find the partition compacted and do nothing); it waits for the profiler, which counts the
// commit, and the partition's next small files start the next run as usual. The run goes through the workflow's own
// steps, whose finalize records the version it waits for; its rows are the appended rows, once.
import { describe, expect, it } from 'vitest';
import { MemoryJournal } from '../../../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../../../functions/adapters/memory-leases.js';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { readCommitActions, readDeltaSnapshot } from '../../../../functions/core/formats/delta/log.js';
import { commitFileName } from '../../../../functions/core/formats/delta/log-files.js';
import { formatForTable } from '../../../../functions/core/formats/index.js';
import { type CommitEvent, resolveEvent } from '../../../../functions/core/profiler/events.js';
import { sweepTable } from '../../../../functions/core/profiler/sweep.js';
import { profileCommits } from '../../../../functions/core/profiler/table-log.js';
import { AWAITED_COMMIT_RETRY_MS } from '../../../../functions/core/profiler/trigger.js';
import { buildRunContext } from '../../../../functions/core/run-input.js';
import { parseTableConfigs, resolveTablePolicy } from '../../../../functions/core/table-config.js';
import { runPartition } from '../../../../functions/core/workflow/run.js';
import { ManualClock } from '../../../../functions/ports/clock.js';
import { defaultParquetEngine } from '../../../../functions/shared/parquet-engine.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../../../functions/tools/sample-delta.js';
import { profilerOf } from '../../../support/profiler-deps.js';

const NOW = Date.UTC(2026, 11, 7, 12, 0, 0);
const MINUTE = 60_000;
const ROOT = 'events';
const DAY = '2026-12-06';
const PARTITION = `date=${DAY}`;

const TABLES = parseTableConfigs([
  {
    name: 'events',
    bucket: 'lake',
    prefix: ROOT,
    format: 'delta',
    deltaLogStore: { type: 's3-conditional' },
    partitionColumns: ['date'],
    // No quiet window and no cooldown, as in the demo: only the counters can keep a run from starting.
    policy: { quietMinutes: 0, cooldownMinutes: 0, minInputFiles: 6 },
  },
]);
const POLICIES = new Map([['events', resolveTablePolicy(TABLES[0] as (typeof TABLES)[number])]]);

/** The commit events of versions `from`…`to` of the log, as the profiler resolves S3's events for them. */
function commitEvents(from: number, to: number, at: number): CommitEvent[] {
  return Array.from({ length: to - from + 1 }, (_, i) => {
    const resolution = resolveEvent(TABLES, POLICIES, {
      bucket: 'lake',
      key: `${ROOT}/_delta_log/${commitFileName(from + i)}`,
      kind: 'created',
      size: 1024,
      sequencer: (from + i + 1).toString(16).toUpperCase().padStart(32, '0'),
      eventTime: at,
      eventName: 'ObjectCreated:Put',
    });
    if (resolution.kind !== 'commit') throw new Error(`expected a commit, got ${resolution.kind}`);
    return resolution;
  });
}

/** `n` micro-batches appended to the day; the rows they hold. */
async function append(store: MemoryObjectStore, n: number, seed: number): Promise<number> {
  let rows = 0;
  for (let b = 0; b < n; b += 1) {
    await appendDeltaEvents(store, ROOT, { day: DAY, rows: 10 + b, seed: seed + b, now: NOW });
    rows += 10 + b;
  }
  return rows;
}

describe("a Delta partition released before the profiler has read its run's commit", () => {
  it('is not started again on the counters that predate the commit; once the commit is counted, its next small files start the next run', async () => {
    // Prepare: six appends, counted; the profiler starts the partition's run
    const store = new MemoryObjectStore();
    await createDeltaEventsTable(store, ROOT, { now: NOW });
    const appended = await append(store, 6, 1);
    const { stats, starter, deps } = profilerOf(TABLES, POLICIES, store);
    const appendsVersion = (await readDeltaSnapshot(store, ROOT)).version;
    await profileCommits(deps, commitEvents(0, appendsVersion, NOW), NOW);
    const ref = { table: 'events', partition: PARTITION };
    const scheduled = await stats.get(ref);
    //          the run, through the workflow's own steps; its end releases the partition with what finalize recorded
    const leases = new MemoryLeases();
    const run = buildRunContext(
      { name: 'events', prefix: ROOT, bucket: 'local', format: 'delta', partitionColumns: ['date'] },
      PARTITION,
      { quietMinutes: 0, trigger: 'profiler' },
      { executionName: starter.starts[0] ?? 'none', startedAt: NOW },
    );
    const result = await runPartition(
      {
        store,
        journal: new MemoryJournal(),
        clock: new ManualClock(NOW + MINUTE),
        engine: defaultParquetEngine,
        leases,
        format: formatForTable(TABLES, 'events', {}),
        wait: async () => {},
      },
      run,
      { plan: { inlineGroupLimit: 100, compactMemoryMb: 1024 } },
    );
    const awaitedVersion = leases.item(ref).awaitedVersion;
    await stats.release(ref, scheduled?.generation ?? 0, {
      lastCompactedAt: NOW + MINUTE,
      ...(awaitedVersion === undefined ? {} : { awaitedVersion }),
    });

    // Act: the sweep comes before the OPTIMIZE commit's event is read; then the profiler reads it; then a sweep
    // after the wait, and six more appends
    const early = await sweepTable({ stats, starter, policies: POLICIES }, 'events', NOW + 2 * MINUTE);
    const optimizeVersion = (await readDeltaSnapshot(store, ROOT)).version;
    const counted = await profileCommits(
      deps,
      commitEvents(appendsVersion + 1, optimizeVersion, NOW + MINUTE),
      NOW + 3 * MINUTE,
    );
    const afterWait = await sweepTable(
      { stats, starter, policies: POLICIES },
      'events',
      NOW + 3 * MINUTE + AWAITED_COMMIT_RETRY_MS,
    );
    const countedState = await stats.get(ref);
    const appendedAgain = await append(store, 6, 100);
    const latest = (await readDeltaSnapshot(store, ROOT)).version;
    await profileCommits(deps, commitEvents(optimizeVersion + 1, latest, NOW + 5 * MINUTE), NOW + 5 * MINUTE);

    // Assess: one compaction, all rows kept: the version finalize recorded is its OPTIMIZE commit
    expect(result.summary).toMatchObject({ status: 'SUCCEEDED', outcome: 'compacted', rows: appended });
    expect(optimizeVersion).toBe(appendsVersion + 1);
    const optimize = await readCommitActions(store, ROOT, optimizeVersion);
    expect(optimize?.find((a) => a.kind === 'commitInfo')).toMatchObject({
      commitInfo: { operation: 'OPTIMIZE' },
    });
    expect(awaitedVersion).toBe(optimizeVersion);
    //          the early sweep waited on the stale counters instead of starting a run
    expect(early.due).toHaveLength(1);
    expect(early.due[0]).toMatchObject({ action: 'waiting', decision: { compact: false } });
    expect(early.due[0]?.decision.reasons.at(-1)).toContain(
      `the counters predate version ${optimizeVersion} of the table's log`,
    );
    //          the profiler counted the commit: one file, nothing to start, not even after the wait
    expect(counted.get('events')).toMatchObject({ ok: true });
    expect(countedState).toMatchObject({ state: 'idle', fileCount: 1, smallCount: 1 });
    expect(afterWait.due.map((o) => o.action)).not.toContain('started');
    //          six more small files start the next run at once
    expect(await stats.get(ref)).toMatchObject({ state: 'scheduled', fileCount: 7 });
    expect(starter.starts).toHaveLength(2);
    expect(starter.starts[1]).toMatch(/-g2$/);
    const live = await readDeltaSnapshot(store, ROOT);
    expect(live.files).toHaveLength(7);
    expect(appendedAgain).toBeGreaterThan(0);
  });
});
