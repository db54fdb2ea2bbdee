// Counts read as English in what profile, plan and compact print: one partition, one group, one file — the
// singular for 1, the plural otherwise (core/words.ts plural).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { plural } from '../../functions/core/words.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { captureIo } from '../support/cli-io.js';

let root: string;
let table: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-plurals-'));
  await writeSampleLake(localFolderSink(root), { days: 1, batches: 6, seed: 3, startDate: '2024-01-01' });
  table = join(root, 'events');
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('plural', () => {
  it('uses the singular for exactly one, and the given plural form otherwise', () => {
    // Act
    const words = [
      plural(0, 'file'),
      plural(1, 'file'),
      plural(2, 'file'),
      plural(1, 'entry', 'entries'),
      plural(3, 'entry', 'entries'),
    ];

    // Assess
    expect(words).toEqual(['0 files', '1 file', '2 files', '1 entry', '3 entries']);
  });
});

describe('one partition of six small files', () => {
  it('profile, plan, compact --dry-run and compact say "1 partition", "1 group" and "1 file"', async () => {
    // Prepare
    const ios = { profile: captureIo(), plan: captureIo(), dryRun: captureIo(), compact: captureIo() };

    // Act
    await run(['profile', table], ios.profile);
    await run(['plan', table], ios.plan);
    await run(['compact', table, '--dry-run'], ios.dryRun);
    await run(['compact', table], ios.compact);

    // Assess
    const text = Object.fromEntries(Object.entries(ios).map(([k, io]) => [k, io.stdout.join('\n')]));
    expect(text.profile).toMatch(/\n1 partition, 6 data files, /);
    expect(text.plan).toContain('1 group: 6 files → 1 file');
    expect(text.dryRun).toMatch(/would rewrite 6 files \(.+\) into 1 in 1 group\n/);
    expect(text.dryRun).toContain('dry run: 1 partition, 1 group planned');
    expect(text.compact).toMatch(/\n1 partition: 6 → 1 file, \d+ rows rewritten and verified, 0 failed/);
    for (const t of Object.values(text)) expect(t).not.toMatch(/\b1 (partitions|groups|files|data files)\b/);
  });
});
