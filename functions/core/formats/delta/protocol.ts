// Decides, from a table's protocol action, whether lake-compactor may read and rewrite it: every reader and writer
// feature is either accepted (listed below with why it is safe) or refused with a message that names it.
import type { ProtocolAction } from './actions.js';
import { DeltaFeatureNotSupportedError } from './errors.js';

/** Highest protocol versions understood: reader 3 and writer 7 are the table-features versions. */
export const MAX_READER_VERSION = 3;
export const MAX_WRITER_VERSION = 7;

/**
 * Reader features this reader handles, and how. Reading them is what this module does; rewriting under them is
 * what the later OPTIMIZE slice must honour (noted per feature).
 */
export const ACCEPTED_READER_FEATURES: Readonly<Record<string, string>> = {
  columnMapping:
    'physical names and field ids are kept and exposed; partition values are keyed by physical name',
  deletionVectors:
    'DVs are read (inline and relative-path files; deletion-vectors.ts) and a rewrite drops the rows they delete',
  timestampNtz: 'a type the Parquet engine keeps as is; nothing in the log depends on it',
  typeWidening:
    'files written before a type change hold the narrower type: a rewrite projects them onto the current schema, widened (projection.ts), or rewrites them as written, which readers widen',
  'typeWidening-preview': 'the preview of typeWidening (Delta 3.2–3.3): the same files, read the same way',
  v2Checkpoint: 'V2 checkpoints (JSON or Parquet, with sidecars) are read',
  vacuumProtocolCheck: 'vacuum must check the protocol first: this reader refuses what it does not know',
};

/** Writer features accepted, each with why a data-preserving rewrite (dataChange=false) keeps it true. */
export const ACCEPTED_WRITER_FEATURES: Readonly<Record<string, string>> = {
  appendOnly: 'OPTIMIZE removes files with dataChange=false, which an append-only table allows',
  invariants: 'rows are rewritten unchanged, so every invariant that held still holds',
  checkConstraints: 'rows are rewritten unchanged, so every constraint that held still holds',
  generatedColumns: 'generated values are copied, never recomputed',
  changeDataFeed: 'a dataChange=false rewrite produces no change data',
  identityColumns: 'identity values are copied; the high-water mark in the schema is untouched',
  columnMapping: 'physical names and ids are kept exactly',
  deletionVectors:
    'a rewrite drops the rows a DV deletes and removes the file with its DV; the outputs carry none, with exact stats',
  timestampNtz: 'kept as is by the Parquet engine',
  typeWidening:
    'a rewrite writes the current type or the file’s own narrower one, never another; the schema and its delta.typeChanges are never rewritten',
  'typeWidening-preview': 'as typeWidening',
  domainMetadata: 'domains are read and never rewritten by a compaction',
  v2Checkpoint: 'read; a writer of checkpoints must then write V2 checkpoints',
  inCommitTimestamp: 'read from commitInfo; a commit must write it when enabled',
  vacuumProtocolCheck: 'vacuum checks the protocol before deleting anything',
};

/** Features refused on purpose, with what implementing them would take (the message's "why"). */
const REFUSED: Readonly<Record<string, { readonly title: string; readonly why: string }>> = {
  rowTracking: {
    title: 'row tracking',
    why: 'a rewrite must carry every row’s baseRowId and defaultRowCommitVersion into the new files, which the engine does not do yet',
  },
  clustering: {
    title: 'liquid clustering',
    why: 'OPTIMIZE on a clustered table must recluster by its clustering columns and record clusteringProvider, which is not implemented',
  },
  icebergCompatV1: {
    title: 'UniForm Iceberg compatibility V1',
    why: 'every commit must also be converted into Iceberg metadata, which lake-compactor does not write',
  },
  icebergCompatV2: {
    title: 'UniForm Iceberg compatibility V2',
    why: 'every commit must also be converted into Iceberg metadata, which lake-compactor does not write',
  },
  variantType: {
    title: 'the variant type',
    why: 'the Parquet engine cannot rewrite variant columns exactly',
  },
  catalogManaged: {
    title: 'catalog-managed table',
    why: 'the table’s catalog ratifies its commits (recent ones may exist only in the catalog or in _delta_log/_staged_commits/), and lake-compactor has no catalog client',
  },
};

