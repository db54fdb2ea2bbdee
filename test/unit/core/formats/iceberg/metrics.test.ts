// Iceberg metrics of a Parquet file from its footer: counts and sizes agree with DuckDB's own reading of the
// footer, bounds decode to DuckDB's min/max (truncated as Iceberg truncates), and the table's metrics modes apply.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import {
  decodeSingleValue,
  type IcebergSchema,
  metricsConfig,
  parseMetricsMode,
  parseTableMetadata,
  readParquetMetrics,
  truncateBinaryMax,
  truncateStringMax,
} from '../../../../../functions/core/formats/iceberg/index.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../../support/duckdb.js';

let duckdb: DuckDb;
let dir: string;
beforeAll(async () => {
  duckdb = await openDuckDb();
  dir = mkdtempSync(join(tmpdir(), 'lc-iceberg-metrics-'));
});
afterAll(() => {
  duckdb.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A table metadata file with one schema of `fields`, the given properties and sort order. */
function tableWith(
  fields: { id: number; name: string; type: string }[],
  properties: Record<string, string> = {},
  sortFields: { 'source-id': number; transform: string }[] = [],
) {
  return parseTableMetadata(
    JSON.stringify({
      'format-version': 2,
      location: 's3://b/t',
      'last-sequence-number': 0,
      'last-updated-ms': 0,
      'last-column-id': fields.length,
      'current-schema-id': 0,
      schemas: [{ type: 'struct', 'schema-id': 0, fields: fields.map((f) => ({ ...f, required: false })) }],
      'default-spec-id': 0,
      'partition-specs': [{ 'spec-id': 0, fields: [] }],
      'default-sort-order-id': sortFields.length > 0 ? 1 : 0,
      'sort-orders': [
        { 'order-id': 0, fields: [] },
        {
          'order-id': 1,
          fields: sortFields.map((f) => ({ ...f, direction: 'asc', 'null-order': 'nulls-first' })),
        },
      ],
      properties,
    }),
    's3://b/t',
  );
}

const FIELDS = [
  { id: 1, name: 'i', type: 'int', sql: 'CASE WHEN r % 10 = 0 THEN NULL ELSE (r * 7 % 1000)::INTEGER END' },
  { id: 2, name: 'l', type: 'long', sql: '(r * 1000003 - 150000000)::BIGINT' },
  { id: 3, name: 's', type: 'string', sql: "'aaaaaaaaaaaaaaaaaaaa-' || lpad(r::VARCHAR, 4, '0')" },
  { id: 4, name: 'b', type: 'binary', sql: "unhex(lpad(hex(r * 97 % 256), 2, '0') || 'ff')" },
  { id: 5, name: 'd', type: 'date', sql: "DATE '2020-02-27' + (r % 5)::INTEGER" },
  {
    id: 6,
    name: 'ts',
    type: 'timestamp',
    sql: "TIMESTAMP '2021-03-04 05:06:07.123456' + to_seconds(r * 3601)",
  },
  { id: 7, name: 'flag', type: 'boolean', sql: 'r % 3 = 0' },
  { id: 8, name: 'x', type: 'double', sql: 'r / 7.0' },
  { id: 9, name: 'dec', type: 'decimal(10,2)', sql: '(r / 3.0)::DECIMAL(10,2)' },
  { id: 10, name: 'c', type: 'string', sql: "'counted-' || r" },
  { id: 11, name: 'n', type: 'string', sql: "'nothing-' || r" },
  { id: 12, name: 'f', type: 'string', sql: "'aaaaaaaaaaaaaaaaaaaa-' || lpad(r::VARCHAR, 4, '0')" },
];

describe('metrics from a Parquet footer', () => {
  it('counts, sizes, split offsets and bounds agree with DuckDB, under per-column modes none, counts, truncate(16) and full', async () => {
    // Prepare: 5000 rows in three row groups (DuckDB cuts them at multiples of 2048), written by DuckDB with field ids
    const path = join(dir, 'm.parquet');
    const select = `SELECT ${FIELDS.map((f) => `${f.sql} AS "${f.name}"`).join(', ')} FROM range(0, 5000) t(r)`;
    await duckdb.writeParquet(select, path, {
      rowGroupSize: 2048,
      extraOptions: [`FIELD_IDS {${FIELDS.map((f) => `'${f.name}': ${f.id}`).join(', ')}}`],
    });
    const metadata = tableWith(FIELDS, {
      'write.metadata.metrics.column.c': 'counts',
      'write.metadata.metrics.column.n': 'none',
      'write.metadata.metrics.column.f': 'full',
    });
    const schema = metadata.schemas[0] as IcebergSchema;
    const store = new LocalObjectStore(dir);
    // Act
    const m = await readParquetMetrics(store, 'm.parquet', schema, metricsConfig(metadata));
    // Assess: sizes and counts per column as DuckDB reads the footer
    const chunks = await duckdb.rows(
      `SELECT path_in_schema AS name, sum(total_compressed_size)::VARCHAR AS size, sum(num_values)::VARCHAR AS n,
              sum(stats_null_count)::VARCHAR AS nulls
       FROM parquet_metadata(${sqlString(path)}) GROUP BY path_in_schema`,
    );
    const measured = FIELDS.filter((f) => f.name !== 'n');
    for (const f of measured) {
      const chunk = chunks.find((c) => c.name === f.name);
      expect(m.columnSizes.get(f.id), f.name).toBe(BigInt(chunk?.size as string));
      expect(m.valueCounts.get(f.id), f.name).toBe(BigInt(chunk?.n as string));
      expect(m.nullValueCounts.get(f.id), f.name).toBe(BigInt(chunk?.nulls as string));
    }
    expect([...m.columnSizes.keys()].sort((a, b) => a - b)).toEqual(measured.map((f) => f.id));
    expect(m.nullValueCounts.get(1)).toBe(500n);
    expect(m.recordCount).toBe(5000n);
    const starts = await duckdb.rows(
      `SELECT (CASE WHEN dictionary_page_offset > 0 AND dictionary_page_offset < data_page_offset
                    THEN dictionary_page_offset ELSE data_page_offset END)::VARCHAR AS start
       FROM parquet_metadata(${sqlString(path)}) WHERE column_id = 0 ORDER BY row_group_id`,
    );
    expect(starts).toHaveLength(3);
    expect(m.splitOffsets).toEqual(starts.map((s) => BigInt(s.start as string)));
    // Assess: bounds decode to DuckDB's min/max (s truncated to 16 characters, f in full)
    const o = (
      await duckdb.rows(
        `SELECT min(i) AS i0, max(i) AS i1, min(l)::VARCHAR AS l0, max(l)::VARCHAR AS l1, min(s) AS s0, max(s) AS s1,
                hex(min(b)) AS b0, hex(max(b)) AS b1, (min(d) - DATE '1970-01-01') AS d0, (max(d) - DATE '1970-01-01') AS d1,
                epoch_us(min(ts))::VARCHAR AS t0, epoch_us(max(ts))::VARCHAR AS t1, min(flag) AS g0, max(flag) AS g1
         FROM read_parquet(${sqlString(path)})`,
      )
    )[0] as Record<string, unknown>;
    const decoded = (id: number) => {
      const type = FIELDS.find((f) => f.id === id)?.type as string;
      const lo = m.lowerBounds.get(id);
      const hi = m.upperBounds.get(id);
      return [lo && decodeSingleValue(type, lo), hi && decodeSingleValue(type, hi)];
    };
    const hex = (v: unknown) =>
      Buffer.from(v as Uint8Array)
        .toString('hex')
        .toUpperCase();
    expect(decoded(1)).toEqual([o.i0, o.i1]);
    expect(decoded(2)).toEqual([BigInt(o.l0 as string), BigInt(o.l1 as string)]);
    expect(o.s0).toBe('aaaaaaaaaaaaaaaaaaaa-0000');
    expect(decoded(3)).toEqual(['aaaaaaaaaaaaaaaa', 'aaaaaaaaaaaaaaab']);
    expect(decoded(4).map(hex)).toEqual([o.b0, o.b1]);
    expect(decoded(5)).toEqual([Number(o.d0), Number(o.d1)]);
    expect(decoded(6)).toEqual([BigInt(o.t0 as string), BigInt(o.t1 as string)]);
    expect(decoded(7)).toEqual([o.g0, o.g1]);
    expect(decoded(12)).toEqual([o.s0, o.s1]);
    // Assess: no bound where the footer cannot give a sound one, or the mode says not to
    for (const id of [8, 9, 10, 11]) {
      expect(m.lowerBounds.has(id), `field ${id}`).toBe(false);
      expect(m.upperBounds.has(id), `field ${id}`).toBe(false);
    }
    expect(m.nanValueCounts.size).toBe(0);
  });
});

describe('metrics modes (Iceberg MetricsConfig)', () => {
  it('parses none, counts, full and truncate(N), case-insensitively, and rejects anything else', () => {
    // Assess
    expect(
      ['None', 'COUNTS', 'full', 'truncate(8)', 'truncate(0)', 'truncate', 'all'].map(parseMetricsMode),
    ).toEqual([
      { kind: 'none' },
      { kind: 'counts' },
      { kind: 'full' },
      { kind: 'truncate', length: 8 },
      undefined,
      undefined,
      undefined,
    ]);
  });

  it('applies truncate(16) by default, the configured default otherwise, and per-column overrides by full name', () => {
    // Prepare
    const fields = [
      { id: 1, name: 'a', type: 'string' },
      { id: 2, name: 'b', type: 'string' },
    ];
    // Act
    const plain = metricsConfig(tableWith(fields));
    const configured = metricsConfig(
      tableWith(fields, {
        'write.metadata.metrics.default': 'counts',
        'write.metadata.metrics.column.b': 'full',
      }),
    );
    const invalid = metricsConfig(tableWith(fields, { 'write.metadata.metrics.default': 'lots' }));
    // Assess
    expect([plain.modeOf(1), plain.modeOf(2)]).toEqual([
      { kind: 'truncate', length: 16 },
      { kind: 'truncate', length: 16 },
    ]);
    expect([configured.modeOf(1), configured.modeOf(2)]).toEqual([{ kind: 'counts' }, { kind: 'full' }]);
    expect(invalid.modeOf(1)).toEqual({ kind: 'truncate', length: 16 });
  });

  it('without a configured default, columns after the first 100 get none, and sorted columns at least truncate(16)', () => {
    // Prepare: 102 top-level columns, the table sorted by the last one
    const fields = Array.from({ length: 102 }, (_, i) => ({ id: i + 1, name: `c${i + 1}`, type: 'int' }));
    // Act
    const config = metricsConfig(tableWith(fields, {}, [{ 'source-id': 102, transform: 'identity' }]));
    // Assess
    expect(config.modeOf(100)).toEqual({ kind: 'truncate', length: 16 });
    expect(config.modeOf(101)).toEqual({ kind: 'none' });
    expect(config.modeOf(102)).toEqual({ kind: 'truncate', length: 16 });
  });
});

describe('bound truncation', () => {
  it('upper bounds of long strings: the 16-code-point prefix with its last incrementable code point incremented', () => {
    // Assess
    expect(truncateStringMax('abcdefghijklmnopqrs', 16)).toBe('abcdefghijklmnoq');
    expect(truncateStringMax('short', 16)).toBe('short');
    // a code point outside the BMP counts as one character, not two UTF-16 units
    expect(truncateStringMax(`${'😀'.repeat(3)}x`, 2)).toBe('😀😁');
    // the last code point is the maximum one: the one before it is incremented and it is dropped
    expect(truncateStringMax(`ab\u{10FFFF}cd`, 3)).toBe('ac');
    // incrementing U+D7FF skips the surrogate range
    expect(truncateStringMax('a\uD7FFzz', 2)).toBe('a\uE000');
    expect(truncateStringMax('\u{10FFFF}\u{10FFFF}x', 2)).toBeUndefined();
  });

  it('upper bounds of long binaries: the prefix up to its last byte below 0xFF, incremented; none when all are 0xFF', () => {
    // Assess
    expect(truncateBinaryMax(Uint8Array.of(1, 2, 0xff, 0xff, 5), 4)).toEqual(Uint8Array.of(1, 3));
    expect(truncateBinaryMax(Uint8Array.of(1, 2), 4)).toEqual(Uint8Array.of(1, 2));
    expect(truncateBinaryMax(Uint8Array.of(0xff, 0xff, 0xff), 2)).toBeUndefined();
  });
});
