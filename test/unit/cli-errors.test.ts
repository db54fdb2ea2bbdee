// Every command ends an ordinary environment problem — no region, no or rejected credentials, an endpoint that
// does not answer, a denied permission, a missing bucket or table — with the same one line saying what to fix,
// and exit 1; an unexpected error says how to see its stack. Only 127.0.0.1 is contacted (closed ports, canned
// answers), and the SDK's own credential and region chains see an empty environment, never the developer's.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { describeFailure } from '../../functions/cli/errors.js';
import { run } from '../../functions/cli/index.js';
import { TransientStoreError, UsageError } from '../../functions/core/errors.js';
import { captureIo } from '../support/cli-io.js';
import {
  type CannedAnswer,
  closedEndpoint,
  dynamoDbError,
  type FakeAwsEndpoint,
  s3Error,
  startFakeAwsEndpoint,
} from '../support/fake-aws-endpoint.js';

const LOCATION = 's3://lake/events';
const KEYS = { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: 'secret' };

let scratch: string;
let closed: string;

/** Every command that reads an s3:// location, each in the mode a first-time user would try. */
function s3Commands(): string[][] {
  return [
    ['profile', LOCATION],
    ['plan', LOCATION],
    ['compact', LOCATION],
    ['compact', LOCATION, '--dry-run'],
    ['settle', LOCATION],
    ['quarantine', LOCATION],
    ['report', LOCATION, '--html', join(scratch, 'report.html')],
    ['vacuum', LOCATION, '--dry-run'],
    ['tier', LOCATION, '--dry-run'],
  ];
}

/** Every command that reads the state table. */
const STATE_TABLE_COMMANDS = [
  ['status', '--state-table', 'state', '--table', 'events'],
  ['history', '--state-table', 'state', '--table', 'events'],
];

/** Runs `argv` in-process with exactly `env`; returns the exit code and what went to stderr. */
async function runWith(argv: readonly string[], env: Record<string, string>) {
  const io = captureIo({ env });
  const code = await run(argv, io);
  return { code, stderr: io.stderr, stdout: io.stdout };
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'lc-cli-errors-'));
  closed = await closedEndpoint();
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

beforeEach(() => {
  // The SDK's default chains read the process environment and ~/.aws: give them nothing to find, and no
  // instance metadata service to ask, so "missing" means missing on every machine.
  for (const name of [
    'AWS_REGION',
    'AWS_DEFAULT_REGION',
    'AWS_PROFILE',
    'AWS_ACCESS_KEY_ID',
    'AWS_SECRET_ACCESS_KEY',
    'AWS_SESSION_TOKEN',
    'AWS_WEB_IDENTITY_TOKEN_FILE',
    'AWS_CONTAINER_CREDENTIALS_RELATIVE_URI',
    'AWS_CONTAINER_CREDENTIALS_FULL_URI',
    'AWS_ENDPOINT_URL',
    'AWS_ENDPOINT_URL_S3',
    'AWS_ENDPOINT_URL_DYNAMODB',
  ]) {
    vi.stubEnv(name, undefined);
  }
  vi.stubEnv('AWS_EC2_METADATA_DISABLED', 'true');
  vi.stubEnv('AWS_CONFIG_FILE', join(tmpdir(), 'no-such-aws-config'));
  vi.stubEnv('AWS_SHARED_CREDENTIALS_FILE', join(tmpdir(), 'no-such-aws-credentials'));
});

afterEach(() => {
  vi.unstubAllEnvs();
});

const NO_REGION =
  'error: no AWS region is set: export AWS_REGION=<region> (the one your bucket and state table are in), or set a region in your AWS profile, and run again';
const NO_CREDENTIALS =
  'error: no AWS credentials could be loaded (Could not load credentials from any providers): sign in (aws sso login, or aws configure) and set AWS_PROFILE, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and run again';

