// The scope rules the fixtures cannot show: an equality delete written under an unpartitioned spec applies to
// older data files of every partition, and never to a file of its own or a later sequence number. Synthetic table.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { loadTable, readSnapshotFiles } from '../../../../../functions/core/formats/iceberg/index.js';
import {
  SCRAMBLED_MANIFEST_LIST_SCHEMA,
  SCRAMBLED_MANIFEST_SCHEMA,
  writeAvroContainer,
} from './avro-writer.js';

const metadata = JSON.stringify({
  'format-version': 2,
  'table-uuid': '00000000-0000-0000-0000-000000000002',
  location: 's3://lake/t',
  'last-sequence-number': 3,
  'last-updated-ms': 1,
  'last-column-id': 1,
  'current-schema-id': 0,
  schemas: [{ type: 'struct', 'schema-id': 0, fields: [{ id: 1, name: 'x', required: false, type: 'int' }] }],
  'default-spec-id': 1,
  'partition-specs': [
    { 'spec-id': 0, fields: [] },
    { 'spec-id': 1, fields: [{ name: 'x', transform: 'identity', 'source-id': 1, 'field-id': 1000 }] },
  ],
  'last-partition-id': 1000,
  properties: {},
  'current-snapshot-id': 3,
  snapshots: [
    {
      'snapshot-id': 3,
      'sequence-number': 3,
      'timestamp-ms': 1,
      'manifest-list': 's3://lake/t/metadata/snap-3.avro',
    },
  ],
});

/** A manifest-list entry: manifest `path` under `specId`, data (0) or deletes (1), at sequence number `seq`. */
const entry = (path: string, specId: number, content: 0 | 1, seq: bigint) => ({
  a: path,
  manifest_path: '',
  len: 1n,
  b: specId,
  c: seq,
  d: seq,
  e: seq,
  f: content,
  k: null,
  g: null,
});

/** A manifest of ADDED files: `[path, kind (0 data, 2 equality), partition x or null]`. */
const manifest = (files: [string, 0 | 2, number | null][]) =>
  writeAvroContainer(
    SCRAMBLED_MANIFEST_SCHEMA,
    files.map(([where, kind, x]) => ({
      st: 1,
      snap: null,
      seq: null,
      file: {
        size: 1n,
        rows: 1n,
        part: { whatever: x },
        fmt: 'PARQUET',
        where,
        kind,
        km: null,
        file_path: '',
      },
    })),
  );

describe('equality delete scope', () => {
  it('an equality delete under the unpartitioned spec applies to the older files of every partition, not to newer ones', async () => {
    // Prepare: data x=1 and x=2 at sequence 1, a global equality delete at 2, data x=1 again at 3
    const store = new MemoryObjectStore();
    await store.put('t/metadata/v1.metadata.json', metadata);
    await store.put(
      't/metadata/snap-3.avro',
      await writeAvroContainer(SCRAMBLED_MANIFEST_LIST_SCHEMA, [
        entry('s3://lake/t/metadata/d1.avro', 1, 0, 1n),
        entry('s3://lake/t/metadata/e2.avro', 0, 1, 2n),
        entry('s3://lake/t/metadata/d3.avro', 1, 0, 3n),
      ]),
    );
    await store.put(
      't/metadata/d1.avro',
      await manifest([
        ['s3://lake/t/data/x=1/a.parquet', 0, 1],
        ['s3://lake/t/data/x=2/b.parquet', 0, 2],
      ]),
    );
    await store.put('t/metadata/e2.avro', await manifest([['s3://lake/t/data/eq.parquet', 2, null]]));
    await store.put('t/metadata/d3.avro', await manifest([['s3://lake/t/data/x=1/c.parquet', 0, 1]]));
    const table = await loadTable(store, 't');
    // Act
    const files = await readSnapshotFiles(store, table);
    // Assess
    expect(files.deleteFiles.map((d) => [d.kind, d.entry.dataSequenceNumber, d.appliesTo])).toEqual([
      ['equality', 2n, ['s3://lake/t/data/x=1/a.parquet', 's3://lake/t/data/x=2/b.parquet']],
    ]);
    expect(
      files.dataFiles.map((f) => [f.entry.file.path, f.entry.dataSequenceNumber, f.deletes.length]),
    ).toEqual([
      ['s3://lake/t/data/x=1/a.parquet', 1n, 1],
      ['s3://lake/t/data/x=1/c.parquet', 3n, 0],
      ['s3://lake/t/data/x=2/b.parquet', 1n, 1],
    ]);
  });
});
