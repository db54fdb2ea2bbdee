import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { KNOWN_DURATIONS_MS, slowFirst } from '../support/slow-files.js';

describe('slowFirst (the order npm test starts its files in)', () => {
  it('starts the known-slow files first, longest first, and keeps the order of the others after them', () => {
    // Prepare
    const files = ['a.test.ts', 'slow.test.ts', 'b.test.ts', 'slowest.test.ts', 'c.test.ts'];

    // Act
    const ordered = slowFirst(files, (f) => f, { 'slow.test.ts': 10, 'slowest.test.ts': 20 });

    // Assess
    expect(ordered).toEqual(['slowest.test.ts', 'slow.test.ts', 'a.test.ts', 'b.test.ts', 'c.test.ts']);
  });

  it('names only files that exist, so no entry silently stops ordering anything', () => {
    // Prepare
    const root = fileURLToPath(new URL('../..', import.meta.url));

    // Act
    const missing = Object.keys(KNOWN_DURATIONS_MS).filter((path) => !existsSync(`${root}${path}`));

    // Assess
    expect(missing).toEqual([]);
  });
});
