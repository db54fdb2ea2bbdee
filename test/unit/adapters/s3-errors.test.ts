import { describe, expect, it } from 'vitest';
import { mapS3Error } from '../../../functions/adapters/s3-errors.js';
import { encodeCopySource } from '../../../functions/adapters/s3-object-store.js';
import {
  InvalidInputError,
  ObjectNotFoundError,
  PreconditionFailedError,
  TransientStoreError,
} from '../../../functions/core/errors.js';

/** An SDK-shaped service error (what @aws-sdk/client-s3 throws). */
function sdkError(name: string, status?: number): Error {
  return Object.assign(new Error(`${name} happened`), { name, $metadata: { httpStatusCode: status } });
}

describe('mapS3Error', () => {
  it.each([
    ['PreconditionFailed', 412],
    ['ConditionalRequestConflict', 409],
    ['Unknown', 412],
  ])('maps %s (HTTP %s) to PreconditionFailedError naming the key', (name, status) => {
    // Act
    const mapped = mapS3Error(sdkError(name, status), 'tbl/_delta_log/0001.json', 'PutObject');
    // Assess
    expect(mapped).toBeInstanceOf(PreconditionFailedError);
    expect((mapped as PreconditionFailedError).key).toBe('tbl/_delta_log/0001.json');
  });

  it.each([
    ['NoSuchKey', 404],
    ['NotFound', 404],
  ])('maps %s to ObjectNotFoundError', (name, status) => {
    // Act
    const mapped = mapS3Error(sdkError(name, status), 'a/b.parquet', 'GetObject');
    // Assess
    expect(mapped).toBeInstanceOf(ObjectNotFoundError);
    expect(mapped.message).toContain('a/b.parquet');
  });

  it.each([
    sdkError('SlowDown', 503),
    sdkError('ThrottlingException', 400),
    sdkError('InternalError', 500),
    sdkError('OperationAborted', 409),
    sdkError('Whatever', 502),
    sdkError('TimeoutError'),
    Object.assign(new Error('socket hang up'), { code: 'ECONNRESET' }),
  ])('maps %s to a retryable TransientStoreError with the key in the message', (error) => {
    // Act
    const mapped = mapS3Error(error, 'a/b.parquet', 'GetObject');
    // Assess
    expect(mapped).toBeInstanceOf(TransientStoreError);
    expect((mapped as TransientStoreError).retryable).toBe(true);
    expect(mapped.message).toContain('a/b.parquet');
    expect(mapped.cause).toBe(error);
  });

  it('maps a missing bucket and an unsatisfiable range to InvalidInputError', () => {
    // Act
    const bucket = mapS3Error(sdkError('NoSuchBucket', 404), 'k', 'GetObject');
    const range = mapS3Error(sdkError('InvalidRange', 416), 'k', 'GetObject');
    // Assess
    expect(bucket).toBeInstanceOf(InvalidInputError);
    expect(range).toBeInstanceOf(InvalidInputError);
  });

  it('passes other errors through unchanged, so AccessDenied keeps its SDK details', () => {
    // Prepare
    const denied = sdkError('AccessDenied', 403);
    // Act
    const mapped = mapS3Error(denied, 'k', 'GetObject');
    // Assess
    expect(mapped).toBe(denied);
  });
});

describe('encodeCopySource', () => {
  it('percent-encodes every reserved character per segment and keeps the slashes', () => {
    // Act
    const encoded = encodeCopySource('lake', "t/date=2024-01-01/k=a b+c%3D?#&!'()*/日.parquet");
    // Assess
    expect(encoded).toBe(
      'lake/t/date%3D2024-01-01/k%3Da%20b%2Bc%253D%3F%23%26%21%27%28%29%2A/%E6%97%A5.parquet',
    );
  });

  it('appends an encoded versionId when copying a noncurrent version', () => {
    // Act
    const encoded = encodeCopySource('lake', 't/a b.parquet', 'Abc+/=');
    // Assess
    expect(encoded).toBe('lake/t/a%20b.parquet?versionId=Abc%2B%2F%3D');
  });
});
