// The report's data model: size buckets, "before" reconstructed only from a carried-out run's plan, plans of
// other tables ignored, history figures used only when a state table gave them, and nothing invented.
import { describe, expect, it } from 'vitest';
import {
  bucketIndex,
  buildReportModel,
  histogram,
  type ReportInput,
  type ReportPlan,
  type ReportRun,
  sizeBuckets,
} from '../../functions/core/report/model.js';

const MiB = 1024 * 1024;
const NOW = Date.UTC(2024, 1, 1, 12);

function input(overrides: Partial<ReportInput> = {}): ReportInput {
  return {
    table: 'events',
    location: 's3://lake/events',
    tableRoot: 'events/',
    generatedAt: NOW,
    targetFileSizeBytes: 128 * MiB,
    smallFileRatio: 0.75,
    listing: [],
    plans: [],
    ...overrides,
  };
}

/** A plan of `run` for `partition` of the `events/` table: six 100 KiB inputs grouped, one left alone. */
function plan(run: string, partition: string, listedAt: number, root = 'events/'): ReportPlan {
  return {
    runId: run,
    partition,
    listedAt,
    inputFiles: 7,
    inputBytes: 6 * 100 * 1024 + 200 * MiB,
    groupFiles: Array.from({ length: 6 }, (_, i) => ({
      key: `${root}${partition}/in-${i}.parquet`,
      size: 100 * 1024,
    })),
    skippedKeys: [`${root}${partition}/big.parquet`],
    groups: 1,
  };
}

const compacted = {
  partition: 'date=2024-01-01',
  files: [
    { key: 'events/date=2024-01-01/big.parquet', size: 200 * MiB },
    { key: 'events/date=2024-01-01/part-run1-0001-00000.zstd.parquet', size: 500 * 1024 },
  ],
};

describe('size buckets', () => {
  it('anchors the buckets on the target size so the last one is exactly "not small"', () => {
    // Prepare
    const target = 128 * MiB;

    // Act
    const buckets = sizeBuckets(target, 0.75);
    const tiny = sizeBuckets(MiB, 0.75);

    // Assess
    expect(buckets.map((b) => b.label)).toEqual(['< 1 MiB', '1–8 MiB', '8–32 MiB', '32–96 MiB', '≥ 96 MiB']);
    expect(buckets[4]?.minBytes).toBe(96 * MiB);
    expect(tiny.map((b) => b.shortLabel)).toEqual(['<8K', '8–64K', '64–256K', '256–768K', '≥768K']);
  });

  it('puts each size in its log-scale bucket, bounds going to the upper bucket', () => {
    // Prepare
    const sizes = [0, MiB - 1, MiB, 8 * MiB, 32 * MiB - 1, 128 * MiB, 5 * 1024 * MiB];

    // Act
    const indexes = sizes.map((s) => bucketIndex(s));
    const counts = histogram(sizes);

    // Assess
    expect(indexes).toEqual([0, 0, 1, 2, 2, 4, 4]);
    expect(counts).toEqual([2, 1, 2, 0, 2]);
  });
});

