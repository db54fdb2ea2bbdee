// How every CLI command ends on an error: one line on stderr saying what is wrong and what to do, and the exit
// code (1 failure, 2 usage); SDK and network failures of the environment are recognised here, and only here.

import { DynamoDBServiceException } from '@aws-sdk/client-dynamodb';
import { S3ServiceException } from '@aws-sdk/client-s3';
import { CompactorError, InvalidInputError, UsageError } from '../core/errors.js';
import type { TableSnapshot } from '../core/formats/table-format.js';
import { printable } from '../core/keys.js';
import type { Env } from '../shared/aws-env.js';

/** Set to anything but `''`, `0` or `false` to have the CLI print the stack after the one-line error. */
export const DEBUG_VARIABLE = 'LAKE_COMPACTOR_DEBUG';

/** What the command was pointed at, for messages that name it (taken from the arguments and the environment). */
export interface FailureContext {
  /** `s3://` locations among the arguments. */
  readonly locations: readonly string[];
  /** `--state-table`, else env LAKE_COMPACTOR_TABLE unless `--stack` names the table instead. */
  readonly stateTable?: string;
}

/** How a failed command is reported. */
export interface CliFailure {
  /** One line, without the `error: ` prefix. */
  readonly message: string;
  readonly exitCode: 1 | 2;
  /**
   * Whether the error is one this project explains (its own typed errors, a recognised environment problem).
   * An unexpected one says how to see its stack.
   */
  readonly explained: boolean;
}

/**
 * Describes `err` for an operator. Usage errors (the command line itself is wrong) exit 2. An environment
 * problem anywhere in the error's cause chain — no region, no or rejected credentials, an endpoint that does
 * not answer, a missing bucket or table, a denied permission — is explained by what to fix, whichever
 * command met it and whether an adapter wrapped it (a connection refused reaches the CLI as a
 * TransientStoreError saying "retry", which is not the advice for a wrong endpoint). The project's own errors
 * keep their message; anything else is unexpected and says so.
 */
export function describeFailure(err: unknown, env: Env, context: FailureContext): CliFailure {
  if (err instanceof UsageError) return { message: err.message, exitCode: 2, explained: true };
  for (const link of causeChain(err)) {
    const message = environmentProblem(link, env, context);
    if (message !== undefined) return { message, exitCode: 1, explained: true };
  }
  if (err instanceof CompactorError) return { message: err.message, exitCode: 1, explained: true };
  const text =
    err instanceof Error ? `${err.name}: ${oneLine(err.message) || '(no message)'}` : oneLine(String(err));
  return {
    message: `${text} (unexpected; run with ${DEBUG_VARIABLE}=1 for the stack)`,
    exitCode: 1,
    explained: false,
  };
}

/**
 * Refuses a location that holds no Parquet file at all. Why: a wrong path (a typo, the bucket instead of
 * the table, a folder of CSV) otherwise reads as an empty table, prints empty tables and exits 0.
 * @throws InvalidInputError (exit 1) naming the location and, when there are any, the other objects found.
 */
export function requireParquetFiles(
  inventory: Pick<TableSnapshot, 'partitions' | 'ignored'>,
  uri: string,
  action: string,
): void {
  if (inventory.partitions.some((p) => p.files.length > 0)) return;
  const others = inventory.ignored;
  const example = others[0];
  const found =
    example === undefined
      ? ''
      : ` (only ${others.length} other object${others.length === 1 ? '' : 's'}, e.g. ${printable(example.key)})`;
  throw new InvalidInputError(`no Parquet files under ${uri}${found}: nothing to ${action}; check the path`);
}

/** Whether `env` asks for stacks. */
export function debugRequested(env: Env): boolean {
  const value = env[DEBUG_VARIABLE]?.trim().toLowerCase();
  return value !== undefined && value !== '' && value !== '0' && value !== 'false';
}

/** The stack of `err` and of each error it was caused by, for {@link DEBUG_VARIABLE}. */
export function stackOf(err: unknown): string {
  return causeChain(err)
    .map(
      (e, i) => `${i === 0 ? '' : 'caused by: '}${e instanceof Error ? (e.stack ?? e.message) : String(e)}`,
    )
    .join('\n');
}

