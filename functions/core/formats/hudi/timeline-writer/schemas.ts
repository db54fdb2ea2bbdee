// Apache Hudi's Avro schemas for the timeline files lake-compactor writes, exactly as Hudi's own writers embed them
// in the `avro.schema` header of each file (Java's generated SCHEMA$, with its "avro.java.string" properties), copied
// from the vendored fixtures' timeline files. Why the fixtures and not apache/hudi's .avsc: the .avsc in the
// repository drifted over releases (fields added, unions reordered, a field renamed), and a reader resolves our file
// against ITS schema by field name and type, so what matters is what Hudi actually wrote. JSON.stringify of each
// constant is byte-for-byte the fixture's header string (a golden test proves it). Differences from the .avsc are
// listed in docs next to each constant. Only the cleaner's two schemas have no fixture: they follow the .avsc.

/**
 * HoodieRequestedReplaceMetadata (with HoodieClusteringPlan, HoodieClusteringGroup, HoodieSliceInfo,
 * HoodieClusteringStrategy) as Hudi 0.14/0.15 embeds it in a table-version-6 `T.replacecommit.requested`
 * (fixture cow_v6_simplekeygen_nonhivestyle_overwritetable). HoodieClusteringPlan has no missingSchedulePartitions.
 */
export const REQUESTED_REPLACE_METADATA_SCHEMA_V6 = {
  type: 'record',
  name: 'HoodieRequestedReplaceMetadata',
  namespace: 'org.apache.hudi.avro.model',
  fields: [
    {
      name: 'operationType',
      type: [
        'null',
        {
          type: 'string',
          'avro.java.string': 'String',
        },
      ],
      default: null,
    },
    {
      name: 'clusteringPlan',
      type: [
        'null',
        {
          type: 'record',
          name: 'HoodieClusteringPlan',
          fields: [
            {
              name: 'inputGroups',
              type: [
                'null',
                {
                  type: 'array',
                  items: {
                    type: 'record',
                    name: 'HoodieClusteringGroup',
                    fields: [
                      {
                        name: 'slices',
                        type: [
                          'null',
                          {
                            type: 'array',
                            items: {
                              type: 'record',
                              name: 'HoodieSliceInfo',
                              fields: [
                                {
                                  name: 'dataFilePath',
                                  type: [
                                    'null',
                                    {
                                      type: 'string',
                                      'avro.java.string': 'String',
                                    },
                                  ],
                                  default: null,
                                },
                                {
                                  name: 'deltaFilePaths',
                                  type: [
                                    'null',
                                    {
                                      type: 'array',
                                      items: {
                                        type: 'string',
                                        'avro.java.string': 'String',
                                      },
                                    },
                                  ],
                                  default: null,
                                },
                                {
                                  name: 'fileId',
                                  type: [
                                    'null',
                                    {
                                      type: 'string',
                                      'avro.java.string': 'String',
                                    },
                                  ],
                                },
                                {
                                  name: 'partitionPath',
                                  type: [
                                    'null',
                                    {
                                      type: 'string',
                                      'avro.java.string': 'String',
                                    },
                                  ],
                                  default: null,
                                },
                                {
                                  name: 'bootstrapFilePath',
                                  type: [
                                    'null',
                                    {
                                      type: 'string',
                                      'avro.java.string': 'String',
                                    },
                                  ],
                                  default: null,
                                },
                                {
                                  name: 'version',
                                  type: ['int', 'null'],
                                  default: 1,
                                },
                              ],
                            },
                          },
                        ],
                        default: null,
                      },
                      {
                        name: 'metrics',
                        type: [
                          'null',
                          {
                            type: 'map',
                            values: 'double',
                            'avro.java.string': 'String',
                          },
                        ],
                        default: null,
                      },
                      {
                        name: 'numOutputFileGroups',
                        type: ['int', 'null'],
                        default: 1,
                      },
                      {
                        name: 'extraMetadata',
                        type: [
                          'null',
                          {
                            type: 'map',
                            values: {
                              type: 'string',
                              'avro.java.string': 'String',
                            },
                            'avro.java.string': 'String',
                          },
                        ],
                        default: null,
                      },
                      {
                        name: 'version',
                        type: ['int', 'null'],
                        default: 1,
                      },
                    ],
                  },
                },
              ],
              default: null,
            },
            {
              name: 'strategy',
              type: [
                'null',
                {
                  type: 'record',
                  name: 'HoodieClusteringStrategy',
                  fields: [
                    {
                      name: 'strategyClassName',
                      type: [
                        'null',
                        {
                          type: 'string',
                          'avro.java.string': 'String',
                        },
                      ],
                      default: null,
                    },
                    {
                      name: 'strategyParams',
                      type: [
                        'null',
                        {
                          type: 'map',
                          values: {
                            type: 'string',
                            'avro.java.string': 'String',
                          },
                          'avro.java.string': 'String',
                        },
                      ],
                      default: null,
                    },
                    {
                      name: 'version',
                      type: ['int', 'null'],
                      default: 1,
                    },
                  ],
                },
              ],
              default: null,
            },
            {
              name: 'extraMetadata',
              type: [
                'null',
                {
                  type: 'map',
                  values: {
                    type: 'string',
                    'avro.java.string': 'String',
                  },
                  'avro.java.string': 'String',
                },
              ],
              default: null,
            },
            {
              name: 'version',
              type: ['int', 'null'],
              default: 1,
            },
            {
              name: 'preserveHoodieMetadata',
              type: ['null', 'boolean'],
              default: null,
            },
          ],
        },
      ],
      default: null,
    },
    {
      name: 'extraMetadata',
      type: [
        'null',
        {
          type: 'map',
          values: {
            type: 'string',
            'avro.java.string': 'String',
          },
          'avro.java.string': 'String',
        },
      ],
      default: null,
    },
    {
      name: 'version',
      type: ['int', 'null'],
      default: 1,
    },
  ],
} as const;

