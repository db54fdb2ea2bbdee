// Golden tests of what a Merge-on-Read compaction writes: the v8 fixture's real compaction (plan, then completed
// commit) rebuilt from its file slices as they lie in the table folder decodes field for field like Hudi's files and
// encodes to the same data block; the v6 form is Jackson JSON.
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
  hoodieFile,
  parquetRows,
  partitionFiles,
  tableFileSize,
} from './support.js';

/** The real compactions of the fixtures: plan, completed commit, the latest commit before the plan. */
const COMPACTIONS = [
  {
    table: 'mor_v8_trips_8i3u1d',
    tableVersion: 8,
    instant: '20251220210129235',
    plan: 'timeline/20251220210129235.compaction.requested',
    done: 'timeline/20251220210129235_20251220210129883.commit',
    latestCommit: 'timeline/20251220210128625_20251220210129197.deltacommit',
    // The v8 writer passed Spark SQL's "prepped" flag to the plan; the v9 one passed nothing.
    extraMetadata: { '_hoodie.spark.sql.writes.prepped': 'true' } as Record<string, string> | undefined,
  },
  {
    table: 'mor_v9_txns_simple_nometa',
    tableVersion: 9,
    instant: '20260307135839895',
    plan: 'timeline/20260307135839895.compaction.requested',
    done: 'timeline/20260307135839895_20260307135840408.commit',
    latestCommit: 'timeline/20260307135839205_20260307135839403.deltacommit',
    extraMetadata: undefined as Record<string, string> | undefined,
  },
];
type Compaction = (typeof COMPACTIONS)[number];
const V8 = COMPACTIONS[0] as Compaction;

/** Instant time embedded in a base file name (`…_<instant>.parquet`) or a v8+ log name (`.<id>_<instant>.log…`). */
function instantOfName(name: string, fileId: string): string {
  return name.startsWith('.') ? name.slice(fileId.length + 2, fileId.length + 19) : name.slice(-25, -8);
}

/**
 * The file slice each planned file group had when the plan was made, as its folder shows it: the latest base file
 * before the compaction instant and the logs written after that base and before the instant (on v8+ a log is
 * named by its own deltacommit). Which groups to compact is the planner's choice: taken from the fixture's plan.
 */
function slicesBeforeCompaction(c: Compaction): CompactionOperationInput[] {
  const [fixturePlan] = decodeTimelineAvro(hoodieFile(c.table, c.plan)).records as CompactionPlan[];
  return (fixturePlan?.operations ?? []).map((op) => {
    const partitionPath = op.partitionPath as string;
    const fileId = op.fileId as string;
    const names = partitionFiles(c.table, partitionPath);
    const base = names
      .filter(
        (n) => n.startsWith(`${fileId}_`) && n.endsWith('.parquet') && instantOfName(n, fileId) < c.instant,
      )
      .sort((x, y) => instantOfName(x, fileId).localeCompare(instantOfName(y, fileId)))
      .at(-1) as string;
    const baseInstantTime = instantOfName(base, fileId);
    const logs = names.filter((n) => {
      if (!n.startsWith(`.${fileId}_`) || !n.includes('.log.')) return false;
      const written = instantOfName(n, fileId);
      return written > baseInstantTime && written < c.instant;
    });
    return {
      partitionPath,
      fileId,
      baseInstantTime,
      baseFileName: base,
      baseFileSizeBytes: tableFileSize(c.table, `${partitionPath}/${base}`),
      logFileNames: logs,
      logFileSizesBytes: logs.map((n) => tableFileSize(c.table, `${partitionPath}/${n}`)),
    };
  });
}

interface DecodedStat {
  fileId: string;
  path: string;
  partitionPath: string;
  prevBaseFile: string;
  numUpdateWrites: number;
  numInserts: number;
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
  it.each(COMPACTIONS)(
    "rebuilds $table's compaction plan from its file slices, field for field and byte for byte",
    (c) => {
      // Prepare
      const fixtureBytes = hoodieFile(c.table, c.plan);
      const [fixturePlan] = decodeTimelineAvro(fixtureBytes).records;

      // Act
      const plan = buildCompactionPlan({
        operations: slicesBeforeCompaction(c),
        extraMetadata: c.extraMetadata,
      });
      const bytes = compactionRequestedContent(plan);

      // Assess
      expect(plan).toEqual(fixturePlan);
      expect(avroHeader(bytes).schemaText).toBe(avroHeader(fixtureBytes).schemaText);
      expect(blocksWithoutSync(bytes).equals(blocksWithoutSync(fixtureBytes))).toBe(true);
    },
  );

