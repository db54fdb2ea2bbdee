// `lake-compactor compact --format hudi` on a Merge-on-Read table with a decimal column (issue #28): the base files
// hold it as Avro-based writers do, FIXED_LEN_BYTE_ARRAY of the fewest bytes — decimal(20, 2) in 9 bytes, and
// decimal(10, 2) in 5 bytes, which the Parquet engine's own form would make INT64 (such slices were refused before the
// engine kept a decimal's input form) — the log records as Avro `fixed` with logicalType decimal (an Avro data block) or
// as the same Parquet column (a Parquet data block). Twenty digits do not fit a double, so a merge that went through
// one would change them. The rows DuckDB reads from the new base files must equal the appender's latest version of
// every record (what it committed, independent of the project's log reader), as a multiset, and the column must keep
// its physical type, length and DECIMAL annotation, without min/max statistics (the engine writes none for it).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { run } from '../../functions/cli/index.js';
import { readHudiTable } from '../../functions/core/formats/hudi/table-state.js';
import {
  AMOUNT_DECIMAL,
  AMOUNT_DECIMAL_10,
  type AmountDecimal,
  type AppenderRow,
  appenderLatestRows,
  appendHudiDeltaCommit,
  appendHudiInsert,
  createHudiMorTable,
  MOR_ROW_COLUMNS,
} from '../../functions/tools/sample-hudi.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';

const NOW = Date.UTC(2026, 11, 1);
const FLAGS = [
  '--format',
  'hudi',
  '--hudi-lock',
  'storage',
  '--hudi-index-type',
  'BLOOM',
  '--hudi-timezone',
  'UTC',
  '--hudi-compaction-delta-commits',
  '1',
];
const COLUMNS = [...MOR_ROW_COLUMNS, 'amount'] as const;

let db: DuckDb;
const dirs: string[] = [];
beforeAll(async () => {
  db = await openDuckDb();
});
afterAll(() => db.close());
afterEach(async () => {
  for (const d of dirs.splice(0)) await rm(d, { recursive: true, force: true });
});

