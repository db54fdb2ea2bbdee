import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../functions/core/errors.js';
import { FOOTER_FIRST_READ_BYTES } from '../../../functions/core/parquet/footer.js';
import {
  cutBalanced,
  DEFAULT_PLAN_OPTIONS,
  DEFERRED_SCHEMA,
  expectedOutputFiles,
  FOOTER_DEFERRED_MAX_BYTES,
  type PlanInput,
  type PlanInputFile,
  partitionPlanSchema,
  planPartition,
  planPartitions,
  splitBalanced,
} from '../../../functions/core/planning.js';

const KB = 1000;
const MiB = 1024 * 1024;
const T = 128 * MiB;

function file(index: number, size: number, extra: Partial<PlanInputFile> = {}): PlanInputFile {
  return {
    key: `lake/events/date=2024-01-15/part-${String(index).padStart(5, '0')}.parquet`,
    size,
    etag: `etag-${index}`,
    rows: 100,
    schemaFingerprint: 'fpA',
    ...extra,
  };
}

function input(files: PlanInputFile[], partition = 'date=2024-01-15'): PlanInput {
  return { table: 'events', partition, files, snapshot: { listedAt: 1_700_000_000_000 } };
}

const ARCHIVE_WHY =
  'never compacted, because reading it needs a restore (GLACIER, DEEP_ARCHIVE) or is billed per GB read with a 90-day minimum (GLACIER_IR); restore or re-tier it first if it must be';

