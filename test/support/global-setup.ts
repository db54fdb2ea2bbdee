// Gives the whole test run one private temp folder (TMPDIR) and removes it at the end, so nothing a test
// or a library leaves in the temp dir (CDK's `cdk.outXXXX` per synthesized App) outlives the run. Bundles
// the Parquet engine's worker thread once for the run (see LAKE_COMPACTOR_TEST_ENGINE_WORKER below).
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { bundleForNode } from './node-bundle.js';

/**
 * Vitest global setup: runs in the main process before any worker is forked, so the workers inherit
 * TMPDIR and `os.tmpdir()` answers the run's own folder everywhere.
 *
 * The engine's worker threads (every verify, every parallel rewrite) otherwise start from worker.ts under
 * tsx, re-transpiling the engine in each new thread: ~1.5 s of CPU per start against ~0.4 s for a bundle of
 * the same source, and the suite starts hundreds. worker-pool.ts takes the bundle named by
 * LAKE_COMPACTOR_TEST_ENGINE_WORKER (the forks inherit it) when it runs from TypeScript sources.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const previous = process.env.TMPDIR;
  const previousWorker = process.env.LAKE_COMPACTOR_TEST_ENGINE_WORKER;
  const runTemp = await mkdtemp(join(tmpdir(), 'lake-compactor-tests-'));
  process.env.TMPDIR = runTemp;
  const bundleDir = join(runTemp, 'engine-worker');
  await mkdir(bundleDir);
  const { worker } = await bundleForNode(bundleDir, { worker: 'functions/adapters/parquet-wasm/worker.ts' });
  process.env.LAKE_COMPACTOR_TEST_ENGINE_WORKER = worker;
  return async () => {
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    if (previousWorker === undefined) delete process.env.LAKE_COMPACTOR_TEST_ENGINE_WORKER;
    else process.env.LAKE_COMPACTOR_TEST_ENGINE_WORKER = previousWorker;
    await rm(runTemp, { recursive: true, force: true });
  };
}
