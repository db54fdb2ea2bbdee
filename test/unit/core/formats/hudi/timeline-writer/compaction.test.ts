// Golden tests of what a Merge-on-Read compaction writes: the v8 fixture's real compaction (plan, then completed
// commit) rebuilt from its file slices as they lie in the table folder decodes field for field like Hudi's files and
// encodes to the same data block; the v6 form is Jackson JSON; Apache Avro for Python reads our plan.
import { describe, expect, it } from 'vitest';
import { decodeTimelineAvro } from '../../../../../../functions/core/formats/hudi/timeline-writer/avro-file.js';
import {
  buildCompactionCommitMetadata,
  buildCompactionPlan,
  type CompactionOperationInput,
  type CompactionOutput,
  type CompactionPlan,
} from '../../../../../../functions/core/formats/hudi/timeline-writer/compaction.js';
import {
  compactionCommitContent,
  compactionRequestedContent,
} from '../../../../../../functions/core/formats/hudi/timeline-writer/content.js';
import { HudiTimelineWriteError } from '../../../../../../functions/core/formats/hudi/timeline-writer/errors.js';
import { COMMIT_METADATA_SCHEMA } from '../../../../../../functions/core/formats/hudi/timeline-writer/schemas.js';
import {
  avroHeader,
  baseName,
  blocksWithoutSync,
  decodeWithPythonAvro,
  hoodieFile,
  PYTHON_AVRO,
  PYTHON_AVRO_MISSING,
  parquetRows,
  partitionFiles,
  tableFileSize,
} from './support.js';

const V8 = 'mor_v8_trips_8i3u1d';
const PLAN = 'timeline/20251220210129235.compaction.requested';
const DONE = 'timeline/20251220210129235_20251220210129883.commit';
const LATEST_COMMIT = 'timeline/20251220210128625_20251220210129197.deltacommit';
const T = '20251220210129235';
const BASE_INSTANT = '20251220210108078';

/** The slice of each file group as the folder holds it before compaction: the base of BASE_INSTANT and its logs. */
function slicesBeforeCompaction(): CompactionOperationInput[] {
  return ['city=chennai', 'city=san_francisco', 'city=sao_paulo'].map((partitionPath) => {
    const names = partitionFiles(V8, partitionPath);
    const base = names.find((n) => n.endsWith(`_${BASE_INSTANT}.parquet`)) as string;
    const fileId = base.slice(0, base.indexOf('_'));
    // On v8+ a log is named by its deltacommit's begin time: the slice holds the logs written before T.
    const logs = names.filter(
      (n) =>
        n.startsWith(`.${fileId}_`) &&
        n.includes('.log.') &&
        n.slice(fileId.length + 2, fileId.length + 19) < T,
    );
    return {
      partitionPath,
      fileId,
      baseInstantTime: BASE_INSTANT,
      baseFileName: base,
      baseFileSizeBytes: tableFileSize(V8, `${partitionPath}/${base}`),
      logFileNames: logs,
      logFileSizesBytes: logs.map((n) => tableFileSize(V8, `${partitionPath}/${n}`)),
    };
  });
}

interface DecodedStat {
  fileId: string;
  path: string;
  partitionPath: string;
  prevBaseFile: string;
  numUpdateWrites: number;
  numDeletes: number;
  totalLogRecords: number;
  totalLogBlocks: number;
  totalUpdatedRecordsCompacted: number;
  totalLogFilesCompacted: number;
  totalLogSizeCompacted: number;
  totalLogReadTimeMs: number;
  runtimeStats: { totalUpsertTime: number };
}

describe('buildCompactionPlan', () => {
  it("rebuilds the v8 fixture's compaction plan from its file slices, field for field and byte for byte", () => {
    // Prepare
    const fixtureBytes = hoodieFile(V8, PLAN);
    const [fixturePlan] = decodeTimelineAvro(fixtureBytes).records;

    // Act: the fixture's writer passed Spark SQL's "prepped" flag as extra metadata, so we pass it too.
    const plan = buildCompactionPlan({
      operations: slicesBeforeCompaction(),
      extraMetadata: { '_hoodie.spark.sql.writes.prepped': 'true' },
    });
    const bytes = compactionRequestedContent(plan);

    // Assess
    expect(plan).toEqual(fixturePlan);
    expect(avroHeader(bytes).schemaText).toBe(avroHeader(fixtureBytes).schemaText);
    expect(blocksWithoutSync(bytes).equals(blocksWithoutSync(fixtureBytes))).toBe(true);
  });

  it('writes no extra metadata unless asked, as Hudi does', () => {
    // Act
    const plan = buildCompactionPlan({ operations: slicesBeforeCompaction() });

    // Assess
    expect(plan.extraMetadata).toBeNull();
    expect(plan.version).toBe(2);
  });

  it('refuses a slice without log files and a file group named twice', () => {
    // Prepare
    const [op] = slicesBeforeCompaction() as [CompactionOperationInput];

    // Act
    const noLogs = () =>
      buildCompactionPlan({ operations: [{ ...op, logFileNames: [], logFileSizesBytes: [] }] });
    const twice = () => buildCompactionPlan({ operations: [op, op] });

    // Assess
    expect(noLogs).toThrow(HudiTimelineWriteError);
    expect(twice).toThrow(/twice/);
  });

  it.skipIf(PYTHON_AVRO === undefined)('writes a plan Apache Avro for Python reads as we built it', () => {
    // Prepare
    const plan = buildCompactionPlan({ operations: slicesBeforeCompaction() });

    // Act
    const decoded = decodeWithPythonAvro(compactionRequestedContent(plan));

    // Assess
    expect(decoded).toEqual([plan]);
  });
  if (PYTHON_AVRO === undefined) it.skip(PYTHON_AVRO_MISSING, () => {});
});