/** The context of a command line: its `s3://` arguments and the state table it names. */
export function failureContext(argv: readonly string[], env: Env): FailureContext {
  let stateTable: string | undefined;
  for (const [i, arg] of argv.entries()) {
    if (arg === '--state-table') stateTable = argv[i + 1];
    else if (arg.startsWith('--state-table=')) stateTable = arg.slice('--state-table='.length);
  }
  // `--stack` outranks the environment: its table is resolved later, so the environment's would be the wrong name.
  const stack = argv.some((arg) => arg === '--stack' || arg.startsWith('--stack='));
  if (!stack) stateTable ||= env.LAKE_COMPACTOR_TABLE || undefined;
  return {
    locations: argv.filter((a) => /^s3a?:\/\//i.test(a)),
    ...(stateTable === undefined ? {} : { stateTable }),
  };
}

/** `err`, its `cause`, its cause's cause... and the errors of an AggregateError, outermost first. */
function causeChain(err: unknown): unknown[] {
  const chain: unknown[] = [];
  const queue: unknown[] = [err];
  while (queue.length > 0 && chain.length < 20) {
    const next = queue.shift();
    if (next === undefined || next === null || chain.includes(next)) continue;
    chain.push(next);
    if (typeof next === 'object') {
      const { cause, errors } = next as { cause?: unknown; errors?: unknown };
      if (cause !== undefined) queue.push(cause);
      if (Array.isArray(errors)) queue.push(...errors);
    }
  }
  return chain;
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}

/** Node's network error codes, by what they mean for the operator. */
const REFUSED = new Set(['ECONNREFUSED']);
const UNRESOLVED = new Set(['ENOTFOUND', 'EAI_AGAIN']);
const UNREACHABLE = new Set([
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ECONNRESET',
  'EPIPE',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

const DENIED = new Set(['AccessDenied', 'AccessDeniedException', 'AllAccessDisabled', 'Forbidden', '403']);
const UNRECOGNISED = new Set([
  'UnrecognizedClientException',
  'InvalidClientTokenId',
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'InvalidSignatureException',
  'InvalidToken',
]);
const EXPIRED = new Set(['ExpiredToken', 'ExpiredTokenException', 'TokenRefreshRequired']);
const SKEWED = new Set(['RequestTimeTooSkewed', 'RequestExpired']);
const WRONG_REGION = new Set(['PermanentRedirect', 'AuthorizationHeaderMalformed']);

interface ErrorShape {
  readonly name?: unknown;
  readonly message?: unknown;
  readonly code?: unknown;
  readonly Code?: unknown;
  readonly address?: unknown;
  readonly port?: unknown;
  readonly hostname?: unknown;
  readonly BucketName?: unknown;
}

/** The one-line explanation of an environment problem, or undefined when `err` is not one. */
function environmentProblem(err: unknown, env: Env, context: FailureContext): string | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const e = err as ErrorShape;
  const name = typeof e.name === 'string' ? e.name : '';
  const code = typeof e.Code === 'string' ? e.Code : name;
  const message = typeof e.message === 'string' ? oneLine(e.message) : '';
  const detail = message === '' ? code : `${code}: ${message}`;
  const service = serviceOf(err);

  if (message === 'Region is missing') {
    return 'no AWS region is set: export AWS_REGION=<region> (the one your bucket and state table are in), or set a region in your AWS profile, and run again';
  }
  if (name === 'CredentialsProviderError') {
    return `no AWS credentials could be loaded (${message}): sign in (aws sso login, or aws configure) and set AWS_PROFILE, or set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, and run again`;
  }
  const network = typeof e.code === 'string' ? e.code : '';
  if (REFUSED.has(network) || UNRESOLVED.has(network) || UNREACHABLE.has(network)) {
    // Node's AggregateError (one error per address tried) names no address itself: its errors do.
    const vague = e.address === undefined && e.hostname === undefined;
    if (vague && Array.isArray((err as { errors?: unknown }).errors)) return undefined;
    return networkProblem(network, e, env);
  }
  if (service === undefined) return undefined;
  if (code === 'NoSuchBucket') {
    const bucket = typeof e.BucketName === 'string' ? e.BucketName : bucketOf(context.locations[0]);
    return `S3 bucket ${bucket ?? '(of the location)'} does not exist (${detail}): check the bucket name in ${context.locations[0] ?? 'the s3:// location'}, and that AWS_PROFILE${env.AWS_ENDPOINT_URL_S3 || env.AWS_ENDPOINT_URL ? ` and ${env.AWS_ENDPOINT_URL_S3 ? 'AWS_ENDPOINT_URL_S3' : 'AWS_ENDPOINT_URL'}` : ''} point at the account or server that has it`;
  }
  if (code === 'ResourceNotFoundException' && service === 'DynamoDB') {
    const region = env.AWS_REGION || env.AWS_DEFAULT_REGION;
    return `DynamoDB table ${context.stateTable ?? '(the state table)'} does not exist${region ? ` in ${region}` : ''} (${detail}): pass the deployment's state table with --state-table <name> (or LAKE_COMPACTOR_TABLE), and check AWS_REGION and AWS_PROFILE`;
  }
  if (DENIED.has(code)) {
    const what =
      service === 'S3'
        ? context.locations.join(', ') || 'the s3:// location'
        : `table ${context.stateTable ?? '(the state table)'}`;
    return `${service} denied access to ${what} (${detail}): the credentials in use lack a permission this command needs; check the IAM policy of your role or AWS_PROFILE${service === 'S3' ? ', the bucket policy and any KMS key policy' : ''}`;
  }
  if (UNRECOGNISED.has(code)) {
    return `${service} does not recognise the credentials (${detail}): check AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN, or AWS_PROFILE, and that they belong to the account of ${service === 'S3' ? 'the bucket' : 'the table'}`;
  }
  if (EXPIRED.has(code)) {
    return `the AWS credentials have expired (${detail}): refresh them (aws sso login, or a new AWS_SESSION_TOKEN) and run again`;
  }
  if (SKEWED.has(code)) {
    return `${service} refused the request because this machine's clock is off (${detail}): synchronise the clock (NTP) and run again`;
  }
  if (WRONG_REGION.has(code)) {
    return `the S3 bucket is in another region than ${env.AWS_REGION || env.AWS_DEFAULT_REGION || 'the one configured'} (${detail}): set AWS_REGION to the bucket's region and run again`;
  }
  return undefined;
}

/** The service that answered, for SDK service errors (undefined: not a service's answer). */
function serviceOf(err: object): 'S3' | 'DynamoDB' | 'AWS' | undefined {
  if (err instanceof S3ServiceException) return 'S3';
  if (err instanceof DynamoDBServiceException) return 'DynamoDB';
  return '$metadata' in err && '$fault' in err ? 'AWS' : undefined;
}

/** Endpoint override variables, most specific first. */
const ENDPOINT_VARIABLES = ['AWS_ENDPOINT_URL_S3', 'AWS_ENDPOINT_URL_DYNAMODB', 'AWS_ENDPOINT_URL'] as const;

function networkProblem(code: string, e: ErrorShape, env: Env): string {
  const host =
    typeof e.hostname === 'string' ? e.hostname : typeof e.address === 'string' ? e.address : undefined;
  const port = typeof e.port === 'number' || typeof e.port === 'string' ? String(e.port) : undefined;
  // Several variables may name the same server (one local server for S3 and DynamoDB): name each.
  const matching = ENDPOINT_VARIABLES.filter((v) => endpointMatches(env[v], host, port));
  const variable = matching.length === 0 ? undefined : matching.join(' / ');
  const where = matching.length === 0 ? undefined : matching.map((v) => `${v}=${env[v]}`).join(' and ');
  const target = host === undefined ? 'the AWS endpoint' : port === undefined ? host : `${host}:${port}`;
  if (REFUSED.has(code)) {
    return where === undefined
      ? `nothing answers at ${target} (connection refused, ${code}): check the network, any proxy, and the AWS_ENDPOINT_URL* variables`
      : `nothing answers at ${target} (connection refused, ${code}), the endpoint set by ${where}: start that server, or fix or unset ${variable}`;
  }
  if (UNRESOLVED.has(code)) {
    const region = env.AWS_REGION || env.AWS_DEFAULT_REGION;
    return where === undefined
      ? `cannot resolve the host ${host ?? 'of the AWS endpoint'} (${code}): check the network and DNS${region ? `, and that AWS_REGION=${region} is a region` : ''}`
      : `cannot resolve the host ${host} of ${where} (${code}): fix or unset ${variable}, or check the network and DNS`;
  }
  return where === undefined
    ? `cannot reach ${target} (${code}): check the network (VPN, proxy, firewall) and run again`
    : `cannot reach ${target} (${code}), the endpoint set by ${where}: check that server and the network, or fix or unset ${variable}`;
}

/** Whether the endpoint URL `value` is the host (name or address) and port a network error names. */
function endpointMatches(
  value: string | undefined,
  host: string | undefined,
  port: string | undefined,
): boolean {
  if (!value || host === undefined) return false;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return false;
  }
  const urlPort = url.port || (url.protocol === 'https:' ? '443' : '80');
  if (port !== undefined && urlPort !== port) return false;
  const urlHost = url.hostname.replace(/^\[|\]$/g, '');
  const loopback = (h: string) => h === 'localhost' || h === '::1' || h.startsWith('127.');
  return urlHost === host || (loopback(urlHost) && loopback(host));
}

function bucketOf(location: string | undefined): string | undefined {
  return location === undefined ? undefined : /^s3a?:\/\/([^/]+)/i.exec(location)?.[1];
}
