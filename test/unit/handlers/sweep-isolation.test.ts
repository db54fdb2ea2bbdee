// One table cannot stop the others (issue #34 item 3), in the sweep function: in reconcile mode a Delta table whose
// log read throws deep in the format beside a good table; in sweep mode a table whose dead run's settle never
// answers (its Delta log read hangs), within a time budget and, without one, as the process dying in it. The good
// table is swept or reconciled, the bad one reported by name and metered (TableFailures), and the next sweep takes it
// last — the crash found by the attempt the dead invocation left open in the ledger.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../functions/adapters/memory-object-store.js';
import { MemoryStatsStore } from '../../../functions/adapters/memory-stats-store.js';
import { MemoryTableLedger } from '../../../functions/adapters/memory-table-ledger.js';
import type { PartitionRef, SettleOutcome } from '../../../functions/core/profiler/model.js';
import { profileEvents, type TriggerDeps } from '../../../functions/core/profiler/trigger.js';
import { parseTableConfigs, type TableConfig } from '../../../functions/core/table-config.js';
import { policiesOf } from '../../../functions/handlers/profiler.js';
import { createSweepHandler, type SweepTurnsResult } from '../../../functions/handlers/sweep.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import type { ObjectStore } from '../../../functions/ports/object-store.js';
import type { ExecutionInfo, StateMachineStarter } from '../../../functions/ports/state-machine-starter.js';
import { createObservability } from '../../../functions/shared/middleware.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../../functions/tools/sample-delta.js';
import { poisonedStore } from '../../support/poison-store.js';
import { capturePowertoolsOutput } from '../../support/powertools-output.js';
import { fileEvent } from '../../support/stats-store-contract.js';

const MINUTE = 60_000;
const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const output = capturePowertoolsOutput();

/** Starts are recorded as running; `describe` answers from `executions`. */
class FakeStarter implements StateMachineStarter {
  readonly executions = new Map<string, ExecutionInfo>();
  executionArn(name: string): string {
    return `arn:aws:states:us-east-1:000000000000:execution:compact:${name}`;
  }
  async start(name: string) {
    const alreadyStarted = this.executions.has(this.executionArn(name));
    if (!alreadyStarted) this.executions.set(this.executionArn(name), { status: 'RUNNING' });
    return { executionArn: this.executionArn(name), alreadyStarted };
  }
  async describe(arn: string) {
    return this.executions.get(arn);
  }
}

function metricOf(table: string | undefined): unknown[] {
  return output.lines
    .filter((l) => 'TableFailures' in l && (table === undefined ? !('Table' in l) : l.Table === table))
    .map((l) => l.TableFailures);
}

