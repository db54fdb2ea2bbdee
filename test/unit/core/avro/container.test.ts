// The shared Avro container codec: records by name under the writer's schema, both codecs, and the Hudi timeline
// files (codec null) that the Iceberg-only decoder never met.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { decodeContainer, encodeContainer } from '../../../../functions/core/avro/container.js';
import { HUDI_FIXTURES } from '../../../support/fixtures.js';

const SCHEMA = {
  type: 'record',
  name: 'Row',
  fields: [
    { name: 'id', type: 'long' },
    { name: 'name', type: ['null', 'string'], default: null },
  ],
};

describe('Avro container codec (core/avro)', () => {
  it.each(['null', 'deflate'] as const)(
    'round-trips records by name with codec %s, longs beyond 2^53 exact',
    async (codec) => {
      // Prepare
      const records = [
        { id: 20260307162434124n, name: 'a' },
        { id: -1n, name: null },
      ];

      // Act
      const bytes = encodeContainer(SCHEMA, records, { writer: 'test' }, { codec });
      const decoded = await decodeContainer(bytes);

      // Assess
      expect(decoded.metadata.get('avro.codec')).toBe(codec);
      expect(decoded.metadata.get('writer')).toBe('test');
      expect(decoded.schema.name).toBe('Row');
      expect(decoded.records).toEqual(records);
    },
  );

  it('decodes a Hudi-written timeline file (codec null) by its embedded writer schema', async () => {
    // Prepare
    const file = join(HUDI_FIXTURES, 'mor_v6_nonpartitioned_rollback/.hoodie/20250126040936578.rollback');

    // Act
    const decoded = await decodeContainer(new Uint8Array(readFileSync(file)));

    // Assess
    expect(decoded.metadata.get('avro.codec') ?? 'null').toBe('null');
    expect(decoded.schema.name).toBe('HoodieRollbackMetadata');
    expect(decoded.records).toHaveLength(1);
    expect(decoded.records[0]?.commitsRollback).toEqual(['20250126040826878']);
    expect(decoded.records[0]?.timeTakenInMillis).toBe(195n);
  });

  it('refuses a block that claims more records than its bytes hold, before decoding', async () => {
    // Prepare
    const bytes = encodeContainer(SCHEMA, [{ id: 1n, name: 'x' }], {}, { codec: 'null' });
    const forged = Buffer.from(bytes);
    // The one block is count (1 byte), size (1 byte), the record (4 bytes: id, union branch, length, 'x') and the
    // sync marker (16): its count byte, zig-zag 1 = 2, becomes 120 = 60 records.
    forged[forged.length - 16 - 4 - 1 - 1] = 120;

    // Act
    const decoding = decodeContainer(new Uint8Array(forged));

    // Assess
    await expect(decoding).rejects.toThrow(/block record count 60 is more than the \d+ bytes left/);
  });

  it('accepts a valid array of zero-byte items (nulls) longer than the bytes left in its block', async () => {
    // Prepare: 100 nulls encode as a count and a terminator (3 bytes), so the count exceeds the bytes after it.
    const schema = {
      type: 'record',
      name: 'Nulls',
      fields: [{ name: 'items', type: { type: 'array', items: 'null' } }],
    };
    const records = [{ items: new Array<null>(100).fill(null) }];
    const bytes = encodeContainer(schema, records, {}, { codec: 'null' });

    // Act
    const decoded = await decodeContainer(bytes);

    // Assess
    expect(decoded.records).toEqual(records);
  });

  it('refuses a huge claimed count of zero-byte items within the decoded limit, without walking it all', async () => {
    // Prepare: one record whose array of nulls claims 2^40 items in a few bytes.
    const schema = {
      type: 'record',
      name: 'Nulls',
      fields: [{ name: 'items', type: { type: 'array', items: 'null' } }],
    };
    const bytes = encodeContainer(schema, [{ items: [null] }], {}, { codec: 'null' });
    const forged = Buffer.from(bytes);
    // The one block is count (1), size (1), the record (array count 1 = byte 2, terminator 0) and the sync marker.
    const at = forged.length - 16 - 2;
    const huge = Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x40]); // zig-zag 2^40
    const record = Buffer.concat([huge, Buffer.from([0])]);
    const rebuilt = Buffer.concat([
      forged.subarray(0, at - 2),
      Buffer.from([2, record.length * 2]),
      record,
      forged.subarray(forged.length - 16),
    ]);
    const started = Date.now();

    // Act
    const decoding = decodeContainer(new Uint8Array(rebuilt), {
      decodedBytes: 1 << 20,
      inflatedBytes: 1 << 20,
    });

    // Assess
    await expect(decoding).rejects.toThrow(/would take more than .* decoded/);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('writes the same bytes twice when given a sync marker, without avro.codec when told (Hudi timeline framing)', async () => {
    // Prepare
    const sync = new Uint8Array(16).fill(7);
    const records = [{ id: 5n, name: 'a' }];
    const options = { codec: 'null', omitNullCodec: true, sync } as const;

    // Act
    const first = encodeContainer(SCHEMA, records, {}, options);
    const second = encodeContainer(SCHEMA, records, {}, options);
    const decoded = await decodeContainer(first);

    // Assess
    expect(Buffer.from(first).equals(Buffer.from(second))).toBe(true);
    expect(Buffer.from(first.subarray(first.length - 16)).equals(Buffer.from(sync))).toBe(true);
    expect([...decoded.metadata.keys()]).toEqual(['avro.schema']);
    expect(decoded.records).toEqual(records);
  });
});
