// The trigger and the sweep over the in-memory StatsStore (the DynamoDB adapter's semantics, without DynamoDB
// Local): when a partition starts, that it starts once, caps, dry-run, the sweep's leases, and reconcile.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { MemoryStatsStore } from '../../../../functions/adapters/memory-stats-store.js';
import { DEFAULT_POLICY } from '../../../../functions/core/policy.js';
import type {
  PartitionRef,
  PartitionSnapshot,
  SettleOutcome,
} from '../../../../functions/core/profiler/model.js';
import { reconcileTable, sweepTable } from '../../../../functions/core/profiler/sweep.js';
import {
  AWAITED_COMMIT_PATIENCE_MS,
  AWAITED_COMMIT_RETRY_MS,
  evaluatePartition,
  profileEvents,
  type TriggerDeps,
} from '../../../../functions/core/profiler/trigger.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import type {
  ExecutionInfo,
  StateMachineStarter,
} from '../../../../functions/ports/state-machine-starter.js';
import { fileEvent } from '../../../support/stats-store-contract.js';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const MINUTE = 60_000;
const KIB = 1024;
const TABLE = 'events';

/** Records starts; `describe` answers from `executions` (absent = no such execution, as after a lost start). */
class FakeStarter implements StateMachineStarter {
  readonly starts: { name: string; input: unknown }[] = [];
  readonly executions = new Map<string, ExecutionInfo>();
  executionArn(name: string): string {
    return `arn:aws:states:us-east-1:000000000000:execution:compact:${name}`;
  }
  async start(name: string, input: unknown) {
    const alreadyStarted = this.executions.has(this.executionArn(name));
    this.starts.push({ name, input });
    if (!alreadyStarted) this.executions.set(this.executionArn(name), { status: 'RUNNING' });
    return { executionArn: this.executionArn(name), alreadyStarted };
  }
  async describe(arn: string) {
    return this.executions.get(arn);
  }
}

function deps(stats: MemoryStatsStore, extra: Partial<TriggerDeps> = {}): TriggerDeps {
  return { stats, policies: new Map([[TABLE, DEFAULT_POLICY]]), ...extra };
}

/** `n` small files written to `partition` `ageMinutes` before NOW. */
function smallFiles(partition: string, n: number, ageMinutes: number) {
  const ref = { table: TABLE, partition };
  return Array.from({ length: n }, (_, i) =>
    fileEvent(ref, `part-${i}.parquet`, 1 + i, 64 * KIB, NOW - ageMinutes * MINUTE),
  );
}

