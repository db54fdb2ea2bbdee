// Unit tests of the run caps: the RUN_CAPS configuration and its synth-time checks, and what the trigger
// does when the store refuses a schedule at a cap (recorded as waiting, still due; the sweep stops trying).
import { describe, expect, it } from 'vitest';
import { DEFAULT_POLICY } from '../../../functions/core/policy.js';
import type { DecisionSummary, PartitionSnapshot } from '../../../functions/core/profiler/model.js';
import { sweepTable } from '../../../functions/core/profiler/sweep.js';
import { evaluatePartition, type TriggerDeps } from '../../../functions/core/profiler/trigger.js';
import {
  capAction,
  DEFAULT_RUN_CAPS,
  limitsFor,
  parseRunCaps,
  type RunCapReached,
  type RunLimits,
  runCapIssues,
} from '../../../functions/core/run-caps.js';
import type { StateMachineStarter } from '../../../functions/ports/state-machine-starter.js';
import type { StatsStore } from '../../../functions/ports/stats-store.js';

const NOW = Date.UTC(2026, 10, 30, 12, 0, 0);
const MIB = 1024 * 1024;
const policies = new Map([['events', DEFAULT_POLICY]]);

/** Ten small files, quiet for an hour: the policy says compact. */
function due(partition: string, overrides: Partial<PartitionSnapshot> = {}): PartitionSnapshot {
  return {
    table: 'events',
    partition,
    fileCount: 10,
    totalBytes: 10 * MIB,
    smallCount: 10,
    smallBytes: 10 * MIB,
    histogram: [],
    state: 'idle',
    generation: 0,
    version: 3,
    lastWriteAt: NOW - 60 * 60_000,
    ...overrides,
  };
}

/** A store whose counters allow `free` more schedules, then refuse at the table cap. */
function cappedStats(free: number, partitions: PartitionSnapshot[] = []) {
  const decisions: { partition: string; decision: DecisionSummary; dueAt?: number }[] = [];
  const limitsSeen: (RunLimits | undefined)[] = [];
  let attempts = 0;
  const stats = {
    foreignFormats: async () => [],
    listDue: async () => partitions.map((p) => ({ table: p.table, partition: p.partition })),
    get: async (ref: { partition: string }) => partitions.find((p) => p.partition === ref.partition),
    listLeased: async () => [],
    listNeedingAttention: async () => [],
    recordDecision: async (
      snapshot: PartitionSnapshot,
      decision: DecisionSummary,
      options: { dueAt?: number },
    ) => {
      decisions.push({ partition: snapshot.partition, decision, ...options });
      return true;
    },
    schedule: async (snapshot: PartitionSnapshot, _lease: unknown, _d: unknown, limits?: RunLimits) => {
      attempts += 1;
      limitsSeen.push(limits);
      if (free > 0) {
        free -= 1;
        return { ...snapshot, state: 'scheduled' as const, generation: snapshot.generation + 1 };
      }
      const reached: RunCapReached = {
        kind: 'cap-reached',
        scope: 'table',
        cap: limits?.table ?? 0,
        running: 3,
      };
      return reached;
    },
  } as unknown as StatsStore;
  return { stats, decisions, limitsSeen, attempts: () => attempts };
}

const starter: StateMachineStarter = {
  executionArn: (name) => `arn:aws:states:::execution:compact:${name}`,
  start: async (name) => ({ executionArn: `arn:${name}`, alreadyStarted: false }),
  describe: async () => undefined,
};

