// Handler-level tests of what reaches CloudWatch: the EMF lines finalize, the sweep and emitMetrics print
// (namespace, names, the `service` dimension plus Table/Outcome), and the correlation keys on step logs.
import type { Context } from 'aws-lambda';
import { describe, expect, it, vi } from 'vitest';
import { MemoryJournal } from '../../../functions/adapters/memory-journal.js';
import { MemoryLeases } from '../../../functions/adapters/memory-leases.js';
import { MemoryObjectStore } from '../../../functions/adapters/memory-object-store.js';
import { MemoryQuarantine } from '../../../functions/adapters/memory-quarantine.js';
import { tableFormat } from '../../../functions/core/formats/index.js';
import { DEFAULT_POLICY } from '../../../functions/core/policy.js';
import type { PartitionSnapshot } from '../../../functions/core/profiler/model.js';
import { normalizeRunInput, type RunContext } from '../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../functions/core/table-config.js';
import { commitStep } from '../../../functions/core/workflow/commit.js';
import { compactGroup } from '../../../functions/core/workflow/compact.js';
import { acquireLease } from '../../../functions/core/workflow/lease.js';
import { planRun } from '../../../functions/core/workflow/plan.js';
import { verifyGroup } from '../../../functions/core/workflow/verify.js';
import { createFinalizeHandler } from '../../../functions/handlers/finalize.js';
import { createSweepHandler } from '../../../functions/handlers/sweep.js';
import { ManualClock } from '../../../functions/ports/clock.js';
import type { StateMachineStarter } from '../../../functions/ports/state-machine-starter.js';
import type { StatsStore } from '../../../functions/ports/stats-store.js';
import { createObservability, emitMetrics, withObservability } from '../../../functions/shared/middleware.js';
import { defaultParquetEngine } from '../../../functions/shared/parquet-engine.js';
import {
  correlationKeys,
  type WorkflowRuntime,
  workflowEntry,
} from '../../../functions/shared/workflow-runtime.js';
import { writeSampleLake } from '../../../functions/tools/sample-lake.js';
import { capturePowertoolsOutput } from '../../support/powertools-output.js';

interface Emf {
  _aws: {
    CloudWatchMetrics: {
      Namespace: string;
      Dimensions: string[][];
      Metrics: { Name: string; Unit: string }[];
    }[];
  };
  [key: string]: unknown;
}

/** Every JSON line written to stdout/stderr while the test runs (Powertools writes EMF and logs there). */
const output = capturePowertoolsOutput();

const emfLines = () => output.lines.filter((l): l is Emf => '_aws' in l);

/** The EMF line publishing `name` (exactly one expected). */
function emfOf(name: string): Emf {
  const found = emfLines().filter((l) => l._aws.CloudWatchMetrics[0]?.Metrics.some((m) => m.Name === name));
  expect(found, `EMF lines for ${name}`).toHaveLength(1);
  return found[0] as Emf;
}

const context = { functionName: 'test', awsRequestId: 'req-1' } as Context;

describe('withObservability', () => {
  it('flushes metrics only when an invocation added some: no empty-metrics warning on every step', async () => {
    // Prepare
    const raw: string[] = [];
    vi.spyOn(process.stderr, 'write').mockImplementation((chunk) => raw.push(String(chunk)) > 0);
    vi.spyOn(process.stdout, 'write').mockImplementation((chunk) => raw.push(String(chunk)) > 0);
    const observability = createObservability();
    const silent = withObservability(async () => 'ok', observability);
    const counting = withObservability(async () => {
      observability.metrics.addMetric('Things', 'Count', 2);
      return 'ok';
    }, observability);

    // Act
    await silent({}, context);
    await silent({}, context);
    await counting({}, context);

    // Assess
    expect(raw.join('')).not.toContain('No application metrics');
    const emf = raw.filter((l) => l.includes('"_aws"'));
    expect(emf.filter((l) => l.includes('"Things"'))).toHaveLength(1);
  });
});

