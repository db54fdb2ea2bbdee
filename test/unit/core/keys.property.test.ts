// Property tests of the key-confinement rule: whatever it accepts stays under the root for every way a store or
// reader may resolve it, and the partition escapings it is used with never produce what it refuses.
import { posix } from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  escapePathName,
  icebergPathEscape,
  keyRefusal,
  keyUnderRoot,
  printable,
} from '../../../functions/core/keys.js';

const RUNS = { numRuns: 400 };

/** Segments rich in what traversal is made of: dots, slashes, backslashes, percent escapes of them. */
const trickySegment = fc
  .array(
    fc.constantFrom(
      '.',
      '..',
      '/',
      '\\',
      '%2e',
      '%2E',
      '%2f',
      '%2F',
      '%5c',
      '%25',
      'a',
      'b=c',
      '',
      '%',
      '\n',
      'x',
    ),
    { minLength: 0, maxLength: 6 },
  )
  .map((parts) => parts.join(''));
const trickyPath = fc.array(trickySegment, { minLength: 1, maxLength: 5 }).map((s) => s.join('/'));
const root = fc.constantFrom('', 'tbl', 'warehouse/db/tbl');

/**
 * How a lenient S3-compatible server or a Hadoop reader resolves a key: percent-decoded until stable, backslashes
 * as separators, dot segments resolved. Undefined when resolution climbs above the bucket.
 */
function resolveLikeANormalisingServer(key: string): string | undefined {
  let decoded = key;
  for (let i = 0; i < 8; i++) {
    const next = decoded.replace(/%([0-9a-fA-F]{2})/g, (_, h: string) =>
      String.fromCharCode(Number.parseInt(h, 16)),
    );
    if (next === decoded) break;
    decoded = next;
  }
  const normalised = posix.normalize(decoded.replaceAll('\\', '/'));
  return normalised === '..' || normalised.startsWith('../') || normalised.startsWith('/')
    ? undefined
    : normalised;
}

describe('keyRefusal, as properties', () => {
  it('accepts only keys that every normalising resolution keeps under the root', () => {
    fc.assert(
      fc.property(root, trickyPath, (r, relative) => {
        // Prepare / Act
        const built = keyUnderRoot(r, relative);

        // Assess
        fc.pre('key' in built);
        const resolved = resolveLikeANormalisingServer(built.key);
        expect(resolved).toBeDefined();
        if (r !== '') expect(resolved?.startsWith(`${r}/`)).toBe(true);
        expect(resolved?.split('/')).not.toContain('..');
      }),
      RUNS,
    );
  });

  it('refuses a raw ".." anywhere, and an encoded one that climbs above the root, however it is spelled', () => {
    const encoded = fc.constantFrom('%2e%2e', '%2E%2e', '.%2e', '%252e%252e', '..%5c..');
    const dir = fc.array(fc.constantFrom('a', 'd=1', 'b'), { maxLength: 3 });
    fc.assert(
      fc.property(root, dir, dir, encoded, (r, before, after, dots) => {
        // Prepare: a raw "..", and as many encoded ones as there are directories before them, plus one
        const raw = [...before, '..', ...after, 'secret.parquet'].join('/');
        const climbing = [...before, ...before.map(() => dots), dots, 'secret.parquet'].join('/');

        // Act / Assess
        expect(keyUnderRoot(r, raw)).toHaveProperty('refused');
        expect(keyUnderRoot(r, climbing)).toHaveProperty('refused');
      }),
      RUNS,
    );
  });

  it('refuses every key holding a control character', () => {
    fc.assert(
      fc.property(
        fc.string(),
        fc.integer({ min: 0, max: 0x9f }).filter((c) => c < 0x20 || c >= 0x7f),
        fc.string(),
        (a, control, b) => {
          const key = `tbl/${a}${String.fromCharCode(control)}${b}.parquet`;
          expect(keyRefusal('tbl', key)).toBe('contains control characters');
        },
      ),
      RUNS,
    );
  });

  it('accepts every key without raw dot or empty segments that every normalising resolution keeps below the root', () => {
    fc.assert(
      fc.property(root, trickyPath, (r, relative) => {
        // Prepare
        const key = r === '' ? relative : `${r}/${relative}`;
        const raw = relative.split('/');
        fc.pre(!raw.some((s) => s === '' || s === '.' || s === '..') && !/\p{Cc}/u.test(key));
        fc.pre(!relative.startsWith('\\'));
        // the part below the root, read on its own, names a file below it
        const resolved = resolveLikeANormalisingServer(relative);
        fc.pre(resolved !== undefined && !resolved.endsWith('/') && resolved !== '.');
        fc.pre(!/%25%25%25%25/i.test(key));

        // Act / Assess
        expect(keyRefusal(r, key)).toBeUndefined();
      }),
      RUNS,
    );
  });

  it('accepts every Hive-style segment Spark escapes from a column name and a value without separators', () => {
    const text = fc.string({ minLength: 1 }).filter((s) => !/[/\\]/.test(s));
    fc.assert(
      fc.property(root, text, fc.option(text, { nil: '' }), (r, n, value) => {
        // Prepare
        const key = `${r === '' ? '' : `${r}/`}${escapePathName(n)}=${escapePathName(value)}/part-0.parquet`;

        // Act / Assess
        expect(keyRefusal(r, key)).toBeUndefined();
      }),
      RUNS,
    );
  });

  it('accepts every Iceberg partition path of a name and a value without separators', () => {
    const text = fc.string({ minLength: 1 }).filter((s) => !/[/\\]/.test(s));
    fc.assert(
      fc.property(
        root,
        text,
        fc.string().filter((s) => !/[/\\]/.test(s)),
        (r, n, value) => {
          const key = `${r === '' ? '' : `${r}/`}data/${icebergPathEscape(n)}=${icebergPathEscape(value)}/x.parquet`;
          expect(keyRefusal(r, key)).toBeUndefined();
        },
      ),
      RUNS,
    );
  });

  it('icebergPathEscape leaves only URLEncoder’s unreserved characters, "+" and "%XX"', () => {
    fc.assert(
      fc.property(fc.string(), (s) => {
        expect(icebergPathEscape(s)).toMatch(/^(?:[A-Za-z0-9.\-*_+]|%[0-9A-F]{2})*$/);
      }),
      RUNS,
    );
  });
});

describe('printable, as properties', () => {
  /** The inverse of printable, to show that escaping loses nothing (two keys never print the same). */
  function unprint(s: string): string {
    return s.replace(/\\\\|\\x([0-9a-f]{2})|\\u([0-9a-f]{4})/g, (m, x?: string, u?: string) =>
      m === '\\\\' ? '\\' : String.fromCharCode(Number.parseInt((x ?? u) as string, 16)),
    );
  }

  it('never prints a control character and maps back to the text it escaped', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        const shown = printable(s);
        expect(shown).not.toMatch(/[\p{Cc}\u2028\u2029\u202a-\u202e\u2066-\u2069]/u);
        expect(unprint(shown)).toBe(s);
      }),
      RUNS,
    );
  });
});
