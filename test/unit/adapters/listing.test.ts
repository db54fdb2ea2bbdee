import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeListToken, listPage, sortByKey } from '../../../functions/adapters/listing.js';
import { InvalidInputError } from '../../../functions/core/errors.js';

/** Every entry (objects and common prefixes, in page order) of all pages, following tokens. */
function pageThrough(
  sorted: { key: string }[],
  prefix: string,
  delimiter: string | undefined,
  maxKeys: number,
) {
  const entries: string[] = [];
  let token: string | undefined;
  let pages = 0;
  do {
    const page = listPage(sorted, { prefix, delimiter, token, maxKeys });
    const names = [...page.objects.map((o) => o.key), ...page.commonPrefixes];
    expect(names.length).toBeLessThanOrEqual(maxKeys);
    entries.push(...sortByKey(names.map((key) => ({ key }))).map((e) => e.key));
    token = page.nextToken;
    pages++;
  } while (token !== undefined && pages < 10_000);
  return entries;
}

describe('listPage', () => {
  it('pages to exactly the single-page listing for any keys, prefix, delimiter and page size', () => {
    // Prepare
    const segment = fc.constantFrom('a', 'b', 'a-b', 'a.b', 'z', 'é', '😀', '\uE000', 'x=1');
    const key = fc.array(segment, { minLength: 1, maxLength: 3 }).map((parts) => parts.join('/'));
    fc.assert(
      fc.property(
        fc.uniqueArray(key, { maxLength: 40 }),
        fc.constantFrom('', 'a', 'a/', 'b/', 'a-'),
        fc.constantFrom(undefined, '/', '='),
        fc.integer({ min: 1, max: 7 }),
        (keys, prefix, delimiter, maxKeys) => {
          const sorted = sortByKey(keys.map((k) => ({ key: k })));
          // Act
          const whole = listPage(sorted, { prefix, delimiter, maxKeys: 1000 });
          const paged = pageThrough(sorted, prefix, delimiter, maxKeys);
          // Assess
          const expected = sortByKey(
            [...whole.objects.map((o) => o.key), ...whole.commonPrefixes].map((k) => ({ key: k })),
          ).map((e) => e.key);
          expect(whole.nextToken).toBeUndefined();
          expect(paged).toEqual(expected);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('starts after the given key, as S3 StartAfter does', () => {
    // Prepare
    const sorted = sortByKey(['p/1', 'p/2', 'p/3'].map((key) => ({ key })));
    // Act
    const page = listPage(sorted, { prefix: 'p/', startAfter: 'p/1' });
    // Assess
    expect(page.objects.map((o) => o.key)).toEqual(['p/2', 'p/3']);
  });

  it('refuses a token it did not make with an InvalidInputError', () => {
    // Act
    const act = () => decodeListToken('not-a-token');
    // Assess
    expect(act).toThrow(InvalidInputError);
  });
});
