// Properties of the ordered per-column digest: the same rows in the same order digest the same however
// they are cut into batches and slices, whatever lies under nulls, dictionary-encoded or plain; a dropped,
// duplicated, reordered or changed value changes it; and a kind mismatch never passes verification.

import {
  type Data,
  Dictionary,
  Field,
  Int32,
  Int64,
  List,
  makeData,
  makeVector,
  RecordBatch,
  Schema,
  Struct,
  Table,
  Utf8,
  vectorFromArray,
} from 'apache-arrow';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { VerificationError } from '../../../../functions/core/errors.js';
import {
  columnsOfBatch,
  groupFingerprintSchema,
  MultisetHash,
  OrderedDigest,
  OrderedSegments,
  toGroupFingerprint,
  toOrderedFingerprint,
} from '../../../../functions/core/fingerprint/fingerprint.js';
import { assertOutputsMatch } from '../../../../functions/core/verify/verify.js';

interface Row {
  readonly id: bigint | null;
  readonly name: string | null;
  readonly tags: number[] | null;
}

const rowArb: fc.Arbitrary<Row> = fc.record({
  id: fc.option(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { nil: null }),
  name: fc.option(fc.string({ maxLength: 12 }), { nil: null }),
  tags: fc.option(fc.array(fc.integer({ min: -1000, max: 1000 }), { maxLength: 4 }), { nil: null }),
});

function table(rows: readonly Row[]): Table {
  return new Table({
    id: vectorFromArray(
      rows.map((r) => r.id),
      new Int64(),
    ),
    name: vectorFromArray(
      rows.map((r) => r.name),
      new Utf8(),
    ),
    tags: vectorFromArray(
      rows.map((r) => r.tags),
      new List(new Field('item', new Int32(), true)),
    ),
  });
}

function digestOf(batches: readonly RecordBatch[]): string {
  const d = new OrderedDigest();
  for (const b of batches) d.add(columnsOfBatch(b), 0, b.numRows);
  return d.finish().digest;
}

/** The rows as batches cut at `cuts` (slices of one batch, so bit offsets are exercised). */
function sliced(rows: readonly Row[], cuts: readonly number[]): RecordBatch[] {
  const whole = table(rows).batches[0] as RecordBatch;
  const points = [...new Set([0, ...cuts.map((c) => c % (rows.length + 1)), rows.length])].sort(
    (a, b) => a - b,
  );
  const out: RecordBatch[] = [];
  for (let i = 0; i + 1 < points.length; i++) out.push(whole.slice(points[i], points[i + 1]));
  return out;
}

/** A one-column batch of `data`. */
function batchOf(name: string, data: Data): RecordBatch {
  const schema = new Schema([new Field(name, data.type, true)]);
  return new RecordBatch(
    schema,
    makeData({ type: new Struct(schema.fields), length: data.length, children: [data] }),
  );
}

/** Validity bits with slot `i` null for each i in `nulls`. */
function bitmap(length: number, nulls: readonly number[]): Uint8Array {
  const bits = new Uint8Array(Math.ceil(length / 8)).fill(0xff);
  for (const i of nulls) bits[i >> 3] = (bits[i >> 3] as number) & ~(1 << (i & 7));
  return bits;
}

