// Proves the `auto` statistics rule on synthetic columns: only string columns whose sample is nearly all distinct
// and spread in no order lose their statistics; sorted, clustered, repetitive, small, non-string and kept columns
// (the table's list, partition, sort and Z-order columns) keep them.
import { describe, expect, it } from 'vitest';
import {
  columnsWithoutStatistics,
  decideColumnStatistics,
  type SampledColumn,
  STATISTICS_RULE,
  statisticsKeepColumns,
} from '../../../../functions/core/parquet/statistics-policy.js';
import { mulberry32 } from '../../../../functions/tools/sample-lake.js';

// More than STATISTICS_RULE.maxValues, so the thinned path is the one judged.
const ROWS = 20_000;
const rng = mulberry32(7);
const hex = () =>
  Math.floor(rng() * 2 ** 32)
    .toString(16)
    .padStart(8, '0');

function column(name: string, values: (string | null)[], kind: 'string' | 'other' = 'string'): SampledColumn {
  return { name, kind, values };
}

const random = () =>
  column(
    'request_id',
    Array.from({ length: ROWS }, () => `${hex()}${hex()}${hex()}`),
  );
const sorted = () =>
  column(
    'order_key',
    Array.from({ length: ROWS }, (_, i) => `key-${String(i).padStart(8, '0')}`),
  );
/** Time-prefixed keys, appended in time order but random within each second: clustered by position. */
const clustered = () =>
  column(
    'event_key',
    Array.from(
      { length: ROWS },
      (_, i) => `2024-01-01T00:${String(Math.floor(i / 100)).padStart(4, '0')}-${hex()}`,
    ),
  );
const repetitive = () =>
  column(
    'country',
    Array.from({ length: ROWS }, () => ['de', 'fr', 'us', 'jp'][Math.floor(rng() * 4)] as string),
  );

describe('decideColumnStatistics', () => {
  it('drops statistics only on high-cardinality strings in no order', () => {
    // Prepare
    const columns = [random(), sorted(), clustered(), repetitive(), column('amount', [], 'other')];

    // Act
    const dropped = columnsWithoutStatistics(columns, []);

    // Assess
    expect(dropped).toEqual(['request_id']);
  });

  it('keeps statistics on listed, partition, sort and Z-order columns whatever the sample says', () => {
    // Prepare
    const keep = statisticsKeepColumns({
      keepStatistics: ['request_id'],
      partitionColumns: ['tenant'],
      sortColumns: ['session'],
      zOrderColumns: ['trace', 'session'],
    });
    const columns = ['request_id', 'tenant', 'session', 'trace', 'other'].map((name) => ({
      ...random(),
      name,
    }));

    // Act
    const dropped = columnsWithoutStatistics(columns, keep);

    // Assess
    expect(keep).toEqual(['request_id', 'tenant', 'session', 'trace']);
    expect(dropped).toEqual(['other']);
  });

  it('keeps statistics when the sample is too small, and ignores nulls when judging', () => {
    // Prepare
    const small = { ...random(), values: random().values.slice(0, STATISTICS_RULE.minValues - 1) };
    const mostlyNull = column(
      'sparse',
      random().values.map((v, i) => (i % 25 === 0 ? v : null)),
    );
    const halfNull = column(
      'half',
      random().values.map((v, i) => (i % 2 === 0 ? v : null)),
    );

    // Act
    const decisions = decideColumnStatistics([small, mostlyNull, halfNull], []);

    // Assess
    expect(decisions.map((d) => [d.keep, d.reason.split(' ')[0]])).toEqual([
      [true, 'sample'],
      [true, 'sample'],
      [false, 'high'],
    ]);
  });

  it('drops statistics on IDs repeated a few times each in no order, and keeps them under the distinct threshold', () => {
    // Prepare: sessions of ~8 events each, interleaved; and a pool of 300 values (enum-like).
    const sessions = Array.from({ length: ROWS / 8 }, () => `sess_${hex()}`);
    const repeated = column(
      'session_id',
      Array.from({ length: ROWS }, () => sessions[Math.floor(rng() * sessions.length)] as string),
    );
    const pool = Array.from({ length: 300 }, () => hex());
    const enumLike = column(
      'code',
      Array.from({ length: ROWS }, () => pool[Math.floor(rng() * pool.length)] as string),
    );

    // Act
    const [session, code] = decideColumnStatistics([repeated, enumLike], []);

    // Assess
    expect(session?.keep).toBe(false);
    expect(code?.keep).toBe(true);
    expect(code?.reason).toMatch(/^low cardinality \(distinct\/rows 0\.0\d\)$/);
  });
});
