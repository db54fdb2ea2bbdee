// The profiler and Delta Lake or Iceberg tables, with fakes: a log or metadata write inside a configured table
// resolves to `foreign` (not silently ignored), and a partition covered by a recorded marker is decided as
// blocked with the reason, never started — while the marker is read only when the verdict would be compact.
import { describe, expect, it } from 'vitest';
import type { ForeignFormatMarker } from '../../../../functions/core/formats/foreign-tables.js';
import { DEFAULT_POLICY } from '../../../../functions/core/policy.js';
import { normalizeSequencer, resolveEvent } from '../../../../functions/core/profiler/events.js';
import type {
  DecisionSummary,
  ObjectEvent,
  PartitionSnapshot,
} from '../../../../functions/core/profiler/model.js';
import { evaluatePartition, type TriggerDeps } from '../../../../functions/core/profiler/trigger.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import type { StateMachineStarter } from '../../../../functions/ports/state-machine-starter.js';
import type { StatsStore } from '../../../../functions/ports/stats-store.js';

const NOW = Date.UTC(2026, 10, 30, 12);
const MIB = 1024 * 1024;
const tables = parseTableConfigs([
  { name: 'events', bucket: 'lake', prefix: 'events', partitionColumns: ['region', 'date'] },
]);
const policies = new Map([['events', DEFAULT_POLICY]]);

function event(key: string, kind: 'created' | 'removed' = 'created'): ObjectEvent {
  return {
    bucket: 'lake',
    key,
    kind,
    ...(kind === 'created' ? { size: 2048 } : {}),
    sequencer: normalizeSequencer('0A'),
    eventTime: NOW,
    eventName: kind === 'created' ? 'ObjectCreated:Put' : 'ObjectRemoved:Delete',
  };
}

describe('resolveEvent and Delta Lake or Iceberg writes', () => {
  it('resolves a Delta commit, checkpoint or log cleanup inside a configured table to foreign, with its root', () => {
    // Prepare / Act
    const commit = resolveEvent(tables, policies, event('events/_delta_log/00000000000000000001.json'));
    const checkpoint = resolveEvent(
      tables,
      policies,
      event('events/_delta_log/00000000000000000010.checkpoint.parquet'),
    );
    const cleanup = resolveEvent(
      tables,
      policies,
      event('events/region=eu/imported/_delta_log/00000000000000000000.json', 'removed'),
    );

    // Assess
    expect(commit).toEqual({
      kind: 'foreign',
      table: 'events',
      format: 'delta',
      root: '',
      bucket: 'lake',
      key: 'events/_delta_log/00000000000000000001.json',
      eventTime: NOW,
    });
    expect(checkpoint).toMatchObject({ kind: 'foreign', format: 'delta', root: '' });
    expect(cleanup).toMatchObject({ kind: 'foreign', format: 'delta', root: 'region=eu/imported/' });
  });

  it('never takes the own log of a table configured with format "delta" for a foreign table', () => {
    // Prepare
    const delta = parseTableConfigs([
      {
        name: 'events',
        bucket: 'lake',
        prefix: 'events',
        partitionColumns: ['date'],
        format: 'delta',
        deltaLogStore: { type: 's3-conditional' },
      },
    ]);

    // Act
    const commit = resolveEvent(delta, policies, event('events/_delta_log/00000000000000000001.json'));
    const checkpoint = resolveEvent(
      delta,
      policies,
      event('events/_delta_log/00000000000000000010.checkpoint.parquet'),
    );

    // Assess: its commit is the table's change (read from the log), its checkpoint nothing; neither is foreign
    expect(commit.kind).toBe('commit');
    expect(checkpoint.kind).toBe('ignored');
  });

  it('resolves an Iceberg metadata write to foreign, and leaves data, manifests and other tables as before', () => {
    // Prepare / Act
    const metadata = resolveEvent(tables, policies, event('events/orders/metadata/v3.metadata.json'));
    const hint = resolveEvent(tables, policies, event('events/orders/metadata/version-hint.text'));
    const manifest = resolveEvent(tables, policies, event('events/orders/metadata/snap-1-1-abc.avro'));
    const data = resolveEvent(tables, policies, event('events/region=eu/date=2026-11-29/part-0.parquet'));
    const elsewhere = resolveEvent(tables, policies, event('other/_delta_log/0.json'));

    // Assess
    expect(metadata).toMatchObject({ kind: 'foreign', format: 'iceberg', root: 'orders/' });
    expect(hint).toMatchObject({ kind: 'foreign', format: 'iceberg', root: 'orders/' });
    expect(manifest).toMatchObject({ kind: 'ignored' });
    expect(data).toMatchObject({ kind: 'data' });
    expect(elsewhere).toEqual({ kind: 'ignored', reason: 'outside every configured table' });
  });
});

