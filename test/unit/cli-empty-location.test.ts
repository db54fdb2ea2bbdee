// A location without a single Parquet file — an empty folder, a folder of CSV and markers — is almost always
// the wrong path: profile, plan, compact and report say so in one line, exit 1, and leave the folder as it was.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { captureIo } from '../support/cli-io.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';

let root: string;
let empty: string;
let csv: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-empty-'));
  empty = join(root, 'empty');
  csv = join(root, 'csv');
  await mkdir(empty);
  await mkdir(join(csv, 'date=2024-01-01'), { recursive: true });
  await writeFile(join(csv, 'date=2024-01-01', 'part-0.csv'), 'a,b\n1,2\n');
  await writeFile(join(csv, 'date=2024-01-01', '_SUCCESS'), '');
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const COMMANDS: readonly [string, string[], string][] = [
  ['profile', [], 'profile'],
  ['plan', [], 'plan'],
  ['compact', [], 'compact'],
  ['compact', ['--dry-run'], 'compact'],
  ['report', ['--html', 'report.html'], 'report'],
];

describe('a location without Parquet files', () => {
  it.each(COMMANDS)(
    '%s %j on an empty folder says there is nothing to do there, exits 1, writes nothing',
    async (command, options, action) => {
      // Prepare
      const before = await folderContentSnapshot(empty);
      const io = captureIo();
      const html = options.includes('--html') ? ['--html', join(root, `${command}.html`)] : options;
      // Act
      const code = await run([command, empty, ...html], io);
      // Assess
      expect(code).toBe(1);
      expect(io.stderr).toEqual([
        `error: no Parquet files under ${empty}: nothing to ${action}; check the path`,
      ]);
      expect(await folderContentSnapshot(empty)).toEqual(before);
    },
  );

  it.each(COMMANDS)(
    '%s %j on a folder of CSV files names what it found instead, exits 1, writes nothing',
    async (command, options, action) => {
      // Prepare
      const before = await folderContentSnapshot(csv);
      const io = captureIo();
      const html = options.includes('--html') ? ['--html', join(root, `${command}.html`)] : options;
      // Act
      const code = await run([command, csv, ...html], io);
      // Assess
      expect(code).toBe(1);
      expect(io.stderr).toEqual([
        `error: no Parquet files under ${csv} (only 2 other objects, e.g. date=2024-01-01/_SUCCESS): nothing to ${action}; check the path`,
      ]);
      expect(await folderContentSnapshot(csv)).toEqual(before);
    },
  );
});
