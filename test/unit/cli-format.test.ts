// The CLI's --format: a format that is not implemented is refused before the location is listed — exit 2, the
// registry's one message, every byte of the folder as it was — by every command that takes it, and by the
// programmatic runCompact too.
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import {
  TableFormatNotSupportedError,
  unsupportedFormatMessage,
} from '../../functions/core/formats/index.js';
import { captureIo } from '../support/cli-io.js';
import { DELTA_FIXTURES } from '../support/fixtures.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';

const PART = 'part-00000-8eafa330-3be9-4a39-ad78-fd13c2027c7e.c000.snappy.parquet';

let dir: string;

beforeAll(async () => {
  // A Hive-style folder: one partition of real Parquet files, no log.
  dir = await mkdtemp(join(tmpdir(), 'lc-format-'));
  const source = join(DELTA_FIXTURES, 'delta-0.8.0-partitioned', 'year=2020', 'month=1', 'day=1', PART);
  await cp(source, join(dir, 'year=2020', PART));
  await cp(source, join(dir, 'year=2020', `copy-${PART}`));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('lake-compactor --format', () => {
  for (const command of [['compact'], ['compact', '--dry-run'], ['plan'], ['profile']]) {
    it(`refuses ${command.join(' ')} --format orc with exit 2 and the one message, changing nothing`, async () => {
      // Prepare
      const before = await folderContentSnapshot(dir);
      const io = captureIo();
      // Act
      const code = await run([...command, dir, '--format', 'orc'], io);
      // Assess
      expect(code).toBe(2);
      expect(io.stderr.join('\n')).toContain(unsupportedFormatMessage('orc'));
      expect(await folderContentSnapshot(dir)).toEqual(before);
    });
  }

  it('accepts --format parquet, the registered Hive-style format', async () => {
    // Prepare
    const io = captureIo();
    // Act
    const code = await run(['profile', dir, '--format', 'parquet'], io);
    // Assess
    expect(code).toBe(0);
    expect(io.stdout.join('\n')).toMatch(/year=2020/);
  });

  it('refuses runCompact with an unimplemented format before anything is listed or written', async () => {
    // Prepare
    const before = await folderContentSnapshot(dir);
    const io = captureIo();
    // Act
    const act = runCompact(dir, { format: 'orc' as never }, io);
    // Assess
    await expect(act).rejects.toThrow(TableFormatNotSupportedError);
    await expect(act).rejects.toThrow(unsupportedFormatMessage('orc'));
    expect(await folderContentSnapshot(dir)).toEqual(before);
  });
});
