// Tiering over the in-memory store with a manual clock. The archive classes (GLACIER_IR, DEEP_ARCHIVE) are
// tested here because s3rver rejects GLACIER_IR; the integration test covers STANDARD_IA on s3rver.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { InvalidInputError } from '../../../../functions/core/errors.js';
import {
  decideTiering,
  parseTieringRequest,
  type TieringDeps,
  type TieringRule,
  tier,
} from '../../../../functions/core/maintenance/tiering.js';
import { planPartition } from '../../../../functions/core/planning.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';
import { ManualClock } from '../../../../functions/ports/clock.js';

const DAY = 86_400_000;
/** "Now" is noon, so a partition dated N days back is N whole days old. */
const NOW = Date.UTC(2026, 5, 30, 12);
const RULES: TieringRule[] = [
  { afterDays: 30, storageClass: 'STANDARD_IA' },
  { afterDays: 90, storageClass: 'GLACIER_IR' },
  { afterDays: 365, storageClass: 'DEEP_ARCHIVE' },
];
const TABLES = parseTableConfigs([
  {
    name: 'events',
    bucket: 'lake',
    prefix: 'events/',
    partitionColumns: ['date'],
    dateColumn: 'date',
    dateFormat: 'yyyy-MM-dd',
  },
  { name: 'undated', bucket: 'lake', prefix: 'raw/', partitionColumns: ['region'] },
]);
const BIG = new Uint8Array(200 * 1024);

function day(daysAgo: number): string {
  return new Date(NOW - daysAgo * DAY).toISOString().slice(0, 10);
}

function setup(): { store: MemoryObjectStore; deps: TieringDeps } {
  const clock = new ManualClock(NOW);
  const store = new MemoryObjectStore({ now: () => new Date(clock.now()) });
  return { store, deps: { tables: TABLES, storeFor: () => store, clock } };
}

describe('tier', () => {
  it('puts partitions aged 29/30/89/90/365 days in STANDARD/STANDARD_IA/STANDARD_IA/GLACIER_IR/DEEP_ARCHIVE', async () => {
    // Prepare
    const { store, deps } = setup();
    const ages = [29, 30, 89, 90, 365];
    for (const age of ages) await store.put(`events/date=${day(age)}/part-0.parquet`, BIG);
    // Act
    const report = await tier(deps, parseTieringRequest({ dryRun: false, rules: RULES }));
    // Assess
    const classes = await Promise.all(
      ages.map(async (age) => (await store.head(`events/date=${day(age)}/part-0.parquet`))?.storageClass),
    );
    expect(classes).toEqual(['STANDARD', 'STANDARD_IA', 'STANDARD_IA', 'GLACIER_IR', 'DEEP_ARCHIVE']);
    expect(report.moved).toEqual({
      STANDARD_IA: { count: 2, bytes: 2 * BIG.byteLength },
      GLACIER_IR: { count: 1, bytes: BIG.byteLength },
      DEEP_ARCHIVE: { count: 1, bytes: BIG.byteLength },
    });
  });

  it('goes by the partition date, not the object age: a freshly compacted old partition still moves', async () => {
    // Prepare: the object was written "now" (as a compaction output would be) into a 120-day-old partition.
    const { store, deps } = setup();
    await store.put(`events/date=${day(120)}/part-compacted.zstd.parquet`, BIG);
    // Act
    await tier(deps, parseTieringRequest({ dryRun: false, rules: RULES }));
    // Assess
    expect((await store.head(`events/date=${day(120)}/part-compacted.zstd.parquet`))?.storageClass).toBe(
      'GLACIER_IR',
    );
  });

  it('leaves objects under 128 KB where they are and says why', async () => {
    // Prepare
    const { store, deps } = setup();
    await store.put(`events/date=${day(40)}/small.parquet`, new Uint8Array(128 * 1024 - 1));
    await store.put(`events/date=${day(40)}/exact.parquet`, new Uint8Array(128 * 1024));
    // Act
    const report = await tier(deps, parseTieringRequest({ dryRun: false, rules: RULES }));
    // Assess
    expect((await store.head(`events/date=${day(40)}/small.parquet`))?.storageClass).toBe('STANDARD');
    expect((await store.head(`events/date=${day(40)}/exact.parquet`))?.storageClass).toBe('STANDARD_IA');
    expect(Object.keys(report.kept).join('\n')).toMatch(/bills at least 128 KB/);
  });

  it('in dry-run reports the moves and changes no storage class', async () => {
    // Prepare
    const { store, deps } = setup();
    await store.put(`events/date=${day(100)}/part-0.parquet`, BIG);
    // Act
    const report = await tier(deps, parseTieringRequest({ rules: RULES }));
    // Assess
    expect(report.dryRun).toBe(true);
    expect(report.moves.map((m) => [m.key, m.from, m.to])).toEqual([
      [`events/date=${day(100)}/part-0.parquet`, 'STANDARD', 'GLACIER_IR'],
    ]);
    expect((await store.head(`events/date=${day(100)}/part-0.parquet`))?.storageClass).toBe('STANDARD');
  });

  it('never touches non-data objects, never warms data up, and skips tables without a date column', async () => {
    // Prepare
    const { store, deps } = setup();
    await store.put(`events/date=${day(100)}/_SUCCESS`, BIG);
    await store.put(`events/_temporary/0/date=${day(100)}/part-0.parquet`, BIG);
    await store.put(`events/date=${day(100)}/frozen.parquet`, BIG, { storageClass: 'DEEP_ARCHIVE' });
    await store.put(`raw/region=eu/part-0.parquet`, BIG);
    // Act
    const report = await tier(deps, parseTieringRequest({ dryRun: false, rules: RULES }));
    // Assess
    expect(report.moves).toEqual([]);
    expect((await store.head(`events/date=${day(100)}/frozen.parquet`))?.storageClass).toBe('DEEP_ARCHIVE');
    expect((await store.head('raw/region=eu/part-0.parquet'))?.storageClass).toBe('STANDARD');
    expect(report.skippedTables).toEqual([{ table: 'undated', reason: expect.stringMatching(/dateColumn/) }]);
  });

  it('pages with a cursor and moves each object exactly once across calls', async () => {
    // Prepare
    const { store, deps } = setup();
    for (let i = 0; i < 12; i++)
      await store.put(`events/date=${day(40)}/part-${String(i).padStart(2, '0')}.parquet`, BIG);
    // Act
    const moved: string[] = [];
    let cursor: string | undefined;
    do {
      const report = await tier(
        deps,
        parseTieringRequest({ dryRun: false, rules: RULES, maxObjects: 5, ...(cursor ? { cursor } : {}) }),
      );
      moved.push(...report.moves.map((m) => m.key));
      cursor = report.cursor;
    } while (cursor !== undefined);
    // Assess
    expect(moved).toHaveLength(12);
    expect(new Set(moved).size).toBe(12);
  });
});

