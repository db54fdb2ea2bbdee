// Unit tests of the run → metrics mapping: every run counts once by outcome, rewrite figures only for runs
// that published something, throughput over the plan-to-commit window, cost only for executed plans.
import { describe, expect, it } from 'vitest';
import type { MetricDatum } from '../../../../functions/core/metrics.js';
import type { RunSummary } from '../../../../functions/core/workflow/finalize.js';
import { rewriteWindowMs, runMetrics } from '../../../../functions/core/workflow/run-metrics.js';
import type { GroupJournalEntry, GroupState } from '../../../../functions/ports/journal.js';

const MIB = 1024 * 1024;

function summary(overrides: Partial<RunSummary> = {}): RunSummary {
  return {
    runId: 'events-abc-g1',
    table: 'events',
    partition: 'date=2024-03-01',
    outcome: 'compacted',
    status: 'SUCCEEDED',
    trigger: 'profiler',
    dryRun: false,
    groups: 2,
    groupsDone: 2,
    groupsAborted: 0,
    failedGroups: 0,
    filesBefore: 120,
    bytesBefore: 240 * MIB,
    filesAfter: 2,
    bytesAfter: 200 * MIB,
    filesRetired: 120,
    filesPublished: 2,
    rows: 1_000_000,
    bytesRewritten: 240 * MIB,
    durationMs: 1_000_000,
    visibilityWindowMs: 40,
    estimatedCost: {
      usd: 0.0123,
      lambdaGbSeconds: 30,
      requests: { get: 1, put: 1, copy: 1, delete: 1 },
      breakdownUsd: { lambda: 0.01, s3: 0.002, stepFunctions: 0.0003 },
      assumptions: 'test',
    },
    ...overrides,
  };
}

function entry(groupId: string, state: GroupState, createdAt: number, updatedAt: number): GroupJournalEntry {
  return {
    runId: 'r',
    groupId,
    table: 'events',
    partition: 'date=2024-03-01',
    state,
    inputs: [],
    outputs: [],
    retireMode: 'trash',
    stagingPrefix: 's/',
    trashPrefix: 't/',
    createdAt,
    updatedAt,
    revision: 1,
  };
}

const byName = (metrics: readonly MetricDatum[]) => new Map(metrics.map((m) => [m.name, m]));

