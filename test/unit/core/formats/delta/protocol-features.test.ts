// Every Delta protocol version and table feature is accepted or refused by name: the accepted ones read (and
// expose what a rewrite must keep), each refused one fails with its exact message, before anything is changed.
import { describe, expect, it } from 'vitest';
import {
  DeltaFeatureNotSupportedError,
  readDeltaSnapshot,
} from '../../../../../functions/core/formats/delta/index.js';
import { addAction, metaDataAction, protocolAction, syntheticTable } from './delta-test-kit.js';

const ROOT = 'lake/t/';

/** A one-commit table with this protocol action (and metadata configuration). */
async function tableWith(protocol: object, configuration: Record<string, string> = {}) {
  return syntheticTable(ROOT, [
    [protocol, metaDataAction(configuration), addAction('day=d1/a.parquet', 'd1')],
  ]);
}

async function refusal(protocol: object): Promise<DeltaFeatureNotSupportedError> {
  const store = await tableWith(protocol);
  const error = await readDeltaSnapshot(store, ROOT).then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(DeltaFeatureNotSupportedError);
  return error as DeltaFeatureNotSupportedError;
}

const KEEP_OUT =
  'Nothing was changed; leave the table out of the configuration until the feature is supported.';

describe('Delta protocol versions and table features', () => {
  it('accepts reader version 3 / writer version 7 with every feature the reader implements', async () => {
    // Prepare
    const readerFeatures = [
      'columnMapping',
      'deletionVectors',
      'timestampNtz',
      'v2Checkpoint',
      'vacuumProtocolCheck',
    ];
    const writerFeatures = [
      'appendOnly',
      'invariants',
      'checkConstraints',
      'generatedColumns',
      'changeDataFeed',
      'identityColumns',
      'columnMapping',
      'deletionVectors',
      'timestampNtz',
      'domainMetadata',
      'v2Checkpoint',
      'inCommitTimestamp',
      'vacuumProtocolCheck',
    ];
    const store = await tableWith(protocolAction(3, 7, readerFeatures, writerFeatures), {
      'delta.appendOnly': 'true',
      'delta.enableInCommitTimestamps': 'true',
    });
    // Act
    const snapshot = await readDeltaSnapshot(store, ROOT);
    // Assess
    expect(snapshot.protocol).toEqual({
      minReaderVersion: 3,
      minWriterVersion: 7,
      readerFeatures,
      writerFeatures,
    });
    expect(snapshot.appendOnly).toBe(true);
    expect(snapshot.inCommitTimestamps).toBe(true);
    expect(snapshot.files).toHaveLength(1);
  });

  it('accepts type widening and its preview, on both sides, since a rewrite projects old files onto the current schema', async () => {
    // Prepare
    const features = ['typeWidening', 'typeWidening-preview'];
    const store = await tableWith(protocolAction(3, 7, features, features), {
      'delta.enableTypeWidening': 'true',
    });
    // Act
    const snapshot = await readDeltaSnapshot(store, ROOT);
    // Assess
    expect(snapshot.protocol.readerFeatures).toEqual(features);
    expect(snapshot.protocol.writerFeatures).toEqual(features);
    expect(snapshot.files).toHaveLength(1);
  });

  it('expands legacy writer versions into the features they imply (writer 6: up to identityColumns)', async () => {
    // Prepare
    const store = await tableWith(protocolAction(2, 6));
    // Act
    const snapshot = await readDeltaSnapshot(store, ROOT);
    // Assess
    expect(snapshot.protocol.readerFeatures).toEqual(['columnMapping']);
    expect(snapshot.protocol.writerFeatures).toEqual([
      'appendOnly',
      'invariants',
      'checkConstraints',
      'changeDataFeed',
      'generatedColumns',
      'columnMapping',
      'identityColumns',
    ]);
  });

  it('refuses reader version 4 with its exact message', async () => {
    // Act
    const error = await refusal(protocolAction(4, 7, [], []));
    // Assess
    expect(error.kind).toBe('reader version');
    expect(error.retryable).toBe(false);
    expect(error.name).toBe('DeltaFeatureNotSupportedError');
    expect(error.message).toBe(
      'Delta table lake/t/ requires reader version 4, and lake-compactor implements Delta reader versions 1 to 3. Nothing was changed; leave the table out of the configuration until a release supports it.',
    );
  });

  it('refuses writer version 8 with its exact message', async () => {
    // Act
    const error = await refusal(protocolAction(3, 8, [], []));
    // Assess
    expect(error.kind).toBe('writer version');
    expect(error.message).toBe(
      'Delta table lake/t/ requires writer version 8, and lake-compactor implements Delta writer versions 1 to 7. Nothing was changed; leave the table out of the configuration until a release supports it.',
    );
  });

  const REFUSED_WRITER: readonly [string, string][] = [
    [
      'rowTracking',
      'Delta table lake/t/ uses the writer feature "rowTracking" (row tracking), which lake-compactor does not support: a rewrite must carry every row’s baseRowId and defaultRowCommitVersion into the new files, which the engine does not do yet.',
    ],
    [
      'clustering',
      'Delta table lake/t/ uses the writer feature "clustering" (liquid clustering), which lake-compactor does not support: OPTIMIZE on a clustered table must recluster by its clustering columns and record clusteringProvider, which is not implemented.',
    ],
    [
      'icebergCompatV1',
      'Delta table lake/t/ uses the writer feature "icebergCompatV1" (UniForm Iceberg compatibility V1), which lake-compactor does not support: every commit must also be converted into Iceberg metadata, which lake-compactor does not write.',
    ],
    [
      'icebergCompatV2',
      'Delta table lake/t/ uses the writer feature "icebergCompatV2" (UniForm Iceberg compatibility V2), which lake-compactor does not support: every commit must also be converted into Iceberg metadata, which lake-compactor does not write.',
    ],
    [
      'collations',
      'Delta table lake/t/ uses the writer feature "collations", which lake-compactor does not know: a client must not read or write a table whose features it does not understand.',
    ],
  ];
  for (const [feature, message] of REFUSED_WRITER) {
    it(`refuses the writer feature ${feature} with its exact message`, async () => {
      // Act: the feature among accepted ones, so the refusal is about it alone
      const error = await refusal(
        protocolAction(3, 7, ['deletionVectors'], ['appendOnly', feature, 'deletionVectors']),
      );
      // Assess
      expect(error.kind).toBe('writer feature');
      expect(error.feature).toBe(feature);
      expect(error.message).toBe(`${message} ${KEEP_OUT}`);
    });
  }

  const REFUSED_READER: readonly [string, string][] = [
    [
      'catalogManaged',
      'Delta table lake/t/ uses the reader feature "catalogManaged" (catalog-managed table), which lake-compactor does not support: the table’s catalog ratifies its commits (recent ones may exist only in the catalog or in _delta_log/_staged_commits/), and lake-compactor has no catalog client.',
    ],
    [
      'someFutureReaderFeature',
      'Delta table lake/t/ uses the reader feature "someFutureReaderFeature", which lake-compactor does not know: a client must not read or write a table whose features it does not understand.',
    ],
  ];
  for (const [feature, message] of REFUSED_READER) {
    it(`refuses the reader feature ${feature} with its exact message`, async () => {
      // Act
      const error = await refusal(protocolAction(3, 7, [feature], [feature]));
      // Assess
      expect(error.kind).toBe('reader feature');
      expect(error.feature).toBe(feature);
      expect(error.message).toBe(`${message} ${KEEP_OUT}`);
    });
  }

  it('judges the protocol of the version read: a feature added later does not refuse an earlier version', async () => {
    // Prepare: version 1 upgrades the protocol to row tracking
    const store = await syntheticTable(ROOT, [
      [protocolAction(1, 2), metaDataAction(), addAction('day=d1/a.parquet', 'd1')],
      [protocolAction(3, 7, [], ['rowTracking'])],
    ]);
    // Act
    const v0 = await readDeltaSnapshot(store, ROOT, { version: 0 });
    const latest = readDeltaSnapshot(store, ROOT);
    // Assess
    expect(v0.files).toHaveLength(1);
    await expect(latest).rejects.toThrow('uses the writer feature "rowTracking" (row tracking)');
  });

  it('refuses an unknown column mapping mode with a message naming the mode', async () => {
    // Prepare
    const store = await tableWith(protocolAction(2, 5), { 'delta.columnMapping.mode': 'position' });
    // Act
    const read = readDeltaSnapshot(store, ROOT);
    // Assess
    await expect(read).rejects.toThrow(
      'Delta table lake/t/ sets delta.columnMapping.mode to "position"; lake-compactor knows the modes none, name and id. Nothing was changed; leave the table out of the configuration until the mode is supported.',
    );
  });
});
