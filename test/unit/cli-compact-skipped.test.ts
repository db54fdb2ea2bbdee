// Files compact cannot or must not rewrite for what they are — a footer it cannot read, bytes that are not
// Parquet, zero rows — are named in its summary with the reason, so an operator can find and deal with each.
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parquetMetadata } from 'hyparquet';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { captureIo } from '../support/cli-io.js';
import { DELTA_FIXTURES } from '../support/fixtures.js';

const DAY = 'date=2024-01-01';
let root: string;
let table: string;

/** A part file Spark wrote for an empty task: valid Parquet with zero rows. */
async function zeroRowPartFile(): Promise<string> {
  const source = join(DELTA_FIXTURES, 'simple_table');
  for (const name of (await readdir(source)).filter((n) => n.endsWith('.parquet')).sort()) {
    const bytes = await readFile(join(source, name));
    const meta = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
    if (Number(meta.num_rows) === 0) return join(source, name);
  }
  throw new Error('simple_table has no zero-row part file');
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-skipped-'));
  await writeSampleLake(localFolderSink(root), { days: 1, batches: 6, seed: 9 });
  table = join(root, 'events');
  await writeFile(join(table, DAY, 'part-broken.parquet'), 'PAR1 this footer is not a footer PAR1');
  await writeFile(join(table, DAY, 'part-text.parquet'), 'id,name\n1,a\n');
  await copyFile(await zeroRowPartFile(), join(table, DAY, 'part-empty.parquet'));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('compact names the files it skipped for what they are', () => {
  it.each([[[]], [['--dry-run']]])(
    '%j lists each with its key and reason after the totals',
    async (options) => {
      // Prepare
      const io = captureIo();
      // Act
      const code = await run(['compact', table, ...options], io);
      // Assess
      expect(code).toBe(0);
      const lines = io.stdout.join('\n').split('\n');
      const heading = lines.indexOf('3 files skipped and left in place:');
      expect(heading).toBeGreaterThan(0);
      // The listing is the indented block under its heading; lines after it (the run's undo hint) are not entries.
      const after = lines.slice(heading + 1);
      const end = after.findIndex((line) => !line.startsWith('  '));
      expect(end === -1 ? after : after.slice(0, end)).toEqual([
        expect.stringMatching(new RegExp(`^  ${DAY}/part-broken\\.parquet: footer unreadable: .+`)),
        expect.stringMatching(
          new RegExp(
            `^  ${DAY}/part-empty\\.parquet: holds zero rows: left alone, there is nothing to rewrite`,
          ),
        ),
        expect.stringMatching(new RegExp(`^  ${DAY}/part-text\\.parquet: footer unreadable: .*Parquet`)),
      ]);
    },
  );

  it('does not list files left alone for their size only', async () => {
    // Prepare: a second run, where the compacted output is well-sized and the skipped files remain
    expect(await run(['compact', table], captureIo())).toBe(0);
    const io = captureIo();
    // Act
    const code = await run(['compact', table], io);
    // Assess
    expect(code).toBe(0);
    const text = io.stdout.join('\n');
    expect(text).toContain('3 files skipped and left in place:');
    expect(text).not.toMatch(/^ {2}.*: (well-sized|large file|\d+ small files?)/m);
  });

  it('says a partition whose every input was left out was left alone: nothing rewritten, none verified', async () => {
    // Prepare: a partition of six small files (enough for a group), all unreadable: planned from the listing, left
    // out by the rewrite
    const lone = join(root, 'broken');
    const day = join(lone, DAY);
    await mkdir(day, { recursive: true });
    const names = Array.from({ length: 6 }, (_, i) => `part-${i}.parquet`);
    for (const name of names) await writeFile(join(day, name), `PAR1 not a footer ${name} PAR1`);
    const io = captureIo();

    // Act
    const code = await run(['compact', lone], io);

    // Assess: no group line claims a rewrite or a verification, the table says left alone and 0/1 verified, and every
    // file is where it was
    expect(code).toBe(0);
    const text = io.stdout.join('\n');
    expect(text).toMatch(new RegExp(`^${DAY} g\\d+: nothing rewritten, 6 inputs left in place`, 'm'));
    expect(text).not.toMatch(/verified, (committed|left alone)/);
    expect(text).toMatch(new RegExp(`^${DAY} +left alone +6 +6 +0 .* 0/1$`, 'm'));
    expect(text).toContain('6 files skipped and left in place:');
    expect((await readdir(day)).sort()).toEqual(names);
  });
});
