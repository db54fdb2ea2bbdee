// Merge semantics, one behaviour per test, as Hudi's payloads and merge modes define them (see merge.ts' header for
// the Java sources): which log version of a key survives, and whether it or the base row ends in the slice.
import { describe, expect, it } from 'vitest';
import { HudiMergeUnsupportedError } from '../../../../../../functions/core/formats/hudi/log/errors.js';
import {
  droppedRows,
  LogRecordMerger,
  type MergePolicy,
  mergePolicy,
  mergeSlice,
} from '../../../../../../functions/core/formats/hudi/log/merge.js';

const where = { file: 'f', offset: 0 };
const row = (
  key: string,
  ts: number | bigint | null,
  commit: string,
  extra: Record<string, unknown> = {},
) => ({
  _hoodie_record_key: key,
  _hoodie_commit_time: commit,
  _hoodie_commit_seqno: `${commit}_0_1`,
  ts,
  ...extra,
});
const v6Latest = mergePolicy({
  tableVersion: 6,
  payloadClass: 'org.apache.hudi.common.model.OverwriteWithLatestAvroPayload',
  orderingFields: 'ts',
});
const v6Default = mergePolicy({
  tableVersion: 6,
  payloadClass: 'org.apache.hudi.common.model.DefaultHoodieRecordPayload',
  orderingFields: 'ts',
});
const commitTime = mergePolicy({ tableVersion: 8, mergeMode: 'COMMIT_TIME_ORDERING', orderingFields: 'ts' });
const eventTime = mergePolicy({ tableVersion: 9, mergeMode: 'EVENT_TIME_ORDERING', orderingFields: 'ts' });

function merged(policy: MergePolicy, feed: (m: LogRecordMerger) => void) {
  const m = new LogRecordMerger(policy);
  feed(m);
  return m.merged;
}

describe('Hudi merge policy', () => {
  it.each([
    [{ tableVersion: 6, payloadClass: 'com.acme.MyPayload' }, /payload class com\.acme\.MyPayload/],
    [{ tableVersion: 8, mergeMode: 'CUSTOM' }, /merge mode CUSTOM/],
    [{ tableVersion: 9, mergeMode: 'EVENT_TIME_ORDERING', orderingFields: 'a,b' }, /several fields/],
    [{ tableVersion: 9, mergeMode: 'EVENT_TIME_ORDERING' }, /without an ordering field/],
    [
      { tableVersion: 9, mergeMode: 'COMMIT_TIME_ORDERING', partialUpdateMode: 'KEEP_VALUES' },
      /partial update/,
    ],
    [{ tableVersion: 7, mergeMode: 'COMMIT_TIME_ORDERING' }, /table version 7/],
  ])('refuses %j by name', (config, message) => {
    // Act
    const act = () => mergePolicy(config);

    // Assess
    expect(act).toThrow(HudiMergeUnsupportedError);
    expect(act).toThrow(message);
  });

  it('derives the v8 merge mode from the payload class when the table sets none', () => {
    // Act / Assess
    expect(
      mergePolicy({
        tableVersion: 8,
        payloadClass: 'org.apache.hudi.common.model.DefaultHoodieRecordPayload',
        orderingFields: 'ts',
      }).semantics,
    ).toBe('event-time');
  });
});

describe('Hudi log record merge', () => {
  it('v6 keeps the greater ordering value among log records, whichever came later', () => {
    // Act
    const m = merged(v6Latest, (x) => {
      x.addRecords('002', [row('k', 20n, '002')], where);
      x.addRecords('003', [row('k', 10n, '003')], where);
    });

    // Assess
    expect(m.get('k')).toMatchObject({ kind: 'upsert', instant: '002' });
  });

  it('v6 gives a tie in ordering value to the later record', () => {
    // Act
    const m = merged(v6Latest, (x) => {
      x.addRecords('002', [row('k', 10n, '002')], where);
      x.addRecords('003', [row('k', 10n, '003')], where);
    });

    // Assess
    expect(m.get('k')).toMatchObject({ instant: '003' });
  });

  it('v6 lets a natural-order delete replace a record with a greater ordering value', () => {
    // Act
    const m = merged(v6Latest, (x) => {
      x.addRecords('002', [row('k', 99n, '002')], where);
      x.addDeletes('003', [{ recordKey: 'k', orderingValue: 0, naturalOrder: true }], where);
    });

    // Assess
    expect(m.get('k')?.kind).toBe('delete');
  });

  it('v6 ignores a typed delete whose ordering value is smaller than the record it follows', () => {
    // Act
    const m = merged(v6Latest, (x) => {
      x.addRecords('002', [row('k', 99n, '002')], where);
      x.addDeletes('003', [{ recordKey: 'k', orderingValue: 50n, naturalOrder: false }], where);
    });

    // Assess
    expect(m.get('k')?.kind).toBe('upsert');
  });

  it('v6 lets a record after a delete win regardless of ordering', () => {
    // Act
    const m = merged(v6Default, (x) => {
      x.addDeletes('002', [{ recordKey: 'k', orderingValue: 500n, naturalOrder: false }], where);
      x.addRecords('003', [row('k', 1n, '003')], where);
    });

    // Assess
    expect(m.get('k')?.kind).toBe('upsert');
  });

  it('COMMIT_TIME_ORDERING keeps the later record even with a smaller ordering value', () => {
    // Act
    const m = merged(commitTime, (x) => {
      x.addRecords('002', [row('k', 20n, '002')], where);
      x.addRecords('003', [row('k', 10n, '003')], where);
    });

    // Assess
    expect(m.get('k')).toMatchObject({ instant: '003' });
  });

  it('EVENT_TIME_ORDERING keeps the greater ordering value, and lets a typed smaller delete lose', () => {
    // Act
    const m = merged(eventTime, (x) => {
      x.addRecords('002', [row('k', 20n, '002')], where);
      x.addRecords('003', [row('k', 10n, '003')], where);
      x.addDeletes('004', [{ recordKey: 'k', orderingValue: 15n, naturalOrder: false }], where);
    });

    // Assess
    expect(m.get('k')).toMatchObject({ kind: 'upsert', instant: '002' });
  });
});