describe('buildCompactionCommitMetadata', () => {
  /** The new base files and what merging each slice counted (the counts as Hudi's compactor reported them). */
  function outputs(): CompactionOutput[] {
    const [plan] = decodeTimelineAvro(hoodieFile(V8, PLAN)).records as CompactionPlan[];
    const [done] = decodeTimelineAvro(hoodieFile(V8, DONE)).records as {
      partitionToWriteStats: Record<string, DecodedStat[]>;
    }[];
    return (plan?.operations ?? []).map((op) => {
      const stat = done?.partitionToWriteStats[op.partitionPath as string]?.[0] as DecodedStat;
      const newFile = partitionFiles(V8, op.partitionPath as string).find((n) =>
        n.endsWith(`_${T}.parquet`),
      ) as string;
      const path = `${op.partitionPath}/${newFile}`;
      return {
        partitionPath: op.partitionPath as string,
        fileId: op.fileId as string,
        fileName: newFile,
        baseInstantTime: op.baseInstantTime as string,
        prevBaseFile: op.dataFilePath,
        numWrites: parquetRows(V8, path),
        numUpdateWrites: stat.numUpdateWrites,
        numDeletes: stat.numDeletes,
        fileSizeInBytes: tableFileSize(V8, path),
        totalLogRecords: stat.totalLogRecords,
        totalLogBlocks: stat.totalLogBlocks,
        totalUpdatedRecordsCompacted: stat.totalUpdatedRecordsCompacted,
        totalLogFilesCompacted: (op.deltaFilePaths ?? []).length,
        totalLogSizeCompacted: op.metrics?.TOTAL_LOG_FILES_SIZE as number,
        logReadTimeMs: stat.totalLogReadTimeMs,
        upsertTimeMs: stat.runtimeStats.totalUpsertTime,
      };
    });
  }

  it("rebuilds the v8 fixture's completed compaction commit, field for field and byte for byte", () => {
    // Prepare
    const fixtureBytes = hoodieFile(V8, DONE);
    const [fixture] = decodeTimelineAvro(fixtureBytes).records;
    const [latest] = decodeTimelineAvro(hoodieFile(V8, LATEST_COMMIT)).records as {
      extraMetadata: { schema: string };
    }[];

    // Act
    const metadata = buildCompactionCommitMetadata({
      outputs: outputs(),
      schema: latest?.extraMetadata.schema as string,
    });
    const bytes = compactionCommitContent(8, metadata);

    // Assess
    expect(metadata).toEqual(fixture);
    expect(decodeTimelineAvro(bytes, COMMIT_METADATA_SCHEMA).records).toEqual([fixture]);
    expect(blocksWithoutSync(bytes).equals(blocksWithoutSync(fixtureBytes))).toBe(true);
  });

  it('writes Jackson JSON on table version 6 with the 0.x write-stat properties', () => {
    // Prepare
    const metadata = buildCompactionCommitMetadata({ outputs: outputs(), schema: '{"type":"record"}' });

    // Act
    const text = Buffer.from(compactionCommitContent(6, metadata)).toString('utf8');
    const parsed = JSON.parse(text);

    // Assess
    expect(Object.keys(parsed)).toEqual([
      'partitionToWriteStats',
      'compacted',
      'extraMetadata',
      'operationType',
    ]);
    expect(parsed.compacted).toBe(true);
    expect(parsed.operationType).toBe('COMPACT');
    const stat = parsed.partitionToWriteStats['city=chennai'][0];
    expect(stat.prevCommit).toBe(BASE_INSTANT);
    expect(stat.prevBaseFile).toBeUndefined();
    expect(baseName(stat.path)).toMatch(new RegExp(`_${T}\\.parquet$`));
    expect(text).toContain(
      '"runtimeStats" : {\n        "totalScanTime" : 5,\n        "totalUpsertTime" : 105,',
    );
  });

  it('refuses more updated rows than rows written', () => {
    // Prepare
    const [first] = outputs() as [CompactionOutput];

    // Act
    const act = () =>
      buildCompactionCommitMetadata({
        outputs: [{ ...first, numUpdateWrites: first.numWrites + 1 }],
        schema: '',
      });

    // Assess
    expect(act).toThrow(/more updated rows/);
  });
});