describe('emitMetrics', () => {
  it('prints one EMF line per datum under LakeCompactor, with service and each dimension set', () => {
    // Prepare
    const { metrics } = createObservability('some-other-log-name');

    // Act
    emitMetrics(metrics, [
      {
        name: 'Runs',
        unit: 'Count',
        value: 1,
        dimensionSets: [{ Table: 'events', Outcome: 'compacted' }, { Outcome: 'compacted' }],
      },
    ]);

    // Assess
    const emf = emfOf('Runs');
    expect(emf._aws.CloudWatchMetrics[0]).toEqual({
      Namespace: 'LakeCompactor',
      Dimensions: [
        ['service', 'Table', 'Outcome'],
        ['service', 'Outcome'],
      ],
      Metrics: [{ Name: 'Runs', Unit: 'Count' }],
    });
    expect(emf).toMatchObject({ service: 'lake-compactor', Table: 'events', Outcome: 'compacted', Runs: 1 });
  });
});

describe('correlationKeys', () => {
  it('finds the run at `run` or `state.run`, the group, and validate’s execution and input', () => {
    // Prepare
    const run = { table: 'events', partition: 'date=1', runId: 'r1', executionArn: 'arn:x', bucket: 'b' };

    // Act
    const step = correlationKeys({ run, group: { groupId: 'g0001' } });
    const finalize = correlationKeys({ outcome: 'failed', state: { run } });
    const validate = correlationKeys({
      input: { table: 'events', partition: 'date=2' },
      execution: { name: 'manual-1', id: 'arn:y' },
    });
    const junk = correlationKeys('not an event');

    // Assess
    expect(step).toEqual({
      table: 'events',
      partition: 'date=1',
      runId: 'r1',
      executionArn: 'arn:x',
      groupId: 'g0001',
    });
    expect(finalize).toEqual({ table: 'events', partition: 'date=1', runId: 'r1', executionArn: 'arn:x' });
    expect(validate).toEqual({
      table: 'events',
      partition: 'date=2',
      runId: 'manual-1',
      executionArn: 'arn:y',
    });
    expect(junk).toEqual({});
  });
});

describe('workflowEntry', () => {
  const env = {
    TABLE_NAME: 'state',
    TABLES: JSON.stringify([{ name: 'events', bucket: 'lake', prefix: 'events' }]),
  };
  const event = { run: { table: 'events', partition: 'date=1', runId: 'r1' }, groupId: 'g0002' };

  it('gives the step the observability and puts the run’s keys on its log lines', async () => {
    // Prepare
    const handler = workflowEntry(
      (_runtime, observability) => async () => {
        observability.logger.info('inside the step');
        return 'ok';
      },
      env,
    );

    // Act
    const result = await handler(event, context);

    // Assess
    expect(result).toBe('ok');
    const line = output.lines.find((l) => l.message === 'inside the step');
    expect(line).toMatchObject({ table: 'events', partition: 'date=1', runId: 'r1', groupId: 'g0002' });
  });

  it('logs a failing step’s error with the keys and rethrows it for Retry/Catch', async () => {
    // Prepare
    const handler = workflowEntry(
      () => async () => {
        throw new RangeError('boom');
      },
      env,
    );

    // Act
    const attempt = handler(event, context);

    // Assess
    await expect(attempt).rejects.toThrow('boom');
    const line = output.lines.find((l) => l.message === 'step failed');
    expect(line).toMatchObject({
      level: 'ERROR',
      table: 'events',
      runId: 'r1',
      error: { name: 'RangeError' },
    });
  });
});

