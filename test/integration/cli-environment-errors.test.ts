// The CLI against real local servers set up wrong, as an operator meets them: a bucket s3rver does not have,
// a prefix without Parquet files, a state table DynamoDB Local does not have, keys DynamoDB Local does not
// accept — one line each, exit 1.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import type { DynamoDbLocalEndpoint } from '../../infra/local/dynamodb-local.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { captureIo } from '../support/cli-io.js';
import { startTestDynamoDb } from '../support/dynamodb-local.js';

let s3: RunningS3Server;
let dynamo: DynamoDbLocalEndpoint;
let scratch: string;

function env(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    AWS_ENDPOINT_URL_DYNAMODB: dynamo.endpoint,
    AWS_REGION: 'us-east-1',
    AWS_ACCESS_KEY_ID: 'local',
    AWS_SECRET_ACCESS_KEY: 'local',
    ...overrides,
  };
}

async function runWith(argv: readonly string[], environment: Record<string, string>) {
  const io = captureIo({ env: environment });
  const code = await run(argv, io);
  return { argv, code, stderr: io.stderr };
}

beforeAll(async () => {
  const dynamoStarting = startTestDynamoDb();
  s3 = await startS3Server({ buckets: ['lake'] });
  scratch = await mkdtemp(join(tmpdir(), 'lc-env-errors-'));
  dynamo = await dynamoStarting;
}, 180_000);

afterAll(async () => {
  await Promise.all([s3?.stop(), dynamo?.stop()]);
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

describe('the CLI against local servers set up wrong', () => {
  it('a bucket the server does not have: every command says which bucket and what to check, and exits 1', async () => {
    // Prepare
    const location = 's3://no-such-bucket/events';
    const commands = [
      ['profile', location],
      ['plan', location],
      ['compact', location],
      ['settle', location],
      ['quarantine', location],
      ['report', location, '--html', join(scratch, 'r.html')],
      ['vacuum', location, '--dry-run'],
      ['tier', location, '--dry-run'],
    ];
    // Act
    const results = [];
    for (const argv of commands) results.push(await runWith(argv, env()));
    // Assess
    for (const result of results) {
      expect(result).toEqual({
        argv: result.argv,
        code: 1,
        stderr: [
          `error: S3 bucket no-such-bucket does not exist (NoSuchBucket: The specified bucket does not exist): check the bucket name in ${location}, and that AWS_PROFILE and AWS_ENDPOINT_URL_S3 point at the account or server that has it`,
        ],
      });
    }
  });

  it('a prefix without Parquet files in a bucket that exists: profile, plan, compact and report say so, and exit 1', async () => {
    // Prepare
    const location = 's3://lake/no-such-table';
    const commands: [string[], string][] = [
      [['profile', location], 'profile'],
      [['plan', location], 'plan'],
      [['compact', location], 'compact'],
      [['report', location, '--html', join(scratch, 'r.html')], 'report'],
    ];
    // Act
    const results = [];
    for (const [argv, action] of commands) results.push({ action, ...(await runWith(argv, env())) });
    // Assess
    for (const result of results) {
      expect(result.code).toBe(1);
      expect(result.stderr).toEqual([
        `error: no Parquet files under ${location}: nothing to ${result.action}; check the path`,
      ]);
    }
  });

  it('a state table the server does not have: status and history name it and say how to pass the right one, and exit 1', async () => {
    // Act
    const results = [];
    for (const command of ['status', 'history']) {
      results.push(await runWith([command, '--state-table', 'no-such-table', '--table', 'events'], env()));
    }
    // Assess
    for (const result of results) {
      expect(result.code).toBe(1);
      expect(result.stderr).toEqual([
        "error: DynamoDB table no-such-table does not exist in us-east-1 (ResourceNotFoundException: Cannot do operations on a non-existent table): pass the deployment's state table with --state-table <name> (or LAKE_COMPACTOR_TABLE), and check AWS_REGION and AWS_PROFILE",
      ]);
    }
  });

  it('keys the server does not accept: status and history say which variables to check, and exit 1', async () => {
    // Prepare: DynamoDB Local accepts letters and digits only, as AWS accepts only keys it issued
    const badKeys = env({ AWS_ACCESS_KEY_ID: 'not-a-key!', AWS_SECRET_ACCESS_KEY: 'x' });
    // Act
    const results = [];
    for (const command of ['status', 'history']) {
      results.push(await runWith([command, '--state-table', 'state', '--table', 'events'], badKeys));
    }
    // Assess
    for (const result of results) {
      expect(result.code).toBe(1);
      expect(result.stderr).toEqual([
        'error: DynamoDB does not recognise the credentials (UnrecognizedClientException: The Access Key ID or security token is invalid.): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, or AWS_PROFILE, and that they belong to the account of the table',
      ]);
    }
  });
});