describe('the CLI on an S3 location in a broken environment', () => {
  it('prints one line naming the endpoint variable when nothing answers at AWS_ENDPOINT_URL_S3, for every command, and exits 1', async () => {
    // Prepare
    const env = { ...KEYS, AWS_REGION: 'eu-west-1', AWS_ENDPOINT_URL_S3: closed };
    const hostPort = closed.replace('http://', '');
    // Act
    const results = [];
    for (const argv of s3Commands()) results.push(await runWith(argv, env));
    // Assess
    for (const result of results) {
      expect(result.code).toBe(1);
      expect(result.stderr).toEqual([
        `error: nothing answers at ${hostPort} (connection refused, ECONNREFUSED), the endpoint set by AWS_ENDPOINT_URL_S3=${closed}: start that server, or fix or unset AWS_ENDPOINT_URL_S3`,
      ]);
    }
  });

  it('prints one line saying to set AWS_REGION when no region is configured, for every command, and exits 1', async () => {
    // Prepare
    const env = { ...KEYS };
    // Act
    const results = [];
    for (const argv of s3Commands()) results.push(await runWith(argv, env));
    // Assess
    for (const result of results) {
      expect(result.code).toBe(1);
      expect(result.stderr).toEqual([NO_REGION]);
    }
  });

  it('prints one line saying how to sign in when no credentials can be found, for every command, and exits 1', async () => {
    // Prepare: the endpoint is a closed port, so even a bug could not reach the network
    const env = { AWS_REGION: 'eu-west-1', AWS_ENDPOINT_URL_S3: closed };
    // Act
    const results = [];
    for (const argv of s3Commands()) results.push(await runWith(argv, env));
    // Assess
    for (const result of results) {
      expect(result.code).toBe(1);
      expect(result.stderr).toEqual([NO_CREDENTIALS]);
    }
  });

  describe.each<[string, CannedAnswer, string]>([
    [
      'AccessDenied',
      s3Error(403, 'AccessDenied', 'Access Denied'),
      `error: S3 denied access to ${LOCATION} (AccessDenied: Access Denied): the credentials in use lack a permission this command needs; check the IAM policy of your role or AWS_PROFILE, the bucket policy and any KMS key policy`,
    ],
    [
      'ExpiredToken',
      s3Error(400, 'ExpiredToken', 'The provided token has expired.'),
      'error: the AWS credentials have expired (ExpiredToken: The provided token has expired.): refresh them (aws sso login, or a new AWS_SESSION_TOKEN) and run again',
    ],
    [
      'InvalidAccessKeyId',
      s3Error(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.'),
      'error: S3 does not recognise the credentials (InvalidAccessKeyId: The AWS Access Key Id you provided does not exist in our records.): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, or AWS_PROFILE, and that they belong to the account of the bucket',
    ],
    [
      'NoSuchBucket',
      s3Error(404, 'NoSuchBucket', 'The specified bucket does not exist'),
      `error: S3 bucket lake does not exist (NoSuchBucket: The specified bucket does not exist): check the bucket name in ${LOCATION}, and that AWS_PROFILE and AWS_ENDPOINT_URL_S3 point at the account or server that has it`,
    ],
  ])('when S3 answers %s', (_code, answer, line) => {
    let fake: FakeAwsEndpoint;
    beforeAll(async () => {
      fake = await startFakeAwsEndpoint(answer);
    });
    afterAll(async () => {
      await fake.close();
    });

    it('every command prints the same one line saying what to do, and exits 1', async () => {
      // Prepare
      const env = { ...KEYS, AWS_REGION: 'eu-west-1', AWS_ENDPOINT_URL_S3: fake.endpoint };
      // Act
      const results = [];
      for (const argv of s3Commands()) results.push({ argv, ...(await runWith(argv, env)) });
      // Assess
      for (const result of results) {
        expect({ argv: result.argv, code: result.code, stderr: result.stderr }).toEqual({
          argv: result.argv,
          code: 1,
          stderr: [line],
        });
      }
      expect(fake.requests()).toBeGreaterThanOrEqual(results.length);
    });
  });
});

describe('the CLI on the state table in a broken environment', () => {
  it('prints one line naming AWS_ENDPOINT_URL_DYNAMODB when nothing answers there, for status and history, and exits 1', async () => {
    // Prepare
    const env = { ...KEYS, AWS_REGION: 'eu-west-1', AWS_ENDPOINT_URL_DYNAMODB: closed };
    // Act
    const results = [];
    for (const argv of STATE_TABLE_COMMANDS) results.push(await runWith(argv, env));
    // Assess
    for (const result of results) {
      expect(result.code).toBe(1);
      expect(result.stderr).toEqual([
        `error: nothing answers at ${closed.replace('http://', '')} (connection refused, ECONNREFUSED), the endpoint set by AWS_ENDPOINT_URL_DYNAMODB=${closed}: start that server, or fix or unset AWS_ENDPOINT_URL_DYNAMODB`,
      ]);
    }
  });

  it.each([
    ['no region is configured', () => ({ ...KEYS }), NO_REGION],
    [
      'no credentials can be found',
      () => ({ AWS_REGION: 'eu-west-1', AWS_ENDPOINT_URL_DYNAMODB: closed }),
      NO_CREDENTIALS,
    ],
  ])('prints the same one line as for S3 when %s, and exits 1', async (_case, env, line) => {
    // Act
    const results = [];
    for (const argv of STATE_TABLE_COMMANDS) results.push(await runWith(argv, env()));
    // Assess
    for (const result of results) {
      expect(result.code).toBe(1);
      expect(result.stderr).toEqual([line]);
    }
  });

  describe.each<[string, CannedAnswer, string]>([
    [
      'AccessDeniedException',
      dynamoDbError(
        400,
        'AccessDeniedException',
        'User: arn:aws:iam::111122223333:user/ops is not authorized to perform: dynamodb:Query',
      ),
      'error: DynamoDB denied access to table state (AccessDeniedException: User: arn:aws:iam::111122223333:user/ops is not authorized to perform: dynamodb:Query): the credentials in use lack a permission this command needs; check the IAM policy of your role or AWS_PROFILE',
    ],
    [
      'ExpiredTokenException',
      dynamoDbError(400, 'ExpiredTokenException', 'The security token included in the request is expired'),
      'error: the AWS credentials have expired (ExpiredTokenException: The security token included in the request is expired): refresh them (aws sso login, or a new AWS_SESSION_TOKEN) and run again',
    ],
    [
      'UnrecognizedClientException',
      dynamoDbError(
        400,
        'UnrecognizedClientException',
        'The security token included in the request is invalid.',
      ),
      'error: DynamoDB does not recognise the credentials (UnrecognizedClientException: The security token included in the request is invalid.): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, or AWS_PROFILE, and that they belong to the account of the table',
    ],
    [
      'ResourceNotFoundException',
      dynamoDbError(400, 'ResourceNotFoundException', 'Requested resource not found'),
      "error: DynamoDB table state does not exist in eu-west-1 (ResourceNotFoundException: Requested resource not found): pass the deployment's state table with --state-table <name> (or LAKE_COMPACTOR_TABLE), and check AWS_REGION and AWS_PROFILE",
    ],
  ])('when DynamoDB answers %s', (_code, answer, line) => {
    let fake: FakeAwsEndpoint;
    beforeAll(async () => {
      fake = await startFakeAwsEndpoint(answer);
    });
    afterAll(async () => {
      await fake.close();
    });

    it('status and history print the same one line saying what to do, and exit 1', async () => {
      // Prepare
      const env = { ...KEYS, AWS_REGION: 'eu-west-1', AWS_ENDPOINT_URL_DYNAMODB: fake.endpoint };
      // Act
      const results = [];
      for (const argv of STATE_TABLE_COMMANDS) results.push(await runWith(argv, env));
      // Assess
      for (const result of results) {
        expect(result.code).toBe(1);
        expect(result.stderr).toEqual([line]);
      }
    });
  });
});

describe('an unexpected error', () => {
  let fake: FakeAwsEndpoint;
  beforeAll(async () => {
    // A 200 whose body is not a listing: nothing this project can explain.
    fake = await startFakeAwsEndpoint({ status: 200, contentType: 'application/xml', body: 'not xml <' });
  });
  afterAll(async () => {
    await fake.close();
  });

  it('prints one line that says how to see the stack, and exits 1', async () => {
    // Prepare
    const env = { ...KEYS, AWS_REGION: 'eu-west-1', AWS_ENDPOINT_URL_S3: fake.endpoint };
    // Act
    const result = await runWith(['profile', LOCATION], env);
    // Assess
    expect(result.code).toBe(1);
    expect(result.stderr).toHaveLength(1);
    expect(result.stderr[0]).toMatch(
      /^error: Error: @aws-sdk XML parse error: .* \(unexpected; run with LAKE_COMPACTOR_DEBUG=1 for the stack\)$/,
    );
  });

  it('prints the stack after the same line when LAKE_COMPACTOR_DEBUG is set', async () => {
    // Prepare
    const env = { ...KEYS, AWS_REGION: 'eu-west-1', AWS_ENDPOINT_URL_S3: fake.endpoint };
    const plain = await runWith(['profile', LOCATION], env);
    // Act
    const debug = await runWith(['profile', LOCATION], { ...env, LAKE_COMPACTOR_DEBUG: '1' });
    // Assess
    expect(debug.code).toBe(1);
    expect(debug.stderr[0]).toBe(plain.stderr[0]);
    expect(debug.stderr.slice(1).join('\n')).toMatch(/XML parse error[\s\S]*\n\s+at /);
  });
});

describe('describeFailure', () => {
  const context = { locations: [LOCATION] };

  it('explains a host that does not resolve by the endpoint variable that names it, or by the region', () => {
    // Prepare
    const error = Object.assign(new Error('getaddrinfo ENOTFOUND minio.internal'), {
      code: 'ENOTFOUND',
      hostname: 'minio.internal',
    });
    const awsError = Object.assign(new Error('getaddrinfo ENOTFOUND s3.eu-wst-1.amazonaws.com'), {
      code: 'ENOTFOUND',
      hostname: 's3.eu-wst-1.amazonaws.com',
    });
    // Act
    const local = describeFailure(error, { AWS_ENDPOINT_URL_S3: 'http://minio.internal:80' }, context);
    const aws = describeFailure(awsError, { AWS_REGION: 'eu-wst-1' }, context);
    // Assess
    expect(local).toEqual({
      message:
        'cannot resolve the host minio.internal of AWS_ENDPOINT_URL_S3=http://minio.internal:80 (ENOTFOUND): fix or unset AWS_ENDPOINT_URL_S3, or check the network and DNS',
      exitCode: 1,
      explained: true,
    });
    expect(aws.message).toBe(
      'cannot resolve the host s3.eu-wst-1.amazonaws.com (ENOTFOUND): check the network and DNS, and that AWS_REGION=eu-wst-1 is a region',
    );
  });

  it('finds the network error inside an adapter’s retryable error and inside an AggregateError', () => {
    // Prepare
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:9000'), {
      code: 'ECONNREFUSED',
      address: '127.0.0.1',
      port: 9000,
    });
    const wrapped = new TransientStoreError(
      'S3 ListObjectsV2 of s3://lake/events/ failed transiently; retry',
      {
        cause: refused,
      },
    );
    const aggregate = Object.assign(new AggregateError([refused], ''), { code: 'ECONNREFUSED' });
    const env = { AWS_ENDPOINT_URL: 'http://localhost:9000' };
    // Act
    const messages = [wrapped, aggregate].map((e) => describeFailure(e, env, context).message);
    // Assess
    expect(messages).toEqual([
      'nothing answers at 127.0.0.1:9000 (connection refused, ECONNREFUSED), the endpoint set by AWS_ENDPOINT_URL=http://localhost:9000: start that server, or fix or unset AWS_ENDPOINT_URL',
      'nothing answers at 127.0.0.1:9000 (connection refused, ECONNREFUSED), the endpoint set by AWS_ENDPOINT_URL=http://localhost:9000: start that server, or fix or unset AWS_ENDPOINT_URL',
    ]);
  });

  it('keeps a usage error’s message with exit code 2, and the project’s own errors’ messages with 1', () => {
    // Act
    const usage = describeFailure(new UsageError('pass --state-table <name>'), {}, context);
    const own = describeFailure(new TransientStoreError('S3 throttled; retry with backoff.'), {}, context);
    // Assess
    expect(usage).toEqual({ message: 'pass --state-table <name>', exitCode: 2, explained: true });
    expect(own).toEqual({ message: 'S3 throttled; retry with backoff.', exitCode: 1, explained: true });
  });
});
