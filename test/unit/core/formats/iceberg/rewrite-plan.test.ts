// Unit tests of the Iceberg planner: each rewrite_data_files option changes what is planned the way Iceberg's
// SizeBasedFileRewriter would (candidates by size or deletes, groups by min-input-files, content or deletes,
// rewrite-all, group size, partial progress), the where filter keeps other partitions out, and a plan's outputs
// plan nothing.
import { describe, expect, it } from 'vitest';
import {
  parseRewriteOptions,
  type RewriteDataFilesOptions,
  resolveRewriteOptions,
} from '../../../../../functions/core/formats/iceberg/rewrite-options.js';
import {
  icebergOutputFiles,
  planIcebergPartition,
} from '../../../../../functions/core/formats/iceberg/rewrite-plan.js';
import { inputDeletesOf } from '../../../../../functions/core/formats/iceberg/row-deletes.js';
import type { PlanInput, PlanInputFile } from '../../../../../functions/core/planning.js';

/** A target of 1000 bytes: min 750, max 1800 by Iceberg's default ratios. */
const TARGET = 1000;
const VALUES = [
  { name: 'event_day', value: '2024-03-01' },
  { name: 'action', value: 'click' },
];

function file(
  key: string,
  size: number,
  extra: { deleteFiles?: number; fingerprint?: string } = {},
): PlanInputFile {
  const deleteFiles = extra.deleteFiles ?? 0;
  return {
    key,
    size,
    etag: '',
    rows: 10,
    schemaFingerprint: extra.fingerprint ?? 'schema-a',
    // The deletes as the Iceberg snapshot records them for the plan (one entry per applicable delete file).
    ...(deleteFiles === 0
      ? {}
      : {
          deletes: inputDeletesOf(
            `s3://b/t/${key}`,
            Array.from({ length: deleteFiles }, (_, i) => ({
              kind: 'position' as const,
              key: `t/data/${key}-deletes-${i}.parquet`,
              path: `s3://b/t/data/${key}-deletes-${i}.parquet`,
              format: 'PARQUET',
              sequence: String(2 + i),
              records: 1,
            })),
            deleteFiles,
          ),
        }),
  };
}

function files(count: number, size: number, prefix = 'f'): PlanInputFile[] {
  return Array.from({ length: count }, (_, i) =>
    file(`${prefix}${String(i).padStart(3, '0')}.parquet`, size),
  );
}

function plan(
  list: readonly PlanInputFile[],
  options: RewriteDataFilesOptions = {},
  extra: { where?: string; engineGroupCapBytes?: number } = {},
) {
  const input: PlanInput = {
    table: 't',
    partition: 'data/event_day=2024-03-01/action=click',
    files: [...list],
    snapshot: { listedAt: 1 },
  };
  const resolved = resolveRewriteOptions(
    { 'target-file-size-bytes': TARGET, ...options },
    {
      engineGroupCapBytes: extra.engineGroupCapBytes ?? 1_000_000,
      ...(extra.where === undefined ? {} : { where: extra.where }),
    },
  );
  return planIcebergPartition(input, resolved, VALUES);
}

const plannedKeys = (p: ReturnType<typeof plan>) => p.groups.map((g) => g.files.map((f) => f.key));