describe('OrderedDigest', () => {
  it('is the same for any batch boundaries, including slices at any bit offset', () => {
    fc.assert(
      fc.property(
        fc.array(rowArb, { minLength: 1, maxLength: 60 }),
        fc.array(fc.nat(), { maxLength: 6 }),
        (rows, cuts) => {
          // Prepare
          const whole = table(rows).batches;
          const pieces = sliced(rows, cuts);

          // Act
          const a = digestOf(whole);
          const b = digestOf(pieces);

          // Assess
          expect(b).toBe(a);
        },
      ),
      { numRuns: 150 },
    );
  });

  it('changes when a row is dropped, duplicated, moved or has one value changed', () => {
    fc.assert(
      fc.property(
        fc.array(rowArb, { minLength: 3, maxLength: 40 }),
        fc.nat(),
        fc.nat(),
        fc.bigInt(),
        (rows, p, q, delta) => {
          // Prepare
          const i = p % rows.length;
          const j = q % rows.length;
          const base = digestOf(table(rows).batches);
          const dropped = rows.filter((_, k) => k !== i);
          const duplicated = [...rows.slice(0, i + 1), rows[i] as Row, ...rows.slice(i + 1)];
          const duplicatedInPlace = rows.map((r, k) => (k === j ? (rows[i] as Row) : r));
          const moved = rows.map((r, k) => (k === i ? (rows[j] as Row) : k === j ? (rows[i] as Row) : r));
          const changed = rows.map((r, k) =>
            k === i
              ? {
                  ...r,
                  // A delta that is 0 modulo 2^64 would leave the 64-bit value as it was: use 1 instead.
                  id:
                    r.id === null
                      ? 0n
                      : BigInt.asIntN(64, r.id + (BigInt.asIntN(64, delta) === 0n ? 1n : delta)),
                }
              : r,
          );
          const distinct = (a: Row, b: Row) =>
            JSON.stringify(a, (_, v) => (typeof v === 'bigint' ? `${v}n` : v)) !==
            JSON.stringify(b, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));

          // Act / Assess
          expect(digestOf(table(dropped).batches)).not.toBe(base);
          expect(digestOf(table(duplicated).batches)).not.toBe(base);
          expect(digestOf(table(changed).batches)).not.toBe(base);
          if (distinct(rows[i] as Row, rows[j] as Row)) {
            expect(digestOf(table(moved).batches)).not.toBe(base);
            expect(digestOf(table(duplicatedInPlace).batches)).not.toBe(base);
          }
        },
      ),
      { numRuns: 100 },
    );
  });

  it('ignores what lies under nulls: garbage values, non-empty string ranges, list elements of null lists', () => {
    // Prepare: the same logical column [7, null, 9] (and ['a', null, 'c'], [[1], null, [2, 3]]), once with
    // clean buffers and once with garbage under the null slot.
    const validity = bitmap(3, [1]);
    const clean = [
      batchOf(
        'n',
        makeData({
          type: new Int64(),
          length: 3,
          nullBitmap: validity,
          data: new BigInt64Array([7n, 0n, 9n]),
        }),
      ),
      batchOf(
        's',
        makeData({
          type: new Utf8(),
          length: 3,
          nullBitmap: validity,
          valueOffsets: new Int32Array([0, 1, 1, 2]),
          data: new TextEncoder().encode('ac'),
        }),
      ),
      batchOf(
        'l',
        makeData({
          type: new List(new Field('item', new Int32(), true)),
          length: 3,
          nullBitmap: validity,
          valueOffsets: new Int32Array([0, 1, 1, 3]),
          child: makeData({ type: new Int32(), length: 3, data: new Int32Array([1, 2, 3]) }),
        }),
      ),
    ];
    const garbage = [
      batchOf(
        'n',
        makeData({
          type: new Int64(),
          length: 3,
          nullBitmap: validity,
          data: new BigInt64Array([7n, 123n, 9n]),
        }),
      ),
      batchOf(
        's',
        makeData({
          type: new Utf8(),
          length: 3,
          nullBitmap: validity,
          valueOffsets: new Int32Array([0, 1, 4, 5]),
          data: new TextEncoder().encode('axyzc'),
        }),
      ),
      batchOf(
        'l',
        makeData({
          type: new List(new Field('item', new Int32(), true)),
          length: 3,
          nullBitmap: validity,
          valueOffsets: new Int32Array([0, 1, 3, 5]),
          child: makeData({ type: new Int32(), length: 5, data: new Int32Array([1, 66, 77, 2, 3]) }),
        }),
      ),
    ];

    // Act / Assess: per column, equal.
    clean.forEach((batch, c) => {
      expect(digestOf([garbage[c] as RecordBatch])).toBe(digestOf([batch]));
    });
    // And a null is neither a zero nor an empty value.
    const zeros = batchOf(
      'n',
      makeData({ type: new Int64(), length: 3, data: new BigInt64Array([7n, 0n, 9n]) }),
    );
    expect(digestOf([zeros])).not.toBe(digestOf([clean[0] as RecordBatch]));
  });

  it('digests a dictionary-encoded column by value, like the plain one, a null dictionary value as a null', () => {
    // Prepare
    const values = Array.from({ length: 300 }, (_, i) => (i % 7 === 0 ? null : `v${i % 5}`));
    const plain = new Table({ s: vectorFromArray(values, new Utf8()) });
    const dict = new Table({ s: vectorFromArray(values, new Dictionary(new Utf8(), new Int32())) });
    // A dictionary whose value 0 is null, referenced by a valid index: a null like any other.
    const dictionaryValues = makeData({
      type: new Utf8(),
      length: 2,
      nullBitmap: bitmap(2, [0]),
      valueOffsets: new Int32Array([0, 0, 2]),
      data: new TextEncoder().encode('v1'),
    });
    const viaNullValue = makeData({
      type: new Dictionary(new Utf8(), new Int32()),
      length: 3,
      data: new Int32Array([1, 0, 1]),
      dictionary: makeVector(dictionaryValues),
    });
    const plainWithNull = new Table({ s: vectorFromArray(['v1', null, 'v1'], new Utf8()) });

    // Act
    const a = digestOf(plain.batches);
    const b = digestOf(dict.slice(0, 120).batches.concat(dict.slice(120).batches));

    // Assess
    expect(b).toBe(a);
    expect(digestOf([batchOf('s', viaNullValue)])).toBe(digestOf(plainWithNull.batches));
  });

  it('digests structs without reading the fields of null structs', () => {
    // Prepare: {a, b} with slot 1 null; its fields hold different garbage in the two versions.
    const type = new Struct([new Field('a', new Int32(), true), new Field('b', new Utf8(), true)]);
    const structOf = (garbage: number, text: string) =>
      makeData({
        type,
        length: 3,
        nullBitmap: bitmap(3, [1]),
        children: [
          makeData({ type: new Int32(), length: 3, data: new Int32Array([1, garbage, 3]) }),
          makeData({
            type: new Utf8(),
            length: 3,
            valueOffsets: new Int32Array([0, 1, 1 + text.length, 2 + text.length]),
            data: new TextEncoder().encode(`x${text}z`),
          }),
        ],
      });

    // Act
    const a = digestOf([batchOf('st', structOf(0, ''))]);
    const b = digestOf([batchOf('st', structOf(99, 'garbage'))]);

    // Assess
    expect(b).toBe(a);
  });

  it('counts top-level nulls per column', () => {
    // Prepare
    const rows: Row[] = [
      { id: null, name: 'a', tags: null },
      { id: 1n, name: null, tags: [] },
      { id: null, name: null, tags: [1] },
    ];

    // Act
    const d = new OrderedDigest();
    for (const b of sliced(rows, [1])) d.add(columnsOfBatch(b), 0, b.numRows);

    // Assess
    expect(d.finish().nullCounts).toEqual({ id: 2, name: 2, tags: 1 });
  });
});