  it('writes an empty extra metadata map unless asked, as Hudi 1.1 does', () => {
    // Act
    const plan = buildCompactionPlan({ operations: slicesBeforeCompaction(V8) });

    // Assess
    expect(plan.extraMetadata).toEqual({});
    expect(plan.version).toBe(2);
  });

  it('refuses a slice without log files and a file group named twice', () => {
    // Prepare
    const [op] = slicesBeforeCompaction(V8) as [CompactionOperationInput];

    // Act
    const noLogs = () =>
      buildCompactionPlan({ operations: [{ ...op, logFileNames: [], logFileSizesBytes: [] }] });
    const twice = () => buildCompactionPlan({ operations: [op, op] });

    // Assess
    expect(noLogs).toThrow(HudiTimelineWriteError);
    expect(twice).toThrow(/twice/);
  });
});

describe('buildCompactionCommitMetadata', () => {
  /** The new base files and what merging each slice counted (the counts as Hudi's compactor reported them). */
  function outputs(c: Compaction): CompactionOutput[] {
    const [plan] = decodeTimelineAvro(hoodieFile(c.table, c.plan)).records as CompactionPlan[];
    const [done] = decodeTimelineAvro(hoodieFile(c.table, c.done)).records as {
      partitionToWriteStats: Record<string, DecodedStat[]>;
    }[];
    return (plan?.operations ?? []).map((op) => {
      const stat = done?.partitionToWriteStats[op.partitionPath as string]?.find(
        (s) => s.fileId === op.fileId,
      ) as DecodedStat;
      const newFile = partitionFiles(c.table, op.partitionPath as string).find(
        (n) => n.startsWith(`${op.fileId}_`) && n.endsWith(`_${c.instant}.parquet`),
      ) as string;
      const path = `${op.partitionPath}/${newFile}`;
      return {
        partitionPath: op.partitionPath as string,
        fileId: op.fileId as string,
        fileName: newFile,
        baseInstantTime: op.baseInstantTime as string,
        prevBaseFile: op.dataFilePath,
        numWrites: parquetRows(c.table, path),
        numUpdateWrites: stat.numUpdateWrites,
        numInserts: stat.numInserts,
        numDeletes: stat.numDeletes,
        fileSizeInBytes: tableFileSize(c.table, path),
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

  it.each(COMPACTIONS)(
    "rebuilds $table's completed compaction commit, field for field and byte for byte",
    (c) => {
      // Prepare
      const fixtureBytes = hoodieFile(c.table, c.done);
      const [fixture] = decodeTimelineAvro(fixtureBytes).records;
      const [latest] = decodeTimelineAvro(hoodieFile(c.table, c.latestCommit)).records as {
        extraMetadata: { schema: string };
      }[];

      // Act
      const metadata = buildCompactionCommitMetadata({
        outputs: outputs(c),
        schema: latest?.extraMetadata.schema as string,
      });
      const bytes = compactionCommitContent(c.tableVersion, metadata);

      // Assess
      expect(metadata).toEqual(fixture);
      expect(decodeTimelineAvro(bytes, COMMIT_METADATA_SCHEMA).records).toEqual([fixture]);
      expect(blocksWithoutSync(bytes).equals(blocksWithoutSync(fixtureBytes))).toBe(true);
    },
  );

  it('writes Jackson JSON on table version 6 with the 0.x write-stat properties', () => {
    // Prepare
    const metadata = buildCompactionCommitMetadata({ outputs: outputs(V8), schema: '{"type":"record"}' });

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
    expect(stat.prevCommit).toBe('20251220210108078');
    expect(stat.prevBaseFile).toBeUndefined();
    expect(baseName(stat.path)).toMatch(/_20251220210129235\.parquet$/);
    expect(text).toContain(
      '"runtimeStats" : {\n        "totalScanTime" : 5,\n        "totalUpsertTime" : 105,',
    );
  });

  it('refuses more updated rows than rows written', () => {
    // Prepare
    const [first] = outputs(V8) as [CompactionOutput];

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