describe('finalize handler', () => {
  const tables = parseTableConfigs([
    { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
  ]);
  const DAY = '2024-03-01';

  function runContext(runId: string): RunContext {
    const normalized = normalizeRunInput(
      { table: 'events', partition: `date=${DAY}`, quietMinutes: 0 },
      tables,
      {
        executionName: runId,
        startedAt: 1_000,
      },
    );
    if (normalized.mode !== 'single') throw new Error('expected one partition');
    return normalized.run;
  }

  it('prints the run’s metrics once as EMF, per table, with throughput over the rewrite window', async () => {
    // Prepare: a real compaction of one partition over in-memory adapters, 30 s from plan to commit
    const store = new MemoryObjectStore();
    const journal = new MemoryJournal();
    const leases = new MemoryLeases();
    const clock = new ManualClock(5_000);
    await writeSampleLake(
      async (key, bytes) => {
        await store.put(key, bytes);
      },
      {
        table: 'events',
        days: 1,
        batches: 6,
        startDate: DAY,
        minRows: 10,
        maxRows: 30,
        seed: 3,
      },
    );
    const run = runContext('metrics-1');
    const deps = { store, journal, clock, engine: defaultParquetEngine };
    await acquireLease(leases, run, clock.now());
    const plan = await planRun({ ...deps, leases }, run, { inlineGroupLimit: 40, compactMemoryMb: 1024 });
    clock.advance(10_000);
    const compacted = await compactGroup(deps, run, { groupId: 'g0001', expectedOutputFiles: 1 });
    await verifyGroup(deps, run, 'g0001', compacted.fingerprint);
    clock.advance(20_000);
    await commitStep(deps, run.runId, 'g0001');
    const runtime = {
      env: {} as WorkflowRuntime['env'],
      tables,
      clock,
      leases,
      quarantine: new MemoryQuarantine(),
      storeFor: () => store,
      journalFor: () => journal,
      formatFor: (r) => tableFormat(r.format),
    } satisfies WorkflowRuntime;
    const observability = createObservability();
    const handler = createFinalizeHandler(runtime, observability);

    // Act
    const summary = await handler({ outcome: 'compacted', state: { run, plan } });

    // Assess
    expect(summary.groupsDone).toBe(1);
    const names = emfLines().flatMap((l) => l._aws.CloudWatchMetrics[0]?.Metrics.map((m) => m.Name) ?? []);
    expect(names.sort()).toEqual(
      [
        'BytesRewritten',
        'DurationMs',
        'EstimatedCostUSD',
        'FilesAfter',
        'FilesBefore',
        'RewriteDurationMs',
        'RowsRewritten',
        'Runs',
        'ThroughputMBps',
      ].sort(),
    );
    expect(emfOf('Runs')).toMatchObject({ Table: 'events', Outcome: 'compacted', Runs: 1 });
    expect(emfOf('Runs')._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([
      ['service', 'Table', 'Outcome'],
      ['service', 'Outcome'],
    ]);
    for (const name of ['FilesBefore', 'FilesAfter', 'BytesRewritten', 'RowsRewritten', 'ThroughputMBps']) {
      expect(emfOf(name)._aws.CloudWatchMetrics[0]?.Dimensions, name).toEqual([['service', 'Table']]);
      expect(emfOf(name), name).toMatchObject({ service: 'lake-compactor', Table: 'events' });
    }
    expect(emfOf('FilesBefore').FilesBefore).toBe(summary.filesBefore);
    expect(emfOf('FilesAfter').FilesAfter).toBe(1);
    expect(emfOf('RowsRewritten').RowsRewritten).toBe(summary.rows);
    expect(emfOf('RewriteDurationMs').RewriteDurationMs).toBe(30_000);
    expect(emfOf('ThroughputMBps').ThroughputMBps).toBeCloseTo(summary.bytesRewritten / 1024 / 1024 / 30, 9);
    expect(emfOf('EstimatedCostUSD').EstimatedCostUSD).toBe(summary.estimatedCost?.usd);
    expect(output.lines.find((l) => l.message === 'run finished')).toMatchObject({
      table: 'events',
      outcome: 'compacted',
    });
  });
});

describe('sweep handler', () => {
  const tables = parseTableConfigs([
    { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['date'] },
  ]);
  const MIB = 1024 * 1024;
  const NOW = 10_000_000;

  function snapshot(partition: string, overrides: Partial<PartitionSnapshot> = {}): PartitionSnapshot {
    return {
      table: 'events',
      partition,
      fileCount: 10,
      totalBytes: 10 * MIB,
      smallCount: 10,
      smallBytes: 10 * MIB,
      histogram: [],
      state: 'idle',
      generation: 1,
      version: 1,
      ...overrides,
    };
  }

  it('prints per-table fragmentation and the stuck leases it released as EMF', async () => {
    // Prepare: two partitions (one fragmented), one lease held by an execution that failed long ago
    const stuck = snapshot('date=2', {
      fileCount: 2,
      totalBytes: 400 * MIB,
      smallCount: 0,
      smallBytes: 0,
      state: 'compacting',
      lease: { runId: 'events-x-g1', executionName: 'events-x-g1', acquiredAt: NOW - 3_600_000 },
    });
    const stats = {
      listDue: async () => [],
      listLeased: async () => [stuck],
      listPartitions: async () => [snapshot('date=1'), stuck],
      listNeedingAttention: async () => [snapshot('date=0', { state: 'needs-attention' })],
      release: async () => true,
      get: async () => undefined,
    } as unknown as StatsStore;
    const starter: StateMachineStarter = {
      executionArn: (name) => `arn:aws:states:::execution:sm:${name}`,
      start: async () => ({ executionArn: 'arn', alreadyStarted: false }),
      describe: async () => ({ status: 'FAILED', stoppedAt: NOW - 60_000 }),
    };
    const observability = createObservability();
    const sweep = createSweepHandler({
      tables,
      trigger: { stats, starter, policies: new Map([['events', DEFAULT_POLICY]]), trigger: 'sweep' },
      storeFor: () => new MemoryObjectStore(),
      clock: new ManualClock(NOW),
      observability,
    });

    // Act
    await sweep({ mode: 'sweep' });

    // Assess
    expect(emfOf('StuckLeases')).toMatchObject({
      Table: 'events',
      StuckLeases: 1,
      service: 'lake-compactor',
    });
    expect(emfOf('StuckLeases')._aws.CloudWatchMetrics[0]?.Dimensions).toEqual([
      ['service', 'Table'],
      ['service'],
    ]);
    expect(emfOf('PartitionsNeedingAttention')).toMatchObject({
      Table: 'events',
      PartitionsNeedingAttention: 1,
    });
    const expected = { TotalFiles: 12, SmallFiles: 10, Partitions: 2, PartitionsOverTrigger: 1 };
    for (const [name, value] of Object.entries(expected)) {
      expect(emfOf(name), name).toMatchObject({ Table: 'events', [name]: value });
      expect(emfOf(name)._aws.CloudWatchMetrics[0]?.Dimensions, name).toEqual([['service', 'Table']]);
    }
    expect(emfOf('SmallFileRatio').SmallFileRatio).toBeCloseTo((10 / 12) * 100, 9);
    expect(emfOf('SmallFileRatio')._aws.CloudWatchMetrics[0]?.Metrics).toEqual([
      { Name: 'SmallFileRatio', Unit: 'Percent' },
    ]);
  });

  it('still sweeps when the fragmentation read fails, and says so in the log', async () => {
    // Prepare
    const stats = {
      listDue: async () => [],
      listLeased: async () => [],
      listNeedingAttention: async () => [],
      listPartitions: async () => {
        throw new Error('throttled');
      },
    } as unknown as StatsStore;
    const sweep = createSweepHandler({
      tables,
      trigger: { stats, policies: new Map([['events', DEFAULT_POLICY]]), trigger: 'sweep' },
      storeFor: () => new MemoryObjectStore(),
      clock: new ManualClock(NOW),
      observability: createObservability(),
    });

    // Act
    const result = await sweep({ mode: 'sweep' });

    // Assess
    expect(result.mode).toBe('sweep');
    expect(emfOf('StuckLeases')).toMatchObject({ StuckLeases: 0 });
    expect(emfLines().some((l) => 'TotalFiles' in l)).toBe(false);
    expect(
      output.lines.find((l) => l.message === 'fragmentation not measured; the next sweep tries again'),
    ).toMatchObject({
      level: 'WARN',
      table: 'events',
    });
  });
});
