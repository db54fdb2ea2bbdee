// The tests' DynamoDB Local: a namespace of the one java process a test run shares, or a server of the caller's own
// when there is none. Tests about the java process itself (gone after stop or SIGKILL, a startup failure) start
// their own with `startDynamoDbLocal` instead.
//
// The run's server starts on first demand, not with the run: a run of files that need no DynamoDB (most runs of a
// few unit files) would otherwise wait for java to boot (2–3 s idle, 6 s and more when the machine is loaded) and
// pay its CPU. The global setup serves its address from the main process (`serveSharedDynamoDb`); the first test
// file to ask starts it. This module loads the AWS SDK only when asked, so the main process of such a run does not.
import { createServer } from 'node:http';
import type { DynamoDbLocalEndpoint, RunningDynamoDbLocal } from '../../infra/local/dynamodb-local.js';

/**
 * The environment variable naming where the test run's shared DynamoDB Local is to be asked for (an http address
 * in the main process), set by the global setup before the workers fork. Set it to `own` before starting vitest to
 * have every test file start java for itself again (as before the shared server: to tell a problem of sharing from
 * one of the test).
 */
export const SHARED_DYNAMODB_ENV = 'LAKE_COMPACTOR_TEST_DYNAMODB';

/** The value of {@link SHARED_DYNAMODB_ENV} that turns the shared server off. */
export const OWN_DYNAMODB = 'own';

/**
 * The endpoint of the run's shared DynamoDB Local, started if it is not yet, for
 * `LocalCloud.start({ sharedDynamoDb })`; undefined when the run shares none (the local cloud then starts java of
 * its own).
 */
export async function sharedDynamoDb(): Promise<string | undefined> {
  const address = process.env[SHARED_DYNAMODB_ENV];
  if (address === undefined || address === '' || address === OWN_DYNAMODB) return undefined;
  const response = await fetch(address);
  const answer = await response.text();
  if (response.ok) return answer;
  const { LocalCloudStartupError } = await import('../../infra/local/errors.js');
  throw new LocalCloudStartupError(`The test run's shared DynamoDB Local did not start: ${answer}`);
}

/**
 * A DynamoDB Local database of the caller's own, empty: a namespace of the run's shared server (nothing another
 * test file does can be seen in it, nor anything done in it by another file; see `openDynamoDbNamespace`), or a
 * server started for the caller when the run shares none. `stop()` it in afterAll either way.
 */
export async function startTestDynamoDb(): Promise<DynamoDbLocalEndpoint> {
  const { openDynamoDbNamespace, startDynamoDbLocal } = await import('../../infra/local/dynamodb-local.js');
  const shared = await sharedDynamoDb();
  // A JVM starting on a loaded 2-core machine (the suite's files run in parallel) took over 30 s.
  return shared === undefined
    ? startDynamoDbLocal({ startTimeoutMs: 120_000 })
    : openDynamoDbNamespace(shared);
}

/**
 * For the global setup: serves, on 127.0.0.1, the endpoint of one DynamoDB Local for the whole run, which the
 * first request starts (a failed start is answered 503 with its error, and the next request tries again). It runs
 * without `-sharedDb`, one database per access key and region, which `openDynamoDbNamespace` divides between the
 * files. Its heap is 1 GB where a file's own has 512 MB: files running side by side hold their tables in it at once,
 * and a file that dies before its afterAll leaves its tables there. `stop()` ends the server and java.
 */
export async function serveSharedDynamoDb(): Promise<{ readonly address: string; stop(): Promise<void> }> {
  let starting: Promise<RunningDynamoDbLocal> | undefined;
  const start = async (): Promise<RunningDynamoDbLocal> => {
    // The SDK's Node 20 notice, which the tests' own processes do not print either (vitest.config.ts).
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const { startDynamoDbLocal } = await import('../../infra/local/dynamodb-local.js');
    return startDynamoDbLocal({
      databasePerCredentials: true,
      jvmArgs: ['-Xms64m', '-Xmx1g', '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1'],
      startTimeoutMs: 120_000,
    });
  };
  const server = createServer((request, response) => {
    request.resume();
    starting ??= start();
    const attempt = starting;
    attempt.then(
      (dynamo) => response.end(dynamo.endpoint),
      (error: unknown) => {
        if (starting === attempt) starting = undefined;
        response.writeHead(503);
        response.end(String(error));
      },
    );
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      if (address !== null && typeof address === 'object') resolve(address.port);
      else reject(new Error('Could not listen on 127.0.0.1 for the shared DynamoDB Local.'));
    });
  });
  return {
    address: `http://127.0.0.1:${port}`,
    async stop() {
      server.close();
      server.closeAllConnections();
      await (await starting?.catch(() => undefined))?.stop();
    },
  };
}
