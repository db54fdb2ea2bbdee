// Proves schema fidelity `logical` rewrites inputs in legacy physical forms (Spark's INT96, parquet-mr's
// FIXED_LEN_BYTE_ARRAY / BYTE_ARRAY decimals, 2-level lists, MAP_KEY_VALUE maps) into the standard forms
// with the same values — read back by hyparquet, an independent reader, and verified by the fingerprint —
// refuses an INT96 value no INT64 unit holds, and that `exact` (the default) still refuses every one of them but
// the decimals, which it writes in their own form (decimal-form.test.ts covers that in depth).

import { parquetMetadata, parquetReadObjects } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { DeletedRows } from '../../../../functions/core/deletes/deleted-rows.js';
import { UnsupportedInputError } from '../../../../functions/core/errors.js';
import { exactSchemaSignature } from '../../../../functions/core/fingerprint/fingerprint.js';
import type { RewriteOptions } from '../../../../functions/ports/parquet-engine.js';
import {
  int96File,
  legacyDecimalFile,
  mapKeyValueFile,
  twoLevelListFile,
} from '../../../support/legacy-parquet.js';
import { duckWorkspace } from './helpers.js';

const arrayBuffer = (b: Uint8Array) =>
  b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;

/** Every row as hyparquet decodes it, timestamps as exact nanosecond bigints whatever their unit. */
async function rowsOf(bytes: Uint8Array): Promise<string[]> {
  const rows = await parquetReadObjects({
    file: arrayBuffer(bytes),
    parsers: {
      timestampFromNanoseconds: (n: bigint) => n,
      timestampFromMicroseconds: (n: bigint) => n * 1000n,
      timestampFromMilliseconds: (n: bigint) => n * 1_000_000n,
    } as never,
  });
  return rows.map((r) => JSON.stringify(r, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)));
}

function schemaOf(bytes: Uint8Array): unknown[] {
  return exactSchemaSignature(parquetMetadata(arrayBuffer(bytes)).schema);
}

/** Stores `files` as inputs and rewrites them as one group; returns the stores, the result and the outputs' bytes. */
async function rewrite(
  files: readonly Uint8Array[],
  options: Partial<RewriteOptions> = {},
  expectedOutputFiles?: number,
) {
  const source = new MemoryObjectStore();
  const target = new MemoryObjectStore();
  const inputs = await Promise.all(
    files.map(async (bytes, i) => {
      const key = `in/${i}.parquet`;
      return { key, size: bytes.length, ...(await source.put(key, bytes)) };
    }),
  );
  const result = await rewriteGroup(
    { source, target },
    {
      groupId: 'legacy',
      files: inputs,
      ...(expectedOutputFiles === undefined ? {} : { expectedOutputFiles }),
    },
    // Snappy: hyparquet, the independent reader below, has no ZSTD decoder of its own.
    { outputKey: (i) => `out/${i}.parquet`, codec: 'snappy', ...options },
  );
  const outputs = await Promise.all(result.outputs.map((o) => target.get(o.key)));
  return { source, target, inputs, result, outputs };
}

async function refusal(files: readonly Uint8Array[], options: Partial<RewriteOptions> = {}) {
  const target = new MemoryObjectStore();
  const source = new MemoryObjectStore();
  const inputs = await Promise.all(
    files.map(async (bytes, i) => {
      const key = `in/${i}.parquet`;
      return { key, size: bytes.length, ...(await source.put(key, bytes)) };
    }),
  );
  const err = await rewriteGroup(
    { source, target },
    { groupId: 'legacy', files: inputs },
    { outputKey: (i) => `out/${i}.parquet`, ...options },
  ).catch((e: unknown) => e);
  return { err: err as UnsupportedInputError, written: (await target.list('')).objects.length };
}

const DAY_NS = 86_400_000_000_000n;

