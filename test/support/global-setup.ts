// Gives the whole test run one private temp folder (TMPDIR) and removes it at the end, so nothing a test
// or a library leaves in the temp dir (CDK's `cdk.outXXXX` per synthesized App) outlives the run. Bundles
// the Parquet engine's worker thread once for the run (see LAKE_COMPACTOR_TEST_ENGINE_WORKER below), and
// serves the run's one DynamoDB Local (see SHARED_DYNAMODB_ENV below).
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OWN_DYNAMODB, SHARED_DYNAMODB_ENV, serveSharedDynamoDb } from './dynamodb-local.js';
import { bundleForNode } from './node-bundle.js';

/**
 * Vitest global setup: runs in the main process before any worker is forked, so the workers inherit
 * TMPDIR and `os.tmpdir()` answers the run's own folder everywhere.
 *
 * The engine's worker threads (every verify, every parallel rewrite) otherwise start from worker.ts under
 * tsx, re-transpiling the engine in each new thread: ~1.5 s of CPU per start against ~0.4 s for a bundle of
 * the same source, and the suite starts hundreds. worker-pool.ts takes the bundle named by
 * LAKE_COMPACTOR_TEST_ENGINE_WORKER (the forks inherit it) when it runs from TypeScript sources.
 *
 * DynamoDB Local: ~30 test files each started a JVM of their own, ~2–3 s and 3–4 s of CPU apiece on the 2-core
 * machine, and each ran cold (C1 only). The run shares one (started when a file first asks: serveSharedDynamoDb),
 * whose address SHARED_DYNAMODB_ENV gives the forks, and each file takes an empty database of its own in it
 * (test/support/dynamodb-local.ts, `openDynamoDbNamespace`), so sharing the process shares no data.
 * `LAKE_COMPACTOR_TEST_DYNAMODB=own` keeps a JVM per file.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const previous = process.env.TMPDIR;
  const previousWorker = process.env.LAKE_COMPACTOR_TEST_ENGINE_WORKER;
  const previousDynamoDb = process.env[SHARED_DYNAMODB_ENV];
  const runTemp = await mkdtemp(join(tmpdir(), 'lake-compactor-tests-'));
  process.env.TMPDIR = runTemp;
  const dynamo = previousDynamoDb === OWN_DYNAMODB ? undefined : await serveSharedDynamoDb();
  if (dynamo !== undefined) process.env[SHARED_DYNAMODB_ENV] = dynamo.address;
  const bundleDir = join(runTemp, 'engine-worker');
  let worker: string | undefined;
  try {
    await mkdir(bundleDir);
    ({ worker } = await bundleForNode(bundleDir, { worker: 'functions/adapters/parquet-wasm/worker.ts' }));
  } catch (error) {
    await dynamo?.stop();
    throw error;
  }
  process.env.LAKE_COMPACTOR_TEST_ENGINE_WORKER = worker;
  return async () => {
    await dynamo?.stop();
    if (previousDynamoDb === undefined) delete process.env[SHARED_DYNAMODB_ENV];
    else process.env[SHARED_DYNAMODB_ENV] = previousDynamoDb;
    if (previous === undefined) delete process.env.TMPDIR;
    else process.env.TMPDIR = previous;
    if (previousWorker === undefined) delete process.env.LAKE_COMPACTOR_TEST_ENGINE_WORKER;
    else process.env.LAKE_COMPACTOR_TEST_ENGINE_WORKER = previousWorker;
    await rm(runTemp, { recursive: true, force: true });
  };
}