/**
 * HoodieRequestedReplaceMetadata as Hudi 1.x embeds it in `T.clustering.requested` and
 * `T.replacecommit.requested` (fixtures cow_v9_txns_simple_meta, mor_v9_txns_simple_nometa; no v8 fixture has one).
 * Against the .avsc: operationType defaults to null (an older .avsc says ""), clusteringPlan and strategy unions put
 * "null" first, HoodieClusteringGroup has extraMetadata, HoodieClusteringPlan has preserveHoodieMetadata and
 * missingSchedulePartitions.
 */
export const REQUESTED_REPLACE_METADATA_SCHEMA = {
  type: 'record',
  name: 'HoodieRequestedReplaceMetadata',
  namespace: 'org.apache.hudi.avro.model',
  fields: [
    {
      name: 'operationType',
      type: [
        'null',
        {
          type: 'string',
          'avro.java.string': 'String',
        },
      ],
      default: null,
    },
    {
      name: 'clusteringPlan',
      type: [
        'null',
        {
          type: 'record',
          name: 'HoodieClusteringPlan',
          fields: [
            {
              name: 'inputGroups',
              type: [
                'null',
                {
                  type: 'array',
                  items: {
                    type: 'record',
                    name: 'HoodieClusteringGroup',
                    fields: [
                      {
                        name: 'slices',
                        type: [
                          'null',
                          {
                            type: 'array',
                            items: {
                              type: 'record',
                              name: 'HoodieSliceInfo',
                              fields: [
                                {
                                  name: 'dataFilePath',
                                  type: [
                                    'null',
                                    {
                                      type: 'string',
                                      'avro.java.string': 'String',
                                    },
                                  ],
                                  default: null,
                                },
                                {
                                  name: 'deltaFilePaths',
                                  type: [
                                    'null',
                                    {
                                      type: 'array',
                                      items: {
                                        type: 'string',
                                        'avro.java.string': 'String',
                                      },
                                    },
                                  ],
                                  default: null,
                                },
                                {
                                  name: 'fileId',
                                  type: [
                                    'null',
                                    {
                                      type: 'string',
                                      'avro.java.string': 'String',
                                    },
                                  ],
                                },
                                {
                                  name: 'partitionPath',
                                  type: [
                                    'null',
                                    {
                                      type: 'string',
                                      'avro.java.string': 'String',
                                    },
                                  ],
                                  default: null,
                                },
                                {
                                  name: 'bootstrapFilePath',
                                  type: [
                                    'null',
                                    {
                                      type: 'string',
                                      'avro.java.string': 'String',
                                    },
                                  ],
                                  default: null,
                                },
                                {
                                  name: 'version',
                                  type: ['int', 'null'],
                                  default: 1,
                                },
                              ],
                            },
                          },
                        ],
                        default: null,
                      },
                      {
                        name: 'metrics',
                        type: [
                          'null',
                          {
                            type: 'map',
                            values: 'double',
                            'avro.java.string': 'String',
                          },
                        ],
                        default: null,
                      },
                      {
                        name: 'numOutputFileGroups',
                        type: ['int', 'null'],
                        default: 1,
                      },
                      {
                        name: 'extraMetadata',
                        type: [
                          'null',
                          {
                            type: 'map',
                            values: {
                              type: 'string',
                              'avro.java.string': 'String',
                            },
                            'avro.java.string': 'String',
                          },
                        ],
                        default: null,
                      },
                      {
                        name: 'version',
                        type: ['int', 'null'],
                        default: 1,
                      },
                    ],
                  },
                },
              ],
              default: null,
            },
            {
              name: 'strategy',
              type: [
                'null',
                {
                  type: 'record',
                  name: 'HoodieClusteringStrategy',
                  fields: [
                    {
                      name: 'strategyClassName',
                      type: [
                        'null',
                        {
                          type: 'string',
                          'avro.java.string': 'String',
                        },
                      ],
                      default: null,
                    },
                    {
                      name: 'strategyParams',
                      type: [
                        'null',
                        {
                          type: 'map',
                          values: {
                            type: 'string',
                            'avro.java.string': 'String',
                          },
                          'avro.java.string': 'String',
                        },
                      ],
                      default: null,
                    },
                    {
                      name: 'version',
                      type: ['int', 'null'],
                      default: 1,
                    },
                  ],
                },
              ],
              default: null,
            },
            {
              name: 'extraMetadata',
              type: [
                'null',
                {
                  type: 'map',
                  values: {
                    type: 'string',
                    'avro.java.string': 'String',
                  },
                  'avro.java.string': 'String',
                },
              ],
              default: null,
            },
            {
              name: 'version',
              type: ['int', 'null'],
              default: 1,
            },
            {
              name: 'preserveHoodieMetadata',
              type: ['null', 'boolean'],
              default: null,
            },
            {
              name: 'missingSchedulePartitions',
              type: [
                'null',
                {
                  type: 'array',
                  items: {
                    type: 'string',
                    'avro.java.string': 'String',
                  },
                },
              ],
              default: null,
            },
          ],
        },
      ],
      default: null,
    },
    {
      name: 'extraMetadata',
      type: [
        'null',
        {
          type: 'map',
          values: {
            type: 'string',
            'avro.java.string': 'String',
          },
          'avro.java.string': 'String',
        },
      ],
      default: null,
    },
    {
      name: 'version',
      type: ['int', 'null'],
      default: 1,
    },
  ],
} as const;

