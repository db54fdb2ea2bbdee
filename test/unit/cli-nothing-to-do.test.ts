// A compact or plan that finds nothing to do leaves the location byte-for-byte as it was: no plan or items
// file, no journal entry, no work folder — on a partition too small to be worth a run, and on a table that
// an earlier compact already compacted (the converged case an operator meets every day).
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { captureIo } from '../support/cli-io.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';

let root: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-nothing-'));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('compact and plan with nothing to do', () => {
  it.each([[['compact']], [['compact', '--dry-run']], [['plan']]])(
    '%j on partitions too small to be worth a run changes nothing, not even a work folder',
    async ([command, ...options]) => {
      // Prepare: two partitions of three small files each (fewer than minInputFiles 5)
      await writeSampleLake(localFolderSink(root), { days: 2, batches: 3, seed: 5 });
      const table = join(root, 'events');
      const before = await folderContentSnapshot(table);
      const io = captureIo();
      // Act
      const code = await run([command as string, table, ...options], io);
      // Assess
      expect(code).toBe(0);
      expect(await folderContentSnapshot(table)).toEqual(before);
      expect(await readdir(table)).not.toContain('_lake-compactor');
    },
  );

  it('a second compact of a compacted table plans nothing and leaves every byte as the first left it', async () => {
    // Prepare
    await writeSampleLake(localFolderSink(root), { days: 2, batches: 6, seed: 6 });
    const table = join(root, 'events');
    expect(await run(['compact', table], captureIo())).toBe(0);
    const before = await folderContentSnapshot(table);
    const io = captureIo();
    // Act
    const code = await run(['compact', table], io);
    // Assess
    expect(code).toBe(0);
    expect(io.stdout.join('\n')).toMatch(/date=2024-01-01: nothing to do/);
    expect(await folderContentSnapshot(table)).toEqual(before);
  });

  it('a compact that does rewrite still records its plan, which the report and vacuum read', async () => {
    // Prepare
    await writeSampleLake(localFolderSink(root), { days: 1, batches: 6, seed: 7 });
    const table = join(root, 'events');
    // Act
    const code = await run(['compact', table], captureIo());
    // Assess
    expect(code).toBe(0);
    const plans = await readdir(join(table, '_lake-compactor', 'plans'));
    expect(plans.filter((p) => p.endsWith('.items.json'))).toHaveLength(1);
    expect(plans.filter((p) => !p.endsWith('.items.json'))).toHaveLength(1);
  });
});