describe('Hudi slice merge with the base file', () => {
  const base = [
    { position: 0, recordKey: 'a', orderingValue: 100n },
    { position: 1, recordKey: 'b', orderingValue: 100n },
    { position: 2, recordKey: 'c', orderingValue: 100n },
  ];

  it('OverwriteWithLatest replaces a base row by its log version even with a smaller ordering value', () => {
    // Prepare
    const m = merged(v6Latest, (x) => x.addRecords('002', [row('a', 1n, '002')], where));

    // Act
    const slice = mergeSlice(base, m, v6Latest);

    // Assess
    expect(slice).toEqual({ dropPositions: [0], append: [row('a', 1n, '002')], baseHeld: new Set(['a']) });
  });

  it('DefaultHoodieRecordPayload keeps a base row whose ordering value is greater', () => {
    // Prepare
    const m = merged(v6Default, (x) =>
      x.addRecords('002', [row('a', 1n, '002'), row('b', 100n, '002')], where),
    );

    // Act
    const slice = mergeSlice(base, m, v6Default);

    // Assess: a stays (100 > 1), b is replaced (a tie goes to the log).
    expect(slice).toEqual({
      dropPositions: [1],
      append: [row('b', 100n, '002')],
      baseHeld: new Set(['a', 'b']),
    });
  });

  it('drops base rows deleted by a delete block or by _hoodie_is_deleted, and appends new keys', () => {
    // Prepare
    const m = merged(v6Latest, (x) => {
      x.addDeletes('002', [{ recordKey: 'c', orderingValue: 0, naturalOrder: true }], where);
      x.addRecords('003', [row('b', 200n, '003', { _hoodie_is_deleted: true }), row('z', 1n, '003')], where);
    });

    // Act
    const slice = mergeSlice(base, m, v6Latest);

    // Assess
    expect(slice).toEqual({
      dropPositions: [1, 2],
      append: [row('z', 1n, '003')],
      // z is an insert: the base does not hold it.
      baseHeld: new Set(['b', 'c']),
    });
  });

  it('EVENT_TIME_ORDERING keeps a base row against a typed delete with a smaller ordering value', () => {
    // Prepare
    const m = merged(eventTime, (x) =>
      x.addDeletes('002', [{ recordKey: 'a', orderingValue: 5n, naturalOrder: false }], where),
    );

    // Act
    const slice = mergeSlice(base, m, eventTime);

    // Assess
    expect(slice.dropPositions).toEqual([]);
  });

  it('compares a BigInt ordering value with a number exactly', () => {
    // Prepare: 2^53 + 1 in the base beats 2^53 in the log.
    const big = [{ position: 0, recordKey: 'a', orderingValue: 2n ** 53n + 1n }];
    const m = merged(v6Default, (x) => x.addRecords('002', [row('a', 2 ** 53, '002')], where));

    // Act
    const slice = mergeSlice(big, m, v6Default);

    // Assess
    expect(slice.dropPositions).toEqual([]);
  });

  it("turns dropped positions into the engine's DeletedRows ranges", () => {
    // Prepare
    const slice = { dropPositions: [1, 2, 5], append: [] };

    // Act
    const rows = droppedRows(slice);

    // Assess
    expect([...rows.ranges]).toEqual([1, 3, 5, 6]);
    expect(rows.count).toBe(3);
  });
});
