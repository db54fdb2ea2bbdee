// Gives the whole test run one private temp folder (TMPDIR) and removes it at the end, so nothing a test
// or a library leaves in the temp dir (CDK's `cdk.outXXXX` per synthesized App) outlives the run.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Vitest global setup: runs in the main process before any worker is forked, so the workers inherit
 * TMPDIR and `os.tmpdir()` answers the run's own folder everywhere.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const previous = process.env.TMPDIR;
  const runTemp = await mkdtemp(join(tmpdir(), 'lake-compactor-tests-'));
  process.env.TMPDIR = runTemp;
  return async () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    await rm(runTemp, { recursive: true, force: true });
  };
}
