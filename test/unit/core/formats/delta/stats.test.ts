// The `stats` of an add for a file we wrote: computed from the Parquet footer alone, they must say what Spark
// Delta would say from the rows (hand-derived here from the generating SQL), and agree with the stats real
// writers left in the vendored tables.
import { readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tableFromArrays, tableToIPC } from 'apache-arrow';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../../functions/adapters/memory-object-store.js';
import { pw, writerProperties } from '../../../../../functions/adapters/parquet-wasm/wasm.js';
import { parseActions, parseStats } from '../../../../../functions/core/formats/delta/actions.js';
import { parseDeltaSchema } from '../../../../../functions/core/formats/delta/schema.js';
import {
  DeltaStatsConfigError,
  type DeltaStatsTable,
  deltaFileStats,
  deltaFileStatsOf,
  parseStatsColumns,
  truncateMax,
  truncateMin,
} from '../../../../../functions/core/formats/delta/stats.js';
import { compareCodePoints, parquetColumnStats } from '../../../../../functions/core/parquet/column-stats.js';
import { type DuckDb, openDuckDb } from '../../../../support/duckdb.js';
import { DELTA_FIXTURES } from '../../../../support/fixtures.js';

/** A Delta schema of top-level fields `name: type` (nullable, no metadata). */
function schemaOf(fields: Record<string, unknown>): DeltaStatsTable['schema'] {
  return {
    type: 'struct',
    fields: Object.entries(fields).map(([name, type]) => ({
      name,
      type: type as string,
      nullable: true,
      metadata: {},
    })),
  };
}
function table(
  schema: DeltaStatsTable['schema'],
  configuration: Record<string, string> = {},
  partitionColumns: string[] = [],
): DeltaStatsTable {
  return { schema, configuration, partitionColumns };
}

/** The parsed JSON this module writes: the three per-column objects are always there. */
interface WrittenStats {
  readonly numRecords: number;
  readonly minValues: Record<string, unknown>;
  readonly maxValues: Record<string, unknown>;
  readonly nullCount: Record<string, unknown>;
}

/** Stats of in-memory Parquet bytes, as the JSON string and parsed. */
function statsOf(bytes: Uint8Array, t: DeltaStatsTable, options = {}) {
  const json = deltaFileStats(parquetColumnStats('test.parquet', bytes.length, bytes), t, options);
  return {
    json,
    stats: JSON.parse(json) as WrittenStats,
  };
}

/** Writes with the compactor's own writer (parquet-rs via parquet-wasm, chunk statistics on). */
function parquetRs(columns: Parameters<typeof tableFromArrays>[0], statistics = true): Uint8Array {
  const props = statistics
    ? writerProperties({ codec: 'snappy', rowGroupRows: 1000, keyValueMetadata: {} })
    : new pw.WriterPropertiesBuilder().setStatisticsEnabled(pw.EnabledStatistics.None).build();
  return pw.writeParquet(pw.Table.fromIPCStream(tableToIPC(tableFromArrays(columns), 'stream')), props);
}

