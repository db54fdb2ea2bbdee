// Proves decimals stored as Avro-based writers store them — FIXED_LEN_BYTE_ARRAY(5) for decimal(10, 2), BYTE_ARRAY
// for decimal(20, 4) — are rewritten under schema fidelity `exact` (the default) in exactly that physical form, on
// every write path (one thread, several outputs on workers, one output split across workers, native page
// compression, sorted): each output's schema element is the input's (type, length, annotation), DuckDB reads the
// same rows with the same DECIMAL types, the columns carry no min/max (the encoder would order their bytes unsigned,
// which is wrong for negatives), verify passes the outputs and catches a flipped byte in a decimal page; that a
// legacy-form input and the same values in the writer's standard form still fingerprint alike (rows and null counts);
// and that a base file Hudi itself wrote (test/fixtures/hudi) rewrites with its schema unchanged.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { type ColumnChunk, parquetMetadata } from 'hyparquet';
import { parquetWriteBuffer } from 'hyparquet-writer';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { VerificationError } from '../../../../functions/core/errors.js';
import { exactSchemaSignature } from '../../../../functions/core/fingerprint/fingerprint.js';
import type { RewriteOptions } from '../../../../functions/ports/parquet-engine.js';
import { HUDI_FIXTURES } from '../../../support/fixtures.js';
import { type DuckWorkspace, duckWorkspace, fileOf } from './helpers.js';

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

const arrayBuffer = (b: Uint8Array) =>
  b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;

const FILES = 4;
const ROWS_PER_FILE = 3_000;
const KEYS = Array.from({ length: FILES }, (_, f) => `in/part-${f}.parquet`);
const AMOUNT_MAX = 10n ** 10n - 1n;
const BIG_MAX = 10n ** 20n - 1n;

/** Row `i` of file `f`: the first rows of each file are the edge values (null, zero, ±1, the precision's max and min). */
function valuesOf(f: number, i: number): { amount: bigint | null; big: bigint | null } {
  const edges: [bigint | null, bigint | null][] = [
    [null, null],
    [0n, 0n],
    [-1n, -1n],
    [1n, 1n],
    [AMOUNT_MAX, BIG_MAX],
    [-AMOUNT_MAX, -BIG_MAX],
  ];
  const edge = edges[i];
  if (edge !== undefined) return { amount: edge[0], big: edge[1] };
  const n = BigInt(i * 7919 + f * 104_729);
  const sign = i % 3 === 0 ? -1n : 1n;
  return {
    amount: i % 17 === 0 ? null : sign * ((n * 1_234_567n) % AMOUNT_MAX),
    big: i % 19 === 0 ? null : -sign * ((n * 98_765_432_123_457n) % BIG_MAX),
  };
}

/** A file as parquet-avro writes these columns: FIXED_LEN_BYTE_ARRAY(5) DECIMAL(10, 2), BYTE_ARRAY DECIMAL(20, 4). */
function avroStyleFile(f: number): Uint8Array {
  const rows = Array.from({ length: ROWS_PER_FILE }, (_, i) => valuesOf(f, i));
  return new Uint8Array(
    parquetWriteBuffer({
      columnData: [
        { name: 'id', data: BigInt64Array.from(rows, (_, i) => BigInt(f * ROWS_PER_FILE + i)) },
        { name: 'amount', data: rows.map((r) => r.amount) },
        { name: 'big', data: rows.map((r) => r.big) },
      ],
      schema: [
        { name: 'hoodie_record', num_children: 3 },
        { name: 'id', type: 'INT64', repetition_type: 'REQUIRED' },
        {
          name: 'amount',
          type: 'FIXED_LEN_BYTE_ARRAY',
          type_length: 5,
          repetition_type: 'OPTIONAL',
          converted_type: 'DECIMAL',
          logical_type: { type: 'DECIMAL', precision: 10, scale: 2 },
          precision: 10,
          scale: 2,
        },
        {
          name: 'big',
          type: 'BYTE_ARRAY',
          repetition_type: 'OPTIONAL',
          converted_type: 'DECIMAL',
          logical_type: { type: 'DECIMAL', precision: 20, scale: 4 },
          precision: 20,
          scale: 4,
        },
      ],
    } as never),
  );
}