describe('decideTiering and the rules', () => {
  it('refuses rules that are not ascending or not colder step by step', () => {
    // Prepare
    const rules = [
      { afterDays: 90, storageClass: 'GLACIER_IR' },
      { afterDays: 30, storageClass: 'STANDARD_IA' },
    ];
    // Act
    const act = () => parseTieringRequest({ rules });
    // Assess
    expect(act).toThrow(InvalidInputError);
    expect(act).toThrow(/ascending afterDays/);
  });

  it('moves a small object to DEEP_ARCHIVE, which has no 128 KB minimum', () => {
    // Prepare
    const object = { size: 1000, storageClass: 'STANDARD' };
    // Act
    const decision = decideTiering(object, 400, RULES, 128 * 1024);
    // Assess
    expect(decision).toMatchObject({ action: 'move', to: 'DEEP_ARCHIVE' });
  });
});

describe('the planner and tiered files', () => {
  it('never plans files in archive classes and gives the class and the way out as the reason', () => {
    // Prepare: five small files, two of them tiered to archive classes.
    const files = ['STANDARD', 'STANDARD', 'STANDARD_IA', 'GLACIER_IR', 'DEEP_ARCHIVE'].map(
      (storageClass, i) => ({
        key: `events/date=2025-01-01/part-${i}.parquet`,
        size: 10_000,
        etag: `e${i}`,
        rows: 10,
        schemaFingerprint: 'fp',
        storageClass,
      }),
    );
    // Act
    const plan = planPartition(
      { table: 'events', partition: 'date=2025-01-01', files, snapshot: { listedAt: NOW } },
      { minInputFiles: 2 },
    );
    // Assess
    expect(plan.groups.flatMap((g) => g.files.map((f) => f.key))).not.toContain(
      'events/date=2025-01-01/part-3.parquet',
    );
    expect(plan.skipped).toEqual([
      expect.objectContaining({
        key: 'events/date=2025-01-01/part-3.parquet',
        reason: expect.stringMatching(/GLACIER_IR: never compacted/),
      }),
      expect.objectContaining({
        key: 'events/date=2025-01-01/part-4.parquet',
        reason: expect.stringMatching(/DEEP_ARCHIVE: never compacted, because reading it needs a restore/),
      }),
    ]);
  });
});
