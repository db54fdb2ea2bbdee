// The Iceberg TableFormat's own rules, apart from the CLI: partition paths stay unique per (spec, tuple) when two
// specs share field names, a format-v3 table is planned with each file's row lineage (its unsupported features
// refused by name before anything is planned), lost commit races end in a
// retryable error with nothing left behind, vacuum never deletes an input (expire_snapshots does), and the
// table's own metadata writes are not taken for a foreign table's by the profiler.
import { describe, expect, it } from 'vitest';
import { TransientStoreError } from '../../../../../functions/core/errors.js';
import { icebergForCatalog } from '../../../../../functions/core/formats/iceberg/format.js';
import {
  commitReplace,
  IcebergUnsupportedError,
  icebergTable,
  loadTable,
  PathCatalog,
  parseTableMetadata,
  readSnapshotFiles,
  specFolders,
} from '../../../../../functions/core/formats/iceberg/index.js';
import { TABLE_FORMATS } from '../../../../../functions/core/formats/index.js';
import { DEFAULT_POLICY } from '../../../../../functions/core/policy.js';
import { normalizeSequencer, resolveEvent } from '../../../../../functions/core/profiler/events.js';
import { parseTableConfigs } from '../../../../../functions/core/table-config.js';
import type { GroupJournalEntry } from '../../../../../functions/ports/journal.js';
import { avroKeys, copyFixtureTable } from './commit-harness.js';
import { fixtureStore } from './fixture-tables.js';

const NOW = Date.UTC(2026, 10, 30, 12);

function metadataWithSpecs(specs: readonly { id: number; fields: readonly [string, string][] }[]) {
  return parseTableMetadata(
    JSON.stringify({
      'format-version': 2,
      'table-uuid': '00000000-0000-0000-0000-000000000000',
      location: 's3://lake/t',
      'last-sequence-number': 0,
      'last-updated-ms': NOW,
      'last-column-id': 2,
      'current-schema-id': 0,
      schemas: [
        {
          type: 'struct',
          'schema-id': 0,
          fields: [
            { id: 1, name: 'category', required: false, type: 'string' },
            { id: 2, name: 'ts', required: false, type: 'timestamptz' },
          ],
        },
      ],
      'default-spec-id': specs.at(-1)?.id ?? 0,
      'partition-specs': specs.map((s) => ({
        'spec-id': s.id,
        fields: s.fields.map(([name, transform], i) => ({
          name,
          transform,
          'source-id': name.startsWith('ts') ? 2 : 1,
          'field-id': 1000 + s.id * 10 + i,
        })),
      })),
      'last-partition-id': 1100,
      'sort-orders': [{ 'order-id': 0, fields: [] }],
      'default-sort-order-id': 0,
    }),
    't',
  );
}