describe('planPartition: readable scenarios', () => {
  it('plans 20 files of 20 KB as one group producing one file', () => {
    // Prepare
    const files = Array.from({ length: 20 }, (_, i) => file(i, 20 * KB));
    // Act
    const plan = planPartition(input(files));
    // Assess
    expect(plan.groups).toHaveLength(1);
    expect(plan.groups[0]).toMatchObject({
      groupId: 'g0001',
      schemaFingerprint: 'fpA',
      bytes: 400 * KB,
      rows: 2000,
      expectedOutputFiles: 1,
    });
    expect(plan.groups[0]?.files.map((f) => f.key)).toEqual(files.map((f) => f.key));
    expect(plan.skipped).toEqual([]);
    expect(plan.summary).toEqual({
      inputFiles: 20,
      inputBytes: 400 * KB,
      plannedFiles: 20,
      plannedBytes: 400 * KB,
      groups: 1,
      expectedOutputFiles: 1,
    });
    expect(plan.reason).toBeUndefined();
  });

  it('weighs a file without the footer entries its format recomputes per output, yet records its real size', () => {
    // Prepare: 2,000 files of 40 KB rows, each carrying 430 KB of per-file index in its footer (a bloom filter of
    // its keys: 860 MB of index against 80 MB of rows, the rows fitting one 128 MiB output)
    const index = 430 * KB;
    const files = Array.from({ length: 2000 }, (_, i) =>
      file(i, 40 * KB + index, { recomputedFooterBytes: index }),
    );
    // Act
    const plan = planPartition(input(files));
    // Assess: one group of one output, the plan keeping each file's real size and the group its real bytes
    expect(plan.groups.map((g) => g.expectedOutputFiles)).toEqual([1]);
    expect(plan.groups[0]?.files).toHaveLength(2000);
    expect(plan.groups[0]?.files[0]?.size).toBe(470 * KB);
    expect(plan.groups[0]?.bytes).toBe(2000 * 470 * KB);
    expect(plan.summary.expectedOutputFiles).toBe(1);
  });

  it('counts the same files by their whole size when nothing in their footers is recomputed', () => {
    // Prepare: the same 2,000 files with their index left as plain footer metadata
    const files = Array.from({ length: 2000 }, (_, i) => file(i, 470 * KB));
    // Act
    const plan = planPartition(input(files));
    // Assess: 940 MB read as 7 outputs' worth
    expect(plan.summary.expectedOutputFiles).toBe(7);
  });

  it('keeps a file whose rows alone are small in the plan even when its footer makes it look well-sized', () => {
    // Prepare: 100 MiB on disk (≥ 0.75·T), of which 60 MiB are recomputed footer entries
    const files = [
      file(1, 100 * MiB, { recomputedFooterBytes: 60 * MiB }),
      ...Array.from({ length: 5 }, (_, i) => file(i + 2, 20 * MiB)),
    ];
    // Act
    const plan = planPartition(input(files));
    // Assess: every file is small by what it carries, so all six are merged
    expect(plan.skipped).toEqual([]);
    expect(plan.groups[0]?.files).toHaveLength(6);
  });

  it('leaves 3 tiny files alone with a reason: too few and too little to be worth a run', () => {
    // Prepare
    const files = [file(1, 20 * KB), file(2, 20 * KB), file(3, 20 * KB)];
    // Act
    const plan = planPartition(input(files));
    // Assess
    expect(plan.groups).toEqual([]);
    expect(plan.skipped).toHaveLength(3);
    expect(plan.skipped[0]?.reason).toBe(
      '3 small files (58.6 KiB) of schema fpA: fewer than minInputFiles 5 and under 96.0 MiB together, too little to be worth a run',
    );
    expect(plan.reason).toBe('nothing to compact: 3 small but not worth merging (see skipped for each file)');
  });

  it('merges fewer than minInputFiles when they are all the small files of their schema and make a well-sized file', () => {
    // Prepare: 3 × 40 MiB = 120 MiB ≥ 96 MiB
    const files = [file(1, 40 * MiB), file(2, 40 * MiB), file(3, 40 * MiB)];
    // Act
    const plan = planPartition(input(files));
    // Assess
    expect(plan.groups).toHaveLength(1);
    expect(plan.groups[0]?.expectedOutputFiles).toBe(1);
  });

  it('says a single small file has nothing to merge with', () => {
    // Prepare
    const files = [file(1, 20 * KB), file(2, 120 * MiB)];
    // Act
    const plan = planPartition(input(files));
    // Assess
    expect(plan.groups).toEqual([]);
    expect(plan.skipped.map((s) => s.reason)).toEqual([
      '1 small file of schema fpA: nothing to merge with',
      'well-sized (120.0 MiB between 96.0 MiB and 230.4 MiB)',
    ]);
  });

  it('never mixes schemas: each fingerprint gets its own group and lone schemas are skipped', () => {
    // Prepare: 6 files of schema A, 5 of schema B, 1 of schema C, interleaved by key
    const files = Array.from({ length: 12 }, (_, i) =>
      file(i, 10 * KB, { schemaFingerprint: i === 11 ? 'fpC' : i % 2 === 0 ? 'fpA' : 'fpB' }),
    );
    // Act
    const plan = planPartition(input(files));
    // Assess
    expect(plan.groups.map((g) => [g.groupId, g.schemaFingerprint, g.files.length])).toEqual([
      ['g0001', 'fpA', 6],
      ['g0002', 'fpB', 5],
    ]);
    for (const group of plan.groups) {
      expect(new Set(group.files.map((f) => f.schemaFingerprint))).toEqual(
        new Set([group.schemaFingerprint]),
      );
    }
    expect(plan.skipped).toEqual([
      { key: files[11]?.key, reason: '1 small file of schema fpC: nothing to merge with' },
    ]);
  });

  it('never plans archived files, and treats GLACIER_IR as archived', () => {
    // Prepare
    const files = [
      ...Array.from({ length: 5 }, (_, i) => file(i, 10 * KB)),
      file(10, 10 * KB, { storageClass: 'GLACIER' }),
      file(11, 10 * KB, { storageClass: 'DEEP_ARCHIVE' }),
      file(12, 10 * KB, { storageClass: 'glacier_ir' }),
      file(13, 10 * KB, { storageClass: 'STANDARD_IA' }),
    ];
    // Act
    const plan = planPartition(input(files));
    // Assess
    expect(plan.groups[0]?.files.map((f) => f.etag)).toEqual([
      'etag-0',
      'etag-1',
      'etag-2',
      'etag-3',
      'etag-4',
      'etag-13',
    ]);
    expect(plan.skipped.map((s) => s.reason)).toEqual([
      `in archive storage class GLACIER: ${ARCHIVE_WHY}`,
      `in archive storage class DEEP_ARCHIVE: ${ARCHIVE_WHY}`,
      `in archive storage class GLACIER_IR: ${ARCHIVE_WHY}`,
    ]);
  });

  it('skips unreadable, large and fingerprint-less files with their reasons', () => {
    // Prepare
    const files = [
      ...Array.from({ length: 5 }, (_, i) => file(i, 10 * KB)),
      file(5, 10 * KB, { unreadable: 'truncated footer' }),
      file(6, 300 * MiB),
      file(7, 10 * KB, { schemaFingerprint: undefined }),
    ];
    // Act
    const plan = planPartition(input(files));
    // Assess
    expect(plan.groups[0]?.files).toHaveLength(5);
    expect(plan.skipped.map((s) => s.reason)).toEqual([
      'footer unreadable: truncated footer',
      'large file (300.0 MiB > 1.8·T = 230.4 MiB): left alone, splitting is not planned',
      'schema fingerprint unknown: read the footer before planning, schemas must never be mixed',
    ]);
  });

  it('groups tiny files planned without their footers with each other only, rows unknown until the rewrite', () => {
    // Prepare: 6 tiny files planned from the listing beside 5 small files whose footers were read.
    const unread = Array.from({ length: 6 }, (_, i) => ({
      key: `lake/events/date=2024-01-15/tiny-${i}.parquet`,
      size: 8 * KB,
      etag: `tiny-${i}`,
      footerDeferred: true,
    }));
    const read = Array.from({ length: 5 }, (_, i) => file(i, 200 * KB));

    // Act
    const plan = planPartition(input([...unread, ...read]));

    // Assess: two groups, never mixed; the unread ones' rows are not known to the plan.
    expect(plan.groups.map((g) => [g.schemaFingerprint, g.files.length, g.rows])).toEqual([
      ['fpA', 5, 500],
      [DEFERRED_SCHEMA, 6, null],
    ]);
    expect(plan.skipped).toEqual([]);
  });

  it('plans from the listing only files a footer read would fetch whole anyway', () => {
    // Assess: the threshold is the footer's first ranged read, so no file that read does not fetch whole is deferred.
    expect(FOOTER_DEFERRED_MAX_BYTES).toBe(FOOTER_FIRST_READ_BYTES);
  });

  it('leaves zero-row files out of every group, so one empty file cannot fail the run', () => {
    // Prepare: Spark leaves empty part files behind for empty tasks; the engine refuses them as inputs
    const files = [
      ...Array.from({ length: 5 }, (_, i) => file(i, 10 * KB)),
      file(5, 600, { rows: 0 }),
      file(6, 600, { rows: 0 }),
    ];
    // Act
    const plan = planPartition(input(files));
    const onlyEmpty = planPartition(input([file(0, 600, { rows: 0 }), file(1, 600, { rows: 0 })]));
    // Assess
    expect(plan.groups).toHaveLength(1);
    expect(plan.groups[0]?.files.map((f) => f.key)).toEqual(files.slice(0, 5).map((f) => f.key));
    expect(plan.groups[0]?.rows).toBe(500);
    expect(plan.skipped.map((s) => s.key)).toEqual([files[5]?.key, files[6]?.key]);
    expect(plan.skipped[0]?.reason).toMatch(/zero rows/);
    expect(onlyEmpty.groups).toEqual([]);
    expect(onlyEmpty.reason).toBe('nothing to compact: 2 empty (zero rows) (see skipped for each file)');
  });

  it('leaves a quarantined file out while it keeps its ETag, saying since when, by which run and why', () => {
    // Prepare: six small files, the third quarantined by an earlier run as the same object (same ETag)
    const files = Array.from({ length: 6 }, (_, i) => file(i, 10 * KB));
    const bad = files[2] as PlanInputFile;
    const record = {
      table: 'events',
      partition: 'date=2024-01-15',
      key: bad.key,
      etag: bad.etag,
      reason: 'the decoder failed (unreachable)',
      errorName: 'CorruptInputError',
      runId: 'run-7',
      since: Date.UTC(2024, 0, 16),
    };
    // Act
    const plan = planPartition({ ...input(files), quarantined: [record] });
    // Assess: the five neighbours still make a group; the file is skipped, not lost
    expect(plan.groups).toHaveLength(1);
    expect(plan.groups[0]?.files.map((f) => f.key)).toEqual(files.filter((f) => f !== bad).map((f) => f.key));
    expect(plan.skipped).toEqual([
      {
        key: bad.key,
        reason: expect.stringMatching(
          /^quarantined since 2024-01-16T00:00:00\.000Z by run run-7: the decoder failed \(unreachable\) \(CorruptInputError\); .*--clear/,
        ),
      },
    ]);
    expect(plan.summary).toMatchObject({ inputFiles: 6, plannedFiles: 5 });
  });

  it('plans a file whose quarantine record names another ETag: the object was replaced since', () => {
    // Prepare
    const files = Array.from({ length: 5 }, (_, i) => file(i, 10 * KB));
    const replaced = {
      table: 'events',
      partition: 'date=2024-01-15',
      key: files[0]?.key as string,
      etag: 'etag-of-the-corrupt-version',
      reason: 'bad page',
      errorName: 'CorruptInputError',
      runId: 'run-7',
      since: 1,
    };
    // Act
    const plan = planPartition({ ...input(files), quarantined: [replaced] });
    const alone = planPartition({
      ...input([file(0, 10 * KB)]),
      quarantined: [{ ...replaced, etag: 'etag-0' }],
    });
    // Assess
    expect(plan.groups[0]?.files).toHaveLength(5);
    expect(plan.skipped).toEqual([]);
    expect(alone.reason).toBe('nothing to compact: 1 quarantined (see skipped for each file)');
  });

  it('splits a fingerprint over maxGroupBytes into balanced groups under the cap', () => {
    // Prepare: 100 files of 50 MiB = 5000 MiB; cap 2 GiB → 3 groups of ~1667 MiB
    const files = Array.from({ length: 100 }, (_, i) => file(i, 50 * MiB));
    // Act
    const plan = planPartition(input(files));
    // Assess
    expect(plan.groups.map((g) => g.files.length)).toEqual([33, 34, 33]);
    expect(plan.groups.every((g) => g.bytes <= DEFAULT_PLAN_OPTIONS.maxGroupBytes)).toBe(true);
    expect(plan.groups.map((g) => g.expectedOutputFiles)).toEqual([13, 13, 13]);
    expect(plan.summary.plannedFiles).toBe(100);
  });

  it('also plans a short last group when, after the others, it is all that is left of its schema', () => {
    // Prepare: 9 × 0.3·T with cap 2·T → next run would merge the tail anyway, so this run does
    const files = Array.from({ length: 9 }, (_, i) => file(i, Math.round(0.3 * T)));
    // Act
    const plan = planPartition(input(files), { maxGroupBytes: 2 * T });
    // Assess
    expect(plan.groups.map((g) => g.files.length).sort()).toEqual([4, 5]);
    expect(plan.skipped).toEqual([]);
  });

  it('produces the same plan for any input order', () => {
    // Prepare
    const files = Array.from({ length: 30 }, (_, i) =>
      file(i, (i + 1) * 3 * MiB, { schemaFingerprint: `fp${i % 3}` }),
    );
    // Act
    const forward = planPartition(input(files), { maxGroupBytes: 2 * T });
    const backward = planPartition(input([...files].reverse()), { maxGroupBytes: 2 * T });
    // Assess
    expect(JSON.stringify(backward)).toBe(JSON.stringify(forward));
  });

  it('emits JSON that the exported schema parses back to the same plan', () => {
    // Prepare
    const files = Array.from({ length: 6 }, (_, i) => file(i, 10 * KB, { versionId: `v${i}` }));
    const plan = planPartition({ ...input(files), snapshot: { listedAt: 5, deltaVersion: 7 } });
    // Act
    const replayed = partitionPlanSchema.parse(JSON.parse(JSON.stringify(plan)));
    // Assess
    expect(replayed).toEqual(plan);
  });

  it('sums rows only when every input row count is known', () => {
    // Prepare
    const files = Array.from({ length: 5 }, (_, i) => file(i, 10 * KB, i === 0 ? { rows: undefined } : {}));
    // Act
    const plan = planPartition(input(files));
    // Assess
    expect(plan.groups[0]?.rows).toBeNull();
  });

  it('rejects a key listed twice and invalid options with InvalidInputError', () => {
    // Prepare
    const files = [file(1, 10), file(1, 10)];
    // Act
    const duplicate = () => planPartition(input(files));
    const badOptions = () => planPartition(input([]), { targetFileSizeBytes: T, maxGroupBytes: T });
    const unknownOption = () => planPartition(input([]), { minFiles: 3 } as never);
    // Assess
    expect(duplicate).toThrow(InvalidInputError);
    expect(badOptions).toThrow(/maxGroupBytes must be at least 2 × targetFileSizeBytes/);
    expect(unknownOption).toThrow(InvalidInputError);
  });
});