describe('run caps configuration', () => {
  it('reads RUN_CAPS, defaults when unset, and gives a table its own cap over the per-table one', () => {
    // Prepare / Act
    const caps = parseRunCaps('{"total":20,"perTable":4,"byTable":{"clicks":1}}');

    // Assess
    expect(parseRunCaps(undefined)).toEqual(DEFAULT_RUN_CAPS);
    expect(DEFAULT_RUN_CAPS).toEqual({ total: 50, perTable: 10, byTable: {} });
    expect(limitsFor(caps, 'clicks')).toEqual({ table: 1, total: 20 });
    expect(limitsFor(caps, 'events')).toEqual({ table: 4, total: 20 });
  });

  it('refuses a malformed RUN_CAPS naming every problem', () => {
    // Prepare / Act
    const parse = () => parseRunCaps('{"total":0,"perTable":"ten","extra":1}');

    // Assess
    expect(parse).toThrow(/RUN_CAPS is invalid/);
    expect(parse).toThrow(/total/);
    expect(parse).toThrow(/perTable/);
    expect(parse).toThrow(/extra/);
  });

  it('reports every bad cap prop at synth, and accepts a table cap above the deployment cap', () => {
    // Prepare / Act
    const issues = runCapIssues(
      {
        maxConcurrentRuns: 0,
        maxConcurrentRunsPerTable: 1.5,
        maxConcurrentRunsByTable: { nope: 2, events: -1 },
      },
      ['events'],
    );
    const fine = runCapIssues({ maxConcurrentRuns: 5, maxConcurrentRunsPerTable: 10 }, ['events']);

    // Assess
    expect(issues).toEqual([
      '`triggers.maxConcurrentRuns` is 0; use a whole number of runs from 1 to 10000.',
      '`triggers.maxConcurrentRunsPerTable` is 1.5; use a whole number of runs from 1 to 10000.',
      '`triggers.maxConcurrentRunsByTable` names table "nope", which is not configured; configured tables: "events".',
      '`triggers.maxConcurrentRunsByTable.events` is -1; use a whole number of runs from 1 to 10000.',
    ]);
    expect(fine).toEqual([]);
  });

  it('words a capped decision without the running count, so it does not change while the cap holds', () => {
    // Prepare / Act / Assess
    expect(capAction('events', { scope: 'table', cap: 20 })).toBe(
      'waiting: concurrency cap 20 of table events reached',
    );
    expect(capAction('events', { scope: 'deployment', cap: 50 })).toBe(
      'waiting: concurrency cap 50 of the deployment reached',
    );
  });
});

describe('the trigger at a cap', () => {
  it('records a capped partition as waiting and keeps it due, passing the table’s limits to the store', async () => {
    // Prepare
    const fake = cappedStats(0);
    const deps: TriggerDeps = {
      stats: fake.stats,
      starter,
      policies,
      runCaps: { total: 50, perTable: 10, byTable: { events: 3 } },
    };
    const snapshot = due('date=2026-11-29', { dueAt: NOW - 20 * 60_000 });

    // Act
    const outcome = await evaluatePartition(deps, snapshot, NOW);

    // Assess
    expect(outcome.action).toBe('capped');
    expect(fake.limitsSeen).toEqual([{ table: 3, total: 50 }]);
    expect(fake.decisions).toEqual([
      {
        partition: 'date=2026-11-29',
        decision: expect.objectContaining({
          compact: true,
          action: 'waiting: concurrency cap 3 of table events reached',
        }),
        dueAt: NOW - 20 * 60_000, // kept: it keeps its place among the oldest due
        storeItem: true,
      },
    ]);
  });

  it('does not rewrite a capped decision that is already recorded', async () => {
    // Prepare
    const fake = cappedStats(0);
    const deps: TriggerDeps = { stats: fake.stats, starter, policies, runCaps: DEFAULT_RUN_CAPS };
    const snapshot = due('date=2026-11-29', {
      dueAt: NOW - 20 * 60_000,
      lastDecision: {
        at: NOW - 15 * 60_000,
        compact: true,
        reasons: [],
        action: 'waiting: concurrency cap 10 of table events reached',
      },
    });

    // Act
    const outcome = await evaluatePartition(deps, snapshot, NOW);

    // Assess
    expect(outcome.action).toBe('capped');
    expect(fake.attempts()).toBe(1);
    expect(fake.decisions).toEqual([]);
  });

  it('makes one refused attempt per sweep: after the cap, the rest are recorded as waiting without trying', async () => {
    // Prepare
    const partitions = ['a', 'b', 'c', 'd', 'e'].map((p) => due(`p=${p}`));
    const fake = cappedStats(2, partitions);
    const deps: TriggerDeps = {
      stats: fake.stats,
      starter,
      policies,
      runCaps: DEFAULT_RUN_CAPS,
      trigger: 'sweep',
    };

    // Act
    const report = await sweepTable(deps, 'events', NOW);

    // Assess
    expect(report.due.map((o) => o.action)).toEqual(['started', 'started', 'capped', 'capped', 'capped']);
    expect(fake.attempts()).toBe(3);
    expect(fake.decisions.map((d) => d.partition)).toEqual(['p=c', 'p=d', 'p=e']);
  });
});
