// Proves the zero-copy FFI row-multiset fingerprint (rewrite and verify) equals the arrow-js/IPC reference
// (the oracle) for every type DuckDB writes, for whole batches and slices at any offset, and still sees a
// changed value. Random tables of every type: ffi-property.test.ts.

import {
  DataType,
  Dictionary,
  Int32,
  Table,
  tableToIPC,
  Utf8,
  type Vector,
  vectorFromArray,
} from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  hashWasmBatchIpc,
  wasmBatchToTable,
} from '../../../../functions/adapters/parquet-wasm/batch-hash.js';
import { hashWasmBatchFfi } from '../../../../functions/adapters/parquet-wasm/ffi-hash.js';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { MultisetHash } from '../../../../functions/core/fingerprint/fingerprint.js';
import { type DuckWorkspace, duckWorkspace } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/** Decimals, nested lists/structs/maps, zoned and unit timestamps, dictionaries, nulls, unsigned ints. */
function manyTypes(rows: number, bump = -1): string {
  return `SELECT i::INTEGER AS i,
    CASE WHEN i = ${bump} THEN 1 ELSE 0 END + (i * 1000000000007)::BIGINT AS big,
    (i / 7)::DECIMAL(9,2) AS d9, (i / 7)::DECIMAL(18,4) AS d18, (i / 7)::DECIMAL(38,10) AS d38,
    CASE WHEN i % 4 = 0 THEN NULL ELSE [i, NULL, i + 1]::INTEGER[] END AS lst,
    CASE WHEN i % 5 = 0 THEN NULL ELSE {'a': i, 'b': 's' || i} END AS st,
    MAP {'k' || i: i, 'z': NULL} AS mp,
    TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL 1 second AS tstz,
    (TIMESTAMP '2024-01-01' + i * INTERVAL 1 second)::TIMESTAMP_MS AS ts_ms,
    DATE '2024-01-01' + i::INTEGER AS dt, TIME '12:00:00.5' AS tm,
    CASE WHEN i % 3 = 0 THEN NULL ELSE 'str' || (i % 4) END AS low_card,
    NULL::VARCHAR AS all_null, i % 2 = 0 AS flag, ('blob' || i)::BLOB AS bin,
    (i / 3)::FLOAT AS f32, [[1, 2], [3 + i]] AS nested, {'x': [1, i], 'y': {'z': 'q' || i}} AS deep,
    (i % 100)::TINYINT AS i8, i::SMALLINT AS i16, (i % 200)::UTINYINT AS u8, (i + 9223372036854775000)::UBIGINT AS u64
    FROM range(${rows}) t(i)`;
}

/** Decodes `bytes` into parquet-wasm batches of `batchRows`. */
function decode(bytes: Uint8Array, batchRows: number): pw.RecordBatch[] {
  const table = pw.readParquet(bytes, { batchSize: batchRows });
  const batches = table.recordBatches();
  table.free();
  return batches;
}

function ffi(acc: MultisetHash, batch: pw.RecordBatch): void {
  hashWasmBatchFfi(acc, batch, pw.wasmMemory());
}

describe('FFI fingerprint', () => {
  it('equals the arrow-js reference for every type, for whole batches and for slices at any offset', async () => {
    // Prepare: dictionary pages (low_card) and plain ones, 3 batches of up to 128 rows.
    const bytes = await duck.parquet(manyTypes(300), { rowGroupSize: 300 });
    const batches = decode(bytes, 128);

    // Act
    const reference = new MultisetHash();
    const whole = new MultisetHash();
    const sliced = new MultisetHash();
    for (const batch of batches) {
      hashWasmBatchIpc(reference, batch);
      ffi(whole, batch);
      const cut = Math.floor(batch.numRows / 3) + 1;
      for (const [from, length] of [
        [0, cut],
        [cut, batch.numRows - cut],
      ] as const) {
        const piece = batch.slice(from, length);
        ffi(sliced, piece);
        piece.free();
      }
      batch.free();
    }

    // Assess
    expect(reference.rows).toBe(300);
    expect(whole.digest()).toBe(reference.digest());
    expect(sliced.digest()).toBe(reference.digest());
    expect(whole.nullCountsRecord()).toEqual(reference.nullCountsRecord());
    expect(sliced.nullCountsRecord()).toEqual(reference.nullCountsRecord());
    expect(reference.nullCountsRecord()).toMatchObject({ all_null: 300, lst: 75, st: 60, low_card: 100 });
  });

  it('changes when one value of one row changes', async () => {
    // Prepare
    const a = decode(await duck.parquet(manyTypes(200)), 64);
    const b = decode(await duck.parquet(manyTypes(200, 117)), 64);

    // Act
    const digest = (batches: pw.RecordBatch[]) => {
      const acc = new MultisetHash();
      for (const batch of batches) {
        ffi(acc, batch);
        batch.free();
      }
      return acc.digest();
    };

    // Assess
    expect(digest(a)).not.toBe(digest(b));
  });
});

describe('FFI fingerprint of dictionary-encoded columns', () => {
  it('hashes dictionary arrays by value, like the arrow-js reference and like the plain column', async () => {
    // Prepare: an Arrow dictionary column (kept as such by parquet-rs through ARROW:schema) and the same values plain.
    const values = Array.from({ length: 500 }, (_, i) => (i % 7 === 0 ? null : `v${i % 5}`));
    const write = (vector: Vector) =>
      pw.writeParquet(pw.Table.fromIPCStream(tableToIPC(new Table({ s: vector }), 'stream')));
    const dict = decode(write(vectorFromArray(values, new Dictionary(new Utf8(), new Int32()))), 200);
    const plain = decode(write(vectorFromArray(values, new Utf8())), 200);

    // Act
    const reference = new MultisetHash();
    const viaFfi = new MultisetHash();
    const plainFfi = new MultisetHash();
    const isDictionary = dict.map((b) => DataType.isDictionary(wasmBatchToTable(b).schema.fields[0]?.type));
    for (const batch of dict) {
      hashWasmBatchIpc(reference, batch);
      const piece = batch.slice(3, batch.numRows - 6);
      ffi(viaFfi, piece);
      piece.free();
      const head = batch.slice(0, 3);
      const tail = batch.slice(batch.numRows - 3, 3);
      ffi(viaFfi, head);
      ffi(viaFfi, tail);
      head.free();
      tail.free();
      batch.free();
    }
    for (const batch of plain) {
      ffi(plainFfi, batch);
      batch.free();
    }

    // Assess
    expect(isDictionary).toContain(true);
    expect(viaFfi.digest()).toBe(reference.digest());
    expect(plainFfi.digest()).toBe(reference.digest());
    expect(viaFfi.nullCountsRecord()).toEqual({ s: 72 });
  });
});
