// Golden tests of what a clustering writes: the v9 fixture's real clustering (plan, then completed replacecommit)
// rebuilt from its situation — input slices, files on disk, the latest commit's schema — decodes field for field
// like Hudi's files and encodes to the same data block; the v6 JSON replacecommit is rebuilt text for text; an
// independent Avro implementation reads our plan.
import { describe, expect, it } from 'vitest';
import {
  decodeTimelineAvro,
  encodeTimelineAvro,
} from '../../../../../../functions/core/formats/hudi/timeline-writer/avro-file.js';
import {
  buildClusteringCommitMetadata,
  buildClusteringPlan,
  type ClusteringOutput,
  type RequestedReplaceMetadata,
  SPARK_SORT_AND_SIZE_EXECUTION_STRATEGY,
} from '../../../../../../functions/core/formats/hudi/timeline-writer/clustering.js';
import {
  clusteringRequestedContent,
  replaceCommitContent,
} from '../../../../../../functions/core/formats/hudi/timeline-writer/content.js';
import { HudiTimelineWriteError } from '../../../../../../functions/core/formats/hudi/timeline-writer/errors.js';
import {
  REPLACE_COMMIT_METADATA_SCHEMA,
  REQUESTED_REPLACE_METADATA_SCHEMA,
  REQUESTED_REPLACE_METADATA_SCHEMA_V6,
} from '../../../../../../functions/core/formats/hudi/timeline-writer/schemas.js';
import {
  avroHeader,
  baseName,
  blocksWithoutSync,
  hoodieFile,
  parquetRows,
  tableFileSize,
} from './support.js';

/** The real clusterings of the v9 fixtures: plan, completed replacecommit, the latest commit before the plan. */
const CLUSTERINGS = [
  {
    table: 'cow_v9_txns_simple_meta',
    basePath: 'file:/tmp/v9-gen/warehouse/v9_txns_cow_simple_meta',
    plan: 'timeline/20260307162454799.clustering.requested',
    done: 'timeline/20260307162454799_20260307162456102.replacecommit',
    latestCommit: 'timeline/20260307162453568_20260307162454325.commit',
  },
  {
    table: 'mor_v9_txns_simple_nometa',
    basePath: 'file:/tmp/v9-gen/warehouse/v9_txns_mor_simple_nometa',
    plan: 'timeline/20260307135840454.clustering.requested',
    done: 'timeline/20260307135840454_20260307135840902.replacecommit',
    latestCommit: 'timeline/20260307135839895_20260307135840408.commit',
  },
] as const;
type Clustering = (typeof CLUSTERINGS)[number];

interface DecodedStat {
  fileId: string;
  path: string;
  partitionPath: string;
  runtimeStats: { totalCreateTime: number };
}

function schemaOf(table: string, file: string): string {
  const [commit] = decodeTimelineAvro(hoodieFile(table, file)).records as {
    extraMetadata: { schema: string };
  }[];
  return (commit as { extraMetadata: { schema: string } }).extraMetadata.schema;
}

/** A clustering's situation: its input groups, each slice's base file as it lies in the table folder. */
function planInputFromSlices(c: Clustering, fixturePlan: RequestedReplaceMetadata) {
  return {
    tableVersion: 9,
    basePath: c.basePath,
    groups: (fixturePlan.clusteringPlan?.inputGroups ?? []).map((group) => ({
      slices: (group.slices ?? []).map((slice) => {
        const partitionPath = slice.partitionPath as string;
        const baseFileName = baseName(slice.dataFilePath as string);
        return {
          partitionPath,
          fileId: slice.fileId as string,
          baseFileName,
          baseFileSizeBytes: tableFileSize(c.table, `${partitionPath}/${baseFileName}`),
        };
      }),
    })),
  };
}

