// Avro containers whose counts, lengths or deflate blocks lie are refused before anything is allocated for them:
// the 143-byte manifest list claiming 10^12 records, nested array counts, deflate bombs (by the absolute cap and by
// the ratio), records over the decoded budget; a well-formed file still decodes field for field.
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { MetadataTooLargeError } from '../../../../../functions/core/errors.js';
import {
  AvroLimitError,
  decodeAvroContainer,
  encodeAvroContainer,
} from '../../../../../functions/core/formats/iceberg/avro.js';
import { IcebergMetadataError } from '../../../../../functions/core/formats/iceberg/errors.js';
import { readManifestList } from '../../../../../functions/core/formats/iceberg/manifests.js';
import { PathResolver } from '../../../../../functions/core/formats/iceberg/paths.js';
import { memoryBudget, withMemoryBudget } from '../../../../../functions/core/memory-budget.js';
import {
  avroBlock,
  avroCountBomb,
  avroDeflateBomb,
  avroHeader,
  avroLong,
  avroNestedArrayBomb,
} from '../../../../support/crafted-metadata.js';

const MiB = 1024 * 1024;
const roomy = { decodedBytes: 256 * MiB, inflatedBytes: 256 * MiB };

async function failure(promise: Promise<unknown>): Promise<Error> {
  try {
    await promise;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure');
}

describe('decodeAvroContainer refuses what the bytes cannot hold', () => {
  it('refuses the manifest list of under 150 bytes whose zero-field schema lets one block claim 10^12 records', async () => {
    // Prepare
    const bytes = avroCountBomb(1_000_000_000_000);

    // Act
    const err = await failure(decodeAvroContainer(bytes, roomy));

    // Assess
    expect(bytes.length).toBeLessThan(150);
    expect(err.message).toMatch(/record schema encodes in zero bytes/);
  });

  it('refuses a block claiming more records than it has bytes, each record taking at least one', async () => {
    // Prepare: one string field (at least its length byte), a block of 3 bytes claiming ten records
    const schema = { type: 'record', name: 'r', fields: [{ name: 's', type: 'string' }] };
    const bytes = Buffer.concat([avroHeader(schema), avroBlock(10, Buffer.from([0, 0, 0]))]);

    // Act
    const err = await failure(decodeAvroContainer(bytes, roomy));

    // Assess
    expect(err.message).toMatch(/a block claims 10 records but holds 3 bytes/);
  });

  it('refuses an array whose block claims 10^12 elements in the few bytes of its record', async () => {
    // Act
    const err = await failure(decodeAvroContainer(avroNestedArrayBomb(1_000_000_000_000), roomy));

    // Assess
    expect(err.message).toMatch(/an array block claims 1000000000000 elements in the \d+ bytes left/);
  });

  it('refuses a string length past the end of its block', async () => {
    // Prepare
    const schema = { type: 'record', name: 'r', fields: [{ name: 's', type: 'string' }] };
    const bytes = Buffer.concat([
      avroHeader(schema),
      avroBlock(1, Buffer.concat([avroLong(1 << 30), Buffer.from('x')])),
    ]);

    // Act
    const err = await failure(decodeAvroContainer(bytes, roomy));

    // Assess
    expect(err.message).toMatch(/a string length 1073741824 is more than the 1 bytes left/);
  });

  it('stops a 1 GiB deflate bomb at the absolute cap, having inflated no more than the cap', async () => {
    // Prepare: about 1 MB on disk
    const bytes = avroDeflateBomb(1024);

    // Act
    const err = await failure(
      decodeAvroContainer(bytes, { decodedBytes: 256 * MiB, inflatedBytes: 32 * MiB }),
    );

    // Assess
    expect(bytes.length).toBeLessThan(2 * MiB);
    expect(err).toBeInstanceOf(AvroLimitError);
    expect(err.message).toMatch(/its deflate blocks inflate to more than 32\.0 MiB/);
  });

  it('stops a deflate bomb at 200 times its size even when the absolute cap is far higher', async () => {
    // Prepare: 64 MiB of zeros deflate to about 64 KB, so 200 times the file is some 13 MB
    const bytes = avroDeflateBomb(64);

    // Act
    const err = await failure(
      decodeAvroContainer(bytes, { decodedBytes: 4096 * MiB, inflatedBytes: 4096 * MiB }),
    );

    // Assess
    expect(err).toBeInstanceOf(AvroLimitError);
    expect(err.message).toMatch(/or 200 times its/);
  });

  it('refuses records that would take more than the decoded budget, before avsc builds them', async () => {
    // Prepare: 20,000 records of a 100-character string: some 2.5 MB decoded, against a 1 MiB budget
    const schema = { type: 'record', name: 'r', fields: [{ name: 's', type: 'string', 'field-id': 1 }] };
    const records = Array.from({ length: 20_000 }, (_, i) => ({ s: `${i}`.padStart(100, 'x') }));
    const bytes = encodeAvroContainer(schema, records, {});

    // Act
    const err = await failure(decodeAvroContainer(bytes, { decodedBytes: MiB, inflatedBytes: 64 * MiB }));
    const decoded = await decodeAvroContainer(bytes, roomy);

    // Assess
    expect(err).toBeInstanceOf(AvroLimitError);
    expect(err.message).toMatch(/its records would take more than 1\.0 MiB decoded/);
    expect(decoded.records).toHaveLength(20_000);
    expect(decoded.records[19_999]?.get(1)).toBe(`19999`.padStart(100, 'x'));
  });

  it('decodes a well-formed container with unions, maps, arrays, fixed and BigInt longs field for field', async () => {
    // Prepare
    const schema = {
      type: 'record',
      name: 'manifest_file',
      fields: [
        { name: 'manifest_path', type: 'string', 'field-id': 500 },
        { name: 'added_snapshot_id', type: ['null', 'long'], 'field-id': 503 },
        { name: 'sizes', type: { type: 'map', values: 'long' }, 'field-id': 108 },
        { name: 'ids', type: { type: 'array', items: 'int' }, 'field-id': 135 },
        { name: 'key', type: ['null', { type: 'fixed', name: 'f16', size: 16 }], 'field-id': 519 },
      ],
    };
    const record = {
      manifest_path: 's3://b/t/metadata/m.avro',
      added_snapshot_id: 8_888_888_888_888_888_888n,
      sizes: { a: 1n, b: 2n },
      ids: [1, 2, 3],
      key: null,
    };
    const bytes = encodeAvroContainer(schema, [record, { ...record, added_snapshot_id: null }], { k: 'v' });

    // Act
    const decoded = await decodeAvroContainer(bytes, roomy);

    // Assess
    expect(decoded.metadata.get('k')).toBe('v');
    expect(decoded.records.map((r) => r.get(503))).toEqual([8_888_888_888_888_888_888n, undefined]);
    expect(decoded.records[0]?.get(500)).toBe('s3://b/t/metadata/m.avro');
    expect(decoded.records[0]?.get(108)).toEqual({ a: 1n, b: 2n });
    expect(decoded.records[0]?.get(135)).toEqual([1, 2, 3]);
  });
});

describe('a manifest list over the budget fails its table by name', () => {
  const table = 's3://lake/events';
  const ctx = (store: MemoryObjectStore) => ({
    store,
    table,
    paths: new PathResolver(table, 's3://lake/events', 'events'),
    formatVersion: 2 as const,
  });

  it('the deflate bomb is a MetadataTooLargeError naming the file, the table and what to do', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put('events/metadata/snap-1.avro', avroDeflateBomb(1024));

    // Act
    const err = await failure(
      withMemoryBudget(memoryBudget(512, 'raise the memory of Lambda function profiler (now 512 MB)'), () =>
        readManifestList(ctx(store), 's3://lake/events/metadata/snap-1.avro'),
      ),
    );

    // Assess
    expect(err).toBeInstanceOf(MetadataTooLargeError);
    expect(err.name).toBe('MetadataTooLargeError');
    expect(err.message).toMatch(
      /^Iceberg table s3:\/\/lake\/events: manifest list events\/metadata\/snap-1\.avro is too large for this process's memory: its deflate blocks inflate to more than 32\.0 MiB/,
    );
    expect(err.message).toMatch(
      /raise the memory of Lambda function profiler \(now 512 MB\), or have the table's owner rewrite its manifests/,
    );
  });

  it('the count bomb is an IcebergMetadataError naming the file', async () => {
    // Prepare
    const store = new MemoryObjectStore();
    await store.put('events/metadata/snap-1.avro', avroCountBomb());

    // Act
    const err = await failure(readManifestList(ctx(store), 's3://lake/events/metadata/snap-1.avro'));

    // Assess
    expect(err).toBeInstanceOf(IcebergMetadataError);
    expect(err.message).toMatch(
      /manifest list events\/metadata\/snap-1\.avro is not a readable Avro file \(the record schema encodes in zero bytes/,
    );
  });

  it("a manifest list larger than the budget's file size is refused after reading no more than that", async () => {
    // Prepare: 40 MiB of records against the 512 MB budget's 32 MiB per file
    const store = new MemoryObjectStore();
    const schema = { type: 'record', name: 'r', fields: [{ name: 'blob', type: 'bytes', 'field-id': 500 }] };
    const bytes = Buffer.concat([
      avroHeader(schema),
      avroBlock(1, Buffer.concat([avroLong(40 * MiB), Buffer.alloc(40 * MiB)])),
    ]);
    await store.put('events/metadata/snap-1.avro', bytes);

    // Act
    const err = await failure(
      withMemoryBudget(memoryBudget(512), () =>
        readManifestList(ctx(store), 's3://lake/events/metadata/snap-1.avro'),
      ),
    );

    // Assess
    expect(err).toBeInstanceOf(MetadataTooLargeError);
    expect(err.message).toMatch(
      /it has more than 32\.0 MiB, the most one metadata file may have in 512 MiB of memory/,
    );
    expect(store.requests.get).toBe(0);
  });
});