/** The message refusing a feature; exported so tests and callers compare against the one wording. */
export function refusedFeatureMessage(tableRoot: string, side: 'reader' | 'writer', feature: string): string {
  const known = REFUSED[feature];
  const table = tableRoot || '(store root)';
  if (known !== undefined) {
    return `Delta table ${table} uses the ${side} feature "${feature}" (${known.title}), which lake-compactor does not support: ${known.why}. Nothing was changed; leave the table out of the configuration until the feature is supported.`;
  }
  return `Delta table ${table} uses the ${side} feature "${feature}", which lake-compactor does not know: a client must not read or write a table whose features it does not understand. Nothing was changed; leave the table out of the configuration until the feature is supported.`;
}

/** The message refusing a protocol version above what this reader implements. */
export function refusedVersionMessage(tableRoot: string, side: 'reader' | 'writer', version: number): string {
  const max = side === 'reader' ? MAX_READER_VERSION : MAX_WRITER_VERSION;
  return `Delta table ${tableRoot || '(store root)'} requires ${side} version ${version}, and lake-compactor implements Delta ${side} versions 1 to ${max}. Nothing was changed; leave the table out of the configuration until a release supports it.`;
}

/** The writer features a legacy writer version implies (PROTOCOL.md "Table Features": versions below 7). */
const LEGACY_WRITER_FEATURES: readonly (readonly [number, readonly string[]])[] = [
  [2, ['appendOnly', 'invariants']],
  [3, ['checkConstraints']],
  [4, ['changeDataFeed', 'generatedColumns']],
  [5, ['columnMapping']],
  [6, ['identityColumns']],
];

/** The protocol in effect, after the checks: which features the table has, by side. */
export interface SupportedProtocol {
  readonly minReaderVersion: number;
  readonly minWriterVersion: number;
  /** Reader features a client must support (listed at version 3, implied by the version below it). */
  readonly readerFeatures: readonly string[];
  /** Writer features a client must support (listed at version 7, implied by the version below it); a feature such as
   * appendOnly is active only when its table property is also set. */
  readonly writerFeatures: readonly string[];
}

/**
 * The table's features, or a refusal. Versions are checked first (a version above the maximum may change what
 * the feature lists mean), then every reader feature, then every writer feature, in the log's order, so the
 * first unsupported one is named. Legacy versions are expanded into the features they imply, so `columnMapping`
 * at reader version 2 and in a reader-features list are one case.
 * @throws DeltaFeatureNotSupportedError naming the version or feature.
 */
export function checkProtocol(tableRoot: string, protocol: ProtocolAction): SupportedProtocol {
  const { minReaderVersion: reader, minWriterVersion: writer } = protocol;
  if (reader > MAX_READER_VERSION) {
    throw new DeltaFeatureNotSupportedError(
      'reader version',
      String(reader),
      refusedVersionMessage(tableRoot, 'reader', reader),
    );
  }
  if (writer > MAX_WRITER_VERSION) {
    throw new DeltaFeatureNotSupportedError(
      'writer version',
      String(writer),
      refusedVersionMessage(tableRoot, 'writer', writer),
    );
  }
  const readerFeatures =
    reader === 3 ? [...(protocol.readerFeatures ?? [])] : reader === 2 ? ['columnMapping'] : [];
  const writerFeatures =
    writer === 7
      ? [...(protocol.writerFeatures ?? [])]
      : LEGACY_WRITER_FEATURES.filter(([v]) => writer >= v).flatMap(([, features]) => features);
  for (const feature of readerFeatures) {
    if (ACCEPTED_READER_FEATURES[feature] === undefined) {
      throw new DeltaFeatureNotSupportedError(
        'reader feature',
        feature,
        refusedFeatureMessage(tableRoot, 'reader', feature),
      );
    }
  }
  for (const feature of writerFeatures) {
    if (ACCEPTED_WRITER_FEATURES[feature] === undefined) {
      throw new DeltaFeatureNotSupportedError(
        'writer feature',
        feature,
        refusedFeatureMessage(tableRoot, 'writer', feature),
      );
    }
  }
  return { minReaderVersion: reader, minWriterVersion: writer, readerFeatures, writerFeatures };
}