describe('runMetrics', () => {
  it('maps a compaction to runs, files, bytes, rows, durations, throughput and cost under {Table}', () => {
    // Prepare
    const run = summary();

    // Act
    const metrics = byName(runMetrics(run, { rewriteWindowMs: 60_000 }));

    // Assess
    expect(metrics.get('Runs')).toEqual({
      name: 'Runs',
      unit: 'Count',
      value: 1,
      dimensionSets: [{ Table: 'events', Outcome: 'compacted' }, { Outcome: 'compacted' }],
    });
    expect(metrics.get('DurationMs')).toMatchObject({
      value: 1_000_000,
      unit: 'Milliseconds',
      dimensionSets: [{ Table: 'events', Outcome: 'compacted' }],
    });
    const perTable = { dimensionSets: [{ Table: 'events' }] };
    expect(metrics.get('FilesBefore')).toMatchObject({ value: 120, unit: 'Count', ...perTable });
    expect(metrics.get('FilesAfter')).toMatchObject({ value: 2, unit: 'Count', ...perTable });
    expect(metrics.get('BytesRewritten')).toMatchObject({ value: 240 * MIB, unit: 'Bytes', ...perTable });
    expect(metrics.get('RowsRewritten')).toMatchObject({ value: 1_000_000, unit: 'Count', ...perTable });
    expect(metrics.get('RewriteDurationMs')).toMatchObject({ value: 60_000, ...perTable });
    expect(metrics.get('EstimatedCostUSD')).toEqual({
      name: 'EstimatedCostUSD',
      unit: 'None',
      value: 0.0123,
      dimensionSets: [{ Table: 'events' }, {}],
    });
  });

  it('computes throughput over the rewrite window, not the run duration that includes the quiet wait', () => {
    // Prepare: 240 MiB in 60 s of rewrite, in a run of 1,000 s (most of it waiting for quiet)
    const run = summary();

    // Act
    const throughput = byName(runMetrics(run, { rewriteWindowMs: 60_000 })).get('ThroughputMBps');

    // Assess
    expect(throughput).toEqual({
      name: 'ThroughputMBps',
      unit: 'Megabytes/Second',
      value: 4,
      dimensionSets: [{ Table: 'events' }],
    });
  });

  it('publishes no throughput without a rewrite window (a rate over nothing would be invented)', () => {
    // Prepare / Act
    const names = runMetrics(summary()).map((m) => m.name);

    // Assess
    expect(names).toContain('BytesRewritten');
    expect(names).not.toContain('ThroughputMBps');
    expect(names).not.toContain('RewriteDurationMs');
  });

  it('publishes only the run count and duration for a dry run (no byte moved, nothing spent)', () => {
    // Prepare
    const run = summary({
      outcome: 'dry-run',
      dryRun: true,
      groupsDone: 0,
      filesRetired: 0,
      bytesRewritten: 0,
    });

    // Act
    const names = runMetrics(run, { rewriteWindowMs: 1000 }).map((m) => m.name);

    // Assess
    expect(names).toEqual(['Runs', 'DurationMs']);
  });

  it('publishes only the run count and duration for a run that gave up or had nothing to do', () => {
    // Prepare
    const gaveUp = summary({ outcome: 'gave-up', groups: 0, groupsDone: 0, estimatedCost: undefined });
    const nothing = summary({ outcome: 'nothing-to-do', groups: 0, groupsDone: 0 });

    // Act
    const names = [runMetrics(gaveUp), runMetrics(nothing)].map((m) => m.map((d) => d.name));

    // Assess
    expect(names).toEqual([
      ['Runs', 'DurationMs'],
      ['Runs', 'DurationMs'],
    ]);
  });

  it('counts a failed run by outcome and still reports what its finished groups rewrote and cost', () => {
    // Prepare
    const run = summary({ outcome: 'failed', status: 'FAILED', groupsDone: 1, failedGroups: 1 });

    // Act
    const metrics = byName(runMetrics(run));

    // Assess
    expect(metrics.get('Runs')?.dimensionSets).toEqual([
      { Table: 'events', Outcome: 'failed' },
      { Outcome: 'failed' },
    ]);
    expect(metrics.has('BytesRewritten')).toBe(true);
    expect(metrics.has('EstimatedCostUSD')).toBe(true);
  });

  it('counts a run that ended on the compacted path with every group failed as failed', () => {
    // Prepare: verification failed the only group; the state machine still took the compacted path
    const run = summary({
      status: 'FAILED',
      groupsDone: 0,
      failedGroups: 2,
      filesRetired: 0,
      bytesRewritten: 0,
    });

    // Act
    const metrics = byName(runMetrics(run));

    // Assess
    expect(metrics.get('Runs')?.dimensionSets).toEqual([
      { Table: 'events', Outcome: 'failed' },
      { Outcome: 'failed' },
    ]);
    expect(metrics.get('DurationMs')?.dimensionSets).toEqual([{ Table: 'events', Outcome: 'failed' }]);
    expect(metrics.has('BytesRewritten')).toBe(false);
  });

  it('counts the sweep’s settle retry that could not settle as settled (its partition’s needs-attention alarm reports it), an operator’s as failed', () => {
    // Prepare: settle runs that left a group unsettled
    const unsettled = {
      outcome: 'settled' as const,
      status: 'FAILED' as const,
      groups: 0,
      groupsDone: 0,
      needsAttention: '1 group(s) could not be settled: AccessDenied',
    };

    // Act
    const retry = byName(runMetrics(summary({ ...unsettled, trigger: 'sweep' })));
    const operator = byName(runMetrics(summary({ ...unsettled, trigger: 'operator' })));

    // Assess
    expect(retry.get('Runs')?.dimensionSets).toEqual([
      { Table: 'events', Outcome: 'settled' },
      { Outcome: 'settled' },
    ]);
    expect(operator.get('Runs')?.dimensionSets).toEqual([
      { Table: 'events', Outcome: 'failed' },
      { Outcome: 'failed' },
    ]);
  });

  it('never uses the partition or the run id as a dimension', () => {
    // Prepare / Act
    const dimensions = runMetrics(summary(), { rewriteWindowMs: 1 }).flatMap((m) =>
      m.dimensionSets.flatMap((set) => Object.keys(set)),
    );

    // Assess
    expect(new Set(dimensions)).toEqual(new Set(['Table', 'Outcome']));
  });
});

describe('rewriteWindowMs', () => {
  it('spans from the plan (journal entries created) to the last group done', () => {
    // Prepare
    const entries = [
      entry('g1', 'done', 1_000, 20_000),
      entry('g2', 'done', 1_000, 35_000),
      entry('g3', 'aborted', 1_000, 50_000),
    ];

    // Act
    const window = rewriteWindowMs(entries);

    // Assess
    expect(window).toBe(34_000);
  });

  it('is undefined when no group finished', () => {
    // Prepare / Act / Assess
    expect(rewriteWindowMs([entry('g1', 'aborted', 1_000, 5_000)])).toBeUndefined();
    expect(rewriteWindowMs([])).toBeUndefined();
  });
});
