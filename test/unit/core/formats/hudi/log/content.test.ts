// Block contents: each log_files fixture decodes to the record counts hudi-rs's reader tests expect (reader.rs: one
// data row in the Avro and Parquet fixtures, three deletes), and to the same values a second, independent decode
// gives (avsc's own datum decoder over the fixture's bytes located by hand; DuckDB over the Parquet block cut out of
// the file). Crafted contents whose counts or lengths lie fail with typed errors, and a bomb is refused by budget.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import avro from 'avsc';
import { afterAll, describe, expect, it } from 'vitest';
import { MetadataTooLargeError } from '../../../../../../functions/core/errors.js';
import { type LogBlock, readLogBlocks } from '../../../../../../functions/core/formats/hudi/log/blocks.js';
import { DecodeBudget } from '../../../../../../functions/core/formats/hudi/log/budget.js';
import { decodeBlockRecords } from '../../../../../../functions/core/formats/hudi/log/content.js';
import {
  HudiLogFormatError,
  HudiLogUnsupportedError,
} from '../../../../../../functions/core/formats/hudi/log/errors.js';
import { openDuckDb, sqlString } from '../../../../../support/duckdb.js';
import { HUDI_FIXTURES } from '../../../../../support/fixtures.js';
import { avroContent, block, H, int32, logFixture, T } from './craft.js';

function firstBlock(folder: string): LogBlock {
  const { name, bytes } = logFixture(folder);
  const b = readLogBlocks(name, bytes)[0];
  if (b?.kind !== 'block') throw new Error(`no block in ${folder}`);
  return b;
}

const tmp = mkdtempSync(join(tmpdir(), 'hudi-log-content-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const SCHEMA = JSON.stringify({
  type: 'record',
  name: 'r',
  fields: [
    { name: 'k', type: 'string' },
    { name: 'n', type: 'long' },
    { name: 'tags', type: { type: 'array', items: 'null' } },
  ],
});

