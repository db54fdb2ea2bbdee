// The schema constants are what Hudi's own writers embed, byte for byte, and the minimal container encoder
// reproduces Hudi's files: re-encoding each fixture's record gives the fixture's data block exactly (only the
// random sync marker differs), and an independent Avro implementation reads what we write.
import { describe, expect, it } from 'vitest';
import {
  decodeTimelineAvro,
  encodeTimelineAvro,
} from '../../../../../../functions/core/formats/hudi/timeline-writer/avro-file.js';
import { HudiTimelineWriteError } from '../../../../../../functions/core/formats/hudi/timeline-writer/errors.js';
import {
  CLEAN_METADATA_SCHEMA,
  CLEANER_PLAN_SCHEMA,
  COMMIT_METADATA_SCHEMA,
  COMPACTION_PLAN_SCHEMA,
  type HudiTimelineSchema,
  REPLACE_COMMIT_METADATA_SCHEMA,
  REQUESTED_REPLACE_METADATA_SCHEMA,
  REQUESTED_REPLACE_METADATA_SCHEMA_V6,
  ROLLBACK_METADATA_SCHEMA,
  ROLLBACK_PLAN_SCHEMA,
} from '../../../../../../functions/core/formats/hudi/timeline-writer/schemas.js';
import { avroHeader, blocksWithoutSync, hoodieFile } from './support.js';

/** Each schema constant beside the fixture files that embed it (table, path under .hoodie/). */
const EMBEDDED: readonly { schema: HudiTimelineSchema; files: readonly [string, string][] }[] = [
  {
    schema: REQUESTED_REPLACE_METADATA_SCHEMA_V6,
    files: [['cow_v6_simplekeygen_nonhivestyle_overwritetable', '20240707001303088.replacecommit.requested']],
  },
  {
    schema: REQUESTED_REPLACE_METADATA_SCHEMA,
    files: [
      ['cow_v9_txns_simple_meta', 'timeline/20260307162454799.clustering.requested'],
      ['cow_v9_txns_simple_meta', 'timeline/20260307162450901.replacecommit.requested'],
      ['mor_v9_txns_simple_nometa', 'timeline/20260307135840454.clustering.requested'],
    ],
  },
  {
    schema: REPLACE_COMMIT_METADATA_SCHEMA,
    files: [
      ['cow_v9_txns_simple_meta', 'timeline/20260307162454799_20260307162456102.replacecommit'],
      ['mor_v9_txns_simple_nometa', 'timeline/20260307135840454_20260307135840902.replacecommit'],
    ],
  },
  {
    schema: COMMIT_METADATA_SCHEMA,
    files: [
      ['mor_v8_trips_8i3u1d', 'timeline/20251220210129235_20251220210129883.commit'],
      ['mor_v8_trips_8i3u1d', 'timeline/20251220210108078_20251220210109593.deltacommit'],
      ['cow_v9_txns_simple_meta', 'timeline/20260307162434124_20260307162438653.commit'],
      ['cow_v8_simplekeygen_nonhivestyle', 'timeline/20250713011315930.inflight'],
    ],
  },
  {
    schema: COMPACTION_PLAN_SCHEMA,
    files: [
      ['mor_v8_trips_8i3u1d', 'timeline/20251220210129235.compaction.requested'],
      ['mor_v9_txns_simple_nometa', 'timeline/20260307135839895.compaction.requested'],
    ],
  },
  {
    schema: ROLLBACK_PLAN_SCHEMA,
    files: [['mor_v6_nonpartitioned_rollback', '20250126040936578.rollback.requested']],
  },
  {
    schema: ROLLBACK_METADATA_SCHEMA,
    files: [['mor_v6_nonpartitioned_rollback', '20250126040936578.rollback']],
  },
];

const cases = EMBEDDED.flatMap(({ schema, files }) =>
  files.map(([table, path]) => ({ name: `${schema.name} in ${table}/${path}`, schema, table, path })),
);