/** An unscaled decimal as its text at `scale` (what DuckDB prints for a DECIMAL cast to VARCHAR). */
function decimalText(unscaled: bigint, scale: number): string {
  const sign = unscaled < 0n ? '-' : '';
  const digits = (unscaled < 0n ? -unscaled : unscaled).toString().padStart(scale + 1, '0');
  return `${sign}${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
}

/** One row as comparable text: every value as a string, amount as its decimal text (null as null). */
function canonical(values: readonly unknown[]): string {
  return JSON.stringify(values.map((v) => (v === null || v === undefined ? null : String(v))));
}

function expectedRows(rows: readonly AppenderRow[], decimal: AmountDecimal): string[] {
  return rows
    .map((r) =>
      canonical(
        COLUMNS.map((c) =>
          c === 'amount'
            ? r.amount == null
              ? null
              : decimalText(r.amount, decimal.scale)
            : r[c as keyof AppenderRow],
        ),
      ),
    )
    .sort();
}

describe('lake-compactor compact on a Hudi Merge-on-Read table with a FIXED_LEN_BYTE_ARRAY decimal', () => {
  it.each([
    // The last element: whether the column has min/max — yes in the writer's own form (FIXED_LEN_BYTE_ARRAY(9) for
    // 20 digits, compared signed), no in another one (the encoder would compare the bytes unsigned).
    ['Avro', '20-digit', 6, 'avro', AMOUNT_DECIMAL, true, false],
    ['Avro', '20-digit', 8, 'avro', AMOUNT_DECIMAL, true, false],
    ['Parquet', '20-digit', 6, 'parquet', AMOUNT_DECIMAL, true, false],
    ['Parquet', '20-digit', 8, 'parquet', AMOUNT_DECIMAL, true, false],
    ['Avro', '10-digit (fixed(5))', 6, 'avro', AMOUNT_DECIMAL_10, false, false],
    ['Avro', '10-digit (fixed(5))', 8, 'avro', AMOUNT_DECIMAL_10, false, false],
    ['Parquet', '10-digit (fixed(5))', 8, 'parquet', AMOUNT_DECIMAL_10, false, false],
    // Asked for logical fidelity, which would write the standard INT64 form: the CLI's compaction rewrites in exact
    // fidelity whatever the flag says, keeping the base file's form.
    ['Avro', '10-digit (fixed(5)), --schema-fidelity logical,', 8, 'avro', AMOUNT_DECIMAL_10, false, true],
  ] as const)(
    'merges %s log records of a %s decimal into new base files holding the latest version of every record, digit for digit (table version %i)',
    async (_title, _digits, version, logBlock, decimal, minMax, logical) => {
      // Prepare: two file groups of base rows (nulls, negatives, 20-digit values), then two delta commits each
      // updating a quarter of every slice's records (other amounts, a null made a value), so half the rows change.
      const dir = await mkdtemp(join(tmpdir(), 'lc-cli-hudi-mor-decimal-'));
      dirs.push(dir);
      const store = new LocalObjectStore(dir);
      const table = await createHudiMorTable(store, '', version, undefined, { amount: decimal });
      await appendHudiInsert(table, '1', 8);
      await appendHudiInsert(table, '1', 7);
      const deltas = [
        await appendHudiDeltaCommit(table, '1', { fraction: 0.25, logBlock }),
        await appendHudiDeltaCommit(table, '1', { fraction: 0.25, logBlock }),
      ].map((d) => d?.instant);
      const latest = appenderLatestRows(table);
      const expected = expectedRows(latest, decimal);

      // Act
      const io = captureIo({ now: NOW });
      const code = await run(
        ['compact', dir, ...FLAGS, ...(logical ? ['--schema-fidelity', 'logical'] : [])],
        io,
      );

      // Assess
      expect(code, io.stderr.join('\n')).toBe(0);
      expect(io.stdout.join('\n')).toContain('2 file slice(s) → 2 new base file(s), 15 rows');
      const state = await readHudiTable(store, '');
      const slices = state.partitions.flatMap((p) => p.liveSlices);
      expect(slices.map((s) => s.logFiles.length)).toEqual([0, 0]);
      expect(slices.every((s) => s.baseInstantTime === '20261201000000000')).toBe(true);
      const files = slices.map((s) => join(dir, s.baseFile?.key ?? ''));
      const rows = await db.rows(
        `SELECT ${COLUMNS.filter((c) => c !== 'amount').join(', ')}, CAST(amount AS VARCHAR) AS amount FROM read_parquet([${files.map(sqlString).join(', ')}])`,
      );
      expect(rows.map((r) => canonical(COLUMNS.map((c) => r[c]))).sort()).toEqual(expected);
      // Both kinds of rows are in that multiset: versions from the logs, and base rows no log touched.
      const fromLogs = latest.filter((r) => deltas.includes(r._hoodie_commit_time)).length;
      expect(fromLogs).toBeGreaterThan(0);
      expect(fromLogs).toBeLessThan(latest.length);
      expect(latest.filter((r) => r.amount === null).length).toBeGreaterThan(0);
      for (const file of files) {
        const bytes = await readFile(file);
        const metadata = parquetMetadata(
          bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
        );
        expect(metadata.schema.find((e) => e.name === 'amount')).toMatchObject({
          type: 'FIXED_LEN_BYTE_ARRAY',
          type_length: decimal.size,
          converted_type: 'DECIMAL',
          logical_type: { type: 'DECIMAL', precision: decimal.precision, scale: decimal.scale },
          precision: decimal.precision,
          scale: decimal.scale,
        });
        const chunks = metadata.row_groups.flatMap((g) =>
          g.columns.filter((c) => c.meta_data?.path_in_schema.join('.') === 'amount'),
        );
        expect(chunks.length).toBeGreaterThan(0);
        for (const chunk of chunks) {
          expect(chunk.meta_data?.statistics?.min_value !== undefined).toBe(minMax);
          expect(chunk.meta_data?.statistics?.max_value !== undefined).toBe(minMax);
        }
      }
      expect(
        (await db.columnTypes(`SELECT amount FROM read_parquet([${files.map(sqlString).join(', ')}])`)).map(
          (c) => c.type,
        ),
      ).toEqual([`DECIMAL(${decimal.precision},${decimal.scale})`]);
    },
  );
});