describe('Hudi log block contents', () => {
  it('decodes the Avro data fixture to the one record avsc decodes from the same bytes', async () => {
    // Prepare: the oracle reads the header's schema with avsc's default types and the datum at content offset 12.
    const b = firstBlock('valid_log_avro_data');
    const type = avro.Type.forSchema(JSON.parse(b.header.get('SCHEMA') ?? ''), { wrapUnions: 'auto' });
    const view = Buffer.from(b.content);
    const expected = type.decode(view.subarray(12, 12 + view.readInt32BE(8)), 0).value as Record<
      string,
      unknown
    >;

    // Act
    const decoded = await decodeBlockRecords(b, new DecodeBudget());

    // Assess
    expect(decoded.kind).toBe('data');
    if (decoded.kind !== 'data') return;
    expect(decoded.records).toHaveLength(1);
    const [record] = decoded.records;
    expect({ ...record, ts: Number(record?.ts) }).toEqual(expected);
    expect(record).toMatchObject({ rider: 'rider-A', fare: 29.1, ts: 1695159649088n });
  });

  it('decodes the Parquet data fixture to the row DuckDB reads from the block cut out of the file', async () => {
    // Prepare
    const b = firstBlock('valid_log_parquet_data');
    const path = join(tmp, 'block.parquet');
    writeFileSync(path, b.content);
    const db = await openDuckDb();
    const expected = await db.rows(
      `SELECT _hoodie_record_key, rider, fare, ts FROM read_parquet(${sqlString(path)})`,
    );
    db.close();

    // Act
    const decoded = await decodeBlockRecords(b, new DecodeBudget());

    // Assess
    if (decoded.kind !== 'data') throw new Error('not data');
    expect(decoded.records).toHaveLength(1);
    expect(
      decoded.records.map((r) => ({
        _hoodie_record_key: r._hoodie_record_key,
        rider: r.rider,
        fare: r.fare,
        ts: String(r.ts),
      })),
    ).toEqual(expected);
  });

  it("keeps a Parquet block's dates and timestamps as their stored numbers, as an Avro block holds them", async () => {
    // Prepare: the rolled-back Parquet block of mor_v6_nonpartitioned_rollback (Alice, 2023-04-01 12:01:00).
    const dir = join(HUDI_FIXTURES, 'mor_v6_nonpartitioned_rollback');
    const name = '.0712b9f9-d2d5-4cae-bcf4-8fd7146af503-0_20250126040823628.log.1_0-33-43';
    const b = readLogBlocks(name, readFileSync(join(dir, name)))[0] as LogBlock;

    // Act
    const decoded = await decodeBlockRecords(b, new DecodeBudget());

    // Assess
    const [record] = decoded.kind === 'data' ? decoded.records : [];
    expect(record?.dateField).toBe(19448);
    expect(record?.timestampField).toBe(BigInt(Date.UTC(2023, 3, 1, 12, 1)) * 1000n);
  });

  it('reads a Parquet block’s decimals wider than 15 digits exactly, as another writer (DuckDB) wrote them', async () => {
    // Prepare
    const path = join(tmp, 'wide.parquet');
    const db = await openDuckDb();
    await db.writeParquet(
      `SELECT * FROM (VALUES (CAST('123456789012345678.91' AS DECIMAL(20, 2)), 'k1'), (CAST('-0.01' AS DECIMAL(20, 2)), 'k2'), (NULL, 'k3')) t(amount, _hoodie_record_key)`,
      path,
    );
    db.close();
    const b = readLogBlocks(
      'f',
      block(T.PARQUET, [[H.INSTANT_TIME, '1']], readFileSync(path)),
    )[0] as LogBlock;

    // Act
    const decoded = await decodeBlockRecords(b, new DecodeBudget());

    // Assess
    expect(decoded).toEqual({
      kind: 'data',
      records: [
        { amount: { unscaled: 12345678901234567891n, scale: 2 }, _hoodie_record_key: 'k1' },
        { amount: { unscaled: -1n, scale: 2 }, _hoodie_record_key: 'k2' },
        { amount: null, _hoodie_record_key: 'k3' },
      ],
    });
  });

  it('refuses a Parquet block with a decimal wider than 15 digits inside a group by name', async () => {
    // Prepare
    const path = join(tmp, 'nested-wide.parquet');
    const db = await openDuckDb();
    await db.writeParquet(
      `SELECT {'v': CAST(1 AS DECIMAL(20, 2))} AS money, 'k' AS _hoodie_record_key`,
      path,
    );
    db.close();
    const b = readLogBlocks(
      'f',
      block(T.PARQUET, [[H.INSTANT_TIME, '1']], readFileSync(path)),
    )[0] as LogBlock;

    // Act
    const act = decodeBlockRecords(b, new DecodeBudget());

    // Assess
    await expect(act).rejects.toThrow(HudiLogUnsupportedError);
    await expect(act).rejects.toThrow(/decimal column v of precision 20 inside a group/);
  });

  it('decodes the delete fixture to three natural-order deletes of san_francisco keys', async () => {
    // Prepare
    const b = firstBlock('valid_log_delete');

    // Act
    const decoded = await decodeBlockRecords(b, new DecodeBudget());

    // Assess
    if (decoded.kind !== 'delete') throw new Error('not a delete block');
    expect(decoded.deletes).toEqual([
      {
        recordKey: 'e96c4396-3fad-413a-a942-4cb36106d721',
        partitionPath: 'city=san_francisco',
        orderingValue: 0,
        naturalOrder: true,
      },
      {
        recordKey: '9909a8b1-2d15-4d3d-8ec9-efc48c536a00',
        partitionPath: 'city=san_francisco',
        orderingValue: 0,
        naturalOrder: true,
      },
      {
        recordKey: '334e26e9-8355-45cc-97c6-c31daf0df330',
        partitionPath: 'city=san_francisco',
        orderingValue: 0,
        naturalOrder: true,
      },
    ]);
  });

  it('decodes longs past 2^53 exactly, as BigInt', async () => {
    // Prepare
    const type = avro.Type.forSchema(JSON.parse(SCHEMA));
    const datum = Buffer.concat([
      type.toBuffer({ k: 'a', n: 1, tags: [] }).subarray(0, 2),
      Buffer.from([0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
      Buffer.from([0]),
    ]);
    const b = readLogBlocks('f', block(T.AVRO, [[H.SCHEMA, SCHEMA]], avroContent([datum])))[0] as LogBlock;

    // Act
    const decoded = await decodeBlockRecords(b, new DecodeBudget());

    // Assess
    expect(decoded.kind === 'data' && decoded.records[0]?.n).toBe(2n ** 63n - 1n);
  });

  it('refuses a record count the content cannot hold before decoding any record', async () => {
    // Prepare: two billion records claimed in a 12-byte content.
    const content = avroContent([], 2_000_000_000);
    const b = readLogBlocks('f', block(T.AVRO, [[H.SCHEMA, SCHEMA]], content))[0] as LogBlock;

    // Act
    const act = decodeBlockRecords(b, new DecodeBudget());

    // Assess
    await expect(act).rejects.toThrow(HudiLogFormatError);
    await expect(act).rejects.toThrow(/claims 2000000000 records in 0 bytes/);
  });

  it('refuses a record length that runs past the content, naming the offset', async () => {
    // Prepare
    const content = Buffer.concat([int32(3), int32(1), int32(1000), Buffer.from([2, 0x61])]);
    const b = readLogBlocks('f', block(T.AVRO, [[H.SCHEMA, SCHEMA]], content))[0] as LogBlock;

    // Act
    const act = decodeBlockRecords(b, new DecodeBudget());

    // Assess
    await expect(act).rejects.toThrow(/record 0 claims 1000 bytes but 2 are left/);
  });

  it('stops an array claiming 2^41 nulls (zero bytes each) at the budget, building none', async () => {
    // Prepare: an array block claiming 2^41 null items (each encodes in zero bytes) in 64 bytes.
    const count = Buffer.from([0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]);
    const datum = Buffer.concat([Buffer.from([2, 0x61, 2]), count, Buffer.alloc(64, 0)]);
    const b = readLogBlocks('f', block(T.AVRO, [[H.SCHEMA, SCHEMA]], avroContent([datum])))[0] as LogBlock;

    // Act
    const act = decodeBlockRecords(b, new DecodeBudget(1024));

    // Assess
    await expect(act).rejects.toThrow(MetadataTooLargeError);
    await expect(act).rejects.toThrow(/more than 1.0 KiB decoded/);
  });

  it('decodes an array of nulls that ends the record (zero bytes per item)', async () => {
    // Prepare
    const type = avro.Type.forSchema(JSON.parse(SCHEMA));
    const datum = type.toBuffer({ k: 'a', n: 1, tags: [null, null, null] });
    const b = readLogBlocks('f', block(T.AVRO, [[H.SCHEMA, SCHEMA]], avroContent([datum])))[0] as LogBlock;

    // Act
    const decoded = await decodeBlockRecords(b, new DecodeBudget());

    // Assess
    expect(decoded.kind === 'data' && decoded.records[0]?.tags).toEqual([null, null, null]);
  });

  it('stops a decode at the budget with MetadataTooLargeError naming the file', async () => {
    // Prepare: 64 valid records, 1 KiB budget.
    const type = avro.Type.forSchema(JSON.parse(SCHEMA));
    const datum = type.toBuffer({ k: 'x'.repeat(100), n: 1, tags: [null, null] });
    const b = readLogBlocks(
      '.g_1.log.1_0-0-0',
      block(T.AVRO, [[H.SCHEMA, SCHEMA]], avroContent(Array(64).fill(datum))),
    )[0] as LogBlock;

    // Act
    const act = decodeBlockRecords(b, new DecodeBudget(1024));

    // Assess
    await expect(act).rejects.toThrow(MetadataTooLargeError);
    await expect(act).rejects.toThrow(/\.g_1\.log\.1_0-0-0/);
  });

  it('refuses a delete list claiming more entries than its bytes hold', async () => {
    // Prepare: zig-zag 2,000,000 entries in a 4-byte datum.
    const datum = Buffer.from([0x80, 0x92, 0xf4, 0x01]);
    const content = Buffer.concat([int32(3), int32(datum.length), datum]);
    const b = readLogBlocks('f', block(T.DELETE, [[H.INSTANT_TIME, '1']], content))[0] as LogBlock;

    // Act
    const act = decodeBlockRecords(b, new DecodeBudget());

    // Assess
    await expect(act).rejects.toThrow(/the delete list claims 2000000 entries/);
  });

  it('refuses a Kryo delete block (version 2) by name', async () => {
    // Prepare
    const b = readLogBlocks(
      'f',
      block(T.DELETE, [[H.INSTANT_TIME, '1']], Buffer.concat([int32(2), int32(0)])),
    )[0] as LogBlock;

    // Act
    const act = decodeBlockRecords(b, new DecodeBudget());

    // Assess
    await expect(act).rejects.toThrow(HudiLogUnsupportedError);
    await expect(act).rejects.toThrow(/DELETE_BLOCK content version 2/);
  });

  it.each([
    [T.HFILE, [], /HFILE_DATA block/],
    [T.CDC, [], /CDC_DATA block/],
    [T.AVRO, [[H.IS_PARTIAL, 'true']], /partial-update block/],
  ] as const)('refuses block type %i with header %j by name', async (type, header, message) => {
    // Prepare
    const b = readLogBlocks('f', block(type, header, int32(3)))[0] as LogBlock;

    // Act
    const act = decodeBlockRecords(b, new DecodeBudget());

    // Assess
    await expect(act).rejects.toThrow(HudiLogUnsupportedError);
    await expect(act).rejects.toThrow(message);
  });
});
