import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { InvalidInputError } from '../../../functions/core/errors.js';
import {
  classifyObject,
  decodeS3EventKey,
  isParquetMagic,
  parsePartition,
  unescapePathName,
} from '../../../functions/core/partition.js';
import { DELTA_FIXTURES } from '../../support/fixtures.js';

const FIXTURES = DELTA_FIXTURES;
const PAR1 = new Uint8Array([0x50, 0x41, 0x52, 0x31, 0x15, 0x04]);

describe('decodeS3EventKey', () => {
  it('turns + into space before percent-decoding, so %2B stays a literal plus', () => {
    // Prepare
    const raw = 'events/date%3D2024-01-15/my+file%2Bv2.parquet';
    // Act
    const key = decodeS3EventKey(raw);
    // Assess
    expect(key).toBe('events/date=2024-01-15/my file+v2.parquet');
  });

  it('keeps the Hive escape of a partition value, which S3 double-encodes in events', () => {
    // Prepare: the real key is x=A%2FA/part-0.parquet; S3 encodes its % as %25
    const raw = 'tbl/x%3DA%252FA/part-0.parquet';
    // Act
    const key = decodeS3EventKey(raw);
    // Assess
    expect(key).toBe('tbl/x=A%2FA/part-0.parquet');
  });

  it('decodes UTF-8 so Unicode keys survive', () => {
    // Prepare
    const raw = encodeURIComponent('t/city=Zürich/日本.parquet');
    // Act
    const key = decodeS3EventKey(raw);
    // Assess
    expect(key).toBe('t/city=Zürich/日本.parquet');
  });

  it('rejects a malformed %-sequence with InvalidInputError', () => {
    // Prepare
    const raw = 'events/bad%E0%A4%A.parquet';
    // Act
    const act = () => decodeS3EventKey(raw);
    // Assess
    expect(act).toThrow(InvalidInputError);
  });
});

describe('unescapePathName', () => {
  it('reverses Spark escapes and leaves a % without two hex digits literal', () => {
    // Prepare
    const cases: [string, string][] = [
      ['A%2FA', 'A/A'],
      ['B%20B', 'B B'],
      ['a%3Db', 'a=b'],
      ['100%', '100%'],
      ['5%zz', '5%zz'],
      ['caf%C3%A9', 'café'],
      ['%C3', '\u00c3'],
      ['Zürich', 'Zürich'],
    ];
    // Act
    const results = cases.map(([raw]) => unescapePathName(raw));
    // Assess
    expect(results).toEqual(cases.map(([, expected]) => expected));
  });
});

describe('parsePartition', () => {
  it('reads the escaped values of the Spark special-partition fixture', () => {
    // Prepare: the real directory names written by Spark
    const dirs = readdirSync(join(FIXTURES, 'delta-0.8.0-special-partition'))
      .filter((d) => d.startsWith('x='))
      .sort();
    // Act
    const parsed = dirs.map((d) => parsePartition(`lake/special/${d}/part-0.snappy.parquet`, 'lake/special'));
    // Assess
    expect(parsed.map((p) => p?.values)).toEqual([
      [{ name: 'x', value: 'A/A' }],
      [{ name: 'x', value: 'B B' }],
    ]);
    expect(parsed.map((p) => p?.partitionPath)).toEqual(['x=A%2FA', 'x=B%20B']);
  });

  it('maps __HIVE_DEFAULT_PARTITION__ to null and keeps an empty value as empty string', () => {
    // Prepare
    const nullKey = 'tbl/k=__HIVE_DEFAULT_PARTITION__/part-1.parquet';
    const emptyKey = 'tbl/k=/part-1.parquet';
    // Act
    const nullPartition = parsePartition(nullKey, 'tbl');
    const emptyPartition = parsePartition(emptyKey, 'tbl');
    // Assess
    expect(nullPartition?.values).toEqual([{ name: 'k', value: null }]);
    expect(emptyPartition?.values).toEqual([{ name: 'k', value: '' }]);
  });

  it('splits on the first = so values may contain =', () => {
    // Prepare
    const key = 'tbl/expr=a=b=c/f.parquet';
    // Act
    const parsed = parsePartition(key, 'tbl/');
    // Assess
    expect(parsed).toEqual({
      tableRoot: 'tbl',
      partitionPath: 'expr=a=b=c',
      values: [{ name: 'expr', value: 'a=b=c' }],
      fileName: 'f.parquet',
    });
  });

  it('returns multi-level values in path order with Unicode intact', () => {
    // Prepare
    const key = 'lake/events/date=2024-01-15/city=Zürich/part-00000.c000.snappy.parquet';
    // Act
    const parsed = parsePartition(key, 'lake/events');
    // Assess
    expect(parsed?.values).toEqual([
      { name: 'date', value: '2024-01-15' },
      { name: 'city', value: 'Zürich' },
    ]);
    expect(parsed?.partitionPath).toBe('date=2024-01-15/city=Zürich');
  });

  it('keeps non-Hive directories in the partition identity but gives them no values', () => {
    // Prepare: Firehose-style layout mixed with one Hive segment
    const key = 'fh/2024/01/15/src=web/file-1';
    // Act
    const parsed = parsePartition(key, 'fh');
    // Assess
    expect(parsed?.partitionPath).toBe('2024/01/15/src=web');
    expect(parsed?.values).toEqual([{ name: 'src', value: 'web' }]);
  });

  it('gives a file directly under the root the empty partition', () => {
    // Prepare
    const key = 'tbl/part-0.parquet';
    // Act
    const parsed = parsePartition(key, 'tbl');
    // Assess
    expect(parsed).toEqual({ tableRoot: 'tbl', partitionPath: '', values: [], fileName: 'part-0.parquet' });
  });

  it('accepts the bucket root as table root', () => {
    // Prepare
    const key = 'd=1/f.parquet';
    // Act
    const parsed = parsePartition(key, '');
    // Assess
    expect(parsed?.values).toEqual([{ name: 'd', value: '1' }]);
  });

  it('returns undefined for keys outside the root, including sibling prefixes and directory markers', () => {
    // Prepare
    const keys = ['other/d=1/f.parquet', 'events2/d=1/f.parquet', 'events', 'events/', 'events/d=1/'];
    // Act
    const parsed = keys.map((k) => parsePartition(k, 'events'));
    // Assess
    expect(parsed).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });
});