describe('Delta per-file statistics from a Parquet footer', () => {
  let dir: string;
  let db: DuckDb;
  let counter = 0;

  async function duck(sql: string, rowGroupSize?: number): Promise<Uint8Array> {
    const path = join(dir, `f${counter++}.parquet`);
    await db.writeParquet(sql, path, rowGroupSize === undefined ? {} : { rowGroupSize });
    return new Uint8Array(await readFile(path));
  }

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'delta-stats-'));
    db = await openDuckDb();
  });
  afterAll(async () => {
    db.close();
    await rm(dir, { recursive: true, force: true });
  });

  // v runs over 0..9999 in a shuffled order (3889 is coprime to 10000), so the extremes sit in middle row groups.
  const V = '((i * 3889 + 5000) % 10000)';
  const TYPES_SQL = `SELECT ${V}::INTEGER AS id,
      (${V}::BIGINT * 10000000000000 - 5000000000000000000)::BIGINT AS big,
      CAST(${V} / 4 AS DECIMAL(9,2)) AS quarter,
      CAST((${V} - 5000) / 8 AS DECIMAL(18,3)) AS eighth,
      CAST('1234567890123456789012345678.0123456789'::DECIMAL(38,10) + ${V} AS DECIMAL(38,10)) AS huge,
      DATE '2024-01-01' + ${V}::INTEGER AS day,
      TIMESTAMP '2024-01-01' + to_microseconds(${V}::BIGINT * 1000000 + 999) AS local_ts,
      TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_microseconds(${V}::BIGINT * 1000000 + 999) AS ts,
      CASE WHEN ${V} % 10 = 0 THEN NULL ELSE ${V} END::INTEGER AS maybe,
      'name-' || lpad(${V}::VARCHAR, 5, '0') AS name
    FROM range(10000) t(i)`;
  const TYPES_SCHEMA = schemaOf({
    id: 'integer',
    big: 'long',
    quarter: 'decimal(9,2)',
    eighth: 'decimal(18,3)',
    huge: 'decimal(38,10)',
    day: 'date',
    local_ts: 'timestamp_ntz',
    ts: 'timestamp',
    maybe: 'integer',
    name: 'string',
  });

  it('combines exact bounds of every skipping type over row groups and writes them in Delta JSON formats', async () => {
    // Prepare
    const bytes = await duck(TYPES_SQL, 2048);
    const lastSecond = new Date(Date.UTC(2024, 0, 1) + 9999 * 1000).toISOString();
    const lastDay = new Date(Date.UTC(2024, 0, 1) + 9999 * 86_400_000).toISOString().slice(0, 10);

    // Act
    const { json, stats } = statsOf(bytes, table(TYPES_SCHEMA));

    // Assess
    expect(parquetColumnStats('x', bytes.length, bytes).columns.length).toBe(10);
    expect(stats.numRecords).toBe(10000);
    expect(stats.minValues).toEqual({
      id: 0,
      big: -5000000000000000000,
      quarter: 0,
      eighth: -625,
      huge: Number('1234567890123456789012345678.0123456789'),
      day: '2024-01-01',
      local_ts: '2024-01-01T00:00:00.000',
      ts: '2024-01-01T00:00:00.000Z',
      maybe: 1,
      name: 'name-00000',
    });
    expect(stats.maxValues).toEqual({
      id: 9999,
      big: 9999 * 10_000_000_000_000 - 5_000_000_000_000_000_000,
      quarter: 2499.75,
      eighth: 624.875,
      huge: Number('1234567890123456789012355677.0123456789'),
      day: lastDay,
      local_ts: lastSecond.slice(0, -1),
      ts: lastSecond,
      maybe: 9999,
      name: 'name-09999',
    });
    expect(stats.nullCount).toEqual({
      id: 0,
      big: 0,
      quarter: 0,
      eighth: 0,
      huge: 0,
      day: 0,
      local_ts: 0,
      ts: 0,
      maybe: 1000,
      name: 0,
    });
    // Beyond 2^53 and past 17 significant digits the JSON text itself must be exact.
    expect(json).toContain('"big":-5000000000000000000');
    expect(json).toContain(`"big":${9999n * 10_000_000_000_000n - 5_000_000_000_000_000_000n}`);
    expect(json).toContain('"huge":1234567890123456789012345678.0123456789');
    expect(json).toContain('"huge":1234567890123456789012355677.0123456789');
    expect(json).toContain('"quarter":0.00');
    expect(json).toContain('"eighth":-625.000');
  });

  it('round-trips through the log reader’s parseStats unchanged', async () => {
    // Prepare
    const bytes = await duck(TYPES_SQL, 2048);
    const { json, stats } = statsOf(bytes, table(TYPES_SCHEMA), { tightBounds: true });

    // Act
    const parsed = parseStats({ stats: json, stats_parsed: undefined });

    // Assess
    expect(parsed).toEqual({ ...stats, tightBounds: true });
  });

  it('reads the footer through the store with the same result as from the bytes', async () => {
    // Prepare
    const bytes = await duck(TYPES_SQL, 2048);
    const store = new MemoryObjectStore({ now: () => new Date(0) });
    await store.put('t/part-0.parquet', bytes);

    // Act
    const fromStore = await deltaFileStatsOf(store, 't/part-0.parquet', bytes.length, table(TYPES_SCHEMA));

    // Assess
    expect(fromStore).toBe(statsOf(bytes, table(TYPES_SCHEMA)).json);
  });

  it('cuts string bounds to 32 characters, the max with Spark’s U+FFFD tie-breaker', async () => {
    // Prepare
    const low = `${'a'.repeat(40)}b`;
    const high = `${'z'.repeat(33)}`;
    const bytes = await duck(`SELECT unnest(['${low}', 'm', '${high}']) AS s`);

    // Act
    const { stats } = statsOf(bytes, table(schemaOf({ s: 'string' })));

    // Assess
    expect(stats.minValues).toEqual({ s: 'a'.repeat(32) });
    expect(stats.maxValues).toEqual({ s: `${'z'.repeat(32)}\ufffd` });
  });

  it('gives Spark’s string bounds when parquet-rs already truncated its statistics to inexact 64-byte ones', () => {
    // Prepare: our own writer truncates string statistics to 64 bytes and marks them inexact.
    const values = [`${'b'.repeat(70)}`, `${'a'.repeat(100)}z`, 'abc'];
    const bytes = parquetRs({ s: values });
    const column = parquetColumnStats('x', bytes.length, bytes).columns[0];

    // Act
    const { stats } = statsOf(bytes, table(schemaOf({ s: 'string' })));

    // Assess
    expect([column?.minExact, column?.maxExact]).toEqual([false, false]);
    expect(stats.minValues).toEqual({ s: 'a'.repeat(32) });
    expect(stats.maxValues).toEqual({ s: `${'b'.repeat(32)}\ufffd` });
  });

  it('keeps a valid, if looser, max when parquet-rs cut multi-byte text below 32 characters', () => {
    // Prepare: 50 × "é" is 100 bytes; parquet-rs keeps 32 characters and raises the last one to "ê".
    const values = ['é'.repeat(50), 'e'];
    const bytes = parquetRs({ s: values });

    // Act
    const { stats } = statsOf(bytes, table(schemaOf({ s: 'string' })));

    // Assess
    const max = stats.maxValues.s as string;
    expect(stats.minValues).toEqual({ s: 'e' });
    for (const value of values) expect(compareCodePoints(max, value)).toBeGreaterThan(0);
    expect(Array.from(max).length).toBeLessThanOrEqual(33);
  });

  it('writes no bounds for float, double, boolean and binary columns, only their null counts', async () => {
    // Prepare
    const bytes = await duck(
      `SELECT CASE WHEN i = 1 THEN 'NaN'::DOUBLE ELSE i / 2 END AS d, (i / 2)::FLOAT AS f, i % 2 = 0 AS b,
         CASE WHEN i = 0 THEN NULL ELSE ('x' || i)::BLOB END AS bin FROM range(5) t(i)`,
    );

    // Act
    const { stats } = statsOf(
      bytes,
      table(schemaOf({ d: 'double', f: 'float', b: 'boolean', bin: 'binary' })),
    );

    // Assess
    expect(stats.minValues).toEqual({});
    expect(stats.maxValues).toEqual({});
    expect(stats.nullCount).toEqual({ d: 0, f: 0, b: 0, bin: 1 });
  });

  it('gives arrays and maps no stats, and a column missing from the file a null count of every row', async () => {
    // Prepare
    const bytes = await duck(`SELECT i::INTEGER AS a, [i] AS l, MAP {'k': i} AS m FROM range(4) t(i)`);
    const schema = schemaOf({
      a: 'integer',
      l: { type: 'array', elementType: 'long', containsNull: true },
      m: { type: 'map', keyType: 'string', valueType: 'long', valueContainsNull: true },
      added: 'string',
    });

    // Act
    const { stats } = statsOf(bytes, table(schema));

    // Assess
    expect(stats.minValues).toEqual({ a: 0 });
    expect(stats.maxValues).toEqual({ a: 3 });
    expect(stats.nullCount).toEqual({ a: 0, added: 4 });
  });

  it('nests struct fields and keys every level by its physical name under column mapping', async () => {
    // Prepare: the file uses physical names, as every writer of a mapped table must.
    const bytes = await duck(
      `SELECT struct_pack("col-city" := 'c' || i, "col-zip" := CASE WHEN i = 0 THEN NULL ELSE i END) AS "col-addr",
         i::BIGINT AS "col-id" FROM range(3) t(i)`,
    );
    const field = (name: string, physical: string, type: unknown, id: number) => ({
      name,
      type,
      nullable: true,
      metadata: { 'delta.columnMapping.id': id, 'delta.columnMapping.physicalName': physical },
    });
    const schema = parseDeltaSchema(
      JSON.stringify({
        type: 'struct',
        fields: [
          field(
            'address',
            'col-addr',
            {
              type: 'struct',
              fields: [field('city', 'col-city', 'string', 2), field('zip', 'col-zip', 'long', 3)],
            },
            1,
          ),
          field('id', 'col-id', 'long', 4),
        ],
      }),
    );

    // Act
    const named = statsOf(bytes, table(schema, { 'delta.columnMapping.mode': 'name' })).stats;
    const byId = statsOf(bytes, table(schema, { 'delta.columnMapping.mode': 'id' })).stats;

    // Assess
    expect(named.minValues).toEqual({ 'col-addr': { 'col-city': 'c0', 'col-zip': 1 }, 'col-id': 0 });
    expect(named.maxValues).toEqual({ 'col-addr': { 'col-city': 'c2', 'col-zip': 2 }, 'col-id': 2 });
    expect(named.nullCount).toEqual({ 'col-addr': { 'col-city': 0, 'col-zip': 1 }, 'col-id': 0 });
    expect(byId).toEqual(named);
  });

  describe('which columns are indexed', () => {
    const SQL = `SELECT {'x': i, 'y': i + 1} AS s, i AS a, i + 2 AS b, [i] AS l, i + 3 AS c FROM range(2) t(i)`;
    const SCHEMA = schemaOf({
      p: 'string',
      s: { type: 'struct', fields: schemaOf({ x: 'long', y: 'long' }).fields },
      a: 'long',
      l: { type: 'array', elementType: 'long', containsNull: true },
      b: 'long',
      c: 'long',
    });

    it('takes the first N non-struct fields in schema order, partition columns not counted', async () => {
      // Prepare
      const bytes = await duck(SQL);

      // Act
      const three = statsOf(bytes, table(SCHEMA, { 'delta.dataSkippingNumIndexedCols': '3' }, ['p'])).stats;
      const five = statsOf(bytes, table(SCHEMA, { 'delta.dataSkippingNumIndexedCols': '5' }, ['p'])).stats;
      const all = statsOf(bytes, table(SCHEMA, { 'delta.dataSkippingNumIndexedCols': '-1' }, ['p'])).stats;
      const none = statsOf(bytes, table(SCHEMA, { 'delta.dataSkippingNumIndexedCols': '0' }, ['p'])).stats;

      // Assess: s.x, s.y and a are the first three; the array counts as one of five.
      expect(three.nullCount).toEqual({ s: { x: 0, y: 0 }, a: 0 });
      expect(five.minValues).toEqual({ s: { x: 0, y: 1 }, a: 0, b: 2 });
      expect(Object.keys(all.maxValues)).toEqual(['s', 'a', 'b', 'c']);
      expect(none).toEqual({ numRecords: 2, minValues: {}, maxValues: {}, nullCount: {} });
    });

    it('takes exactly the dataSkippingStatsColumns, case-insensitively, a struct meaning all its fields', async () => {
      // Prepare
      const bytes = await duck(SQL);

      // Act
      const picked = statsOf(
        bytes,
        table(SCHEMA, { 'delta.dataSkippingStatsColumns': 'C, S.y' }, ['p']),
      ).stats;
      const struct = statsOf(bytes, table(SCHEMA, { 'delta.dataSkippingStatsColumns': '`s`' }, ['p'])).stats;

      // Assess
      expect(picked.maxValues).toEqual({ s: { y: 2 }, c: 4 });
      expect(struct.maxValues).toEqual({ s: { x: 1, y: 2 } });
    });

    it('refuses property values Delta itself refuses', () => {
      // Prepare
      const refused: Record<string, string>[] = [
        { 'delta.dataSkippingNumIndexedCols': '-2' },
        { 'delta.dataSkippingNumIndexedCols': 'many' },
        { 'delta.dataSkippingStatsColumns': 'a,,b' },
        { 'delta.columnMapping.mode': 'names' },
      ];
      const file = { rows: 0, columns: [] };

      // Act / Assess
      for (const configuration of refused) {
        expect(() => deltaFileStats(file, table(SCHEMA, configuration))).toThrow(DeltaStatsConfigError);
      }
    });
  });

  it('parses stats column lists with nesting, backtick quoting and escaped backticks', () => {
    // Prepare / Act
    const parsed = parseStatsColumns(' a , b.c,`d.e`.f , `g``h`');

    // Assess
    expect(parsed).toEqual([['a'], ['b', 'c'], ['d.e', 'f'], ['g`h']]);
    expect(parseStatsColumns('   ')).toEqual([]);
    for (const refused of ['a b', '`open', 'a,', 'a..b', 'a.`b`c']) {
      expect(() => parseStatsColumns(refused)).toThrow(DeltaStatsConfigError);
    }
  });

  it('writes no bounds and no null count when the file has no statistics', () => {
    // Prepare
    const bytes = parquetRs({ n: Int32Array.from([1, 2, 3]) }, false);

    // Act
    const { stats } = statsOf(bytes, table(schemaOf({ n: 'integer' })));

    // Assess
    expect(stats).toEqual({ numRecords: 3, minValues: {}, maxValues: {}, nullCount: {} });
  });
});