describe('buildReportModel', () => {
  it('reconstructs "before" from the carried-out run: grouped inputs from the plan, untouched files from the listing', () => {
    // Prepare
    const data = input({ listing: [compacted], plans: [plan('run1', 'date=2024-01-01', NOW - 3_600_000)] });

    // Act
    const model = buildReportModel(data);

    // Assess
    const p = model.partitions[0];
    expect(p?.now).toMatchObject({ files: 2, bytes: 200 * MiB + 500 * 1024, smallFiles: 1 });
    expect(p?.now.histogram).toEqual([1, 0, 0, 0, 1]);
    expect(p?.before).toMatchObject({
      runId: 'run1',
      at: NOW - 3_600_000,
      evidence: 'outputs-listed',
      files: 7,
      bytes: 6 * 100 * 1024 + 200 * MiB,
      smallFiles: 6,
      unknownSizeFiles: 0,
    });
    expect(p?.before?.histogram).toEqual([6, 0, 0, 0, 1]);
    expect(model.summary).toMatchObject({
      filesNow: 2,
      filesBefore: 7,
      filesNowInCompared: 2,
      smallRatioNow: 0.5,
    });
    expect(model.summary.smallRatioBefore).toBeCloseTo(6 / 7);
  });

  it('skips a plan that was not carried out and falls back to the previous carried-out one', () => {
    // Prepare
    const dryRun = plan('run2', 'date=2024-01-01', NOW - 60_000);
    const data = input({
      listing: [compacted],
      plans: [dryRun, plan('run1', 'date=2024-01-01', NOW - 3_600_000)],
    });

    // Act
    const model = buildReportModel(data);

    // Assess
    expect(model.partitions[0]?.before?.runId).toBe('run1');
    expect(model.runs.map((r) => [r.runId, r.outcome])).toEqual([
      ['run2', 'no outputs listed'],
      ['run1', 'outputs listed'],
    ]);
  });

  it('says why there is no "before" when no plan was carried out, and shows no before figures', () => {
    // Prepare
    const untouched = {
      partition: 'date=2024-01-02',
      files: [{ key: 'events/date=2024-01-02/a.parquet', size: 10 }],
    };
    const data = input({ listing: [untouched], plans: [plan('run9', 'date=2024-01-02', NOW - 1000)] });

    // Act
    const model = buildReportModel(data);

    // Assess
    expect(model.partitions[0]?.before).toBeUndefined();
    expect(model.partitions[0]?.beforeNote).toMatch(/1 planned run found, none carried out/);
    expect(model.summary.filesBefore).toBeUndefined();
  });

  it('ignores plans of another table in the same bucket even when the partition name is the same', () => {
    // Prepare
    const other = plan('run1', 'date=2024-01-01', NOW - 1000, 'clicks/');
    const data = input({ listing: [compacted], plans: [other] });

    // Act
    const model = buildReportModel(data);

    // Assess
    expect(model.partitions[0]?.before).toBeUndefined();
    expect(model.runs).toEqual([]);
    expect(model.timeline[0]?.points.map((p) => p.kind)).toEqual(['now']);
  });

  it('counts untouched files that are gone as "size unknown" with the plan’s remaining bytes, outside the histogram', () => {
    // Prepare
    const gone = { ...compacted, files: compacted.files.filter((f) => !f.key.endsWith('big.parquet')) };
    const data = input({ listing: [gone], plans: [plan('run1', 'date=2024-01-01', NOW - 1000)] });

    // Act
    const model = buildReportModel(data);

    // Assess
    expect(model.partitions[0]?.before).toMatchObject({
      files: 7,
      unknownSizeFiles: 1,
      bytes: 6 * 100 * 1024 + 200 * MiB,
    });
    expect(model.partitions[0]?.before?.histogram).toEqual([6, 0, 0, 0, 0]);
    expect(model.notes.join(' ')).toMatch(/1 file of a "before" no longer exists/);
  });

  it('takes bytes rewritten, cost and after-counts from history, leaving dry runs out of the sums', () => {
    // Prepare
    const history: ReportRun[] = [
      {
        runId: 'run1',
        partition: 'date=2024-01-01',
        outcome: 'compacted',
        status: 'SUCCEEDED',
        startedAt: NOW - 3_600_000,
        finishedAt: NOW - 3_000_000,
        groupsDone: 1,
        filesBefore: 7,
        filesAfter: 2,
        bytesRewritten: 600 * 1024,
        estimatedCostUsd: 0.0125,
      },
      {
        runId: 'dry',
        partition: 'date=2024-01-01',
        outcome: 'dry-run',
        status: 'SUCCEEDED',
        startedAt: NOW - 100,
        finishedAt: NOW - 50,
        dryRun: true,
        filesBefore: 2,
        bytesRewritten: 999,
        estimatedCostUsd: 5,
      },
    ];
    const data = input({
      listing: [compacted],
      plans: [
        plan('run1', 'date=2024-01-01', NOW - 3_600_000),
        plan('cli-run', 'date=2024-01-01', NOW - 7_200_000),
      ],
      history,
    });

    // Act
    const model = buildReportModel(data);

    // Assess
    expect(model.hasHistory).toBe(true);
    expect(model.summary).toMatchObject({ bytesRewritten: 600 * 1024, estimatedCostUsd: 0.0125, runs: 3 });
    expect(model.partitions[0]?.before?.evidence).toBe('history');
    expect(model.timeline[0]?.points.map((p) => [p.kind, p.files, p.runId])).toEqual([
      ['before', 7, 'cli-run'],
      ['before', 7, 'run1'],
      ['after', 2, 'run1'],
      ['now', 2, undefined],
    ]);
    expect(model.runs.map((r) => [r.runId, r.source, r.outcome])).toEqual([
      ['dry', 'history', 'dry-run (dry run)'],
      ['run1', 'history', 'compacted'],
      ['cli-run', 'plan', 'no outputs listed'],
    ]);
  });

  it('without a state table leaves bytes rewritten and cost undefined and says what is missing', () => {
    // Prepare
    const data = input({ listing: [compacted], plans: [plan('run1', 'date=2024-01-01', NOW - 1000)] });

    // Act
    const model = buildReportModel(data);

    // Assess
    expect(model.hasHistory).toBe(false);
    expect(model.summary.bytesRewritten).toBeUndefined();
    expect(model.summary.estimatedCostUsd).toBeUndefined();
    expect(model.notes.join(' ')).toMatch(/No state table given/);
    expect(model.runs[0]).toMatchObject({ source: 'plan', filesBefore: 7, bytesRewritten: 600 * 1024 });
    expect(model.runs[0]?.filesAfter).toBeUndefined();
  });

  it('models an empty table as zeros with no ratio division by zero', () => {
    // Prepare
    const data = input();

    // Act
    const model = buildReportModel(data);

    // Assess
    expect(model.partitions).toEqual([]);
    expect(model.summary).toMatchObject({
      partitions: 0,
      filesNow: 0,
      bytesNow: 0,
      smallRatioNow: 0,
      runs: 0,
    });
  });

  it('orders partitions most files first and labels the unpartitioned root', () => {
    // Prepare
    const data = input({
      tableRoot: '',
      listing: [
        { partition: '', files: [{ key: 'a.parquet', size: 1 }] },
        {
          partition: 'x=1',
          files: [
            { key: 'x=1/a.parquet', size: 1 },
            { key: 'x=1/b.parquet', size: 1 },
          ],
        },
      ],
    });

    // Act
    const model = buildReportModel(data);

    // Assess
    expect(model.partitions.map((p) => p.label)).toEqual(['x=1', '(root)']);
  });
});