/**
 * HoodieReplaceCommitMetadata (with HoodieWriteStat, HoodieRuntimeStats) as Hudi 1.x embeds it in a completed
 * `T_C.replacecommit` (fixtures cow_v9_txns_simple_meta, mor_v9_txns_simple_nometa). Against the .avsc: HoodieWriteStat
 * is defined inline (the .avsc refers to it by name), and the record has `compacted`.
 */
export const REPLACE_COMMIT_METADATA_SCHEMA = {
  type: 'record',
  name: 'HoodieReplaceCommitMetadata',
  namespace: 'org.apache.hudi.avro.model',
  fields: [
    {
      name: 'partitionToWriteStats',
      type: [
        'null',
        {
          type: 'map',
          values: {
            type: 'array',
            items: {
              type: 'record',
              name: 'HoodieWriteStat',
              fields: [
                {
                  name: 'fileId',
                  type: [
                    'null',
                    {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  ],
                  default: null,
                },
                {
                  name: 'path',
                  type: [
                    'null',
                    {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  ],
                  default: null,
                },
                {
                  name: 'prevCommit',
                  type: [
                    'null',
                    {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  ],
                  default: null,
                },
                {
                  name: 'numWrites',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'numDeletes',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'numUpdateWrites',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalWriteBytes',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalWriteErrors',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'partitionPath',
                  type: [
                    'null',
                    {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  ],
                  default: null,
                },
                {
                  name: 'totalLogRecords',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalLogFiles',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalUpdatedRecordsCompacted',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'numInserts',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalLogBlocks',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalCorruptLogBlock',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalRollbackBlocks',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'fileSizeInBytes',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'logVersion',
                  type: ['null', 'int'],
                  default: null,
                },
                {
                  name: 'logOffset',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'baseFile',
                  type: [
                    'null',
                    {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  ],
                  default: null,
                },
                {
                  name: 'logFiles',
                  type: [
                    'null',
                    {
                      type: 'array',
                      items: {
                        type: 'string',
                        'avro.java.string': 'String',
                      },
                      default: null,
                    },
                  ],
                  default: null,
                },
                {
                  name: 'cdcStats',
                  type: [
                    'null',
                    {
                      type: 'map',
                      values: 'long',
                      'avro.java.string': 'String',
                      default: null,
                    },
                  ],
                  default: null,
                },
                {
                  name: 'prevBaseFile',
                  type: [
                    'null',
                    {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  ],
                  default: null,
                },
                {
                  name: 'minEventTime',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'maxEventTime',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'runtimeStats',
                  type: [
                    'null',
                    {
                      type: 'record',
                      name: 'HoodieRuntimeStats',
                      fields: [
                        {
                          name: 'totalScanTime',
                          type: ['null', 'long'],
                          default: null,
                        },
                        {
                          name: 'totalCreateTime',
                          type: ['null', 'long'],
                          default: null,
                        },
                        {
                          name: 'totalUpsertTime',
                          type: ['null', 'long'],
                          default: null,
                        },
                      ],
                    },
                  ],
                  default: null,
                },
                {
                  name: 'totalLogFilesCompacted',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalLogReadTimeMs',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalLogSizeCompacted',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'tempPath',
                  type: [
                    'null',
                    {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  ],
                  default: null,
                },
                {
                  name: 'numUpdates',
                  type: ['null', 'long'],
                  default: null,
                },
              ],
            },
          },
          'avro.java.string': 'String',
        },
      ],
      default: null,
    },
    {
      name: 'compacted',
      type: ['null', 'boolean'],
      default: null,
    },
    {
      name: 'extraMetadata',
      type: [
        'null',
        {
          type: 'map',
          values: {
            type: 'string',
            'avro.java.string': 'String',
          },
          'avro.java.string': 'String',
        },
      ],
      default: null,
    },
    {
      name: 'version',
      type: ['int', 'null'],
      default: 1,
    },
    {
      name: 'operationType',
      type: [
        'null',
        {
          type: 'string',
          'avro.java.string': 'String',
        },
      ],
      default: null,
    },
    {
      name: 'partitionToReplaceFileIds',
      type: [
        'null',
        {
          type: 'map',
          values: {
            type: 'array',
            items: {
              type: 'string',
              'avro.java.string': 'String',
            },
          },
          'avro.java.string': 'String',
        },
      ],
      default: null,
    },
  ],
} as const;

/**
 * HoodieCommitMetadata as Hudi 1.x embeds it in completed commits, deltacommits, compactions (`T_C.commit`)
 * and inflight files (fixtures mor_v8_trips_8i3u1d, cow_v8_*, cow_v9_*, mor_v9_*: one schema for all of them). Matches
 * the current .avsc field for field; an older .avsc had prevFilePathOverwritten and lacked the delta/compaction fields.
 */
export const COMMIT_METADATA_SCHEMA = {
  type: 'record',
  name: 'HoodieCommitMetadata',
  namespace: 'org.apache.hudi.avro.model',
  fields: [
    {
      name: 'partitionToWriteStats',
      type: [
        'null',
        {
          type: 'map',
          values: {
            type: 'array',
            items: {
              type: 'record',
              name: 'HoodieWriteStat',
              fields: [
                {
                  name: 'fileId',
                  type: [
                    'null',
                    {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  ],
                  default: null,
                },
                {
                  name: 'path',
                  type: [
                    'null',
                    {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  ],
                  default: null,
                },
                {
                  name: 'prevCommit',
                  type: [
                    'null',
                    {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  ],
                  default: null,
                },
                {
                  name: 'numWrites',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'numDeletes',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'numUpdateWrites',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalWriteBytes',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalWriteErrors',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'partitionPath',
                  type: [
                    'null',
                    {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  ],
                  default: null,
                },
                {
                  name: 'totalLogRecords',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalLogFiles',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalUpdatedRecordsCompacted',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'numInserts',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalLogBlocks',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalCorruptLogBlock',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalRollbackBlocks',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'fileSizeInBytes',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'logVersion',
                  type: ['null', 'int'],
                  default: null,
                },
                {
                  name: 'logOffset',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'baseFile',
                  type: [
                    'null',
                    {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  ],
                  default: null,
                },
                {
                  name: 'logFiles',
                  type: [
                    'null',
                    {
                      type: 'array',
                      items: {
                        type: 'string',
                        'avro.java.string': 'String',
                      },
                      default: null,
                    },
                  ],
                  default: null,
                },
                {
                  name: 'cdcStats',
                  type: [
                    'null',
                    {
                      type: 'map',
                      values: 'long',
                      'avro.java.string': 'String',
                      default: null,
                    },
                  ],
                  default: null,
                },
                {
                  name: 'prevBaseFile',
                  type: [
                    'null',
                    {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  ],
                  default: null,
                },
                {
                  name: 'minEventTime',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'maxEventTime',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'runtimeStats',
                  type: [
                    'null',
                    {
                      type: 'record',
                      name: 'HoodieRuntimeStats',
                      fields: [
                        {
                          name: 'totalScanTime',
                          type: ['null', 'long'],
                          default: null,
                        },
                        {
                          name: 'totalCreateTime',
                          type: ['null', 'long'],
                          default: null,
                        },
                        {
                          name: 'totalUpsertTime',
                          type: ['null', 'long'],
                          default: null,
                        },
                      ],
                    },
                  ],
                  default: null,
                },
                {
                  name: 'totalLogFilesCompacted',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalLogReadTimeMs',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'totalLogSizeCompacted',
                  type: ['null', 'long'],
                  default: null,
                },
                {
                  name: 'tempPath',
                  type: [
                    'null',
                    {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  ],
                  default: null,
                },
                {
                  name: 'numUpdates',
                  type: ['null', 'long'],
                  default: null,
                },
              ],
            },
          },
          'avro.java.string': 'String',
        },
      ],
      default: null,
    },
    {
      name: 'compacted',
      type: ['null', 'boolean'],
      default: null,
    },
    {
      name: 'extraMetadata',
      type: [
        'null',
        {
          type: 'map',
          values: {
            type: 'string',
            'avro.java.string': 'String',
          },
          'avro.java.string': 'String',
          default: null,
        },
      ],
      default: null,
    },
    {
      name: 'version',
      type: ['int', 'null'],
      default: 1,
    },
    {
      name: 'operationType',
      type: [
        'null',
        {
          type: 'string',
          'avro.java.string': 'String',
        },
      ],
      default: null,
    },
  ],
} as const;

/**
 * HoodieCompactionPlan (with HoodieCompactionOperation, HoodieCompactionStrategy) as Hudi 1.x embeds it in
 * `T.compaction.requested` (fixtures mor_v8_trips_8i3u1d and mor_v9_txns_simple_nometa, identical). Against the stored
 * .avsc: strategy, preserveHoodieMetadata and missingSchedulePartitions are present; an older .avsc named
 * bootstrapFilePath externalDataFilePath. No v6 fixture has a compaction plan: a 0.x reader skips the extra fields.
 */
export const COMPACTION_PLAN_SCHEMA = {
  type: 'record',
  name: 'HoodieCompactionPlan',
  namespace: 'org.apache.hudi.avro.model',
  fields: [
    {
      name: 'operations',
      type: [
        'null',
        {
          type: 'array',
          items: {
            type: 'record',
            name: 'HoodieCompactionOperation',
            fields: [
              {
                name: 'baseInstantTime',
                type: [
                  'null',
                  {
                    type: 'string',
                    'avro.java.string': 'String',
                  },
                ],
              },
              {
                name: 'deltaFilePaths',
                type: [
                  'null',
                  {
                    type: 'array',
                    items: {
                      type: 'string',
                      'avro.java.string': 'String',
                    },
                  },
                ],
                default: null,
              },
              {
                name: 'dataFilePath',
                type: [
                  'null',
                  {
                    type: 'string',
                    'avro.java.string': 'String',
                  },
                ],
                default: null,
              },
              {
                name: 'fileId',
                type: [
                  'null',
                  {
                    type: 'string',
                    'avro.java.string': 'String',
                  },
                ],
              },
              {
                name: 'partitionPath',
                type: [
                  'null',
                  {
                    type: 'string',
                    'avro.java.string': 'String',
                  },
                ],
                default: null,
              },
              {
                name: 'metrics',
                type: [
                  'null',
                  {
                    type: 'map',
                    values: 'double',
                    'avro.java.string': 'String',
                  },
                ],
                default: null,
              },
              {
                name: 'bootstrapFilePath',
                type: [
                  'null',
                  {
                    type: 'string',
                    'avro.java.string': 'String',
                  },
                ],
                default: null,
              },
            ],
          },
        },
      ],
      default: null,
    },
    {
      name: 'extraMetadata',
      type: [
        'null',
        {
          type: 'map',
          values: {
            type: 'string',
            'avro.java.string': 'String',
          },
          'avro.java.string': 'String',
        },
      ],
      default: null,
    },
    {
      name: 'version',
      type: ['int', 'null'],
      default: 1,
    },
    {
      name: 'strategy',
      type: [
        'null',
        {
          type: 'record',
          name: 'HoodieCompactionStrategy',
          fields: [
            {
              name: 'compactorClassName',
              type: [
                'null',
                {
                  type: 'string',
                  'avro.java.string': 'String',
                },
              ],
              doc: 'The class name that is provided here should extend CompactionExecutionStrategy abstract class, idea is that the plan generator will also provide the execution strategy to use.',
              default: null,
            },
            {
              name: 'strategyParams',
              type: [
                'null',
                {
                  type: 'map',
                  values: {
                    type: 'string',
                    'avro.java.string': 'String',
                  },
                  'avro.java.string': 'String',
                },
              ],
              doc: 'These parameters play a key role in determining which action type it is i.e. compaction or logcompaction and it will also include configs that determine how compaction needs to be executed.',
              default: null,
            },
            {
              name: 'version',
              type: ['int', 'null'],
              default: 1,
            },
          ],
        },
      ],
      default: null,
    },
    {
      name: 'preserveHoodieMetadata',
      type: ['boolean', 'null'],
      default: false,
    },
    {
      name: 'missingSchedulePartitions',
      type: [
        'null',
        {
          type: 'array',
          items: {
            type: 'string',
            'avro.java.string': 'String',
          },
        },
      ],
      default: null,
    },
  ],
} as const;

/**
 * HoodieRollbackPlan as Hudi 0.x embeds it in `T.rollback.requested` (fixture mor_v6_nonpartitioned_rollback).
 */
export const ROLLBACK_PLAN_SCHEMA = {
  type: 'record',
  name: 'HoodieRollbackPlan',
  namespace: 'org.apache.hudi.avro.model',
  fields: [
    {
      name: 'instantToRollback',
      type: [
        'null',
        {
          type: 'record',
          name: 'HoodieInstantInfo',
          fields: [
            {
              name: 'commitTime',
              type: {
                type: 'string',
                'avro.java.string': 'String',
              },
            },
            {
              name: 'action',
              type: {
                type: 'string',
                'avro.java.string': 'String',
              },
            },
          ],
        },
      ],
      doc: 'Hoodie instant that needs to be rolled back',
      default: null,
    },
    {
      name: 'RollbackRequests',
      type: [
        'null',
        {
          type: 'array',
          items: {
            type: 'record',
            name: 'HoodieRollbackRequest',
            fields: [
              {
                name: 'partitionPath',
                type: {
                  type: 'string',
                  'avro.java.string': 'String',
                },
              },
              {
                name: 'fileId',
                type: [
                  'null',
                  {
                    type: 'string',
                    'avro.java.string': 'String',
                  },
                ],
                default: null,
              },
              {
                name: 'latestBaseInstant',
                type: [
                  'null',
                  {
                    type: 'string',
                    'avro.java.string': 'String',
                  },
                ],
                default: null,
              },
              {
                name: 'filesToBeDeleted',
                type: {
                  type: 'array',
                  items: {
                    type: 'string',
                    'avro.java.string': 'String',
                  },
                  default: [],
                },
                default: [],
              },
              {
                name: 'logBlocksToBeDeleted',
                type: [
                  'null',
                  {
                    type: 'map',
                    values: 'long',
                    'avro.java.string': 'String',
                  },
                ],
                default: null,
              },
            ],
          },
        },
      ],
      default: null,
    },
    {
      name: 'version',
      type: ['int', 'null'],
      default: 1,
    },
  ],
} as const;

/**
 * HoodieRollbackMetadata as Hudi 0.x embeds it in a completed `T.rollback` (fixture mor_v6_nonpartitioned_rollback).
 * Against the stored .avsc: the partition metadata's second map is logFilesFromFailedCommit (the .avsc says
 * writtenLogFiles) and HoodieInstantInfo is inline.
 */
export const ROLLBACK_METADATA_SCHEMA = {
  type: 'record',
  name: 'HoodieRollbackMetadata',
  namespace: 'org.apache.hudi.avro.model',
  fields: [
    {
      name: 'startRollbackTime',
      type: {
        type: 'string',
        'avro.java.string': 'String',
      },
    },
    {
      name: 'timeTakenInMillis',
      type: 'long',
    },
    {
      name: 'totalFilesDeleted',
      type: 'int',
    },
    {
      name: 'commitsRollback',
      type: {
        type: 'array',
        items: {
          type: 'string',
          'avro.java.string': 'String',
        },
      },
    },
    {
      name: 'partitionMetadata',
      type: {
        type: 'map',
        values: {
          type: 'record',
          name: 'HoodieRollbackPartitionMetadata',
          fields: [
            {
              name: 'partitionPath',
              type: {
                type: 'string',
                'avro.java.string': 'String',
              },
            },
            {
              name: 'successDeleteFiles',
              type: {
                type: 'array',
                items: {
                  type: 'string',
                  'avro.java.string': 'String',
                },
              },
            },
            {
              name: 'failedDeleteFiles',
              type: {
                type: 'array',
                items: {
                  type: 'string',
                  'avro.java.string': 'String',
                },
              },
            },
            {
              name: 'rollbackLogFiles',
              type: [
                'null',
                {
                  type: 'map',
                  values: 'long',
                  'avro.java.string': 'String',
                },
              ],
              default: null,
            },
            {
              name: 'logFilesFromFailedCommit',
              type: [
                'null',
                {
                  type: 'map',
                  values: 'long',
                  'avro.java.string': 'String',
                },
              ],
              default: null,
            },
          ],
        },
        'avro.java.string': 'String',
      },
    },
    {
      name: 'version',
      type: ['int', 'null'],
      default: 1,
    },
    {
      name: 'instantsRollback',
      type: {
        type: 'array',
        items: {
          type: 'record',
          name: 'HoodieInstantInfo',
          fields: [
            {
              name: 'commitTime',
              type: {
                type: 'string',
                'avro.java.string': 'String',
              },
            },
            {
              name: 'action',
              type: {
                type: 'string',
                'avro.java.string': 'String',
              },
            },
          ],
        },
        default: [],
      },
      default: [],
    },
  ],
} as const;

/**
 * HoodieCleanerPlan from apache/hudi hudi-common/src/main/avro/HoodieCleanerPlan.avsc. NOT fixture-verified: no
 * vendored table has a clean instant. Strings lack the "avro.java.string" property Hudi's generated schema adds (it
 * does not change the encoding).
 */
export const CLEANER_PLAN_SCHEMA = {
  type: 'record',
  name: 'HoodieCleanerPlan',
  namespace: 'org.apache.hudi.avro.model',
  fields: [
    {
      name: 'earliestInstantToRetain',
      type: [
        'null',
        {
          type: 'record',
          name: 'HoodieActionInstant',
          fields: [
            {
              name: 'timestamp',
              type: 'string',
            },
            {
              name: 'action',
              type: 'string',
            },
            {
              name: 'state',
              type: 'string',
            },
          ],
        },
      ],
      default: null,
    },
    {
      name: 'policy',
      type: 'string',
    },
    {
      name: 'filesToBeDeletedPerPartition',
      type: [
        'null',
        {
          type: 'map',
          values: {
            type: 'array',
            items: {
              name: 'filePath',
              type: 'string',
            },
          },
        },
      ],
      default: null,
    },
    {
      name: 'version',
      type: ['int', 'null'],
      default: 1,
    },
    {
      name: 'filePathsToBeDeletedPerPartition',
      doc: 'This field replaces the field filesToBeDeletedPerPartition',
      type: [
        'null',
        {
          type: 'map',
          values: {
            type: 'array',
            items: {
              name: 'HoodieCleanFileInfo',
              type: 'record',
              fields: [
                {
                  name: 'filePath',
                  type: ['null', 'string'],
                  default: null,
                },
                {
                  name: 'isBootstrapBaseFile',
                  type: ['null', 'boolean'],
                  default: null,
                },
              ],
            },
          },
        },
      ],
      default: null,
    },
    {
      name: 'partitionsToBeDeleted',
      doc: 'partitions to be deleted',
      type: [
        'null',
        {
          type: 'array',
          items: 'string',
        },
      ],
      default: null,
    },
  ],
} as const;

/**
 * HoodieCleanMetadata with HoodieCleanPartitionMetadata inlined, from apache/hudi's .avsc. NOT fixture-verified
 * (see CLEANER_PLAN_SCHEMA).
 */
export const CLEAN_METADATA_SCHEMA = {
  type: 'record',
  name: 'HoodieCleanMetadata',
  namespace: 'org.apache.hudi.avro.model',
  fields: [
    {
      name: 'policy',
      type: 'string',
      default: '',
    },
    {
      name: 'startCleanTime',
      type: 'string',
    },
    {
      name: 'timeTakenInMillis',
      type: 'long',
    },
    {
      name: 'totalFilesDeleted',
      type: 'int',
    },
    {
      name: 'earliestCommitToRetain',
      type: 'string',
    },
    {
      name: 'lastCompletedCommitTimestamp',
      type: 'string',
      default: '',
    },
    {
      name: 'partitionMetadata',
      type: {
        type: 'map',
        values: {
          type: 'record',
          name: 'HoodieCleanPartitionMetadata',
          fields: [
            {
              name: 'partitionPath',
              type: 'string',
            },
            {
              name: 'policy',
              type: 'string',
            },
            {
              name: 'deletePathPatterns',
              type: {
                type: 'array',
                items: 'string',
              },
            },
            {
              name: 'successDeleteFiles',
              type: {
                type: 'array',
                items: 'string',
              },
            },
            {
              name: 'failedDeleteFiles',
              type: {
                type: 'array',
                items: 'string',
              },
            },
            {
              name: 'isPartitionDeleted',
              type: ['null', 'boolean'],
              default: null,
            },
          ],
        },
      },
    },
    {
      name: 'version',
      type: ['int', 'null'],
      default: 1,
    },
    {
      name: 'bootstrapPartitionMetadata',
      type: [
        'null',
        {
          type: 'map',
          values: 'HoodieCleanPartitionMetadata',
          default: null,
        },
      ],
      default: null,
    },
  ],
} as const;

/** An Avro schema this module encodes with (one of the constants above). */
export type HudiTimelineSchema =
  | typeof REQUESTED_REPLACE_METADATA_SCHEMA_V6
  | typeof REQUESTED_REPLACE_METADATA_SCHEMA
  | typeof REPLACE_COMMIT_METADATA_SCHEMA
  | typeof COMMIT_METADATA_SCHEMA
  | typeof COMPACTION_PLAN_SCHEMA
  | typeof ROLLBACK_PLAN_SCHEMA
  | typeof ROLLBACK_METADATA_SCHEMA
  | typeof CLEANER_PLAN_SCHEMA
  | typeof CLEAN_METADATA_SCHEMA;