/** A StatsStore that records decisions and schedules in memory and counts marker reads. */
function fakeStats(markers: ForeignFormatMarker[]) {
  const decisions: DecisionSummary[] = [];
  let markerReads = 0;
  let scheduled = 0;
  const stats = {
    foreignFormats: async () => {
      markerReads += 1;
      return markers;
    },
    recordDecision: async (_snapshot: PartitionSnapshot, decision: DecisionSummary) => {
      decisions.push(decision);
      return true;
    },
    schedule: async (snapshot: PartitionSnapshot) => {
      scheduled += 1;
      return { ...snapshot, state: 'scheduled' as const, generation: snapshot.generation + 1 };
    },
  } as unknown as StatsStore;
  return {
    stats,
    decisions,
    reads: () => markerReads,
    scheduled: () => scheduled,
  };
}

function recordingStarter(): StateMachineStarter & { readonly names: string[] } {
  const names: string[] = [];
  return {
    names,
    executionArn: (name) => `arn:aws:states:::execution:compact:${name}`,
    start: async (name) => {
      names.push(name);
      return { executionArn: `arn:${name}`, alreadyStarted: false };
    },
    describe: async () => undefined,
  };
}

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

const DELTA_AT_ROOT: ForeignFormatMarker = {
  format: 'delta',
  root: '',
  evidenceKey: 'events/_delta_log/00000000000000000001.json',
  seenAt: NOW - 1000,
};

describe('evaluatePartition (profiler and sweep) and foreign-format markers', () => {
  it('records a partition of a table with a Delta marker as blocked with the reason, and starts nothing', async () => {
    // Prepare
    const fake = fakeStats([DELTA_AT_ROOT]);
    const starter = recordingStarter();
    const deps: TriggerDeps = { stats: fake.stats, starter, policies, trigger: 'sweep' };

    // Act
    const outcome = await evaluatePartition(deps, due('region=eu/date=2026-11-29'), NOW);

    // Assess
    expect(outcome.action).toBe('blocked');
    expect(outcome.decision.compact).toBe(false);
    expect(starter.names).toEqual([]);
    expect(fake.scheduled()).toBe(0);
    expect(fake.decisions).toHaveLength(1);
    expect(fake.decisions[0]).toMatchObject({ compact: false, action: 'blocked' });
    expect(fake.decisions[0]?.reasons.at(-1)).toBe(
      'inside a Delta Lake table (the whole table; found events/_delta_log/00000000000000000001.json): its transaction log, not the file listing, defines which files are live, so it is never compacted as plain Parquet; to have it compacted and vacuumed through its log, configure the table with format: "delta" and prefix "events"',
    );
  });

  it('blocks only the partitions under a nested Iceberg table and starts the others', async () => {
    // Prepare
    const fake = fakeStats([
      {
        format: 'iceberg',
        root: 'region=eu/',
        evidenceKey: 'events/region=eu/metadata/v1.metadata.json',
        seenAt: NOW,
      },
    ]);
    const starter = recordingStarter();
    const deps: TriggerDeps = { stats: fake.stats, starter, policies };

    // Act
    const eu = await evaluatePartition(deps, due('region=eu/date=2026-11-29'), NOW);
    const eu2 = await evaluatePartition(deps, due('region=eu2/date=2026-11-29'), NOW);

    // Assess
    expect(eu.action).toBe('blocked');
    expect(eu.decision.reasons.at(-1)).toMatch(
      /^inside an Apache Iceberg table \(everything under region=eu\/;/,
    );
    expect(eu2.action).toBe('started');
    expect(starter.names).toHaveLength(1);
  });

  it('reads no marker when the verdict is not compact (the hot path stays as it was)', async () => {
    // Prepare: still being written to (quiet window not over), and too few small files
    const fake = fakeStats([DELTA_AT_ROOT]);
    const deps: TriggerDeps = { stats: fake.stats, starter: recordingStarter(), policies };

    // Act
    const hot = await evaluatePartition(deps, due('region=eu/date=1', { lastWriteAt: NOW - 60_000 }), NOW);
    const few = await evaluatePartition(deps, due('region=eu/date=2', { smallCount: 2, fileCount: 2 }), NOW);

    // Assess
    expect(hot.action).toBe('waiting');
    expect(few.action).toBe('blocked');
    expect(fake.reads()).toBe(0);
  });
});
