// Proves how declared readers decide DELTA_BINARY_PACKED: an explicit deltaEncoding wins, otherwise it is on only
// when readers are declared and every one reads it; unknown names are refused with the accepted ones listed, and
// deltaEncoding: true beside a reader known not to read it is refused rather than one of the two ignored.
import { describe, expect, it } from 'vitest';
import {
  deltaReadersConflict,
  READER_SUPPORT,
  READERS,
  type Reader,
  readersSchema,
  resolveDeltaEncoding,
} from '../../../functions/core/readers.js';

describe('resolveDeltaEncoding', () => {
  const cases: [string, boolean | undefined, Reader[] | undefined, boolean][] = [
    ['undeclared readers keep the safe default', undefined, undefined, false],
    [
      'modern readers only turn it on',
      undefined,
      ['spark-3.3', 'trino', 'athena-v3', 'duckdb', 'pyarrow'],
      true,
    ],
    ['one legacy reader keeps it off', undefined, ['spark-3.3', 'spark-legacy'], false],
    ['an unnamed reader keeps it off', undefined, ['duckdb', 'any'], false],
    ['explicit true wins over undeclared readers', true, undefined, true],
    ['explicit false wins over modern readers', false, ['trino', 'duckdb'], false],
  ];
  it.each(cases)('%s', (_name, explicit, readers, expected) => {
    // Act
    const resolved = resolveDeltaEncoding(explicit, readers);

    // Assess
    expect(resolved).toBe(expected);
  });

  it('turns it on for exactly the readers the support table marks', () => {
    // Prepare
    const supporting = READERS.filter((r) => READER_SUPPORT[r].deltaBinaryPacked);

    // Act
    const each = READERS.map((r) => [r, resolveDeltaEncoding(undefined, [r])] as const);

    // Assess
    expect(each.filter(([, on]) => on).map(([r]) => r)).toEqual(supporting);
    expect(supporting).toEqual(['spark-3.3', 'trino', 'athena-v3', 'duckdb', 'pyarrow']);
  });
});

describe('readersSchema', () => {
  it('refuses an unknown reader, naming every accepted one', () => {
    // Act
    const result = readersSchema.safeParse(['trino', 'spark3']);

    // Assess
    expect(result.success).toBe(false);
    const message = result.error?.issues[0]?.message ?? '';
    expect(message).toContain('"spark3" is not a reader');
    for (const reader of READERS) expect(message).toContain(reader);
    expect(result.error?.issues[0]?.path).toEqual([1]);
  });

  it('refuses an empty list and a reader listed twice', () => {
    // Act
    const empty = readersSchema.safeParse([]);
    const twice = readersSchema.safeParse(['duckdb', 'duckdb']);

    // Assess
    expect(empty.success).toBe(false);
    expect(twice.error?.issues[0]?.message).toBe('"duckdb" is listed twice');
  });
});

describe('deltaReadersConflict', () => {
  it('names the readers that cannot read it when deltaEncoding is forced on', () => {
    // Act
    const conflict = deltaReadersConflict(true, ['trino', 'impala', 'polars']);

    // Assess
    expect(conflict).toContain('impala, polars cannot read DELTA_BINARY_PACKED');
  });

  it('sees no conflict when off, undeclared or every reader reads it', () => {
    // Act / Assess
    expect(deltaReadersConflict(false, ['spark-legacy'])).toBeUndefined();
    expect(deltaReadersConflict(true, undefined)).toBeUndefined();
    expect(deltaReadersConflict(true, ['trino', 'duckdb'])).toBeUndefined();
  });
});
