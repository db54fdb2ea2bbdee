// Proves types, nullability, nesting, decimals, timestamp units/zones, field ids and key-value
// metadata survive a rewrite, for files written by DuckDB and by Spark/delta-rs — checked by DuckDB.

import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import { UnsupportedInputError } from '../../../../functions/core/errors.js';
import { exactSchemaSignature } from '../../../../functions/core/fingerprint/fingerprint.js';
import { DELTA_FIXTURES } from '../../../support/fixtures.js';
import { type DuckWorkspace, duckWorkspace } from './helpers.js';

const FIXTURES = DELTA_FIXTURES;

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

/** Many types, nulls, nesting and a 100 KB string; `seed` varies the values between files. */
function manyTypes(seed: number, rows: number): string {
  return `SELECT i::INTEGER AS i, (i * 1000000000007 + ${seed})::BIGINT AS big,
    (i / 7 + ${seed})::DECIMAL(9,2) AS d9, (i / 7)::DECIMAL(18,4) AS d18, (i / 7 - ${seed})::DECIMAL(38,10) AS d38,
    CASE WHEN i % 4 = 0 THEN NULL ELSE [i, NULL, i + ${seed}]::INTEGER[] END AS lst,
    {'a': i + ${seed}, 'b': 's' || i} AS st,
    MAP {'k' || i: i, 'z': NULL} AS mp,
    TIMESTAMPTZ '2024-01-01 00:00:00+00' + (i + ${seed}) * INTERVAL 1 second AS tstz,
    TIMESTAMP '1969-12-31 23:59:59.123456' + i * INTERVAL 1 day AS ts_us,
    (TIMESTAMP '2024-01-01' + i * INTERVAL 1 second)::TIMESTAMP_MS AS ts_ms,
    (TIMESTAMP '2024-01-01 00:00:00.123456789' + i * INTERVAL 1 second)::TIMESTAMP_NS AS ts_ns,
    DATE '2024-01-01' + i::INTEGER AS dt, TIME '12:00:00.5' AS tm,
    CASE WHEN i = 1 THEN repeat('x', 100000) ELSE 'short' || i END AS str,
    NULL::VARCHAR AS all_null, CASE WHEN i % 3 = 0 THEN NULL ELSE i END AS some_null,
    i % 2 = 0 AS flag, ('blob' || i)::BLOB AS bin, (i / 3)::FLOAT AS f32, (i / 3)::DOUBLE AS f64,
    [[1, 2], [3 + i]] AS nested, {'x': [1, i], 'y': {'z': 'q' || i}} AS deep,
    i::TINYINT AS i8, i::SMALLINT AS i16, i::UTINYINT AS u8, i::UINTEGER AS u32, (i + 9223372036854775000)::UBIGINT AS u64
    FROM range(${rows}) t(i)`;
}

async function putFiles(store: MemoryObjectStore, files: { key: string; bytes: Uint8Array }[]) {
  return Promise.all(
    files.map(async ({ key, bytes }) => ({ key, size: bytes.length, ...(await store.put(key, bytes)) })),
  );
}

/** Row multisets equal both ways (EXCEPT ALL), column types equal, key-value metadata kept. */
async function expectSameTable(
  source: MemoryObjectStore,
  inKeys: string[],
  target: MemoryObjectStore,
  outKeys: string[],
) {
  const inputs = await duck.materialise(source, inKeys);
  const outputs = await duck.materialise(target, outKeys);
  const a = `SELECT * FROM read_parquet(${inputs})`;
  const b = `SELECT * FROM read_parquet(${outputs})`;
  expect(Number(await duck.db.scalar(`SELECT count(*) FROM (${a} EXCEPT ALL ${b})`))).toBe(0);
  expect(Number(await duck.db.scalar(`SELECT count(*) FROM (${b} EXCEPT ALL ${a})`))).toBe(0);
  expect(Number(await duck.db.scalar(`SELECT count(*) FROM (${b})`))).toBe(
    Number(await duck.db.scalar(`SELECT count(*) FROM (${a})`)),
  );
  expect(await duck.db.columnTypes(b)).toEqual(await duck.db.columnTypes(a));
  const kv = async (list: string) =>
    (
      await duck.db.rows(
        `SELECT DISTINCT decode(key) AS k, decode(value) AS v FROM parquet_kv_metadata(${list}) WHERE decode(key) <> 'ARROW:schema' ORDER BY ALL`,
      )
    ).map((r) => `${r.k}=${r.v}`);
  expect(await kv(outputs)).toEqual(await kv(inputs));
  const schema = async (list: string) =>
    (
      await duck.db.rows(
        `SELECT DISTINCT name, type, repetition_type, scale, precision, field_id FROM parquet_schema(${list}) WHERE name NOT IN ('duckdb_schema', 'spark_schema', 'arrow_schema') ORDER BY ALL`,
      )
    ).map((r) => JSON.stringify(r));
  // Logical annotations: DuckDB reports only the LogicalType field and older writers set only the
  // legacy ConvertedType, so compare the spec's normalised form parsed by hyparquet instead.
  const logical = async (store: MemoryObjectStore, keys: string[]) => {
    const out = new Set<string>();
    for (const key of keys) {
      const bytes = await store.get(key);
      const meta = parquetMetadata(
        bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
      );
      out.add(JSON.stringify(exactSchemaSignature(meta.schema)));
    }
    return [...out].sort();
  };
  expect(await logical(target, outKeys)).toEqual(await logical(source, inKeys));
  return { inSchema: await schema(inputs), outSchema: await schema(outputs) };
}

