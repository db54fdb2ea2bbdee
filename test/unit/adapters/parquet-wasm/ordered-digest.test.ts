// Proves the ordered per-column digest reads parquet-wasm batches the same through zero-copy FFI views
// (rewrite and verify) and through Arrow IPC (the oracle), for every type DuckDB writes, however the rows are cut into
// batches, row groups and files, dictionary-encoded or plain; and that verification with it fails on rows
// moved within a file, outputs out of order and a fingerprint whose kind was lost — never passes them.

import { Dictionary, Int32, Table, tableToIPC, Utf8, type Vector, vectorFromArray } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type ColumnSink,
  columnsOfWasmBatch,
  columnsOfWasmBatchIpc,
} from '../../../../functions/adapters/parquet-wasm/batch-hash.js';
import { withWasmBatchColumns } from '../../../../functions/adapters/parquet-wasm/ffi-hash.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { pw } from '../../../../functions/adapters/parquet-wasm/wasm.js';
import { VerificationError } from '../../../../functions/core/errors.js';
import { type GroupFingerprint, OrderedDigest } from '../../../../functions/core/fingerprint/fingerprint.js';
import { problemsOf, rewritten, tamper } from '../../../support/verify-fixtures.js';
import { type DuckWorkspace, duckWorkspace } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/** Rows `from .. to` of decimals, nested lists/structs/maps, timestamps, dictionary pages, nulls, unsigned ints. */
function manyTypes(from: number, to: number): string {
  return `SELECT i::INTEGER AS i, (i * 1000000000007)::BIGINT AS big,
    (i / 7)::DECIMAL(9,2) AS d9, (i / 7)::DECIMAL(18,4) AS d18, (i / 7)::DECIMAL(38,10) AS d38,
    CASE WHEN i % 4 = 0 THEN NULL ELSE [i, NULL, i + 1]::INTEGER[] END AS lst,
    CASE WHEN i % 5 = 0 THEN NULL ELSE {'a': i, 'b': 's' || i} END AS st,
    MAP {'k' || i: i, 'z': NULL} AS mp,
    TIMESTAMPTZ '2024-01-01 00:00:00+00' + i * INTERVAL 1 second AS tstz,
    (TIMESTAMP '2024-01-01' + i * INTERVAL 1 second)::TIMESTAMP_MS AS ts_ms,
    DATE '2024-01-01' + i::INTEGER AS dt, TIME '12:00:00.5' AS tm,
    CASE WHEN i % 3 = 0 THEN NULL ELSE 'str' || (i % 4) END AS low_card,
    NULL::VARCHAR AS all_null, i % 2 = 0 AS flag, CASE WHEN i % 6 = 1 THEN NULL ELSE i % 3 = 0 END AS maybe,
    ('blob' || i)::BLOB AS bin, (i / 3)::FLOAT AS f32, [[1, 2], [3 + i]] AS nested,
    {'x': [1, i], 'y': {'z': 'q' || i}} AS deep, (i % 100)::TINYINT AS i8, i::SMALLINT AS i16,
    (i % 200)::UTINYINT AS u8, (i + 9223372036854775000)::UBIGINT AS u64
    FROM range(${from}, ${to}) t(i) ORDER BY i`;
}

function decode(bytes: Uint8Array, batchRows: number): pw.RecordBatch[] {
  const table = pw.readParquet(bytes, { batchSize: batchRows });
  const batches = table.recordBatches();
  table.free();
  return batches;
}

/** The ordered digest of every batch of every file, in order, through `via` (FFI or IPC); batches are freed. */
function digest(
  files: readonly pw.RecordBatch[][],
  via: (batch: pw.RecordBatch, sink: ColumnSink) => void = columnsOfWasmBatch,
): { digest: string; nullCounts: Readonly<Record<string, number>> } {
  const d = new OrderedDigest();
  for (const batches of files) {
    for (const batch of batches) {
      via(batch, (columns, offset, rows) => d.add(columns, offset, rows));
      batch.free();
    }
  }
  return d.finish();
}