describe('profileEvents', () => {
  it('waits while the partition is not quiet, then starts it at minInputFiles small files', async () => {
    // Prepare
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();
    const ref: PartitionRef = { table: TABLE, partition: 'date=2026-11-29' };

    // Act
    const tooFew = await profileEvents(deps(stats, { starter }), smallFiles(ref.partition, 4, 60), NOW);
    const notQuiet = await profileEvents(
      deps(stats, { starter }),
      [fileEvent(ref, 'late.parquet', 100, 64 * KIB, NOW - MINUTE)],
      NOW,
    );
    const quiet = await evaluatePartition(
      deps(stats, { starter }),
      (await stats.get(ref)) as PartitionSnapshot,
      NOW + 15 * MINUTE,
    );

    // Assess
    const outcome = (results: Awaited<ReturnType<typeof profileEvents>>) => {
      const result = [...results.values()][0];
      return result?.ok === true ? result.outcome.action : result;
    };
    expect(outcome(tooFew)).toBe('blocked');
    expect(outcome(notQuiet)).toBe('waiting');
    expect(quiet.action).toBe('started');
    expect(starter.starts.map((s) => s.name)).toEqual([quiet.executionName]);
    expect(await stats.get(ref)).toMatchObject({ state: 'scheduled', generation: 1, fileCount: 5 });
  });

  it('starts exactly one execution when many evaluations of the same partition race', async () => {
    // Prepare
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();
    await profileEvents(deps(stats), smallFiles('p', 10, 60), NOW);
    const snapshot = await stats.get({ table: TABLE, partition: 'p' });
    if (snapshot === undefined) throw new Error('the partition was not recorded');

    // Act
    const outcomes = await Promise.all(
      Array.from({ length: 8 }, () => evaluatePartition(deps(stats, { starter }), snapshot, NOW)),
    );

    // Assess
    expect(outcomes.filter((o) => o.action === 'started')).toHaveLength(1);
    expect(outcomes.filter((o) => o.action === 'superseded')).toHaveLength(7);
    expect(starter.starts).toHaveLength(1);
  });

  it('records a compact verdict without starting anything in dry-run, and the partition stays due', async () => {
    // Prepare
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();

    // Act
    const results = await profileEvents(deps(stats, { starter, dryRun: true }), smallFiles('p', 6, 60), NOW);

    // Assess
    const result = results.get(`${TABLE}#p`);
    expect(result?.ok === true && result.outcome.action).toBe('not-started');
    expect(starter.starts).toEqual([]);
    expect(await stats.listDue(TABLE, NOW)).toEqual([{ table: TABLE, partition: 'p' }]);
    expect((await stats.get({ table: TABLE, partition: 'p' }))?.lastDecision?.action).toMatch(/dry-run/);
  });
});

describe("a partition whose counters wait for its last run's commit to the table's log", () => {
  /** No cooldown: only the wait can hold a run back. */
  function noCooldown(stats: MemoryStatsStore, extra: Partial<TriggerDeps> = {}): TriggerDeps {
    return deps(stats, { policies: new Map([[TABLE, { ...DEFAULT_POLICY, cooldownMinutes: 0 }]]), ...extra });
  }

  /** 6 small files, counted, then a run that committed version 7 of the log and was released with it at NOW. */
  async function releasedAfterCommit(stats: MemoryStatsStore, starter: FakeStarter, ref: PartitionRef) {
    await profileEvents(noCooldown(stats, { starter }), smallFiles(ref.partition, 6, 60), NOW - MINUTE);
    const held = (await stats.get(ref)) as PartitionSnapshot;
    await stats.release(ref, held.generation, { lastCompactedAt: NOW, awaitedVersion: 7 });
    return (await stats.get(ref)) as PartitionSnapshot;
  }

  it.each([
    { applied: 'nothing of the log', cursor: undefined, inBatch: undefined, starts: false },
    { applied: 'the log up to version 6', cursor: 6, inBatch: undefined, starts: false },
    { applied: 'version 7 in the batch at hand', cursor: 6, inBatch: 7, starts: true },
    { applied: 'the log up to version 7', cursor: 7, inBatch: undefined, starts: true },
  ])(
    'is started only once the profiler has applied that version: $applied',
    async ({ cursor, inBatch, starts }) => {
      // Prepare: the counters still count the 6 files, as they do until the run's commit is read
      const stats = new MemoryStatsStore();
      const starter = new FakeStarter();
      const ref: PartitionRef = { table: TABLE, partition: 'date=2026-11-29' };
      const released = await releasedAfterCommit(stats, starter, ref);
      if (cursor !== undefined) await stats.advanceChangeCursor(TABLE, { version: cursor, memo: '' });

      // Act
      const outcome = await evaluatePartition(
        noCooldown(stats, { starter, ...(inBatch === undefined ? {} : { changesAppliedThrough: inBatch }) }),
        released,
        NOW + 15 * MINUTE,
      );

      // Assess
      expect(released).toMatchObject({ state: 'idle', smallCount: 6, awaitedVersion: 7 });
      expect(starter.starts).toHaveLength(starts ? 2 : 1);
      if (starts) {
        expect(outcome.action).toBe('started');
      } else {
        expect(outcome.action).toBe('waiting');
        expect(outcome.decision.reasons.at(-1)).toMatch(
          /the counters predate version 7 of the table's log, which the last run committed .*: waiting for the profiler to count that commit, until 2026-11-30T13:00:00.000Z at most/,
        );
        expect((await stats.get(ref))?.dueAt).toBe(NOW + 15 * MINUTE + AWAITED_COMMIT_RETRY_MS);
      }
    },
  );

  it('waits for nothing after a release that records no version', async () => {
    // Prepare: a release with a version, then a later run's release without one (an object-event table's run)
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();
    const ref: PartitionRef = { table: TABLE, partition: 'date=2026-11-29' };
    const released = await releasedAfterCommit(stats, starter, ref);
    await evaluatePartition(noCooldown(stats, { starter, changesAppliedThrough: 7 }), released, NOW + MINUTE);
    const held = (await stats.get(ref)) as PartitionSnapshot;

    // Act
    await stats.release(ref, held.generation, { lastCompactedAt: NOW + 2 * MINUTE });
    const again = (await stats.get(ref)) as PartitionSnapshot;
    const outcome = await evaluatePartition(noCooldown(stats, { starter }), again, NOW + 15 * MINUTE);

    // Assess
    expect(again.awaitedVersion).toBeUndefined();
    expect(outcome.action).toBe('started');
  });

  it('waits an hour at most: a commit the profiler never counts does not hold the partition for good', async () => {
    // Prepare: the profiler has applied the log up to version 6 and reads nothing more
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();
    const ref: PartitionRef = { table: TABLE, partition: 'date=2026-11-29' };
    const released = await releasedAfterCommit(stats, starter, ref);
    await stats.advanceChangeCursor(TABLE, { version: 6, memo: '' });

    // Act
    const justBefore = await evaluatePartition(
      noCooldown(stats, { starter }),
      released,
      NOW + AWAITED_COMMIT_PATIENCE_MS - 30_000,
    );
    const after = await evaluatePartition(
      noCooldown(stats, { starter }),
      (await stats.get(ref)) as PartitionSnapshot,
      NOW + AWAITED_COMMIT_PATIENCE_MS,
    );

    // Assess: the last wait ends with the patience, not a minute after it; then the counters decide
    expect(justBefore.action).toBe('waiting');
    expect(justBefore.decision.eligibleAt).toBe(NOW + AWAITED_COMMIT_PATIENCE_MS);
    expect(after.action).toBe('started');
    expect(starter.starts).toHaveLength(2);
  });
});