describe('buildClusteringPlan', () => {
  it.each(CLUSTERINGS)(
    "rebuilds $table's clustering plan from its input slices, field for field and byte for byte",
    (c) => {
      // Prepare
      const fixtureBytes = hoodieFile(c.table, c.plan);
      const [fixturePlan] = decodeTimelineAvro(fixtureBytes).records as RequestedReplaceMetadata[];
      const input = planInputFromSlices(c, fixturePlan as RequestedReplaceMetadata);

      // Act
      const plan = buildClusteringPlan(input);
      const bytes = clusteringRequestedContent(9, plan);

      // Assess
      expect(plan).toEqual(fixturePlan);
      expect(plan.clusteringPlan?.strategy?.strategyClassName).toBe(SPARK_SORT_AND_SIZE_EXECUTION_STRATEGY);
      expect(avroHeader(bytes).schemaText).toBe(avroHeader(fixtureBytes).schemaText);
      expect(decodeTimelineAvro(bytes, JSON.parse(avroHeader(fixtureBytes).schemaText)).records).toEqual([
        fixturePlan,
      ]);
      expect(blocksWithoutSync(bytes).equals(blocksWithoutSync(fixtureBytes))).toBe(true);
    },
  );

  it('writes the v6 plan with the 0.x schema, which has no missingSchedulePartitions', () => {
    // Prepare
    const input = {
      tableVersion: 6,
      basePath: 's3a://bucket/t/',
      groups: [
        {
          slices: [
            {
              partitionPath: '10',
              fileId: 'a-0',
              baseFileName: 'a-0_0-1-1_20240707001301554.parquet',
              baseFileSizeBytes: 5 * 1024 * 1024,
            },
            {
              partitionPath: '10',
              fileId: 'b-0',
              baseFileName: 'b-0_0-1-2_20240707001301554.parquet',
              baseFileSizeBytes: 3 * 1024 * 1024,
            },
          ],
        },
      ],
    };

    // Act
    const plan = buildClusteringPlan(input);
    const bytes = clusteringRequestedContent(6, plan);

    // Assess
    expect(plan.clusteringPlan?.missingSchedulePartitions).toBeUndefined();
    expect(avroHeader(bytes).schemaText).toBe(JSON.stringify(REQUESTED_REPLACE_METADATA_SCHEMA_V6));
    const [decoded] = decodeTimelineAvro(bytes).records as RequestedReplaceMetadata[];
    expect(decoded?.clusteringPlan?.inputGroups?.[0]?.slices?.[0]?.dataFilePath).toBe(
      's3a://bucket/t/10/a-0_0-1-1_20240707001301554.parquet',
    );
    expect(decoded?.clusteringPlan?.inputGroups?.[0]?.metrics).toEqual({
      TOTAL_LOG_FILES: 0,
      TOTAL_IO_MB: 16,
      TOTAL_IO_READ_MB: 8,
      TOTAL_LOG_FILES_SIZE: 0,
      TOTAL_IO_WRITE_MB: 8,
    });
  });

  it('refuses a group spanning two partitions and an empty group', () => {
    // Prepare
    const slice = (p: string) => ({
      partitionPath: p,
      fileId: `${p}-0`,
      baseFileName: 'x.parquet',
      baseFileSizeBytes: 1,
    });

    // Act
    const spanning = () =>
      buildClusteringPlan({ tableVersion: 9, basePath: 'b', groups: [{ slices: [slice('a'), slice('b')] }] });
    const empty = () => buildClusteringPlan({ tableVersion: 9, basePath: 'b', groups: [{ slices: [] }] });

    // Assess
    expect(spanning).toThrow(HudiTimelineWriteError);
    expect(empty).toThrow(/no slices/);
  });
});