describe('Hudi timeline schemas are the ones Hudi embeds', () => {
  it.each(cases)('$name: the constant serialises to the header text exactly', ({ schema, table, path }) => {
    // Prepare
    const header = avroHeader(hoodieFile(table, path));

    // Act
    const ours = JSON.stringify(schema);

    // Assess
    expect(header.keys).toEqual(['avro.schema']);
    expect(ours).toBe(header.schemaText);
  });

  it.each(cases)(
    '$name: re-encoding the decoded record reproduces the data block',
    ({ schema, table, path }) => {
      // Prepare
      const fixture = hoodieFile(table, path);
      const [record] = decodeTimelineAvro(fixture).records;

      // Act
      const ours = encodeTimelineAvro(schema, record as object);

      // Assess
      expect(avroHeader(ours).schemaText).toBe(avroHeader(fixture).schemaText);
      // A JS object lists integer-like keys ("10", "20") in numeric order, not in Java's HashMap order: where the
      // fixture's partitions are such keys, only the order of map entries may differ, which no reader sees.
      if (!hasIntegerLikePartition(record))
        expect(blocksWithoutSync(ours).equals(blocksWithoutSync(fixture))).toBe(true);
      expect(decodeTimelineAvro(ours).records).toEqual([record]);
    },
  );
});

function hasIntegerLikePartition(record: unknown): boolean {
  const stats = (record as { partitionToWriteStats?: Record<string, unknown> | null }).partitionToWriteStats;
  return stats != null && Object.keys(stats).some((k) => /^\d+$/.test(k));
}

describe('encodeTimelineAvro', () => {
  it('writes the same bytes for the same content (a crashed run re-derives an identical file)', () => {
    // Prepare
    const record = { operationType: 'CLUSTER', clusteringPlan: null, extraMetadata: {}, version: 1 };

    // Act
    const a = encodeTimelineAvro(REQUESTED_REPLACE_METADATA_SCHEMA, record);
    const b = encodeTimelineAvro(REQUESTED_REPLACE_METADATA_SCHEMA, { ...record });

    // Assess
    expect(Buffer.from(a).equals(Buffer.from(b))).toBe(true);
  });

  it('refuses content that does not fit the schema, naming the field', () => {
    // Prepare
    const record = { operationType: 7, clusteringPlan: null, extraMetadata: null, version: 1 };

    // Act
    const act = () => encodeTimelineAvro(REQUESTED_REPLACE_METADATA_SCHEMA, record);

    // Assess
    expect(act).toThrow(HudiTimelineWriteError);
    expect(act).toThrow(/operationType/);
  });
});

describe('the cleaner schemas (no fixture has a clean instant: taken from the .avsc)', () => {
  const plan = {
    earliestInstantToRetain: { timestamp: '20260307162434124', action: 'commit', state: 'COMPLETED' },
    policy: 'KEEP_LATEST_COMMITS',
    filesToBeDeletedPerPartition: null,
    version: 2,
    filePathsToBeDeletedPerPartition: {
      'region=eu': [{ filePath: 'file:/t/region=eu/a.parquet', isBootstrapBaseFile: false }],
    },
    partitionsToBeDeleted: [],
  };
  const metadata = {
    policy: 'KEEP_LATEST_COMMITS',
    startCleanTime: '20260307170000000',
    timeTakenInMillis: 12,
    totalFilesDeleted: 1,
    earliestCommitToRetain: '20260307162434124',
    lastCompletedCommitTimestamp: '20260307162456179',
    partitionMetadata: {
      'region=eu': {
        partitionPath: 'region=eu',
        policy: 'KEEP_LATEST_COMMITS',
        deletePathPatterns: ['a.parquet'],
        successDeleteFiles: ['a.parquet'],
        failedDeleteFiles: [],
        isPartitionDeleted: false,
      },
    },
    version: 2,
    bootstrapPartitionMetadata: {},
  };

  it.each([
    ['HoodieCleanerPlan', CLEANER_PLAN_SCHEMA, plan],
    ['HoodieCleanMetadata', CLEAN_METADATA_SCHEMA, metadata],
  ] as const)('%s encodes and decodes a record', (_name, schema, record) => {
    // Act
    const bytes = encodeTimelineAvro(schema, record);

    // Assess
    expect(decodeTimelineAvro(bytes).records).toEqual([record]);
  });
});
