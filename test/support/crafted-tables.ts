// Tables crafted the way the security notes' H1 reproductions craft them, made in the test through the store under
// test (nothing vendored): a Delta table whose log adds a path that leaves its root, an Iceberg table with an old
// snapshot whose manifest names files outside its root, an Iceberg table whose partition field name climbs out,
// and another table's files beside them, whose bytes must never be read, changed or copied.
import { createHash } from 'node:crypto';
import {
  findCurrentMetadata,
  loadTable,
  readMetadataText,
} from '../../functions/core/formats/iceberg/catalog.js';
import {
  parseJsonKeepingLongs,
  stringifyJsonKeepingLongs,
} from '../../functions/core/formats/iceberg/json.js';
import { writeManifest, writeManifestList } from '../../functions/core/formats/iceberg/manifest-writer.js';
import { schemaById, specById } from '../../functions/core/formats/iceberg/metadata.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import {
  appendIcebergEvents,
  createIcebergEventsTable,
  generateIcebergEventsBatch,
  ICEBERG_EVENTS_PARTITION_FIELD,
} from '../../functions/tools/sample-iceberg.js';

const DAY_MS = 86_400_000;
/** When the crafted tables were written. */
export const CRAFTED_AT = Date.UTC(2024, 2, 20);
/** When an old, expirable snapshot was committed: 30 days before a maintenance run at {@link MAINTAINED_AT}. */
export const OLD_SNAPSHOT_AT = Date.UTC(2024, 1, 1);
/** The clock of maintenance runs on crafted tables: past every retention of the old snapshot. */
export const MAINTAINED_AT = Date.UTC(2024, 3, 1);

/** Another table's files, beside the crafted table: `other_table/secret.parquet` (events rows) and a canary. */
export async function writeOtherTable(store: ObjectStore): Promise<Uint8Array> {
  const secret = generateIcebergEventsBatch(9000, 10, '2024-01-01');
  await store.put('other_table/secret.parquet', secret);
  await store.put('other_table/canary.txt', 'canary');
  return secret;
}

/**
 * A Delta events table at `root` (five appends of day 2024-03-01), then a version adding `path` exactly as given:
 * the reproduction of H1 #2 (`../other_table/secret.parquet`, its `%2e%2e%2f` form, an absolute path).
 */
export async function craftDeltaAddingPath(store: ObjectStore, root: string, path: string): Promise<void> {
  await createDeltaEventsTable(store, root, { now: CRAFTED_AT });
  let version = 0;
  for (let i = 0; i < 5; i++)
    ({ version } = await appendDeltaEvents(store, root, {
      day: '2024-03-01',
      rows: 3 + i,
      seed: 1 + i,
      now: CRAFTED_AT,
    }));
  const add = {
    add: {
      path,
      partitionValues: { date: '2024-03-01' },
      size: 261,
      modificationTime: CRAFTED_AT,
      dataChange: true,
      stats: JSON.stringify({ numRecords: 10 }),
    },
  };
  await store.put(
    `${root}/_delta_log/${String(version + 1).padStart(20, '0')}.json`,
    `${JSON.stringify(add)}\n`,
  );
}

/**
 * An Iceberg events table at `root` with a current snapshot (one append) and, beside it, an old snapshot on no
 * branch whose own manifest list names one manifest listing `relativePaths` (below the table location, as
 * written) as ADDED data files: the reproduction of H1 #1, where expire_snapshots deletes what only that snapshot
 * references.
 */