describe('string bound truncation', () => {
  it('keeps short strings and cuts long ones by code points, never splitting a surrogate pair', () => {
    // Prepare
    const emoji = '😀'.repeat(40);

    // Act / Assess
    expect(truncateMin('short', 32)).toBe('short');
    expect(truncateMin(emoji, 32)).toBe('😀'.repeat(32));
    expect(truncateMax(`${'y'.repeat(32)}\uffff\uffe0tail`, 32)).toBe(`${'y'.repeat(32)}\uffff\ufffd`);
  });

  it('gives a max that sorts at or above the value in code-point order, for any text', () => {
    // Prepare
    const samples = [
      `${'y'.repeat(32)}😀rest`,
      `${'y'.repeat(32)}\ufffd`,
      `${'y'.repeat(32)}\ufffdz`,
      `${'k'.repeat(31)}${'\uffff'.repeat(5)}`,
      'x'.repeat(33),
    ];

    // Act / Assess
    for (const value of samples) {
      expect(compareCodePoints(truncateMax(value, 32), value)).toBeGreaterThanOrEqual(0);
      expect(compareCodePoints(truncateMin(value, 32), value)).toBeLessThanOrEqual(0);
    }
  });
});

describe('agreement with the stats real writers left in the vendored tables', () => {
  /** Every add with stats of a fixture's JSON commits, with the table metadata of its commit. */
  function addsWithStats(tableName: string) {
    const logDir = join(DELTA_FIXTURES, tableName, '_delta_log');
    const out: { path: string; size: number; stats: string; meta: DeltaStatsTable; dv: boolean }[] = [];
    let meta: DeltaStatsTable | undefined;
    for (const name of readdirSync(logDir)
      .filter((n) => n.endsWith('.json'))
      .sort()) {
      for (const line of readFileSync(join(logDir, name), 'utf8').split('\n')) {
        if (line.trim() === '') continue;
        for (const action of parseActions(JSON.parse(line) as Record<string, unknown>)) {
          if (action.kind === 'metaData') {
            meta = {
              schema: parseDeltaSchema(action.metaData.schemaString),
              partitionColumns: action.metaData.partitionColumns,
              configuration: action.metaData.configuration,
            };
          }
          if (action.kind === 'add' && action.add.stats !== undefined && meta !== undefined) {
            const dv = action.add.deletionVector !== undefined;
            out.push({ path: action.add.path, size: action.add.size, stats: action.add.stats, meta, dv });
          }
        }
      }
    }
    return out;
  }

  it.each([
    'table_with_column_mapping',
    'table_with_edge_timestamps',
    'table-with-dv-small',
    'delta-2.2.0-partitioned-types',
  ])('%s: ours equal the writer’s for every file', async (tableName) => {
    // Prepare
    const adds = addsWithStats(tableName).filter((a) => !a.dv);
    const store = new MemoryObjectStore({ now: () => new Date(0) });
    for (const add of adds) {
      const key = decodeURIComponent(add.path);
      await store.put(key, readFileSync(join(DELTA_FIXTURES, tableName, key)));
    }
    expect(adds.length).toBeGreaterThan(0);

    for (const add of adds) {
      // Act
      const theirs = parseStats({ stats: add.stats, stats_parsed: undefined });
      const tight = theirs?.tightBounds === undefined ? {} : { tightBounds: theirs.tightBounds };
      const ours = parseStats({
        stats: await deltaFileStatsOf(store, decodeURIComponent(add.path), add.size, add.meta, tight),
        stats_parsed: undefined,
      });

      // Assess
      expect(ours).toEqual(theirs);
    }
  });
});