describe("schema fidelity 'logical'", () => {
  it('writes INT96 timestamps as INT64 TIMESTAMP(MICROS, UTC), exactly, including year 9999 and nulls', async () => {
    // Prepare: whole microseconds, as Spark writes them.
    const a = int96File([0n, 1_700_000_000_123_456_000n, null, 253_402_300_799_999_999_000n]);
    const b = int96File([-DAY_NS + 5_000n, 86_399_999_999_000n]);

    // Act
    const { result, outputs, target } = await rewrite([a, b], { schemaFidelity: 'logical' });
    const report = await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(report.rows).toBe(6);
    expect(outputs.map((o) => schemaOf(o)[2])).toEqual(
      outputs.map(() => ['ts', 'OPTIONAL', 0, 'INT64', 0, null, expect.objectContaining({ unit: 'MICROS' })]),
    );
    expect((await Promise.all(outputs.map(rowsOf))).flat()).toEqual([
      ...(await rowsOf(a)),
      ...(await rowsOf(b)),
    ]);
  });

  it('writes an INT96 column with sub-microsecond digits as TIMESTAMP(NANOS), keeping every nanosecond', async () => {
    // Prepare: Impala keeps nanoseconds.
    const file = int96File([1_700_000_000_123_456_789n, null, 1n]);

    // Act
    const { result, outputs, target } = await rewrite([file, file], { schemaFidelity: 'logical' });
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(schemaOf(outputs[0] as Uint8Array)[2]).toEqual([
      'ts',
      'OPTIONAL',
      0,
      'INT64',
      0,
      null,
      { type: 'TIMESTAMP', unit: 'NANOS', isAdjustedToUTC: true },
    ]);
    expect((await Promise.all(outputs.map(rowsOf))).flat()).toEqual([
      ...(await rowsOf(file)),
      ...(await rowsOf(file)),
    ]);
  });

  it('picks the unit of a file larger than its footer read from its INT96 values read by range, refusing before any write', async () => {
    // Prepare: 12,000 distinct values (~140 KB, past the 64 KiB first footer read); the last one alone has nanoseconds.
    const values = Array.from({ length: 12_000 }, (_, i) => BigInt(i) * 1_000_000n);
    const nanos = int96File([...values, 5n]);
    const far = int96File([...values, 5n, 253_402_300_799_000_000_000n]);

    // Act
    const { result, outputs, target } = await rewrite([nanos, nanos], { schemaFidelity: 'logical' });
    await verifyOutputs(target, result.outputs, result.fingerprint);
    const refused = await refusal([far, nanos], { schemaFidelity: 'logical' });

    // Assess
    expect(nanos.length).toBeGreaterThan(128 * 1024);
    expect((schemaOf(outputs[0] as Uint8Array)[2] as unknown[])[6]).toEqual({
      type: 'TIMESTAMP',
      unit: 'NANOS',
      isAdjustedToUTC: true,
    });
    expect((await Promise.all(outputs.map(rowsOf))).flat()).toEqual([
      ...(await rowsOf(nanos)),
      ...(await rowsOf(nanos)),
    ]);
    expect(refused.err.message).toContain('INT96 column ts holds 5 ns');
    expect(refused.written).toBe(0);
  });

  it('converts INT96 the same way on worker threads, each output with its rows in order', async () => {
    // Prepare: two outputs, so each is encoded by a worker that reads and converts its own inputs.
    const files = [0, 1, 2, 3].map((i) => int96File([BigInt(i) * DAY_NS + 7n, null, BigInt(i)]));

    // Act
    const { result, outputs, target } = await rewrite(files, { schemaFidelity: 'logical', workers: 2 }, 2);
    await verifyOutputs(target, result.outputs, result.fingerprint, { workers: 2 });

    // Assess
    expect(outputs).toHaveLength(2);
    expect(outputs.map((o) => (schemaOf(o)[2] as unknown[])[6])).toEqual([
      { type: 'TIMESTAMP', unit: 'NANOS', isAdjustedToUTC: true },
      { type: 'TIMESTAMP', unit: 'NANOS', isAdjustedToUTC: true },
    ]);
    const expected = (await Promise.all(files.map(rowsOf))).flat();
    expect((await Promise.all(outputs.map(rowsOf))).flat()).toEqual(expected);
  });

  it.each([
    { threads: 'one thread', workers: 1, outputFiles: 1 },
    { threads: 'workers', workers: 2, outputFiles: 2 },
  ])(
    'writes INT96 inputs with row lineage on $threads: timestamps in their unit, lineage inherited before deletes',
    async ({ workers, outputFiles }) => {
      // Prepare: sub-microsecond digits (NANOS) in Iceberg v3 files without stored lineage, row 1 of each deleted.
      const files = [0, 1, 2, 3].map((i) => int96File([BigInt(i) * DAY_NS + 7n, null, BigInt(i)]));
      const source = new MemoryObjectStore();
      const target = new MemoryObjectStore();
      const inputs = await Promise.all(
        files.map(async (bytes, i) => {
          const key = `in/${i}.parquet`;
          const stored = await source.put(key, bytes);
          const rowLineage = { firstRowId: 100n * BigInt(i), sequenceNumber: BigInt(i + 1) };
          return { key, size: bytes.length, ...stored, deleted: DeletedRows.of([1]), rowLineage };
        }),
      );

      // Act
      const result = await rewriteGroup(
        { source, target },
        { groupId: 'legacy', files: inputs, expectedOutputFiles: outputFiles },
        { outputKey: (i) => `out/${i}.parquet`, codec: 'snappy', schemaFidelity: 'logical', workers },
      );
      await verifyOutputs(target, result.outputs, result.fingerprint, { workers });
      const outputs = await Promise.all(result.outputs.map((o) => target.get(o.key)));

      // Assess: the timestamp column and both lineage columns in every output's schema; each kept row's values.
      expect(outputs).toHaveLength(outputFiles);
      for (const o of outputs) {
        const leaves = schemaOf(o) as unknown[][];
        expect(leaves[2]?.[6]).toEqual({ type: 'TIMESTAMP', unit: 'NANOS', isAdjustedToUTC: true });
        expect(leaves.slice(3).map((l) => [l[0], l[3], l[5]])).toEqual([
          ['_row_id', 'INT64', 2147483540],
          ['_last_updated_sequence_number', 'INT64', 2147483539],
        ]);
      }
      const expected = [0, 1, 2, 3].flatMap((i) =>
        [0, 2].map((p) =>
          JSON.stringify({
            id: p,
            ts: `${p === 0 ? BigInt(i) * DAY_NS + 7n : BigInt(i)}n`,
            _row_id: `${100n * BigInt(i) + BigInt(p)}n`,
            _last_updated_sequence_number: `${i + 1}n`,
          }),
        ),
      );
      expect((await Promise.all(outputs.map(rowsOf))).flat()).toEqual(expected);
    },
  );

  it('refuses an INT96 value with nanoseconds in a column NANOS cannot hold, naming the file, the column and the value', async () => {
    // Prepare: 1 ns past the epoch needs NANOS; 9999-12-31 is past what INT64 nanoseconds reach.
    const good = int96File([0n]);
    const bad = int96File([0n, 1_001n, 253_402_300_799_000_000_000n]);

    // Act
    const { err, written } = await refusal([good, bad], { schemaFidelity: 'logical' });

    // Assess
    expect(err).toBeInstanceOf(UnsupportedInputError);
    expect(err.key).toBe('in/1.parquet');
    expect(err.message).toContain('INT96 column ts holds 1001 ns (1970-01-01T00:00:00.000001001Z)');
    expect(err.message).toContain('9999-12-31T23:59:59.000000000Z');
    expect(written).toBe(0);
  });

  it('writes FIXED_LEN_BYTE_ARRAY and BYTE_ARRAY decimals as the standard INT32 / INT64 decimals, same values', async () => {
    // Prepare
    const a = legacyDecimalFile([12_345n, null, -99_999n, 0n]);
    const b = legacyDecimalFile([999_999_999n, -999_999_999n]);

    // Act
    const { result, outputs, target } = await rewrite([a, b], { schemaFidelity: 'logical' });
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    const schema = schemaOf(outputs[0] as Uint8Array);
    expect(schema.slice(2)).toEqual([
      ['fixed', 'OPTIONAL', 0, 'INT32', 0, null, { type: 'DECIMAL', precision: 9, scale: 2 }],
      ['binary', 'OPTIONAL', 0, 'INT64', 0, null, { type: 'DECIMAL', precision: 18, scale: 4 }],
    ]);
    expect((await Promise.all(outputs.map(rowsOf))).flat()).toEqual([
      ...(await rowsOf(a)),
      ...(await rowsOf(b)),
    ]);
  });

  it("writes DuckDB's 16-byte DECIMAL(20,2) as the writer's 9-byte form, same values (exact keeps its 16 bytes)", async () => {
    // Prepare
    const duck = await duckWorkspace();
    const file = await duck
      .parquet(`SELECT i::INTEGER AS id, (i * 1234567.89 - 99)::DECIMAL(20,2) AS d FROM range(20) t(i)`)
      .finally(() => duck.close());

    // Act
    const exact = await rewrite([file, file]);
    await verifyOutputs(exact.target, exact.result.outputs, exact.result.fingerprint);
    const { result, outputs, target } = await rewrite([file, file], { schemaFidelity: 'logical' });
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(schemaOf(exact.outputs[0] as Uint8Array)).toEqual(schemaOf(file));
    expect(schemaOf(file)[2]).toContain(16);
    expect((await Promise.all(exact.outputs.map(rowsOf))).flat()).toEqual([
      ...(await rowsOf(file)),
      ...(await rowsOf(file)),
    ]);
    expect(schemaOf(outputs[0] as Uint8Array)[2]).toEqual([
      'd',
      'OPTIONAL',
      0,
      'FIXED_LEN_BYTE_ARRAY',
      9,
      null,
      { type: 'DECIMAL', precision: 20, scale: 2 },
    ]);
    expect((await Promise.all(outputs.map(rowsOf))).flat()).toEqual([
      ...(await rowsOf(file)),
      ...(await rowsOf(file)),
    ]);
  });

  it('writes 2-level lists as 3-level LISTs, keeping null, empty and filled lists', async () => {
    // Prepare
    const a = twoLevelListFile([[1, 2], null, [], [3]]);
    const b = twoLevelListFile([[-7, 0, 7, 2_147_483_647]]);

    // Act
    const { result, outputs, target } = await rewrite([a, b], { schemaFidelity: 'logical' });
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(schemaOf(outputs[0] as Uint8Array).slice(2)).toEqual([
      ['tags', 'OPTIONAL', 1, '', 0, null, { type: 'LIST' }],
      ['list', 'REPEATED', 1, '', 0, null, null],
      ['array', 'REQUIRED', 0, 'INT32', 0, null, null],
    ]);
    expect((await Promise.all(outputs.map(rowsOf))).flat()).toEqual([
      ...(await rowsOf(a)),
      ...(await rowsOf(b)),
    ]);
  });

  it('writes MAP_KEY_VALUE maps as standard MAPs, keeping null maps, empty maps and null values', async () => {
    // Prepare
    const a = mapKeyValueFile([{ a: 1, b: null }, null, {}]);
    const b = mapKeyValueFile([{ z: -1 }]);

    // Act
    const { result, outputs, target } = await rewrite([a, b], { schemaFidelity: 'logical' });
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(schemaOf(outputs[0] as Uint8Array)[3]).toEqual(['map', 'REPEATED', 2, '', 0, null, null]);
    expect((await Promise.all(outputs.map(rowsOf))).flat()).toEqual([
      ...(await rowsOf(a)),
      ...(await rowsOf(b)),
    ]);
  });

  it('fingerprints logical values: a legacy decimal input and the same values in the standard form hash alike', async () => {
    // Prepare: the same rows, once as parquet-mr's legacy FIXED_LEN_BYTE_ARRAY / BYTE_ARRAY, once as INT32 / INT64.
    const unscaled = [12_345n, null, -99_999n];
    const legacy = legacyDecimalFile(unscaled);
    const standard = new Uint8Array(
      parquetWriteBuffer({
        codec: 'UNCOMPRESSED',
        columnData: [
          { name: 'id', data: Int32Array.from(unscaled, (_, i) => i) },
          { name: 'fixed', data: [...unscaled] },
          { name: 'binary', data: unscaled.map((v) => (v === null ? null : v * 100n)) },
        ],
        schema: [
          { name: 'spark_schema', num_children: 3 },
          { name: 'id', type: 'INT32', repetition_type: 'REQUIRED' },
          {
            name: 'fixed',
            type: 'INT32',
            repetition_type: 'OPTIONAL',
            converted_type: 'DECIMAL',
            precision: 9,
            scale: 2,
          },
          {
            name: 'binary',
            type: 'INT64',
            repetition_type: 'OPTIONAL',
            converted_type: 'DECIMAL',
            precision: 18,
            scale: 4,
          },
        ],
      } as never),
    );

    // Act
    const fromLegacy = await rewrite([legacy, legacy], { schemaFidelity: 'logical' });
    const fromStandard = await rewrite([standard, standard]);

    // Assess
    expect(fromLegacy.result.fingerprint).toEqual(fromStandard.result.fingerprint);
  });
});

