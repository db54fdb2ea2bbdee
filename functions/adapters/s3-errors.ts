// Maps AWS SDK v3 S3 failures onto the project's typed errors: lost conditions, missing objects and
// retryable faults each get one class, with the key in the message; anything else passes through.

import {
  CompactorError,
  InvalidInputError,
  ObjectNotFoundError,
  PreconditionFailedError,
  TransientStoreError,
} from '../core/errors.js';

/** Shape of SDK service errors and Node network errors, read defensively (both are plain objects). */
interface SdkErrorLike {
  readonly name?: string;
  readonly code?: string;
  readonly Code?: string;
  readonly message?: string;
  readonly $metadata?: { readonly httpStatusCode?: number };
  readonly $retryable?: unknown;
}

/** Error codes S3 and the SDK use for throttling or "try again". */
const RETRYABLE_CODES = new Set([
  'SlowDown',
  'ThrottlingException',
  'Throttling',
  'ThrottledException',
  'RequestThrottled',
  'RequestLimitExceeded',
  'TooManyRequestsException',
  'ServiceUnavailable',
  'InternalError',
  'RequestTimeout',
  'RequestTimeoutException',
  'OperationAborted',
  'TimeoutError',
  'ECONNRESET',
  'ECONNREFUSED',
  'ETIMEDOUT',
  'EPIPE',
  'EAI_AGAIN',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

/**
 * Turns an S3 failure on `key` during `operation` into the error core code can act on:
 * PreconditionFailedError (412, PreconditionFailed, 409 ConditionalRequestConflict; other 409s such
 * as OperationAborted are transient),
 * ObjectNotFoundError (NoSuchKey, NotFound, 404), TransientStoreError (throttling, 5xx, timeouts,
 * connection resets), InvalidInputError (NoSuchBucket). Other errors (AccessDenied...) are returned
 * unchanged so their SDK details stay visible.
 */
export function mapS3Error(error: unknown, key: string, operation: string): Error {
  if (typeof error !== 'object' || error === null) {
    return new TransientStoreError(
      `S3 ${operation} of ${key} failed with ${String(error)}; retry the request.`,
    );
  }
  if (error instanceof CompactorError) return error;
  const e = error as SdkErrorLike;
  const code = e.Code ?? e.name ?? e.code ?? '';
  const status = e.$metadata?.httpStatusCode;
  const detail = e.message ? `${code}: ${e.message}` : code;

  if (status === 412 || code === 'PreconditionFailed' || code === 'ConditionalRequestConflict') {
    return new PreconditionFailedError(
      key,
      `Precondition failed for ${key} during S3 ${operation} (${detail}): the object exists or changed since it was read. Re-read it and decide again.`,
    );
  }
  if (code === 'NoSuchBucket') {
    return new InvalidInputError(
      `S3 ${operation} of ${key} failed: the bucket does not exist (${detail}). Check the s3:// URI.`,
      [],
      { cause: error },
    );
  }
  if (code === 'InvalidRange' || status === 416) {
    return new InvalidInputError(
      `S3 ${operation} of ${key}: the byte range is not satisfiable (${detail}). Take sizes from head() or the listing.`,
    );
  }
  if (code === 'NoSuchKey' || code === 'NotFound' || status === 404) {
    return new ObjectNotFoundError(key);
  }
  const networkCode = e.code ?? '';
  if (
    RETRYABLE_CODES.has(code) ||
    RETRYABLE_CODES.has(networkCode) ||
    (status !== undefined && (status === 429 || status >= 500)) ||
    (typeof e.$retryable === 'object' && e.$retryable !== null)
  ) {
    return new TransientStoreError(
      `S3 ${operation} of ${key} failed transiently (${detail}${status ? `, HTTP ${status}` : ''}); retry with backoff.`,
      { cause: error },
    );
  }
  return error instanceof Error ? error : new Error(`S3 ${operation} of ${key} failed: ${detail}`);
}