describe('sweep: one table cannot stop the others', () => {
  /**
   * `bad` and `good` (configured in that order), each with a partition whose compaction run has died: the sweep
   * settles what each left before releasing its lease. Settling `bad`'s reads a log that never answers.
   */
  async function deadRuns() {
    const clock = new ManualClock(NOW);
    const tables = parseTableConfigs(
      ['bad', 'good'].map((name) => ({ name, bucket: 'lake', prefix: name, partitionColumns: ['date'] })),
    );
    const stats = new MemoryStatsStore();
    const starter = new FakeStarter();
    const trigger: TriggerDeps = { stats, starter, policies: policiesOf(tables) };
    for (const table of ['bad', 'good']) {
      const ref = { table, partition: 'date=2026-11-29' };
      const events = Array.from({ length: 6 }, (_, i) =>
        fileEvent(ref, `part-${i}.parquet`, 1 + i, 64 * 1024, NOW - 60 * MINUTE),
      );
      await profileEvents(trigger, events, NOW);
      const lease = (await stats.get(ref))?.lease;
      starter.executions.set(starter.executionArn(lease?.executionName ?? ''), {
        status: 'FAILED',
        stoppedAt: NOW + MINUTE,
      });
    }
    clock.set(NOW + 10 * MINUTE);
    let reachedBad: () => void = () => {};
    const settles: string[] = [];
    const settle = (ref: PartitionRef): Promise<SettleOutcome> => {
      settles.push(ref.table);
      if (ref.table !== 'bad') return Promise.resolve({ settled: 0, unsettled: [], completed: false });
      reachedBad();
      return new Promise<never>(() => {});
    };
    const ledger = new MemoryTableLedger();
    const handler = (tableBudgetMs?: number) =>
      createSweepHandler({
        tables,
        trigger: { ...trigger, settle, trigger: 'sweep' },
        storeFor: () => new MemoryObjectStore(),
        clock,
        observability: createObservability('test'),
        ledger,
        ...(tableBudgetMs === undefined ? {} : { tableBudgetMs }),
      });
    const badReached = () =>
      new Promise<void>((resolve) => {
        reachedBad = resolve;
      });
    /** The partition's generation: 1 while the dead run's lease is held, 2 once released and started again. */
    const leaseOf = async (table: string) =>
      (await stats.get({ table, partition: 'date=2026-11-29' }))?.generation;
    return { clock, ledger, handler, badReached, leaseOf, settles };
  }

  it('a settle that outlasts its time budget costs only its table: the good one is swept, the bad one reported', async () => {
    // Prepare
    const w = await deadRuns();

    // Act
    const result = (await w.handler(50)({ mode: 'sweep' })) as SweepTurnsResult;

    // Assess
    expect(await w.leaseOf('good')).toBe(2);
    expect(await w.leaseOf('bad')).toBe(1);
    expect(result.tableFailures).toEqual([
      expect.objectContaining({ table: 'bad', kind: 'time-budget', failuresInARow: 1 }),
    ]);
    expect(result.reports.map((r) => r.table)).toEqual(['good']);
    expect(metricOf('bad')).toEqual([1]);
    expect(metricOf(undefined)).toEqual([1]);
  });

  it('a sweep that dies in a table is found by the next one, which reports the crash and sweeps the others first', async () => {
    // Prepare
    const w = await deadRuns();

    // Act: the first sweep never returns from bad (no budget: in Lambda, the timeout or the OOM kill); the next
    // sweep, 15 minutes later, is a new process
    let reached = w.badReached();
    void w.handler()({ mode: 'sweep' });
    await reached;
    const leftOpen = w.ledger.open().map((a) => a.table);
    const goodBefore = await w.leaseOf('good');
    w.clock.advance(16 * MINUTE);
    reached = w.badReached();
    void w.handler()({ mode: 'sweep' });
    await reached;

    // Assess
    expect(leftOpen).toEqual(['bad']);
    expect(goodBefore).toBe(1);
    expect(await w.leaseOf('good')).toBe(2);
    expect(w.settles).toEqual(['bad', 'good', 'bad']);
    expect(output.lines.filter((l) => l.level === 'ERROR' && l.table === 'bad')).toEqual([
      expect.objectContaining({
        job: 'sweep',
        kind: 'crash',
        error: expect.stringMatching(/^TableCrashedError: The sweep process died while working on table bad/),
      }),
    ]);
    expect(metricOf('bad')).toEqual([1]);
  });

  it('reconcile: an error thrown deep in a Delta log read is that table’s failure; the good table is reconciled', async () => {
    // Prepare: bad is a Delta table whose every read throws; good a Parquet table the profiler never counted
    const memory = new MemoryObjectStore();
    await createDeltaEventsTable(memory, 'bad', { now: NOW });
    await appendDeltaEvents(memory, 'bad', { day: '2026-11-29', rows: 5, seed: 1, now: NOW });
    await memory.put('good/date=2026-11-29/part-0.parquet', new Uint8Array(1024));
    const poison = poisonedStore(memory, 'bad/', { throws: new RangeError('Invalid array length') });
    const tables: TableConfig[] = parseTableConfigs([
      {
        name: 'bad',
        bucket: 'lake',
        prefix: 'bad',
        partitionColumns: ['date'],
        format: 'delta',
        deltaLogStore: { type: 's3-conditional' },
      },
      { name: 'good', bucket: 'lake', prefix: 'good', partitionColumns: ['date'] },
    ]);
    const stats = new MemoryStatsStore();
    const handler = createSweepHandler({
      tables,
      trigger: { stats, policies: policiesOf(tables), trigger: 'sweep' },
      storeFor: (): ObjectStore => poison.store,
      clock: new ManualClock(NOW + 120 * MINUTE),
      observability: createObservability('test'),
      ledger: new MemoryTableLedger(),
    });

    // Act
    const result = (await handler({ mode: 'reconcile' })) as SweepTurnsResult;

    // Assess
    expect((await stats.listPartitions('good')).map((p) => [p.partition, p.fileCount])).toEqual([
      ['date=2026-11-29', 1],
    ]);
    expect(await stats.listPartitions('bad')).toEqual([]);
    expect(result.tableFailures).toEqual([
      expect.objectContaining({ table: 'bad', kind: 'error', name: 'RangeError' }),
    ]);
    expect(output.lines.find((l) => l.level === 'ERROR' && l.table === 'bad')).toMatchObject({
      job: 'reconcile',
    });
    expect(metricOf('bad')).toEqual([1]);
  });
});