describe('exact types', () => {
  it('round-trips DuckDB files with decimals, nested lists/structs/maps, zoned and unit-specific timestamps, large strings and all-null columns', async () => {
    // Prepare
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const files = await putFiles(source, [
      { key: 'd/0.parquet', bytes: await duck.parquet(manyTypes(0, 40)) },
      { key: 'd/1.parquet', bytes: await duck.parquet(manyTypes(1, 25), { compression: 'zstd' }) },
      { key: 'd/2.parquet', bytes: await duck.parquet(manyTypes(2, 30), { rowGroupSize: 7 }) },
    ]);

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'duck', files },
      { outputKey: (i) => `out/${i}.parquet`, batchRows: 16 },
    );
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(result.fingerprint.rows).toBe(95);
    expect(result.fingerprint.nullCounts.all_null).toBe(95);
    const { inSchema, outSchema } = await expectSameTable(
      source,
      files.map((f) => f.key),
      target,
      result.outputs.map((o) => o.key),
    );
    expect(outSchema).toEqual(inSchema);
  });

  it('round-trips every non-empty Spark/delta-rs fixture table, keeping Spark metadata and field ids', async () => {
    // Prepare
    const tables = (await readdir(FIXTURES)).filter((t) => t !== 'table_with_edge_timestamps');
    const summary: string[] = [];
    for (const table of tables) {
      const paths = (await readdir(join(FIXTURES, table), { recursive: true }))
        .filter((p) => p.endsWith('.parquet') && !p.includes('_delta_log'))
        .sort();
      const source = new MemoryObjectStore();
      const target = new MemoryObjectStore();
      const all = await putFiles(
        source,
        await Promise.all(
          paths.map(async (p) => ({
            key: `${table}/${p}`,
            bytes: new Uint8Array(await readFile(join(FIXTURES, table, p))),
          })),
        ),
      );
      const files = [];
      for (const f of all) {
        const rows = Number(
          await duck.db.scalar(
            `SELECT count(*) FROM read_parquet(${await duck.materialise(source, [f.key])})`,
          ),
        );
        if (rows > 0) files.push(f);
      }
      if (files.length === 0) continue;

      // Act
      const result = await rewriteGroup(
        { source, target },
        { groupId: table, files },
        { outputKey: (i) => `out/${table}/${i}.parquet` },
      );
      await verifyOutputs(target, result.outputs, result.fingerprint);

      // Assess
      const { inSchema, outSchema } = await expectSameTable(
        source,
        files.map((f) => f.key),
        target,
        result.outputs.map((o) => o.key),
      );
      expect(outSchema).toEqual(inSchema);
      summary.push(`${relative(FIXTURES, join(FIXTURES, table))}:${files.length}->${result.outputs.length}`);
    }
    expect(summary.length).toBeGreaterThanOrEqual(8);
  });

  it("refuses Spark's INT96 timestamps by default, naming the file, the table setting and the CLI flag", async () => {
    // Prepare
    const dir = join(FIXTURES, 'table_with_edge_timestamps');
    const name = (await readdir(dir)).find((p) => p.endsWith('.parquet')) as string;
    const source = new MemoryObjectStore();
    const files = await putFiles(source, [
      { key: `edge/${name}`, bytes: new Uint8Array(await readFile(join(dir, name))) },
    ]);

    // Act
    const err = await rewriteGroup(
      { source, target: new MemoryObjectStore() },
      { groupId: 'int96', files },
      { outputKey: (i) => `o/${i}` },
    ).catch((e: unknown) => e);

    // Assess
    expect(err).toBeInstanceOf(UnsupportedInputError);
    expect((err as UnsupportedInputError).key).toBe(`edge/${name}`);
    expect((err as Error).message).toMatch(
      /INT96 timestamps.*set schemaFidelity: "logical" on the table \(on the CLI: --schema-fidelity logical\)/,
    );
  });

  it('converts INT96 only when asked, to TIMESTAMP(MICROS, UTC), exactly — including year 9999', async () => {
    // Prepare
    const dir = join(FIXTURES, 'table_with_edge_timestamps');
    const names = (await readdir(dir)).filter((p) => p.endsWith('.parquet')).sort();
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const files = await putFiles(
      source,
      await Promise.all(
        names.map(async (n) => ({ key: `edge/${n}`, bytes: new Uint8Array(await readFile(join(dir, n))) })),
      ),
    );

    // Act
    const result = await rewriteGroup(
      { source, target },
      { groupId: 'int96', files },
      { outputKey: (i) => `o/${i}.parquet`, int96: 'convert' },
    );
    await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    const inputs = await duck.materialise(
      source,
      files.map((f) => f.key),
    );
    const outputs = await duck.materialise(
      target,
      result.outputs.map((o) => o.key),
    );
    const q = (list: string) =>
      duck.db.rows(
        `SELECT epoch_us(BIG_DATE) AS big, epoch_us(NORMAL_DATE) AS normal, SOME_VALUE FROM read_parquet(${list}) ORDER BY ALL`,
      );
    const before = await q(inputs);
    expect(before.length).toBe(2);
    expect(await q(outputs)).toEqual(before);
    const types = await duck.db.columnTypes(`SELECT * FROM read_parquet(${outputs})`);
    expect(types.map((t) => t.type)).toEqual([
      'TIMESTAMP WITH TIME ZONE',
      'TIMESTAMP WITH TIME ZONE',
      'INTEGER',
    ]);
    const kv = await duck.db.scalar(
      `SELECT count(DISTINCT decode(key)) FROM parquet_kv_metadata(${outputs}) WHERE decode(key) LIKE 'org.apache.spark%'`,
    );
    expect(Number(kv)).toBe(4);
  });
});