describe('ordered digest of parquet-wasm batches', () => {
  it('is the same through FFI views and Arrow IPC, for whole batches and for slices at any offset', async () => {
    // Prepare
    const bytes = await duck.parquet(manyTypes(0, 300), { rowGroupSize: 300 });

    // Act
    const ipc = digest([decode(bytes, 128)], columnsOfWasmBatchIpc);
    // The walker itself, not columnsOfWasmBatch (which would fall back to IPC on a layout it does not read).
    const ffi = digest([decode(bytes, 128)], (batch, sink) =>
      withWasmBatchColumns(batch, pw.wasmMemory(), sink),
    );
    const slices = decode(bytes, 128).flatMap((batch) => {
      const cut = Math.floor(batch.numRows / 3) + 1;
      const pieces = [batch.slice(0, cut), batch.slice(cut, batch.numRows - cut)];
      batch.free();
      return pieces;
    });
    const sliced = digest([slices], (batch, sink) => withWasmBatchColumns(batch, pw.wasmMemory(), sink));

    // Assess
    expect(ffi).toEqual(ipc);
    expect(sliced).toEqual(ipc);
    expect(ipc.nullCounts).toMatchObject({ all_null: 300, lst: 75, st: 60, low_card: 100, maybe: 50 });
  });

  it('is the same however the rows are cut into batches, row groups and files', async () => {
    // Prepare: one file of one row group, and the same rows in three files of small row groups.
    const one = await duck.parquet(manyTypes(0, 300), { rowGroupSize: 300 });
    const three = [
      await duck.parquet(manyTypes(0, 100), { rowGroupSize: 30 }),
      await duck.parquet(manyTypes(100, 101), { rowGroupSize: 30 }),
      await duck.parquet(manyTypes(101, 300), { rowGroupSize: 64 }),
    ];

    // Act
    const a = digest([decode(one, 300)]);
    const b = digest(three.map((f) => decode(f, 37)));
    const c = digest(
      three.map((f) => decode(f, 1024)),
      columnsOfWasmBatchIpc,
    );

    // Assess
    expect(b.digest).toBe(a.digest);
    expect(c.digest).toBe(a.digest);
  });

  it('digests an Arrow dictionary column like the plain one, through FFI and through IPC', async () => {
    // Prepare: parquet-rs keeps the dictionary type through ARROW:schema.
    const values = Array.from({ length: 500 }, (_, i) => (i % 7 === 0 ? null : `v${i % 5}`));
    const write = (vector: Vector, dictionary: boolean) =>
      pw.writeParquet(
        pw.Table.fromIPCStream(tableToIPC(new Table({ s: vector }), 'stream')),
        new pw.WriterPropertiesBuilder().setDictionaryEnabled(dictionary).build(),
      );
    const dict = write(vectorFromArray(values, new Dictionary(new Utf8(), new Int32())), true);
    const plain = write(vectorFromArray(values, new Utf8()), false);

    // Act
    const viaFfi = digest([decode(dict, 200)]);
    const viaIpc = digest([decode(dict, 200)], columnsOfWasmBatchIpc);
    const plainFfi = digest([decode(plain, 128)]);

    // Assess
    expect(viaFfi).toEqual(plainFfi);
    expect(viaIpc).toEqual(plainFfi);
    expect(plainFfi.nullCounts).toEqual({ s: 72 });
  });

  it('changes when one value of one row changes', async () => {
    // Prepare
    const a = await duck.parquet(manyTypes(0, 200));
    const b = await duck.parquet(
      manyTypes(0, 200).replace("'q' || i", "'q' || (CASE WHEN i = 117 THEN 0 ELSE i END)"),
    );

    // Act / Assess
    expect(digest([decode(b, 64)]).digest).not.toBe(digest([decode(a, 64)]).digest);
  });
});

describe('verifyOutputs with an ordered fingerprint', () => {
  it('is what an order-keeping rewrite records, one segment per output', async () => {
    // Prepare / Act
    const { target, result } = await rewritten(2);
    const report = await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(result.fingerprint.kind).toBe('ordered-columns-v1');
    expect(
      result.fingerprint.kind === 'ordered-columns-v1' && result.fingerprint.segments.map((s) => s.rows),
    ).toEqual(result.outputs.map((o) => o.rows));
    expect(report.fingerprint.hash).toBe(result.fingerprint.hash);
  });

  it('catches two whole rows swapped within a file, which the row multiset cannot see', async () => {
    // Prepare
    const { target, result } = await rewritten();
    const out = result.outputs[0] as { key: string };
    const tampered = await tamper(target, out.key, (c) => {
      for (const v of Object.values(c)) [v[3], v[4]] = [v[4], v[3]];
    });

    // Act
    const problems = await problemsOf(verifyOutputs(target, [tampered], result.fingerprint));

    // Assess
    expect(problems).toEqual([expect.stringMatching(/^row hash.*differing: output 0/)]);
  });

  it('catches a row duplicated over another', async () => {
    // Prepare
    const { target, result } = await rewritten();
    const out = result.outputs[0] as { key: string };
    const tampered = await tamper(target, out.key, (c) => {
      for (const v of Object.values(c)) v[10] = v[9];
    });

    // Act
    const problems = await problemsOf(verifyOutputs(target, [tampered], result.fingerprint));

    // Assess
    expect(problems.some((p) => p.startsWith('row hash'))).toBe(true);
  });

  it('catches outputs read in another order than they were written', async () => {
    // Prepare
    const { target, result } = await rewritten(2);

    // Act
    const problems = await problemsOf(
      verifyOutputs(target, [...result.outputs].reverse(), result.fingerprint),
    );

    // Assess
    expect(problems).toEqual([expect.stringMatching(/^row hash/)]);
  });

  it('fails, never passes, when the kind is lost or unknown', async () => {
    // Prepare
    const { target, result } = await rewritten();
    const { kind: _kind, ...withoutKind } = result.fingerprint as GroupFingerprint & { segments?: unknown };
    const unknown = { ...result.fingerprint, kind: 'ordered-columns-v9' } as unknown as GroupFingerprint;

    // Act
    const lost = await problemsOf(verifyOutputs(target, result.outputs, withoutKind as GroupFingerprint));
    const refused = await verifyOutputs(target, result.outputs, unknown).catch((e: unknown) => e);

    // Assess: without a kind the fingerprint reads as a multiset one, whose hash cannot match.
    expect(lost).toEqual([expect.stringMatching(/^row hash/)]);
    expect(refused).toBeInstanceOf(VerificationError);
    expect(String(refused)).toMatch(/ordered-columns-v9/);
  });
});
