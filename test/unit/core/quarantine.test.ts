// Which quarantine records a plan honours: those whose object is still listed with the quarantined ETag — unless the
// record is an engine refusal that the run's settings now lift (logical fidelity, more memory).
import { describe, expect, it } from 'vitest';
import { liftedBy, matchQuarantine, type QuarantinedFile } from '../../../functions/core/quarantine.js';

const base = {
  table: 'events',
  partition: 'date=2024-01-01',
  runId: 'run-1',
  since: 0,
} as const;

const int96: QuarantinedFile = {
  ...base,
  key: 'date=2024-01-01/a.parquet',
  etag: 'ea',
  reason: 'columns ts are INT96 timestamps',
  errorName: 'UnsupportedInputError',
  refusedUnder: { liftedBy: 'schemaFidelity', schemaFidelity: 'exact', memoryMb: 1769 },
};
const tooLarge: QuarantinedFile = {
  ...base,
  key: 'date=2024-01-01/c.parquet',
  etag: 'ec',
  reason: 'row group 0 could decode to 900 MiB',
  errorName: 'UnsupportedInputError',
  refusedUnder: { liftedBy: 'memory', schemaFidelity: 'exact', memoryMb: 1769 },
};
const corrupt: QuarantinedFile = {
  ...base,
  key: 'date=2024-01-01/b.parquet',
  etag: 'eb',
  reason: 'footer unreadable',
  errorName: 'CorruptInputError',
};
const listed = [
  { key: int96.key, etag: 'ea' },
  { key: corrupt.key, etag: 'eb' },
];

describe('liftedBy', () => {
  it.each([
    ['a fidelity refusal, logical after exact', int96, { schemaFidelity: 'logical', memoryMb: 1769 }, true],
    ['a fidelity refusal, more memory only', int96, { schemaFidelity: 'exact', memoryMb: 3008 }, false],
    ['a fidelity refusal, the same settings', int96, { schemaFidelity: 'exact', memoryMb: 1769 }, false],
    ['a memory refusal, more memory', tooLarge, { schemaFidelity: 'exact', memoryMb: 3008 }, true],
    [
      'a memory refusal, logical fidelity only',
      tooLarge,
      { schemaFidelity: 'logical', memoryMb: 1769 },
      false,
    ],
    ['a memory refusal, less memory', tooLarge, { schemaFidelity: 'exact', memoryMb: 1024 }, false],
  ] as const)('%s → %s', (_name, record, current, lifted) => {
    // Act + Assess
    expect(liftedBy(record.refusedUnder, current)).toBe(lifted);
  });

  it('never lifts a record with no settings (a damaged file, or a record from before they were kept)', () => {
    // Act + Assess
    expect(liftedBy(undefined, { schemaFidelity: 'logical', memoryMb: 10_240 })).toBe(false);
  });

  it('never lifts anything when the run says nothing of its settings', () => {
    // Act + Assess
    expect(liftedBy(int96.refusedUnder, undefined)).toBe(false);
  });
});

describe('matchQuarantine', () => {
  it('keeps both records active while their objects are unchanged and the settings are the same', () => {
    // Act
    const { active, released } = matchQuarantine([int96, corrupt], listed, {
      schemaFidelity: 'exact',
      memoryMb: 1769,
    });

    // Assess
    expect(active.map((r) => r.key)).toEqual([int96.key, corrupt.key]);
    expect(released).toEqual([]);
  });

  it('releases the refusal the settings lift and keeps the damaged file quarantined', () => {
    // Act
    const { active, released } = matchQuarantine([int96, corrupt], listed, {
      schemaFidelity: 'logical',
      memoryMb: 1769,
    });

    // Assess
    expect(active.map((r) => r.key)).toEqual([corrupt.key]);
    expect(released.map((r) => r.key)).toEqual([int96.key]);
  });

  it('releases a record whose object was replaced, whatever the settings', () => {
    // Act
    const { active, released } = matchQuarantine([corrupt], [{ key: corrupt.key, etag: 'new' }]);

    // Assess
    expect(active).toEqual([]);
    expect(released.map((r) => r.key)).toEqual([corrupt.key]);
  });
});