describe('planPartitions', () => {
  it('returns partitions sorted by table and partition, each empty one with a reason', () => {
    // Prepare
    const busy = input(
      Array.from({ length: 5 }, (_, i) => file(i, 10 * KB)),
      'date=2024-01-16',
    );
    const empty = input([], 'date=2024-01-15');
    // Act
    const result = planPartitions([busy, empty]);
    // Assess
    expect(result.partitions.map((p) => [p.partition, p.groups.length, p.reason])).toEqual([
      ['date=2024-01-15', 0, 'nothing to compact: the partition has no files'],
      ['date=2024-01-16', 1, undefined],
    ]);
  });

  it('refuses the same partition twice', () => {
    // Prepare
    const one = input([]);
    // Act
    const act = () => planPartitions([one, one]);
    // Assess
    expect(act).toThrow(/given twice/);
  });
});

describe('expectedOutputFiles', () => {
  it('rounds up only when the remainder is at least 0.75·T, and never returns 0', () => {
    // Prepare
    const cases: [number, number][] = [
      [1, 1],
      [T, 1],
      [T + 0.75 * T - 1, 1],
      [T + 0.75 * T, 2],
      [5 * T, 5],
      [0.75 * T, 1],
    ];
    // Act
    const results = cases.map(([bytes]) => expectedOutputFiles(bytes, DEFAULT_PLAN_OPTIONS));
    // Assess
    expect(results).toEqual(cases.map(([, n]) => n));
  });
});