describe('the Iceberg table format', () => {
  it('names partitions under data/, and a later spec whose field names repeat an earlier one under data/spec-<id>', () => {
    // Prepare: identity(category), then bucket[4](category) under the same name, then day(ts), then unpartitioned
    const metadata = metadataWithSpecs([
      { id: 0, fields: [['category', 'identity']] },
      { id: 1, fields: [['category', 'bucket[4]']] },
      { id: 2, fields: [['ts_day', 'day']] },
      { id: 3, fields: [] },
    ]);

    // Act
    const folders = specFolders(metadata);

    // Assess: "category=3" of spec 0 and of spec 1 can never be the same partition
    expect([...folders].sort(([a], [b]) => a - b)).toEqual([
      [0, 'data'],
      [1, 'data/spec-1'],
      [2, 'data'],
      [3, 'data'],
    ]);
  });

  it("plans a format-v3 table with each data file's row lineage: its first row id and data sequence number", async () => {
    // Prepare
    const store = fixtureStore();
    const table = await loadTable(store, 'spark_v3_deletion_vectors');
    const files = await readSnapshotFiles(store, table);

    // Act
    const snapshot = await icebergTable.snapshot(store, 'spark_v3_deletion_vectors', { now: NOW });

    // Assess: what the manifests say of each file (first_row_id inherited in order, 0 to 4), as decimal text
    const planned = snapshot.partitions.flatMap((p) => p.files.map((f) => [f.key, f.rowLineage]));
    expect(planned).toEqual(
      files.dataFiles.map((f) => [
        f.entry.file.key,
        {
          firstRowId: String(f.entry.file.firstRowId),
          sequenceNumber: String(f.entry.dataSequenceNumber),
        },
      ]),
    );
    expect(new Set(planned.map(([, l]) => (l as { firstRowId: string }).firstRowId))).toEqual(
      new Set(['0', '1', '2', '3', '4']),
    );
  });

  it('plans a format-v2 table without row lineage', async () => {
    // Prepare
    const store = fixtureStore();

    // Act: its metadata files are named 000NN-<uuid>, and no catalog manages the fixture, as said here
    const snapshot = await icebergForCatalog({ type: 'path', metadataNaming: 'uuid' }, {}).snapshot(
      store,
      'spark_v2_position_deletes',
      { now: NOW },
    );

    // Assess
    const files = snapshot.partitions.flatMap((p) => p.files);
    expect(files.length).toBeGreaterThan(0);
    expect(files.filter((f) => f.rowLineage !== undefined)).toEqual([]);
  });

  describe('refuses, before anything is planned, a v3 table using what this writer does not carry', () => {
    const cases: [string, Record<string, unknown>, string][] = [
      [
        'a variant column',
        { id: 2, name: 'v', required: false, type: 'variant' },
        'the variant type (column v)',
      ],
      [
        'a geometry column nested in a struct',
        {
          id: 2,
          name: 's',
          required: false,
          type: {
            type: 'struct',
            fields: [{ id: 3, name: 'g', required: false, type: 'geometry(srid:4326)' }],
          },
        },
        'the geometry(srid:4326) type (column s.g)',
      ],
      [
        'an unknown-typed list element',
        {
          id: 2,
          name: 'l',
          required: false,
          type: { type: 'list', 'element-id': 3, 'element-required': false, element: 'unknown' },
        },
        'the unknown type (column l.element)',
      ],
    ];
    for (const [what, field, feature] of cases)
      it(what, async () => {
        // Prepare: the DV table's latest metadata with the field added to its schema
        const copy = copyFixtureTable('spark_v3_deletion_vectors');
        try {
          const key = `${copy.table}/metadata/v3.metadata.json`;
          const metadata = JSON.parse(new TextDecoder().decode(await copy.store.get(key)));
          metadata.schemas[0].fields.push(field);
          await copy.store.put(key, new TextEncoder().encode(JSON.stringify(metadata)));

          // Act
          const attempt = icebergTable.snapshot(copy.store, copy.table, { now: NOW });

          // Assess
          await expect(attempt).rejects.toBeInstanceOf(IcebergUnsupportedError);
          await expect(attempt).rejects.toMatchObject({ feature });
          await expect(attempt).rejects.toThrow(`uses ${feature}, which lake-compactor does not support`);
        } finally {
          copy.remove();
        }
      });

    it('but not a column with default values (initial-default, write-default): its files are projected with the default', async () => {
      // Prepare: the DV table's latest metadata with a column added with both defaults
      const copy = copyFixtureTable('spark_v3_deletion_vectors');
      try {
        const key = `${copy.table}/metadata/v3.metadata.json`;
        const metadata = JSON.parse(new TextDecoder().decode(await copy.store.get(key)));
        metadata.schemas[0].fields.push({
          id: 2,
          name: 'd',
          required: false,
          type: 'int',
          'initial-default': 7,
          'write-default': 8,
        });
        await copy.store.put(key, new TextEncoder().encode(JSON.stringify(metadata)));

        // Act
        const snapshot = await icebergTable.snapshot(copy.store, copy.table, { now: NOW });

        // Assess
        expect(snapshot.partitions.flatMap((p) => p.files).length).toBeGreaterThan(0);
      } finally {
        copy.remove();
      }
    });

    it('a partition field over two source columns (a multi-argument transform)', async () => {
      // Prepare
      const copy = copyFixtureTable('spark_v3_deletion_vectors');
      try {
        const key = `${copy.table}/metadata/v3.metadata.json`;
        const metadata = JSON.parse(new TextDecoder().decode(await copy.store.get(key)));
        metadata.schemas[0].fields.push({ id: 2, name: 'j', required: false, type: 'int' });
        metadata['partition-specs'].push({
          'spec-id': 1,
          fields: [{ name: 'ij_bucket', transform: 'bucket[4]', 'source-ids': [1, 2], 'field-id': 1000 }],
        });
        await copy.store.put(key, new TextEncoder().encode(JSON.stringify(metadata)));

        // Act
        const attempt = icebergTable.snapshot(copy.store, copy.table, { now: NOW });

        // Assess
        await expect(attempt).rejects.toBeInstanceOf(IcebergUnsupportedError);
        await expect(attempt).rejects.toMatchObject({
          feature: 'a partition field over 2 source columns (ij_bucket: bucket[4])',
        });
      } finally {
        copy.remove();
      }
    });
  });

  it('ends a commit that loses every race in a retryable error, leaving none of its manifests behind', async () => {
    // Prepare: a catalog whose every commit is beaten by another writer
    const copy = copyFixtureTable('spark_v1_unpartitioned_small_files');
    try {
      const table = await loadTable(copy.store, copy.table);
      const files = await readSnapshotFiles(copy.store, table);
      const first = files.dataFiles[0];
      if (first === undefined || files.snapshot === undefined) throw new Error('the fixture has a snapshot');
      const manifestsBefore = await avroKeys(copy.store, copy.table);
      const catalog = new PathCatalog(copy.store);
      const beaten = {
        load: (root: string) => catalog.load(root),
        commit: async () => ({ outcome: 'conflict' as const }),
      };

      // Act: replace one file by a (never written) copy with its metrics: rows equal, so only the race can fail it
      const error = await commitReplace(
        copy.store,
        beaten,
        {
          tableLocation: copy.table,
          startingSnapshotId: files.snapshot.snapshotId,
          removedFiles: [first.entry.file.path],
          addedFiles: [
            {
              path: table.paths.path(`${copy.table}/data/copy-of-first.parquet`),
              partition: first.entry.file.partition,
              metrics: metricsOf(first),
            },
          ],
        },
        { clock: { now: () => NOW }, maxAttempts: 3, sleep: async () => {} },
      ).catch((err: unknown) => err);

      // Assess
      expect(error).toBeInstanceOf(TransientStoreError);
      expect((error as TransientStoreError).retryable).toBe(true);
      expect((error as Error).message).toMatch(/lost the race to other writers on each of 3 attempts/);
      expect(await avroKeys(copy.store, copy.table)).toEqual(manifestsBefore);
    } finally {
      copy.remove();
    }
  });

  it('never lets vacuum delete an input: expire_snapshots does, once no retained snapshot needs it', () => {
    // Prepare
    const entry = {
      runId: 'r',
      groupId: 'g0001',
      inputs: [{ key: 't/data/a.parquet', size: 1, etag: '' }],
      formatState: { tableRoot: 't', snapshotId: '1', committedSnapshotId: '9223372036854775807' },
    } as unknown as GroupJournalEntry;

    // Act
    const decision = icebergTable.vacuum.retiredInputs(entry, NOW * 2, 0);

    // Assess
    expect(decision.due).toEqual([]);
    expect(decision.kept).toEqual([
      {
        key: 't/data/a.parquet',
        reason: expect.stringMatching(/snapshot 9223372036854775807: expire_snapshots/),
      },
    ]);
  });

  it('is registered, its own metadata writes are its commits to the profiler (a foreign table in a Parquet table), and data writes alone are not changes', () => {
    // Prepare
    const tables = parseTableConfigs([
      { name: 'orders', bucket: 'lake', prefix: 'orders', format: 'iceberg' },
      { name: 'events', bucket: 'lake', prefix: 'events' },
    ]);
    const policies = new Map([
      ['orders', DEFAULT_POLICY],
      ['events', DEFAULT_POLICY],
    ]);
    const write = (key: string) => ({
      bucket: 'lake',
      key,
      kind: 'created' as const,
      size: 2048,
      sequencer: normalizeSequencer('0A'),
      eventTime: NOW,
      eventName: 'ObjectCreated:Put',
    });

    // Act
    const own = resolveEvent(tables, policies, write('orders/metadata/v3.metadata.json'));
    const hint = resolveEvent(tables, policies, write('orders/metadata/version-hint.text'));
    const foreign = resolveEvent(tables, policies, write('events/metadata/v3.metadata.json'));
    const data = resolveEvent(
      tables,
      policies,
      write('orders/data/event_timestamp_day=2024-03-01/00000-0-a-00001.parquet'),
    );

    // Assess
    expect(TABLE_FORMATS.get('iceberg')).toBe(icebergTable);
    expect(own).toMatchObject({ kind: 'commit', table: 'orders', version: 3 });
    expect(hint).toMatchObject({ kind: 'commit', table: 'orders' });
    expect(foreign).toMatchObject({ kind: 'foreign', format: 'iceberg', root: '' });
    // A writer's data file is not data until a snapshot the catalog points at commits it.
    expect(data.kind).toBe('ignored');
  });
});

function metricsOf(file: Awaited<ReturnType<typeof readSnapshotFiles>>['dataFiles'][number]) {
  const f = file.entry.file;
  return {
    recordCount: f.recordCount,
    fileSizeInBytes: f.fileSizeInBytes,
    columnSizes: f.columnSizes,
    valueCounts: f.valueCounts,
    nullValueCounts: f.nullValueCounts,
    nanValueCounts: f.nanValueCounts,
    lowerBounds: f.lowerBounds,
    upperBounds: f.upperBounds,
    splitOffsets: f.splitOffsets ?? [],
  };
}
