// Proves the engine's date → timestamp widening (Iceberg v3's promotion) is exact over the whole range a timestamp in
// microseconds holds — days before 1970, and midnights far past 2^53 µs — and that a day whose midnight no timestamp
// holds fails the rewrite by name (the spec's "runtime failure"), nothing written: without the check its value would
// wrap around 64 bits.
// DuckDB writes the inputs and reads the outputs back; verify re-reads them against the fingerprint. A timestamp in
// milliseconds read as microseconds (a table format that reads a TIMESTAMP(MILLIS) file so) fails by name where it
// would wrap.

import {
  type Data,
  Field,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  TimestampMillisecond,
  tableToIPC,
  vectorFromArray,
} from 'apache-arrow';
import * as pw from 'parquet-wasm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { UnsupportedInputError } from '../../../../functions/core/errors.js';
import type { ColumnProjection } from '../../../../functions/core/projection.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/** `d` (a date, field id 1) written as the timestamp `t` of the same field id, as a v3 table's promotion reads it. */
const PROJECTION: ColumnProjection = {
  columns: [
    {
      field: { name: 't', fieldId: 1, nullable: true, type: 'timestamp-us' },
      source: { column: 'd', widen: 'date32-timestamp-us' },
    },
  ],
  keyValueMetadata: {},
};

describe('rewriteGroup with a date → timestamp projection', () => {
  it('writes every day as the microseconds of its midnight, exactly, also far past 2^53 µs', async () => {
    // Prepare: days around the epoch, and years 2300, 290000 and -100000 (midnights past 2^53 µs)
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    await source.put(
      'in/a.parquet',
      await duck.parquet(
        `SELECT * FROM (VALUES (DATE '1970-01-01'), (DATE '1969-12-31'), (NULL::DATE), (DATE '2300-01-01'),
                               (DATE '290000-12-31'), (DATE '-100000-01-01')) t(d)`,
        { extraOptions: ['FIELD_IDS {d: 1}'] },
      ),
    );
    const a = await fileOf(source, 'in/a.parquet');

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g1', files: [{ ...a, projection: PROJECTION }] },
      { outputKey: (i) => `out/${i}.parquet` },
    );
    const report = await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess: each value is DuckDB's own epoch microseconds of the input day's midnight
    const inputs = await duck.materialise(source, ['in/a.parquet']);
    const outputs = await duck.materialise(
      target,
      result.outputs.map((o) => o.key),
    );
    const expected = await duck.db.rows(
      `SELECT (epoch_us(d::TIMESTAMP))::VARCHAR AS us FROM read_parquet(${inputs}) ORDER BY ALL`,
    );
    const written = await duck.db.rows(
      `SELECT (epoch_us(t))::VARCHAR AS us FROM read_parquet(${outputs}) ORDER BY ALL`,
    );
    expect(report.rows).toBe(6);
    expect(written).toEqual(expected);
    expect(written.map((r) => r.us)).toContain(String(BigInt(Date.UTC(2300, 0, 1)) * 1000n));
    const types = await duck.db.rows(`DESCRIBE SELECT * FROM read_parquet(${outputs})`);
    expect(types.map((t) => [t.column_name, t.column_type])).toEqual([['t', 'TIMESTAMP']]);
  });

  it('refuses a day whose midnight a timestamp in microseconds cannot hold, naming file, column and day, writing nothing', async () => {
    // Prepare: year 300000, past the ±292,000 years of a 64-bit count of microseconds
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    await source.put(
      'in/far.parquet',
      await duck.parquet(`SELECT * FROM (VALUES (DATE '2024-01-01'), (DATE '300000-01-01')) t(d)`, {
        extraOptions: ['FIELD_IDS {d: 1}'],
      }),
    );
    const far = await fileOf(source, 'in/far.parquet');
    const day = Number(await duck.db.scalar(`SELECT (DATE '300000-01-01' - DATE '1970-01-01')::BIGINT`));

    // Act
    const attempt = rewriteGroup(
      { source, target },
      { groupId: 'g1', files: [{ ...far, projection: PROJECTION }] },
      { outputKey: (i) => `out/${i}.parquet` },
    );

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(UnsupportedInputError);
    await expect(attempt).rejects.toThrow('in/far.parquet');
    await expect(attempt).rejects.toThrow(`its date column d holds day ${day}`);
    expect((await target.list('')).objects).toEqual([]);
  });
});

/** `d` written as the nanosecond timestamp `t` (Iceberg v3's date → timestamp_ns). */
const NANOS_PROJECTION: ColumnProjection = {
  columns: [
    {
      field: { name: 't', fieldId: 1, nullable: true, type: 'timestamp-ns' },
      source: { column: 'd', widen: 'date32-timestamp-ns' },
    },
  ],
  keyValueMetadata: {},
};