export async function craftIcebergOldSnapshotNaming(
  store: ObjectStore,
  root: string,
  relativePaths: readonly string[],
): Promise<void> {
  await createIcebergEventsTable(store, root, { now: OLD_SNAPSHOT_AT });
  await appendIcebergEvents(store, root, { day: '2024-03-01', rows: 12, seed: 7, now: CRAFTED_AT });
  const table = await loadTable(store, root);
  const schema = schemaById(table.metadata);
  const spec = specById(table.metadata, 0);
  if (schema === undefined || spec === undefined) throw new Error('the events table has no schema or spec');
  const location = table.metadata.location;
  const snapshotId = 1111n;
  const manifest = writeManifest({
    metadata: table.metadata,
    schema,
    spec,
    content: 'data',
    entries: relativePaths.map((p) => ({
      status: 'added' as const,
      snapshotId,
      dataSequenceNumber: undefined,
      fileSequenceNumber: undefined,
      file: {
        content: 'data' as const,
        path: `${location}/${p}`,
        format: 'PARQUET',
        partition: {
          specId: 0,
          values: [
            { fieldId: ICEBERG_EVENTS_PARTITION_FIELD['field-id'], value: Date.UTC(2024, 0, 1) / DAY_MS },
          ],
        },
        recordCount: 10n,
        fileSizeInBytes: 100n,
        columnSizes: new Map(),
        valueCounts: new Map(),
        nullValueCounts: new Map(),
        nanValueCounts: new Map(),
        lowerBounds: new Map(),
        upperBounds: new Map(),
        splitOffsets: undefined,
        sortOrderId: undefined,
        equalityIds: undefined,
        referencedDataFile: undefined,
        contentOffset: undefined,
        contentSizeInBytes: undefined,
        firstRowId: undefined,
      },
    })),
  });
  const rootDir = root === '' ? '' : `${root}/`;
  await store.put(`${rootDir}metadata/evil-m0.avro`, manifest.bytes);
  const list = writeManifestList({
    formatVersion: 2,
    snapshotId,
    parentSnapshotId: undefined,
    sequenceNumber: 1n,
    manifests: [
      {
        path: `${location}/metadata/evil-m0.avro`,
        length: BigInt(manifest.bytes.length),
        specId: 0,
        content: 'data',
        sequenceNumber: 1n,
        minSequenceNumber: 1n,
        addedSnapshotId: snapshotId,
        addedFilesCount: manifest.stats.addedFilesCount,
        existingFilesCount: 0,
        deletedFilesCount: 0,
        addedRowsCount: manifest.stats.addedRowsCount,
        existingRowsCount: 0n,
        deletedRowsCount: 0n,
        firstRowId: undefined,
        partitions: manifest.stats.partitions,
      },
    ],
  });
  await store.put(`${rootDir}metadata/snap-1111-evil.avro`, list);
  const current = await findCurrentMetadata(store, root);
  const raw = parseJsonKeepingLongs(await readMetadataText(store, current.key)) as Record<string, unknown>;
  raw.snapshots = [
    {
      'snapshot-id': 1111,
      'sequence-number': 1,
      'timestamp-ms': OLD_SNAPSHOT_AT,
      'manifest-list': `${location}/metadata/snap-1111-evil.avro`,
      summary: { operation: 'append' },
      'schema-id': 0,
    },
    ...((raw.snapshots as unknown[] | undefined) ?? []),
  ];
  const next = current.version + 1;
  await store.put(`${rootDir}metadata/v${next}.metadata.json`, stringifyJsonKeepingLongs(raw));
  await store.put(`${rootDir}metadata/version-hint.text`, String(next));
}

/**
 * An Iceberg events table at `root` (two appends) whose partition field is renamed to `name` in the metadata (the
 * partition tuples of its manifests are by field id, so they stay valid): the reproduction of H1 #3.
 */
export async function craftIcebergPartitionName(
  store: ObjectStore,
  root: string,
  name: string,
): Promise<void> {
  await createIcebergEventsTable(store, root, { now: CRAFTED_AT });
  for (let i = 0; i < 5; i++)
    await appendIcebergEvents(store, root, { day: '2024-03-01', rows: 5 + i, seed: 20 + i, now: CRAFTED_AT });
  const current = await findCurrentMetadata(store, root);
  const raw = parseJsonKeepingLongs(await readMetadataText(store, current.key)) as Record<string, unknown>;
  for (const spec of raw['partition-specs'] as { fields: { name: string }[] }[])
    for (const field of spec.fields) field.name = name;
  const rootDir = root === '' ? '' : `${root}/`;
  const next = current.version + 1;
  await store.put(`${rootDir}metadata/v${next}.metadata.json`, stringifyJsonKeepingLongs(raw));
  await store.put(`${rootDir}metadata/version-hint.text`, String(next));
}

/** Every object of `store`: `<key> <size> <sha256 of the bytes>`, sorted: "nothing changed" by equality. */
export async function storeSnapshot(store: ObjectStore): Promise<string[]> {
  const lines: string[] = [];
  for await (const o of store.listAll('')) {
    const sha = createHash('sha256')
      .update(await store.get(o.key))
      .digest('hex');
    lines.push(`${o.key} ${o.size} ${sha}`);
  }
  return lines.sort();
}