describe('splitBalanced', () => {
  it('keeps one group when everything fits and balances bytes otherwise', () => {
    // Prepare
    const fits = [{ size: 5 }, { size: 5 }];
    const over = Array.from({ length: 11 }, () => ({ size: 10 }));
    // Act
    const single = splitBalanced(fits, 10);
    const split = splitBalanced(over, 100);
    // Assess
    expect(single).toHaveLength(1);
    expect(split.map((g) => g.length)).toEqual([5, 6]);
  });

  it('opens another group rather than exceed the cap when whole files cannot be balanced', () => {
    // Prepare: 296 bytes under cap 99 → with 3 groups the middle one would hold 49+2+49 = 100
    const files = [49, 49, 49, 2, 49, 49, 49].map((size) => ({ size }));
    // Act
    const groups = splitBalanced(files, 99);
    // Assess
    expect(groups.map((g) => g.reduce((s, f) => s + f.size, 0))).toEqual([98, 49, 51, 98]);
    expect(groups.flat()).toEqual(files);
  });
});

describe('cutBalanced', () => {
  it('cuts key-ordered files into n contiguous runs of about equal bytes, keeping every file once in order', () => {
    // Prepare: 40 files of 5–11 bytes
    const files = Array.from({ length: 40 }, (_, i) => ({ key: i, size: 5 + (i % 7) }));
    const total = files.reduce((n, f) => n + f.size, 0);
    // Act
    const runs = cutBalanced(files, 4);
    // Assess
    expect(runs).toHaveLength(4);
    expect(runs.flat()).toEqual(files);
    for (const run of runs) {
      const bytes = run.reduce((n, f) => n + f.size, 0);
      expect(Math.abs(bytes - total / 4)).toBeLessThanOrEqual(11);
    }
  });

  it('gives fewer runs, never more, when a file larger than a share leaves one empty', () => {
    // Prepare / Act
    const runs = cutBalanced([{ size: 100 }, { size: 1 }, { size: 1 }], 3);
    // Assess
    expect(runs.map((r) => r.length)).toEqual([1, 2]);
  });
});
