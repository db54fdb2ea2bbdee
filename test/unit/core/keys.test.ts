import { describe, expect, it } from 'vitest';
import {
  escapePathName,
  icebergPathEscape,
  KeyOutsideTableError,
  keyRefusal,
  keyUnderRoot,
  printable,
  printableLines,
} from '../../../functions/core/keys.js';

describe('keyRefusal', () => {
  it.each([
    ['a plain data file', 'tbl', 'tbl/date=2024-01-01/part-0.parquet'],
    ['a file of a bucket-root table', '', 'date=2024-01-01/part-0.parquet'],
    ['a Spark-escaped value holding a slash and dots', 'tbl', 'tbl/v=..%2F..%2Fx/part-0.parquet'],
    ['a value that is two dots', 'tbl', 'tbl/v=../part-0.parquet'],
    ['a backslash inside a name', 'tbl', 'tbl/a\\b.parquet'],
    ['a backslash path that stays below the root', 'tbl', 'tbl/a\\..\\b.parquet'],
    ['an escaped partition name that climbs but stays below the root', 'tbl', 'tbl/data/..%2Fx=1/p.parquet'],
    ['a percent that encodes nothing', 'tbl', 'tbl/100%zz.parquet'],
    ['a root given with a trailing slash', 'tbl/', 'tbl/x.parquet'],
  ])('accepts %s', (_what, root, key) => {
    // Prepare / Act
    const refused = keyRefusal(root, key);

    // Assess
    expect(refused).toBeUndefined();
  });

  it.each([
    ['a ".." segment', 'tbl', 'tbl/../other_table/secret.parquet', 'has a ".." segment'],
    ['a ".." deeper down', 'tbl', 'tbl/data/../../other_table/canary.txt', 'has a ".." segment'],
    ['a "." segment', 'tbl', 'tbl/./x.parquet', 'has a "." segment'],
    ['an empty segment', 'tbl', 'tbl//x.parquet', 'has an empty path segment'],
    ['a trailing slash', 'tbl', 'tbl/x/', 'has an empty path segment'],
    ['an absolute path', '', '/etc/passwd', 'is an absolute path'],
    ['an encoded traversal', 'tbl', 'tbl/%2e%2e%2fother_table%2fsecret.parquet', 'once percent-decoded'],
    ['a doubly encoded traversal', 'tbl', 'tbl/%252e%252e/x.parquet', 'once percent-decoded'],
    [
      'an escaped partition name that climbs out',
      'tbl',
      'tbl/data/..%2F..%2F..%2Fpwn=view/p.parquet',
      'once percent-decoded',
    ],
    ['a backslash traversal', 'tbl', 'tbl/..\\other\\x.parquet', 'after a backslash'],
    ['a traversal nested five times in percent escapes', 'tbl', 'tbl/%252525252e/x', 'more than 4 times'],
    ['a key of another table', 'tbl', 'other_table/secret.parquet', 'is outside the table root tbl/'],
    ['a sibling sharing the prefix', 'tbl', 'tbl2/x.parquet', 'is outside the table root tbl/'],
    ['the root itself', 'tbl', 'tbl/', 'names the table root'],
    ['a newline', 'tbl', 'tbl/nl\nFAKE LINE.parquet', 'contains control characters'],
    ['an ANSI escape', 'tbl', 'tbl/zz.parquet\x1b[2K', 'contains control characters'],
    ['a NUL', 'tbl', 'tbl/a\0b', 'contains control characters'],
    ['an empty key', 'tbl', '', 'is empty'],
  ])('refuses %s', (_what, root, key, reason) => {
    // Prepare / Act
    const refused = keyRefusal(root, key);

    // Assess
    expect(refused).toContain(reason);
  });
});

describe('keyUnderRoot', () => {
  it('joins a relative path below the root', () => {
    expect(keyUnderRoot('events', 'date=1/x.parquet')).toEqual({ key: 'events/date=1/x.parquet' });
    expect(keyUnderRoot('', 'x.parquet')).toEqual({ key: 'x.parquet' });
  });

  it('refuses an absolute relative path, a traversal and a URI spelled as a path', () => {
    expect(keyUnderRoot('events', '/abs/part-2.parquet')).toEqual({ refused: 'is an absolute path' });
    expect(keyUnderRoot('events', '../other_table/secret.parquet')).toEqual({
      refused: 'has a ".." segment',
    });
    expect('refused' in keyUnderRoot('events', 's3://other-bucket/x.parquet')).toBe(true);
  });
});

describe('KeyOutsideTableError', () => {
  it('names the table, the path (escaped) and the reason, and says nothing was changed', () => {
    // Prepare / Act
    const err = new KeyOutsideTableError('s3://lake/events', '../x\x1b[2K', 'has a ".." segment', 'an add');

    // Assess
    expect(err.name).toBe('KeyOutsideTableError');
    expect(err.message).toContain('Table s3://lake/events: an add names the file "../x\\x1b[2K"');
    expect(err.message).toContain('has a ".." segment');
    expect(err.message).toContain('nothing was written or deleted');
    expect(err.message).not.toContain('\x1b');
  });
});

describe('escapePathName (Spark)', () => {
  it('escapes what Spark escapes and nothing else', () => {
    expect(escapePathName('a b/c=d%e:f')).toBe('a b%2Fc%3Dd%25e%3Af');
    expect(escapePathName('..')).toBe('..');
    expect(escapePathName('x\ny')).toBe('x%0Ay');
  });
});

describe('icebergPathEscape (Java URLEncoder)', () => {
  it.each([
    ['view', 'view'],
    ['New York', 'New+York'],
    ['../../../pwn', '..%2F..%2F..%2Fpwn'],
    ["a!b~c'd(e)*f", 'a%21b%7Ec%27d%28e%29*f'],
    ['2020-01-01-08', '2020-01-01-08'],
    ['é', '%C3%A9'],
    ['a=b&c', 'a%3Db%26c'],
  ])('escapes %j as %j', (input, expected) => {
    expect(icebergPathEscape(input)).toBe(expected);
  });
});

describe('printable', () => {
  it('escapes the L3 keys so they cannot move the cursor, hide or forge a line', () => {
    // Prepare
    const keys = [
      'zz.parquet\x1b[2K\x1b[1A\x1b[2K\rnothing to delete here\x1b[8m',
      'nl\nFAKE LINE: 0 objects.parquet',
    ];

    // Act
    const shown = keys.map(printable);

    // Assess
    expect(shown).toEqual([
      'zz.parquet\\x1b[2K\\x1b[1A\\x1b[2K\\x0dnothing to delete here\\x1b[8m',
      'nl\\x0aFAKE LINE: 0 objects.parquet',
    ]);
    for (const s of shown) expect(s).not.toMatch(/\p{Cc}/u);
  });

  it('escapes bidirectional overrides and line separators, and doubles a backslash', () => {
    expect(printable('a\u202eb\u2028c\\d')).toBe('a\\u202eb\\u2028c\\\\d');
    expect(printable('date=2024-01-01/part-0.parquet')).toBe('date=2024-01-01/part-0.parquet');
  });

  it('printableLines keeps the line breaks of a message, escapes the rest as JSON does, and leaves backslashes alone', () => {
    expect(printableLines('error: x\x1b[31m\n  - y\r\\')).toBe('error: x\\u001b[31m\n  - y\\u000d\\');
    // the escapes are JSON's too: a JSON document stays one
    const json = JSON.stringify({ key: 'a\u202eb\u0085c' });
    expect(JSON.parse(printableLines(json))).toEqual({ key: 'a\u202eb\u0085c' });
  });
});