describe("schema fidelity 'exact' (the default)", () => {
  it('still refuses INT96, naming the table setting and the CLI flag that convert it', async () => {
    // Prepare
    const file = int96File([0n, 1_000n]);

    // Act
    const { err, written } = await refusal([file]);

    // Assess
    expect(err).toBeInstanceOf(UnsupportedInputError);
    expect(err.message).toContain(
      'columns ts are INT96 timestamps, which the writer cannot write as they are; set schemaFidelity: "logical" on the table (on the CLI: --schema-fidelity logical) to write them as INT64 TIMESTAMP',
    );
    expect(written).toBe(0);
  });

  it('keeps legacy FIXED_LEN_BYTE_ARRAY and BYTE_ARRAY decimals in their form, same values', async () => {
    // Prepare
    const file = legacyDecimalFile([12_345n, null, -99_999n, 0n, 999_999_999n, -999_999_999n]);

    // Act
    const { result, outputs, target } = await rewrite([file, file], { schemaFidelity: 'exact' });
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(schemaOf(outputs[0] as Uint8Array)).toEqual(schemaOf(file));
    expect((await Promise.all(outputs.map(rowsOf))).flat()).toEqual([
      ...(await rowsOf(file)),
      ...(await rowsOf(file)),
    ]);
  });

  it.each([
    [
      '2-level lists',
      () => twoLevelListFile([[1], [2]]),
      /\["array","REPEATED",0,"INT32".* would be written as/,
    ],
    ['MAP_KEY_VALUE maps', () => mapKeyValueFile([{ a: 1 }]), /\["map","REPEATED",2.* would be written as/],
  ])("still refuses %s with today's message, writing nothing", async (_, make, detail) => {
    // Prepare
    const file = make();

    // Act
    const { err, written } = await refusal([file, file], { schemaFidelity: 'exact' });

    // Assess
    expect(err).toBeInstanceOf(UnsupportedInputError);
    expect(err.key).toBe('in/0.parquet');
    expect(err.message).toContain('the writer cannot reproduce its schema exactly: ');
    expect(err.message).toMatch(detail);
    // Only the physical form differs, so the refusal says which setting keeps the values in the standard form.
    expect(err.message).toMatch(
      /; set schemaFidelity: "logical" on the table \(on the CLI: --schema-fidelity logical\) to write it in the standard form, values unchanged\./,
    );
    expect(written).toBe(0);
  });
});