describe('rewriteGroup with a date → timestamp_ns projection', () => {
  it('writes every day as the nanoseconds of its midnight, exactly, to the ends of the 64-bit range', async () => {
    // Prepare: days around the epoch and the first and last days whose midnight 64-bit nanoseconds hold
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    await source.put(
      'in/a.parquet',
      await duck.parquet(
        `SELECT * FROM (VALUES (DATE '1970-01-01'), (DATE '1969-12-31'), (NULL::DATE), (DATE '1677-09-22'),
                               (DATE '2262-04-11')) t(d)`,
        { extraOptions: ['FIELD_IDS {d: 1}'] },
      ),
    );
    const a = await fileOf(source, 'in/a.parquet');

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'g1', files: [{ ...a, projection: NANOS_PROJECTION }] },
      { outputKey: (i) => `out/${i}.parquet` },
    );
    const report = await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess: each value is DuckDB's epoch nanoseconds of the input day's midnight; the column TIMESTAMP_NS
    const inputs = await duck.materialise(source, ['in/a.parquet']);
    const outputs = await duck.materialise(
      target,
      result.outputs.map((o) => o.key),
    );
    const expected = await duck.db.rows(
      `SELECT (epoch_us(d::TIMESTAMP)::HUGEINT * 1000)::VARCHAR AS ns FROM read_parquet(${inputs}) ORDER BY ALL`,
    );
    const written = await duck.db.rows(
      `SELECT (epoch_ns(t))::VARCHAR AS ns FROM read_parquet(${outputs}) ORDER BY ALL`,
    );
    expect(report.rows).toBe(5);
    expect(written).toEqual(expected);
    const types = await duck.db.rows(`DESCRIBE SELECT * FROM read_parquet(${outputs})`);
    expect(types.map((t) => [t.column_name, t.column_type])).toEqual([['t', 'TIMESTAMP_NS']]);
  });

  it('refuses a day whose midnight 64-bit nanoseconds cannot hold (after 2262-04-11), naming file, column and day, writing nothing', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    await source.put(
      'in/late.parquet',
      await duck.parquet(`SELECT * FROM (VALUES (DATE '2024-01-01'), (DATE '2262-04-12')) t(d)`, {
        extraOptions: ['FIELD_IDS {d: 1}'],
      }),
    );
    const late = await fileOf(source, 'in/late.parquet');
    const day = Number(await duck.db.scalar(`SELECT (DATE '2262-04-12' - DATE '1970-01-01')::BIGINT`));

    // Act
    const attempt = rewriteGroup(
      { source, target },
      { groupId: 'g1', files: [{ ...late, projection: NANOS_PROJECTION }] },
      { outputKey: (i) => `out/${i}.parquet` },
    );

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(UnsupportedInputError);
    await expect(attempt).rejects.toThrow('in/late.parquet');
    await expect(attempt).rejects.toThrow(
      `its date column d holds day ${day} (since 1970-01-01), whose midnight a timestamp in nanoseconds`,
    );
    expect((await target.list('')).objects).toEqual([]);
  });
});

describe('rewriteGroup with a milliseconds → microseconds projection (timestamp-ms-us)', () => {
  it('refuses a timestamp whose microseconds 64 bits cannot hold, naming file, column and value, writing nothing', async () => {
    // Prepare: 9.3e15 ms since 1970 (about year 296,700): its microseconds are past 2^63
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const far = 9_300_000_000_000_000;
    const schema = new Schema([
      new Field('ts', new TimestampMillisecond('UTC'), true, new Map([['PARQUET:field_id', '1']])),
    ]);
    const column = vectorFromArray([Date.UTC(2024, 0, 1), far], schema.fields[0]?.type);
    const batch = new RecordBatch(
      schema,
      makeData({
        type: new Struct(schema.fields),
        length: 2,
        nullCount: 0,
        children: [column.data[0] as Data],
      }),
    );
    await source.put(
      'in/far.parquet',
      pw.writeParquet(pw.Table.fromIPCStream(tableToIPC(new Table([batch]), 'stream'))),
    );
    const projection: ColumnProjection = {
      columns: [
        {
          field: { name: 'ts', fieldId: 1, nullable: true, type: 'timestamp-us-utc' },
          source: { column: 'ts', widen: 'timestamp-ms-us' },
        },
      ],
      keyValueMetadata: {},
    };

    // Act
    const attempt = rewriteGroup(
      { source, target },
      { groupId: 'g1', files: [{ ...(await fileOf(source, 'in/far.parquet')), projection }] },
      { outputKey: (i) => `out/${i}.parquet` },
    );

    // Assess
    await expect(attempt).rejects.toBeInstanceOf(UnsupportedInputError);
    await expect(attempt).rejects.toThrow('in/far.parquet');
    await expect(attempt).rejects.toThrow(`its column ts holds ${far} ms since 1970-01-01`);
    expect((await target.list('')).objects).toEqual([]);
  });
});