/** An unscaled decimal as DuckDB prints it cast to VARCHAR at `scale`. */
function decimalText(unscaled: bigint | null, scale: number): string | null {
  if (unscaled === null) return null;
  const sign = unscaled < 0n ? '-' : '';
  const digits = (unscaled < 0n ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
  return `${sign}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** Every row the generator made, as DuckDB's text, sorted (a multiset). */
function expectedRows(): string[] {
  const rows: string[] = [];
  for (let f = 0; f < FILES; f++)
    for (let i = 0; i < ROWS_PER_FILE; i++) {
      const v = valuesOf(f, i);
      rows.push(
        JSON.stringify([String(f * ROWS_PER_FILE + i), decimalText(v.amount, 2), decimalText(v.big, 4)]),
      );
    }
  return rows.sort();
}

async function inputs(): Promise<MemoryObjectStore> {
  const source = new MemoryObjectStore();
  for (let f = 0; f < FILES; f++) await source.put(KEYS[f] as string, avroStyleFile(f));
  return source;
}

async function rewrite(source: MemoryObjectStore, options: Partial<RewriteOptions>, outputs: number) {
  const target = new MemoryObjectStore();
  const files = await Promise.all(KEYS.map((key) => fileOf(source, key)));
  const result = await rewriteGroup(
    { source, target },
    { groupId: 'g', files, expectedOutputFiles: outputs },
    // Snappy unless asked: its blocks end in a literal, which the flipped-byte test relies on.
    {
      outputKey: (i) => `out/part-${i}.parquet`,
      codec: 'snappy',
      rowGroupRows: 1_000,
      batchRows: 700,
      ...options,
    },
  );
  return { target, result };
}

/** DuckDB's rows of `keys` in `store` (decimals cast to text, exactly), sorted, and its column types. */
async function duckRows(store: MemoryObjectStore, keys: readonly string[]) {
  const files = await duck.materialise(store, keys);
  const rows = await duck.db.rows(
    `SELECT CAST(id AS VARCHAR) AS id, CAST(amount AS VARCHAR) AS amount, CAST(big AS VARCHAR) AS big FROM read_parquet(${files})`,
  );
  const types = await duck.db.columnTypes(`SELECT amount, big FROM read_parquet(${files})`);
  return {
    rows: rows.map((r) => JSON.stringify([r.id, r.amount, r.big])).sort(),
    types: types.map((t) => t.type),
  };
}

function chunkOf(bytes: Uint8Array, column: string): ColumnChunk[] {
  return parquetMetadata(arrayBuffer(bytes)).row_groups.flatMap((g) =>
    g.columns.filter((c) => c.meta_data?.path_in_schema.join('.') === column),
  );
}

describe("decimals in their input's physical form under schema fidelity 'exact'", () => {
  const paths: [string, Partial<RewriteOptions>, number][] = [
    ['one thread', { workers: 1 }, 1],
    ['several outputs on workers', { workers: 2 }, 2],
    ['one output split across workers', { workers: 2 }, 1],
    ['native page compression', { workers: 1, codec: 'zstd', pageCompression: 'native' }, 1],
    ['native page compression on split workers', { workers: 2, codec: 'zstd', pageCompression: 'native' }, 1],
    ['sorted', { workers: 1, sort: { columns: ['id'], memoryBudgetBytes: 64 * 1024 * 1024 } }, 1],
  ];
  it.each(paths)(
    'writes FIXED_LEN_BYTE_ARRAY(5) and BYTE_ARRAY decimals as they are, same rows, no min/max (%s)',
    async (_path, options, outputCount) => {
      // Prepare
      const source = await inputs();
      const inputSchema = exactSchemaSignature(
        parquetMetadata(arrayBuffer(await source.get(KEYS[0] as string))).schema,
      );

      // Act
      const { target, result } = await rewrite(source, options, outputCount);
      await verifyOutputs(target, result.outputs, result.fingerprint);

      // Assess: each output's schema is the input's, element for element (root name aside).
      expect(result.outputs).toHaveLength(outputCount);
      for (const o of result.outputs) {
        const bytes = await target.get(o.key);
        expect(exactSchemaSignature(parquetMetadata(arrayBuffer(bytes)).schema)).toEqual(inputSchema);
        const amount = parquetMetadata(arrayBuffer(bytes)).schema.find((e) => e.name === 'amount');
        expect(amount).toMatchObject({
          type: 'FIXED_LEN_BYTE_ARRAY',
          type_length: 5,
          converted_type: 'DECIMAL',
          precision: 10,
          scale: 2,
          logical_type: { type: 'DECIMAL', precision: 10, scale: 2 },
        });
        // Statistics: absent for both decimal columns (no min/max, no column index); the id column keeps them.
        for (const column of ['amount', 'big']) {
          for (const chunk of chunkOf(bytes, column)) {
            expect(chunk.meta_data?.statistics?.min_value).toBeUndefined();
            expect(chunk.meta_data?.statistics?.max_value).toBeUndefined();
            expect(chunk.meta_data?.statistics?.min).toBeUndefined();
            expect(chunk.meta_data?.statistics?.max).toBeUndefined();
            expect(chunk.column_index_offset).toBeUndefined();
          }
        }
        expect(chunkOf(bytes, 'id')[0]?.meta_data?.statistics?.max_value).toBeDefined();
      }
      // DuckDB, an independent reader, reads the generator's rows from the outputs, as it does from the inputs.
      const expected = expectedRows();
      const before = await duckRows(source, KEYS);
      const after = await duckRows(
        target,
        result.outputs.map((o) => o.key),
      );
      expect(before.rows).toEqual(expected);
      expect(after.rows).toEqual(expected);
      expect(after.types).toEqual(['DECIMAL(10,2)', 'DECIMAL(20,4)']);
      expect(after.types).toEqual(before.types);
    },
  );

  it('catches a byte flipped in a FIXED_LEN_BYTE_ARRAY decimal page of an output', async () => {
    // Prepare
    const source = await inputs();
    const { target, result } = await rewrite(source, { workers: 1 }, 1);
    const output = result.outputs[0] as { key: string };
    const bytes = new Uint8Array(await target.get(output.key));
    const chunk = chunkOf(bytes, 'amount')[0]?.meta_data;
    if (chunk === undefined) throw new Error('no amount chunk');
    // The chunk's last byte: the low byte of the last value of its last page (PLAIN, no dictionary: the values
    // are random), which Snappy ends every block with as a literal — so the page still decodes, to another value.
    expect(chunk.encodings).not.toContain('RLE_DICTIONARY');
    const start = chunk.dictionary_page_offset ?? chunk.data_page_offset;
    const at = Number(start + chunk.total_compressed_size) - 1;
    bytes[at] = (bytes[at] as number) ^ 0x01;
    await target.put(output.key, bytes);
    const corrupted = await fileOf(target, output.key);

    // Act
    const verdict = verifyOutputs(target, [corrupted], result.fingerprint);

    // Assess
    const err = await verdict.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(VerificationError);
  });

  it('fingerprints the Avro forms like the same values in the INT64 / FIXED_LEN_BYTE_ARRAY(9) forms the writer picks', async () => {
    // Prepare: the same rows, once as the Avro writer stores them, once as the engine would in its own forms.
    const source = await inputs();
    const standard = new MemoryObjectStore();
    for (let f = 0; f < FILES; f++) {
      const file = parquetMetadata(arrayBuffer(await source.get(KEYS[f] as string)));
      expect(file.num_rows).toBe(BigInt(ROWS_PER_FILE));
      const rows = Array.from({ length: ROWS_PER_FILE }, (_, i) => valuesOf(f, i));
      await standard.put(
        KEYS[f] as string,
        new Uint8Array(
          parquetWriteBuffer({
            columnData: [
              { name: 'id', data: BigInt64Array.from(rows, (_, i) => BigInt(f * ROWS_PER_FILE + i)) },
              { name: 'amount', data: rows.map((r) => r.amount) },
              { name: 'big', data: rows.map((r) => r.big) },
            ],
            schema: [
              { name: 'root', num_children: 3 },
              { name: 'id', type: 'INT64', repetition_type: 'REQUIRED' },
              {
                name: 'amount',
                type: 'INT64',
                repetition_type: 'OPTIONAL',
                converted_type: 'DECIMAL',
                precision: 10,
                scale: 2,
              },
              {
                name: 'big',
                type: 'FIXED_LEN_BYTE_ARRAY',
                type_length: 9,
                repetition_type: 'OPTIONAL',
                converted_type: 'DECIMAL',
                precision: 20,
                scale: 4,
              },
            ],
          } as never),
        ),
      );
    }

    // Act
    const avro = await rewrite(source, { workers: 1 }, 1);
    const engine = await rewrite(standard, { workers: 1 }, 1);

    // Assess: the rows' digest and null counts agree; only the schema part (another physical form) differs.
    const { schemaFingerprint: a, ...avroRows } = avro.result.fingerprint as { schemaFingerprint: string };
    const { schemaFingerprint: b, ...engineRows } = engine.result.fingerprint as {
      schemaFingerprint: string;
    };
    expect(avroRows).toEqual(engineRows);
    expect(a).not.toBe(b);
  });

  it('rewrites a base file Hudi itself wrote (FIXED_LEN_BYTE_ARRAY(7) decimal(15, 2), (5) decimal(10, 2)) in its own schema, same rows', async () => {
    // Prepare: a real base file of test/fixtures/hudi (Spark's Hudi 1.x writer, Avro fixed decimals), twice.
    const bytes = new Uint8Array(
      await readFile(
        join(
          HUDI_FIXTURES,
          'mor_v9_txns_simple_nometa/region=eu/c06fe141-9f11-46fb-aa70-d7f9d2dcca2f-0_0-3-6_20260307135827749.parquet',
        ),
      ),
    );
    const source = new MemoryObjectStore();
    const keys = ['in/a.parquet', 'in/b.parquet'];
    for (const key of keys) await source.put(key, bytes);
    const target = new MemoryObjectStore();

    // Act
    const result = await rewriteGroup(
      { source, target },
      {
        groupId: 'hudi',
        files: await Promise.all(keys.map((k) => fileOf(source, k))),
        expectedOutputFiles: 1,
      },
      { outputKey: (i) => `out/${i}.parquet`, codec: 'snappy' },
    );
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess: the schema element for element, both decimals among them; DuckDB's rows, twice the input's.
    const inputMeta = parquetMetadata(arrayBuffer(bytes));
    const output = await target.get(result.outputs[0]?.key as string);
    expect(exactSchemaSignature(parquetMetadata(arrayBuffer(output)).schema)).toEqual(
      exactSchemaSignature(inputMeta.schema),
    );
    expect(
      inputMeta.schema.filter((e) => e.type === 'FIXED_LEN_BYTE_ARRAY' && e.converted_type === 'DECIMAL'),
    ).toHaveLength(2);
    const read = async (store: MemoryObjectStore, ks: readonly string[]) =>
      (
        await duck.db.rows(
          `SELECT txn_id, CAST(amount AS VARCHAR) AS amount, CAST(fee_amount AS VARCHAR) AS fee FROM read_parquet(${await duck.materialise(store, ks)})`,
        )
      )
        .map((r) => JSON.stringify(r))
        .sort();
    const before = await read(source, keys);
    expect(before.length).toBeGreaterThan(0);
    expect(await read(target, [result.outputs[0]?.key as string])).toEqual(before);
  });
});