describe('classifyObject', () => {
  it('accepts Parquet data with or without a .parquet suffix', () => {
    // Prepare
    const keys = ['t/d=1/part-00000-abc.c000.snappy.parquet', 't/d=1/000000_0'];
    // Act
    const kinds = keys.map((key) => classifyObject({ key, size: 1000, head: PAR1 }).kind);
    // Assess
    expect(kinds).toEqual(['data', 'data']);
  });

  it('ignores writer debris, logs, checksums and hidden names, each with a reason', () => {
    // Prepare
    const keys = [
      't/d=1/_SUCCESS',
      't/d=1/.part-0.parquet.crc',
      't/d=1/part-0.crc',
      't/_temporary/0/part-0.parquet',
      't/_delta_log/00000000000000000000.checkpoint.parquet',
      't/.hive-staging_hive_2024/part-0.parquet',
      't/_checkpoint/part-0.parquet',
      't/d=1/_part-0.parquet',
      't/d=1/.part-0.parquet',
      't/d=1/manifest.json',
    ];
    // Act
    const results = keys.map((key) => classifyObject({ key, size: 1000 }));
    // Assess
    for (const result of results) {
      expect(result.kind).toBe('ignored');
      expect(result.kind === 'ignored' && result.reason.length > 0).toBe(true);
    }
  });

  it('never takes a listed key the confinement rule refuses for data, however Parquet it looks', () => {
    // Prepare: keys a lenient server or a decoding reader resolves into another table, or that rewrite a terminal
    const keys = [
      'events/d=1/../../other/part-0.parquet',
      'events/d=1/%2e%2e/%2e%2e/other/part-0.parquet',
      'events/d=1/..\\..\\other\\part-0.parquet',
      'events/d=1//part-0.parquet',
      'events/d=1/part-0\u001b[2J.parquet',
    ];
    // Act
    const results = keys.map((key) => classifyObject({ key, size: 1000, head: PAR1, tableRoot: 'events' }));
    // Assess
    for (const result of results) {
      expect(result.kind).toBe('ignored');
      expect(result.kind === 'ignored' ? result.reason : '').toMatch(/^refused key: it /);
    }
    expect(
      classifyObject({ key: 'events/d=1/part-0.parquet', size: 1000, head: PAR1, tableRoot: 'events' }),
    ).toEqual({
      kind: 'data',
    });
  });

  it('accepts a Hive partition directory whose column starts with _', () => {
    // Prepare
    const key = 't/_col=1/part-0.parquet';
    // Act
    const result = classifyObject({ key, size: 1000, head: PAR1 });
    // Assess
    expect(result).toEqual({ kind: 'data' });
  });

  it('checks hidden directories only below the table root when the root is given', () => {
    // Prepare
    const key = '_landing/events/d=1/part-0.parquet';
    // Act
    const withRoot = classifyObject({ key, size: 1000, tableRoot: '_landing/events' });
    const withoutRoot = classifyObject({ key, size: 1000 });
    // Assess
    expect(withRoot.kind).toBe('data');
    expect(withoutRoot.kind).toBe('ignored');
  });

  it('ignores zero-byte objects, objects too short for Parquet and objects without PAR1 magic', () => {
    // Prepare
    const notParquet = new TextEncoder().encode('{"a":1}');
    // Act
    const zero = classifyObject({ key: 't/d=1/part-0.parquet', size: 0 });
    const tiny = classifyObject({ key: 't/d=1/part-0.parquet', size: 11 });
    const wrongMagic = classifyObject({ key: 't/d=1/part-0.parquet', size: 100, head: notParquet });
    // Assess
    expect(zero).toEqual({ kind: 'ignored', reason: 'zero-byte object' });
    expect(tiny.kind).toBe('ignored');
    expect(wrongMagic).toEqual({ kind: 'ignored', reason: 'not Parquet (first bytes are not PAR1)' });
  });

  it('recognises the magic of a real Spark-written fixture file', () => {
    // Prepare
    const dir = join(FIXTURES, 'delta-0.8.0-null-partition', 'k=A');
    const file = readdirSync(dir)[0] ?? '';
    const bytes = readFileSync(join(dir, file));
    // Act
    const result = isParquetMagic(bytes.subarray(0, 4));
    // Assess
    expect(result).toBe(true);
    expect(isParquetMagic(new Uint8Array([0x50, 0x41, 0x52]))).toBe(false);
  });
});
