// Proves that a table's declared readers and statistics policy reach the run: readers decide DELTA_BINARY_PACKED
// unless deltaEncoding is explicit, a request may declare its own readers, unknown readers and contradictions are
// refused before anything changes (every accepted reader listed), and `auto` statistics carry the columns that
// must keep them (the table's list, its partition columns, its and the run's sort columns).
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../../functions/core/errors.js';
import { normalizeRunInput, type RunContext } from '../../../../functions/core/run-input.js';
import { parseTableConfigs } from '../../../../functions/core/table-config.js';

const tables = parseTableConfigs([
  { name: 'undeclared', bucket: 'lake', prefix: 'undeclared', partitionColumns: ['date'] },
  {
    name: 'modern',
    bucket: 'lake',
    prefix: 'modern',
    partitionColumns: ['date'],
    readers: ['spark-3.3', 'trino', 'athena-v3', 'duckdb', 'pyarrow'],
  },
  {
    name: 'legacy',
    bucket: 'lake',
    prefix: 'legacy',
    partitionColumns: ['date'],
    readers: ['trino', 'spark-legacy'],
  },
  {
    name: 'audited',
    bucket: 'lake',
    prefix: 'audited',
    partitionColumns: ['date'],
    sortColumns: ['account'],
    statistics: 'auto',
    keepStatistics: ['request_id'],
  },
]);
const options = { executionName: 'run-1', startedAt: 1_700_000_000_000 };
const partition = 'date=2024-01-15';

function run(raw: Record<string, unknown>): RunContext {
  const result = normalizeRunInput({ partition, ...raw }, tables, options);
  if (result.mode !== 'single') throw new Error('expected one run');
  return result.run;
}

function problems(raw: Record<string, unknown>): string[] {
  try {
    normalizeRunInput({ partition, ...raw }, tables, options);
  } catch (err) {
    if (err instanceof InvalidInputError) return [...err.issues];
    throw err;
  }
  return [];
}

describe('readers in the run context', () => {
  it('turns DELTA_BINARY_PACKED on only for tables whose every declared reader reads it', () => {
    // Act
    const modern = run({ table: 'modern' });
    const legacy = run({ table: 'legacy' });
    const undeclared = run({ table: 'undeclared' });

    // Assess
    expect(modern.deltaEncoding).toBe(true);
    expect('deltaEncoding' in legacy).toBe(false);
    expect('deltaEncoding' in undeclared).toBe(false);
  });

  it('lets an explicit deltaEncoding win, and a request declare its own readers', () => {
    // Act
    const forbidden = run({ table: 'modern', deltaEncoding: false });
    const forced = run({ table: 'undeclared', deltaEncoding: true });
    const declaredByRequest = run({ table: 'undeclared', readers: ['duckdb', 'pyarrow'] });
    const narrowedByRequest = run({ table: 'modern', readers: ['polars'] });

    // Assess
    expect('deltaEncoding' in forbidden).toBe(false);
    expect(forced.deltaEncoding).toBe(true);
    expect(declaredByRequest.deltaEncoding).toBe(true);
    expect('deltaEncoding' in narrowedByRequest).toBe(false);
  });

  it('refuses an unknown reader in the request, listing the accepted ones', () => {
    // Act
    const issues = problems({ table: 'modern', readers: ['trino', 'athena'] });

    // Assess
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatch(
      /^readers\.1: "athena" is not a reader this table can declare; use one of spark-3\.3, /,
    );
    expect(issues[0]).toContain('athena-v2');
  });

  it('refuses deltaEncoding: true for a reader known not to read it, in the request or beside the table', () => {
    // Act
    const inRequest = problems({ table: 'undeclared', deltaEncoding: true, readers: ['spark-legacy'] });
    const besideTable = problems({ table: 'legacy', deltaEncoding: true });

    // Assess
    expect(inRequest).toEqual([expect.stringContaining('spark-legacy cannot read DELTA_BINARY_PACKED')]);
    expect(besideTable).toEqual([expect.stringContaining('spark-legacy cannot read DELTA_BINARY_PACKED')]);
  });
});

describe('readers and statistics in the table config', () => {
  it('refuses an unknown reader and a contradiction, each at its path', () => {
    // Act
    const attempt = () =>
      parseTableConfigs([
        { name: 'a', prefix: 'a', readers: ['spark-3'] },
        { name: 'b', prefix: 'b', readers: ['impala'], deltaEncoding: true },
        { name: 'c', prefix: 'c', statistics: 'none' },
      ]);

    // Assess
    expect(attempt).toThrow(InvalidInputError);
    const issues = (() => {
      try {
        attempt();
      } catch (err) {
        return (err as InvalidInputError).issues;
      }
      return [];
    })();
    expect(issues).toEqual([
      expect.stringMatching(
        /^0\.readers\.0: "spark-3" is not a reader .* use one of spark-3\.3, spark-legacy, /,
      ),
      expect.stringMatching(/^1\.deltaEncoding: deltaEncoding is true but .*impala cannot read/),
      expect.stringMatching(/^2\.statistics: /),
    ]);
  });
});

describe('statistics in the run context', () => {
  it('carries auto with the columns that must keep statistics, and nothing under the default', () => {
    // Act
    const auto = run({ table: 'audited' });
    const zordered = run({ table: 'audited', strategy: 'zorder', sortColumns: ['trace', 'span'] });
    const byDefault = run({ table: 'undeclared' });
    const requested = run({ table: 'undeclared', statistics: 'auto' });
    const turnedOff = run({ table: 'audited', statistics: 'all' });

    // Assess
    expect(auto.statistics).toBe('auto');
    expect(auto.keepStatistics).toEqual(['request_id', 'date', 'account']);
    expect(zordered.keepStatistics).toEqual(['request_id', 'date', 'account', 'trace', 'span']);
    expect('statistics' in byDefault || 'keepStatistics' in byDefault).toBe(false);
    expect(requested).toMatchObject({ statistics: 'auto', keepStatistics: ['date'] });
    expect('statistics' in turnedOff).toBe(false);
  });
});