describe('sweepTable', () => {
  it('starts due partitions oldest due first until the table cap, and records the rest as capped, still due', async () => {
    // Prepare
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();
    // Due without a starter: each records a compact verdict due at its own evaluation time.
    const decided = [
      ['p-late', 10],
      ['p-early', 30],
      ['p-middle', 20],
    ] as const;
    for (const [partition, minutesAgo] of decided) {
      await profileEvents(deps(stats), smallFiles(partition, 6, 120), NOW - minutesAgo * MINUTE);
    }
    const runCaps = { total: 100, perTable: 2, byTable: {} };

    // Act
    const report = await sweepTable(deps(stats, { starter, runCaps, trigger: 'sweep' }), TABLE, NOW);

    // Assess
    expect(report.due.map((o) => [o.ref.partition, o.action])).toEqual([
      ['p-early', 'started'],
      ['p-middle', 'started'],
      ['p-late', 'capped'],
    ]);
    expect(starter.starts).toHaveLength(2);
    expect((await stats.listDue(TABLE, NOW)).map((r) => r.partition)).toEqual(['p-late']);
  });

  it('releases the lease of a run that succeeded, sets lastCompactedAt, and decides about the partition again', async () => {
    // Prepare
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();
    await profileEvents(deps(stats, { starter }), smallFiles('p', 6, 60), NOW);
    const leased = await stats.get({ table: TABLE, partition: 'p' });
    const arn = starter.executionArn(leased?.lease?.executionName ?? '');
    starter.executions.set(arn, { status: 'SUCCEEDED', stoppedAt: NOW + 5 * MINUTE });

    // Act
    const report = await sweepTable(deps(stats, { starter }), TABLE, NOW + 10 * MINUTE);

    // Assess
    expect(report.leases.map((l) => l.action)).toEqual(['released (SUCCEEDED)']);
    const after = await stats.get({ table: TABLE, partition: 'p' });
    expect(after).toMatchObject({ state: 'idle', lastCompactedAt: NOW + 5 * MINUTE });
    // Cooldown: the files are still counted (no event came), but the partition is not started again.
    expect(report.due.map((o) => o.action)).toEqual(['waiting']);
    expect(starter.starts).toHaveLength(1);
  });

  it('starts again under the same name a scheduled run whose start was lost', async () => {
    // Prepare
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();
    await profileEvents(deps(stats, { starter }), smallFiles('p', 6, 60), NOW);
    const name = starter.starts[0]?.name as string;
    starter.executions.clear();

    // Act
    const report = await sweepTable(deps(stats, { starter }), TABLE, NOW + 10 * MINUTE);

    // Assess
    expect(report.leases.map((l) => l.action)).toEqual(['restart started']);
    expect(starter.starts.map((s) => s.name)).toEqual([name, name]);
    expect((await stats.get({ table: TABLE, partition: 'p' }))?.state).toBe('scheduled');
  });

  it('marks needs-attention instead of idle when the dead run left a group it cannot settle', async () => {
    // Prepare
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();
    await profileEvents(deps(stats, { starter }), smallFiles('p', 6, 60), NOW);
    const leased = await stats.get({ table: TABLE, partition: 'p' });
    starter.executions.set(starter.executionArn(leased?.lease?.executionName ?? ''), { status: 'FAILED' });
    const settle = async (): Promise<SettleOutcome> => ({
      settled: 0,
      unsettled: ['g0001: AccessDenied on DeleteObject.'],
      completed: false,
    });

    // Act
    const report = await sweepTable(deps(stats, { starter, settle }), TABLE, NOW + 10 * MINUTE);

    // Assess
    expect(report.leases.map((l) => l.action)).toEqual(['needs-attention (FAILED)']);
    expect(report.needingAttention).toBe(1);
    const flagged = await stats.get({ table: TABLE, partition: 'p' });
    expect(flagged?.state).toBe('needs-attention');
    expect(flagged?.attention?.reason).toMatch(/g0001: AccessDenied on DeleteObject/);
    expect(await stats.listDue(TABLE, NOW + 60 * MINUTE)).toEqual([]);
  });
});

describe('reconcileTable', () => {
  it('overwrites the counters of a quiet partition whose events were lost with what the listing holds', async () => {
    // Prepare
    const stats = new MemoryStatsStore();
    const lake = new MemoryObjectStore();
    const [config] = parseTableConfigs([
      { name: TABLE, bucket: 'lake', prefix: TABLE, partitionColumns: ['date'] },
    ]);
    const partition = 'date=2026-11-29';
    await profileEvents(deps(stats), smallFiles(partition, 1, 180), NOW - 170 * MINUTE);
    for (const i of [0, 1, 2])
      await lake.put(`${TABLE}/${partition}/part-${i}.parquet`, new Uint8Array(1000));

    // Act
    const report = await reconcileTable(deps(stats), lake, config as NonNullable<typeof config>, NOW);

    // Assess
    expect(report.partitions).toEqual([
      {
        partition,
        result: 'corrected',
        stored: { fileCount: 1, totalBytes: 64 * KIB },
        listed: { fileCount: 3, totalBytes: 3000 },
      },
    ]);
    expect(await stats.get({ table: TABLE, partition })).toMatchObject({
      fileCount: 3,
      totalBytes: 3000,
      smallCount: 3,
    });
  });
});
