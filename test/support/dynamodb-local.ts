// The tests' DynamoDB Local: a namespace of the one java process the run's global setup started, or a server of
// the caller's own when there is none. Tests about the java process itself (gone after stop or SIGKILL, a startup
// failure) start their own with `startDynamoDbLocal` instead.
import {
  type DynamoDbLocalEndpoint,
  openDynamoDbNamespace,
  startDynamoDbLocal,
} from '../../infra/local/dynamodb-local.js';

/**
 * The environment variable naming the run's shared DynamoDB Local (an endpoint), set by the global setup before
 * the workers fork. Set it to `own` before starting vitest to have every test file start java for itself again
 * (as before the shared server: to tell a problem of sharing from one of the test).
 */
export const SHARED_DYNAMODB_ENV = 'LAKE_COMPACTOR_TEST_DYNAMODB';

/** The value of {@link SHARED_DYNAMODB_ENV} that turns the shared server off. */
export const OWN_DYNAMODB = 'own';

/**
 * The endpoint of the run's shared DynamoDB Local, for `LocalCloud.start({ sharedDynamoDb })`; undefined when
 * there is none (the local cloud then starts java of its own).
 */
export function sharedDynamoDb(): string | undefined {
  const value = process.env[SHARED_DYNAMODB_ENV];
  return value === undefined || value === '' || value === OWN_DYNAMODB ? undefined : value;
}

/**
 * A DynamoDB Local database of the caller's own, empty: a namespace of the shared server (nothing another test
 * file does can be seen in it, nor anything done in it by another file; see `openDynamoDbNamespace`), or a server
 * started for the caller when there is no shared one. `stop()` it in afterAll either way.
 */
export function startTestDynamoDb(): Promise<DynamoDbLocalEndpoint> {
  const shared = sharedDynamoDb();
  // A JVM starting on a loaded 2-core machine (the suite's files run in parallel) took over 30 s.
  return shared === undefined
    ? startDynamoDbLocal({ startTimeoutMs: 120_000 })
    : openDynamoDbNamespace(shared);
}
