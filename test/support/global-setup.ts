// Gives the whole test run one private temp folder (TMPDIR) and removes it at the end, so nothing a test
// or a library leaves in the temp dir (CDK's `cdk.outXXXX` per synthesized App) outlives the run. Bundles
// the Parquet engine's worker thread once for the run (see LAKE_COMPACTOR_TEST_ENGINE_WORKER below), and
// starts the run's one DynamoDB Local (see SHARED_DYNAMODB_ENV below).
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDynamoDbLocal } from '../../infra/local/dynamodb-local.js';
import { OWN_DYNAMODB, SHARED_DYNAMODB_ENV } from './dynamodb-local.js';
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
 * machine, and each ran cold (C1 only). One server for the run, named to the forks by SHARED_DYNAMODB_ENV, gives each
 * of them an empty database of its own (test/support/dynamodb-local.ts, `openDynamoDbNamespace`), so sharing the
 * process shares no data. Its heap is 1 GB where a file's own had 512 MB: files running side by side hold their
 * tables in it at once, and a file that dies before its afterAll leaves them there. `LAKE_COMPACTOR_TEST_DYNAMODB=own`
 * keeps a JVM per file.
 */
export default async function setup(): Promise<() => Promise<void>> {
  const previous = process.env.TMPDIR;
  const previousWorker = process.env.LAKE_COMPACTOR_TEST_ENGINE_WORKER;
  const previousDynamoDb = process.env[SHARED_DYNAMODB_ENV];
  const runTemp = await mkdtemp(join(tmpdir(), 'lake-compactor-tests-'));
  process.env.TMPDIR = runTemp;
  // The SDK's Node 20 notice, which the tests' own processes do not print either (vitest.config.ts).
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  // Java boots while the engine's worker is bundled. Without it (no java on PATH), each file that needs DynamoDB
  // Local starts its own and fails in its own words; a run of files that do not need it goes on.
  const dynamoStarting =
    previousDynamoDb === OWN_DYNAMODB
      ? Promise.resolve(undefined)
      : startDynamoDbLocal({
          databasePerCredentials: true,
          jvmArgs: ['-Xms64m', '-Xmx1g', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1'],
        }).catch((error: unknown) => {
          console.warn(
            `No shared DynamoDB Local for this run (each test file starts its own): ${String(error)}`,
          );
          return undefined;
        });
  const bundleDir = join(runTemp, 'engine-worker');
  let worker: string | undefined;
  try {
    await mkdir(bundleDir);
    ({ worker } = await bundleForNode(bundleDir, { worker: 'functions/adapters/parquet-wasm/worker.ts' }));
  } catch (error) {
    await (await dynamoStarting)?.stop();
    throw error;
  }
  process.env.LAKE_COMPACTOR_TEST_ENGINE_WORKER = worker;
  const dynamo = await dynamoStarting;
  if (dynamo !== undefined) process.env[SHARED_DYNAMODB_ENV] = dynamo.endpoint;
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