describe('OrderedSegments', () => {
  it('cuts rows into segments at the quotas, whatever the batch boundaries, and runs never share one', () => {
    // Prepare: run 1 of 10 rows cut 4 + 6, run 2 of 3 rows, fed in batches of 3 and of 7.
    const rows = Array.from({ length: 13 }, (_, i): Row => ({ id: BigInt(i), name: `r${i}`, tags: [i] }));
    const feed = (batchRows: number) => {
      const s = new OrderedSegments();
      for (const [from, to, quotas] of [
        [0, 10, [4, 6]],
        [10, 13, [3]],
      ] as const) {
        s.startRun(quotas);
        for (let at = from; at < to; at += batchRows) {
          const b = table(rows.slice(at, Math.min(to, at + batchRows))).batches[0] as RecordBatch;
          s.add(columnsOfBatch(b), 0, b.numRows);
        }
        s.endRun();
      }
      return s.segments;
    };

    // Act
    const a = feed(3);
    const b = feed(7);

    // Assess
    expect(a.map((s) => s.rows)).toEqual([4, 6, 3]);
    expect(b).toEqual(a);
    expect(a[0]?.digest).toBe(digestOf(table(rows.slice(0, 4)).batches));
    expect(a[2]?.digest).toBe(digestOf(table(rows.slice(10)).batches));
  });
});

describe('assertOutputsMatch with fingerprint kinds', () => {
  it('fails on a kind mismatch even when every other field, hash included, is equal', () => {
    // Prepare
    const rows: Row[] = [{ id: 1n, name: 'a', tags: [1] }];
    const b = table(rows).batches[0] as RecordBatch;
    const d = new OrderedDigest();
    d.add(columnsOfBatch(b), 0, 1);
    const ordered = toOrderedFingerprint([d.finish()], ['k']);
    const m = new MultisetHash();
    m.addBatch(b);
    const multiset = { ...toGroupFingerprint(m, ['k']), hash: ordered.hash };

    // Act
    const act = () => assertOutputsMatch(ordered, multiset);

    // Assess
    expect(act).toThrow(VerificationError);
    expect(act).toThrow(/fingerprint kind: expected ordered-columns-v1, outputs were hashed as multiset-v1/);
  });

  it('names the outputs whose rows differ', () => {
    // Prepare
    const seg = (id: bigint) => {
      const d = new OrderedDigest();
      d.add(columnsOfBatch(table([{ id, name: null, tags: null }]).batches[0] as RecordBatch), 0, 1);
      return d.finish();
    };
    const expected = toOrderedFingerprint([seg(1n), seg(2n)], ['k']);
    const actual = toOrderedFingerprint([seg(1n), seg(3n)], ['k']);

    // Act / Assess
    expect(() => assertOutputsMatch(expected, actual)).toThrow(/^.*row hash: .*\(differing: output 1\)/);
  });
});

describe('groupFingerprintSchema', () => {
  it('keeps the kind and the segments of a fingerprint travelling as JSON, and refuses an unknown kind', () => {
    // Prepare
    const d = new OrderedDigest();
    d.add(columnsOfBatch(table([{ id: 1n, name: 'a', tags: [] }]).batches[0] as RecordBatch), 0, 1);
    const fingerprint = toOrderedFingerprint([d.finish()], ['k']);
    const json = JSON.parse(JSON.stringify(fingerprint)) as unknown;

    // Act
    const parsed = groupFingerprintSchema.parse(json);
    const unknown = groupFingerprintSchema.safeParse({ ...fingerprint, kind: 'ordered-columns-v9' });

    // Assess
    expect(parsed).toEqual(fingerprint);
    expect(unknown.success).toBe(false);
  });
});
