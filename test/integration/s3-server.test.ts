import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CopyObjectCommand, ListObjectsV2Command, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { type RunningS3Server, type S3rverEvent, startS3Server } from '../../infra/local/s3-server.js';

describe('startS3Server', () => {
  let s3: RunningS3Server;
  let client: S3Client;
  let store: S3ObjectStore;

  beforeAll(async () => {
    s3 = await startS3Server({ buckets: ['lake'] });
    client = s3.client();
    store = new S3ObjectStore({ client, bucket: 'lake' });
  });

  afterAll(async () => {
    await s3.stop();
  });

  it('listens on 127.0.0.1 with an OS-assigned port', () => {
    // Assess
    expect(s3.port).toBeGreaterThan(0);
    expect(s3.endpoint).toBe(`http://127.0.0.1:${s3.port}`);
  });

  it('enforces If-Match on PutObject: the current ETag wins, a stale one gets 412', async () => {
    // Prepare
    const { etag } = await store.put('ifmatch/k', 'v1');
    await client.send(
      new PutObjectCommand({ Bucket: 'lake', Key: 'ifmatch/k', Body: 'v2', IfMatch: `"${etag}"` }),
    );
    // Act
    const stale = await client
      .send(new PutObjectCommand({ Bucket: 'lake', Key: 'ifmatch/k', Body: 'v3', IfMatch: `"${etag}"` }))
      .catch((error: unknown) => error);
    // Assess
    expect(stale).toMatchObject({ name: 'PreconditionFailed', $metadata: { httpStatusCode: 412 } });
    expect(new TextDecoder().decode(await store.get('ifmatch/k'))).toBe('v2');
  });

  it('enforces If-None-Match: * on PutObject: the first put wins, a second gets 412 and changes nothing', async () => {
    // Prepare
    await client.send(
      new PutObjectCommand({ Bucket: 'lake', Key: 'ifnonematch/k', Body: 'v1', IfNoneMatch: '*' }),
    );
    // Act
    const second = await client
      .send(new PutObjectCommand({ Bucket: 'lake', Key: 'ifnonematch/k', Body: 'v2', IfNoneMatch: '*' }))
      .catch((error: unknown) => error);
    // Assess
    expect(second).toMatchObject({ name: 'PreconditionFailed', $metadata: { httpStatusCode: 412 } });
    expect(new TextDecoder().decode(await store.get('ifnonematch/k'))).toBe('v1');
  });

  it('still accepts a copy source encoded with encodeURI, as older clients send it', async () => {
    // Prepare
    await store.put('legacy/a b+c=d.txt', 'payload');
    // Act
    await client.send(
      new CopyObjectCommand({
        Bucket: 'lake',
        Key: 'legacy/copy.txt',
        CopySource: encodeURI('lake/legacy/a b+c=d.txt'),
      }),
    );
    // Assess
    expect(new TextDecoder().decode(await store.get('legacy/copy.txt'))).toBe('payload');
  });

  it('answers a continuation token it did not issue with 400 InvalidArgument instead of 500', async () => {
    // Act
    const error = await client
      .send(new ListObjectsV2Command({ Bucket: 'lake', ContinuationToken: 'bm90LW91cnM' }))
      .catch((caught: unknown) => caught);
    // Assess
    expect(error).toMatchObject({ name: 'InvalidArgument', $metadata: { httpStatusCode: 400 } });
  });

  it('passes s3rver notifications to onEvent listeners until they unsubscribe', async () => {
    // Prepare
    const events: S3rverEvent[] = [];
    const unsubscribe = s3.onEvent((event) => events.push(event));
    // Act
    await store.put('events/one.parquet', 'x');
    unsubscribe();
    await store.put('events/two.parquet', 'x');
    // Assess
    expect(events.flatMap((event) => event.Records.map((record) => record.s3.object.key))).toEqual([
      'events/one.parquet',
    ]);
    expect(events[0]?.Records[0]?.eventName).toBe('ObjectCreated:Put');
  });

  it('leaves no object behind when the producer of a multipart upload fails midway', async () => {
    // Prepare
    async function* failing(): AsyncGenerator<Uint8Array> {
      yield new Uint8Array(5 * 1024 * 1024);
      yield new Uint8Array(5 * 1024 * 1024);
      throw new Error('producer broke');
    }
    // Act
    const error = await store
      .putStream('broken/out.parquet', failing(), { partSize: 5 * 1024 * 1024 })
      .catch((caught: unknown) => caught);
    // Assess
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toContain('producer broke');
    expect(await store.head('broken/out.parquet')).toBeUndefined();
  });
});

describe('startS3Server folders', () => {
  it('removes its temp folder on stop but keeps a folder it was given', async () => {
    // Prepare
    const given = await mkdtemp(join(tmpdir(), 's3rver-given-'));
    const own = await startS3Server({ buckets: ['a'] });
    const kept = await startS3Server({ buckets: ['b'], directory: given });
    // Act
    await own.stop();
    await kept.stop();
    // Assess
    expect(existsSync(own.directory)).toBe(false);
    expect(existsSync(join(given, 'b'))).toBe(true);
    await rm(given, { recursive: true, force: true });
  });
});