describe('buildClusteringCommitMetadata', () => {
  it.each(CLUSTERINGS)(
    "rebuilds $table's completed replacecommit from the plan, the new files and the latest schema",
    (c) => {
      // Prepare
      const [plan] = decodeTimelineAvro(hoodieFile(c.table, c.plan)).records as RequestedReplaceMetadata[];
      const fixtureBytes = hoodieFile(c.table, c.done);
      const [fixture] = decodeTimelineAvro(fixtureBytes).records as {
        partitionToWriteStats: Record<string, DecodedStat[]>;
      }[];
      // The new files in plan-group order (Spark partition ids 0, 1, 2 of the write tokens).
      const stats = Object.values(fixture?.partitionToWriteStats ?? {})
        .flat()
        .sort((a, b) => a.path.localeCompare(b.path));
      const groupOrder = (plan?.clusteringPlan?.inputGroups ?? []).map((g) => g.slices?.[0]?.partitionPath);
      stats.sort((a, b) => groupOrder.indexOf(a.partitionPath) - groupOrder.indexOf(b.partitionPath));
      const outputs: ClusteringOutput[] = stats.map((s) => ({
        partitionPath: s.partitionPath,
        fileId: s.fileId,
        fileName: baseName(s.path),
        numWrites: parquetRows(c.table, s.path),
        fileSizeInBytes: tableFileSize(c.table, s.path),
        createTimeMs: s.runtimeStats.totalCreateTime,
      }));

      // Act
      const metadata = buildClusteringCommitMetadata({
        plan: plan as RequestedReplaceMetadata,
        outputs,
        schema: schemaOf(c.table, c.latestCommit),
      });
      const bytes = replaceCommitContent(9, metadata);

      // Assess
      expect(metadata).toEqual(fixture);
      expect(decodeTimelineAvro(bytes, REPLACE_COMMIT_METADATA_SCHEMA).records).toEqual([fixture]);
      expect(blocksWithoutSync(bytes).equals(blocksWithoutSync(fixtureBytes))).toBe(true);
    },
  );

  it("rebuilds the v6 fixture's JSON replacecommit text for text (Jackson's layout, HashMap order)", () => {
    // Prepare
    const table = 'cow_v6_simplekeygen_nonhivestyle_overwritetable';
    const fixtureText = Buffer.from(hoodieFile(table, '20240707001303088.replacecommit')).toString('utf8');
    const replaced: [string, string, string][] = [
      [
        '10',
        '4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0',
        '4f2685a3-614f-49ca-9b2b-e1cb9fb61f27-0_0-95-135_20240707001302376.parquet',
      ],
      [
        '20',
        '88163884-fef0-4aab-865d-c72327a8a1d5-0',
        '88163884-fef0-4aab-865d-c72327a8a1d5-0_0-74-110_20240707001301554.parquet',
      ],
      [
        '30',
        'd398fae1-c0e6-4098-8124-f55f7098bdba-0',
        'd398fae1-c0e6-4098-8124-f55f7098bdba-0_1-95-136_20240707001302376.parquet',
      ],
    ];
    const plan = buildClusteringPlan({
      tableVersion: 6,
      basePath: 'file:/t',
      groups: replaced.map(([partitionPath, fileId, baseFileName]) => ({
        slices: [
          {
            partitionPath,
            fileId,
            baseFileName,
            baseFileSizeBytes: tableFileSize(table, `${partitionPath}/${baseFileName}`),
          },
        ],
      })),
    });
    const newFile = '30/ebcb261d-62d3-4895-90ec-5b3c9622dff4-0_0-111-154_20240707001303088.parquet';
    const schema = JSON.parse(Buffer.from(hoodieFile(table, '20240707001302376.commit')).toString('utf8'))
      .extraMetadata.schema as string;

    // Act
    const metadata = buildClusteringCommitMetadata({
      plan,
      outputs: [
        {
          partitionPath: '30',
          fileId: 'ebcb261d-62d3-4895-90ec-5b3c9622dff4-0',
          fileName: baseName(newFile),
          numWrites: parquetRows(table, newFile),
          fileSizeInBytes: tableFileSize(table, newFile),
          createTimeMs: 83,
        },
      ],
      schema,
    });
    const text = Buffer.from(replaceCommitContent(6, metadata)).toString('utf8');

    // Assess: only the operation differs (the fixture is an INSERT_OVERWRITE_TABLE, ours a clustering).
    expect(text).toBe(
      fixtureText.replace('"operationType" : "INSERT_OVERWRITE_TABLE"', '"operationType" : "CLUSTER"'),
    );
  });

  it('refuses an output in a partition the plan does not cluster', () => {
    // Prepare
    const plan = buildClusteringPlan({
      tableVersion: 9,
      basePath: 'b',
      groups: [
        {
          slices: [{ partitionPath: 'p=1', fileId: 'f-0', baseFileName: 'f.parquet', baseFileSizeBytes: 1 }],
        },
      ],
    });

    // Act
    const act = () =>
      buildClusteringCommitMetadata({
        plan,
        outputs: [
          { partitionPath: 'p=2', fileId: 'g-0', fileName: 'g.parquet', numWrites: 1, fileSizeInBytes: 1 },
        ],
        schema: '{}',
      });

    // Assess
    expect(act).toThrow(/does not cluster/);
  });

  it('encodes with the exact 1.x schema that the fixture plan embeds', () => {
    // Prepare
    const plan = buildClusteringPlan({
      tableVersion: 8,
      basePath: 'b',
      groups: [
        { slices: [{ partitionPath: '', fileId: 'f-0', baseFileName: 'f.parquet', baseFileSizeBytes: 1 }] },
      ],
    });

    // Act
    const bytes = clusteringRequestedContent(8, plan);

    // Assess
    expect(avroHeader(bytes).schemaText).toBe(JSON.stringify(REQUESTED_REPLACE_METADATA_SCHEMA));
    expect(
      Buffer.from(bytes).equals(Buffer.from(encodeTimelineAvro(REQUESTED_REPLACE_METADATA_SCHEMA, plan))),
    ).toBe(true);
  });
});