describe('planIcebergPartition: which groups rewrite_data_files rewrites', () => {
  it('rewrites min-input-files small files, and leaves one fewer alone while they are not over the target together', () => {
    // Prepare
    const five = files(5, 100);
    const four = files(4, 100);

    // Act
    const fivePlanned = plan(five);
    const fourPlanned = plan(four);

    // Assess
    expect(plannedKeys(fivePlanned)).toEqual([five.map((f) => f.key)]);
    expect(fourPlanned.groups).toEqual([]);
    expect(fourPlanned.skipped[0]?.reason).toBe(
      'a candidate, but its group of 4 files (400 B) has fewer than min-input-files 5, is not over target-file-size-bytes 1000 and holds no file with delete-file-threshold 2147483647 delete files',
    );
  });

  it('lowers the bar with min-input-files', () => {
    // Prepare
    const two = files(2, 100);

    // Act
    const byDefault = plan(two);
    const withTwo = plan(two, { 'min-input-files': 2 });

    // Assess
    expect(byDefault.groups).toEqual([]);
    expect(plannedKeys(withTwo)).toEqual([two.map((f) => f.key)]);
  });

  it('rewrites fewer than min-input-files small files when together they hold more than the target', () => {
    // Prepare: 3 × 400 B = 1200 B > 1000 B
    const three = files(3, 400);

    // Act
    const planned = plan(three);

    // Assess
    expect(plannedKeys(planned)).toEqual([three.map((f) => f.key)]);
    expect(planned.groups[0]?.expectedOutputFiles).toBe(1);
  });

  it('takes files below min-file-size-bytes as candidates, and not once the threshold is lowered under them', () => {
    // Prepare: 500 B is under the default min (750 B)
    const five = files(5, 500);

    // Act
    const byDefault = plan(five);
    const lowered = plan(five, { 'min-file-size-bytes': 400 });

    // Assess
    expect(byDefault.summary.plannedFiles).toBe(5);
    expect(lowered.groups).toEqual([]);
    expect(lowered.skipped.map((s) => s.reason)).toEqual(
      Array(5).fill('well-sized (500 B within min-file-size-bytes 400 and max-file-size-bytes 1800)'),
    );
  });

  it('splits a lone file above max-file-size-bytes, and leaves it once max-file-size-bytes is above it', () => {
    // Prepare
    const large = [file('big.parquet', 2500)];

    // Act
    const byDefault = plan(large);
    const raised = plan(large, { 'max-file-size-bytes': 3000 });

    // Assess: 2500 B at a 1000 B target: 2 files would be 1250 B, over 1.1 × target, so 3 files of 833 B
    expect(plannedKeys(byDefault)).toEqual([['big.parquet']]);
    expect(byDefault.groups[0]?.expectedOutputFiles).toBe(3);
    expect(raised.groups).toEqual([]);
  });

  it('rewrites a well-sized file once delete-file-threshold delete files apply to it, and not below the threshold', () => {
    // Prepare: 900 B is well-sized; two delete files apply to it
    const deleted = [file('deleted.parquet', 900, { deleteFiles: 2 }), file('clean.parquet', 900)];

    // Act
    const byDefault = plan(deleted);
    const atTwo = plan(deleted, { 'delete-file-threshold': 2 });
    const atThree = plan(deleted, { 'delete-file-threshold': 3 });

    // Assess
    expect(byDefault.groups).toEqual([]);
    expect(byDefault.skipped.find((s) => s.key === 'deleted.parquet')?.reason).toBe(
      'well-sized (900 B within min-file-size-bytes 750 and max-file-size-bytes 1800) with 2 delete files, under delete-file-threshold 2147483647',
    );
    expect(plannedKeys(atTwo)).toEqual([['deleted.parquet']]);
    expect(atThree.groups).toEqual([]);
  });

  it('rewrites every file with rewrite-all, well-sized ones too', () => {
    // Prepare
    const wellSized = files(2, 900);

    // Act
    const byDefault = plan(wellSized);
    const all = plan(wellSized, { 'rewrite-all': true });

    // Assess
    expect(byDefault.groups).toEqual([]);
    expect(plannedKeys(all)).toEqual([wellSized.map((f) => f.key)]);
  });

  it('cuts candidates into groups of at most max-file-group-size-bytes, clamped to what one compact step may rewrite', () => {
    // Prepare: 10 × 100 B
    const ten = files(10, 100);
    const partial = { 'partial-progress.enabled': true } as const;

    // Act
    const oneGroup = plan(ten, partial);
    const capped = plan(ten, { ...partial, 'max-file-group-size-bytes': 500 });
    const clamped = plan(ten, partial, { engineGroupCapBytes: 500 });

    // Assess
    expect(plannedKeys(oneGroup)).toEqual([ten.map((f) => f.key)]);
    expect(plannedKeys(capped)).toEqual([ten.slice(0, 5).map((f) => f.key), ten.slice(5).map((f) => f.key)]);
    expect(plannedKeys(clamped)).toEqual(plannedKeys(capped));
    expect(clamped.options).toMatchObject({ maxFileGroupSizeBytes: 107374182400, groupCapBytes: 500 });
  });

  it('commits every group, each on its own, without partial progress (Iceberg’s default), up to partial-progress.max-commits with it', () => {
    // Prepare: 15 × 100 B in groups of 500 B: three groups
    const fifteen = files(15, 100);
    const groupOf5 = { 'max-file-group-size-bytes': 500 };

    // Act
    const byDefault = plan(fifteen, groupOf5);
    const partial = plan(fifteen, { ...groupOf5, 'partial-progress.enabled': true });
    // As Spark's options map spells them: strings.
    const twoCommits = plan(
      fifteen,
      parseRewriteOptions({
        'max-file-group-size-bytes': '500',
        'partial-progress.enabled': 'true',
        'partial-progress.max-commits': '2',
      }),
    );

    // Assess
    expect(byDefault.summary.groups).toBe(3);
    expect(byDefault.skipped.filter((s) => s.reason.startsWith('deferred to the next run'))).toHaveLength(0);
    expect(partial.summary.groups).toBe(3);
    expect(twoCommits.summary.groups).toBe(2);
    expect(twoCommits.skipped.map((s) => s.reason)).toEqual(
      Array(5).fill(
        'deferred to the next run: each group is one commit and partial-progress.max-commits is 2',
      ),
    );
  });

  it('never groups files of different schemas together', () => {
    // Prepare
    const mixed = [
      ...files(5, 100, 'a'),
      ...files(5, 100, 'b').map((f) => ({ ...f, schemaFingerprint: 'schema-b' })),
    ];

    // Act
    const planned = plan(mixed, { 'partial-progress.enabled': true });

    // Assess
    expect(planned.groups.map((g) => g.schemaFingerprint)).toEqual(['schema-a', 'schema-b']);
    expect(planned.groups.every((g) => new Set(g.files.map((f) => f.schemaFingerprint)).size === 1)).toBe(
      true,
    );
  });

  it('groups files of different Parquet schemas that project onto the current schema, without rewrite-all, and leaves a file whose projection is refused with its own schema', () => {
    // Prepare: schema-a files (written under the current schema) and schema-b files (an older one, int id widened),
    // all projected onto the current schema; one more schema-b file the inventory could not project
    const target = { name: 'id', fieldId: 1, nullable: true, type: 'int64' as const };
    const projected = (f: PlanInputFile, widen: boolean): PlanInputFile => ({
      ...f,
      projection: {
        columns: [
          { field: target, source: { column: 'id', ...(widen ? { widen: 'int32-int64' as const } : {}) } },
        ],
        keyValueMetadata: { 'iceberg.schema': '{"fields":[1]}' },
      },
    });
    const refused: PlanInputFile = {
      ...file('c000.parquet', 100, { fingerprint: 'schema-b' }),
      projectionRefused: 'its column id has no Parquet field id',
    };
    const mixed = [
      ...files(3, 100, 'a').map((f) => projected(f, false)),
      ...files(3, 100, 'b').map((f) => projected({ ...f, schemaFingerprint: 'schema-b' }, true)),
      refused,
    ];

    // Act
    const planned = plan(mixed, { 'min-input-files': 2 });

    // Assess: one group of the six projected files (each keeping its own widening), the refused file alone in a
    // group of its own Parquet schema, which one file does not make worth rewriting
    expect(plannedKeys(planned)).toEqual([
      ['a000.parquet', 'a001.parquet', 'a002.parquet', 'b000.parquet', 'b001.parquet', 'b002.parquet'],
    ]);
    expect(planned.groups[0]?.files.map((f) => f.projection?.columns[0]?.source?.widen ?? null)).toEqual([
      null,
      null,
      null,
      'int32-int64',
      'int32-int64',
      'int32-int64',
    ]);
    expect(planned.skipped.map((s) => s.key)).toEqual(['c000.parquet']);
    expect(planned.skipped[0]?.reason).toMatch(/a candidate, but its group of 1 file/);
  });

  it('plans a group of files already of the current schema, under one Parquet schema, as written: no projection', () => {
    // Prepare: files whose projection only restates the current schema (as on a table that never changed schema)
    const projection = {
      columns: [
        {
          field: { name: 'id', fieldId: 1, nullable: true, type: 'int64' as const },
          source: { column: 'id' },
        },
      ],
      keyValueMetadata: { 'iceberg.schema': '{"fields":[1]}' },
    };
    const current = files(3, 100, 'a').map((f) => ({ ...f, projection, projectionIdentity: true }));

    // Act
    const planned = plan(current, { 'min-input-files': 2 });

    // Assess: the plan a table without schema evolution always had (its fingerprint, no projection)
    expect(plannedKeys(planned)).toEqual([['a000.parquet', 'a001.parquet', 'a002.parquet']]);
    expect(planned.groups[0]?.schemaFingerprint).toBe('schema-a');
    expect(
      planned.groups[0]?.files.some((f) => f.projection !== undefined || f.projectionIdentity !== undefined),
    ).toBe(false);
  });

  it('plans nothing in a partition outside the where filter, and the same files inside it', () => {
    // Prepare
    const five = files(5, 100);

    // Act
    const outside = plan(five, {}, { where: "action = 'view'" });
    const inside = plan(five, {}, { where: "action IN ('click', 'view') AND event_day >= '2024-03-01'" });

    // Assess
    expect(outside.groups).toEqual([]);
    expect(outside.reason).toBe('nothing to compact: 5 outside the where filter (see skipped for each file)');
    expect(outside.skipped[0]?.reason).toBe(
      "its partition (event_day=2024-03-01, action=click) is outside where action = 'view'",
    );
    expect(inside.summary.plannedFiles).toBe(5);
  });

  it('converges: the outputs of a plan are not planned again', () => {
    // Prepare: 12 × 250 B = 3000 B → 3 outputs of 1000 B
    const twelve = files(12, 250);
    const first = plan(twelve);
    const group = first.groups[0];
    const outputs = Array.from({ length: group?.expectedOutputFiles ?? 0 }, (_, i) =>
      file(`out${i}.parquet`, Math.round((group?.bytes ?? 0) / (group?.expectedOutputFiles ?? 1))),
    );

    // Act
    const second = plan(outputs);

    // Assess
    expect(group?.expectedOutputFiles).toBe(3);
    expect(second.groups).toEqual([]);
  });
});

describe('icebergOutputFiles', () => {
  it('keeps a remainder over min-file-size-bytes as its own file, and spreads a small one when the files stay near the target', () => {
    // Prepare
    const sizes = { targetFileSizeBytes: 1000, minFileSizeBytes: 750, maxFileSizeBytes: 1800 };

    // Act
    const counts = [500, 1000, 1800, 2050, 2800].map((bytes) => icebergOutputFiles(bytes, sizes));

    // Assess: 1800 → 800 > 750 kept (2); 2050 → 50 spread, 1025 B each (2); 2800 → 800 kept (3)
    expect(counts).toEqual([1, 1, 2, 2, 3]);
  });

  it('rounds the other way when Iceberg’s count would make outputs that are candidates again', () => {
    // Prepare: Iceberg would write 1200 B as two files of 600 B, under min-file-size-bytes (750 B)
    const sizes = { targetFileSizeBytes: 1000, minFileSizeBytes: 750, maxFileSizeBytes: 1800 };

    // Act
    const count = icebergOutputFiles(1200, sizes);

    // Assess
    expect(count).toBe(1);
  });
});
