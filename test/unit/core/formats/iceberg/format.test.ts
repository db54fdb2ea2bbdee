// The Iceberg TableFormat's own rules, apart from the CLI: partition paths stay unique per (spec, tuple) when two
// specs share field names, a format-v3 table is refused before anything is planned, lost commit races end in a
// retryable error with nothing left behind, vacuum never deletes an input (expire_snapshots does), and the
// table's own metadata writes are not taken for a foreign table's by the profiler.
import { describe, expect, it } from 'vitest';
import { TransientStoreError } from '../../../../../functions/core/errors.js';
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

  it('refuses a format-v3 table before anything is planned', async () => {
    // Prepare
    const store = fixtureStore();

    // Act
    const snapshot = icebergTable.snapshot(store, 'spark_v3_deletion_vectors', { now: NOW });
    const partition = icebergTable.partitionFiles(
      store,
      {
        tableRoot: 'spark_v3_deletion_vectors',
        partition: 'data',
        partitionDir: 'spark_v3_deletion_vectors/data/',
      },
      { now: NOW },
    );

    // Assess
    await expect(snapshot).rejects.toThrow(IcebergUnsupportedError);
    await expect(partition).rejects.toThrow(/format version 3/);
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
