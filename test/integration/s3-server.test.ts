import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
  UploadPartCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { PreconditionFailedError } from '../../functions/core/errors.js';
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

  it('serves a GET racing PUTs of the same key whole: the object before or after a write, never a torn mix', async () => {
    // Prepare: two versions of one object, large enough that s3rver writes each in many chunks
    const size = 4 * 1024 * 1024;
    const versions = [new Uint8Array(size).fill(0x61), new Uint8Array(size).fill(0x62)];
    await store.put('race/k', versions[0] as Uint8Array);

    // Act: writers alternate the versions while readers read
    const writes = Array.from({ length: 6 }, (_, i) => store.put('race/k', versions[i % 2] as Uint8Array));
    const reads = Array.from({ length: 12 }, () => store.get('race/k'));
    const [, read] = await Promise.all([Promise.all(writes), Promise.all(reads)]);

    // Assess: every read is one whole version
    for (const body of read) {
      expect(body.length).toBe(size);
      expect(new Set(body).size).toBe(1);
    }
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

describe('startS3Server multipart copies', () => {
  let s3: RunningS3Server;
  let client: S3Client;
  let store: S3ObjectStore;
  const MiB = 1024 * 1024;
  /** 12 MiB of bytes that differ at every offset modulo 251, so a shifted range cannot pass for the right one. */
  const source = Uint8Array.from({ length: 12 * MiB }, (_, i) => i % 251);
  /** Commands the client sent, by name (parts go concurrently: in no particular order). */
  const commands: string[] = [];

  beforeAll(async () => {
    s3 = await startS3Server({ buckets: ['lake'] });
    client = s3.client();
    client.middlewareStack.add(
      (next, context) => async (args) => {
        commands.push(context.commandName ?? '');
        return next(args);
      },
      { step: 'initialize' },
    );
    store = new S3ObjectStore({ client, bucket: 'lake' });
    await store.put('copy/source.bin', source);
  });

  afterAll(async () => {
    await s3.stop();
  });

  /** Keys of the multipart uploads s3rver still holds (neither completed nor aborted). */
  async function pendingUploads(): Promise<string[]> {
    const folder = s3.server.store.getResourcePath('lake', undefined, 'uploads');
    const ids = await readdir(folder).catch(() => []);
    return Promise.all(ids.map((id) => readFile(join(folder, id, 'key'), 'utf8')));
  }

  async function upload(key: string): Promise<string> {
    const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: 'lake', Key: key }));
    return UploadId as string;
  }

  it('copies a range of the source as a part (UploadPartCopy), which s3rver alone would store empty', async () => {
    // Prepare
    const id = await upload('copy/ranged.bin');
    const { etag } = (await store.head('copy/source.bin')) as { etag: string };

    // Act
    const part = await client.send(
      new UploadPartCopyCommand({
        Bucket: 'lake',
        Key: 'copy/ranged.bin',
        UploadId: id,
        PartNumber: 1,
        CopySource: 'lake/copy/source.bin',
        CopySourceRange: `bytes=1000-${1000 + 6 * MiB - 1}`,
        CopySourceIfMatch: `"${etag}"`,
      }),
    );
    await client.send(
      new CompleteMultipartUploadCommand({
        Bucket: 'lake',
        Key: 'copy/ranged.bin',
        UploadId: id,
        MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.CopyPartResult?.ETag }] },
      }),
    );

    // Assess
    expect(part.CopyPartResult?.ETag).toMatch(/^"[0-9a-f]{32}"$/);
    expect(part.CopyPartResult?.LastModified).toBeInstanceOf(Date);
    const copied = await store.get('copy/ranged.bin');
    expect(Buffer.from(copied).equals(Buffer.from(source.subarray(1000, 1000 + 6 * MiB)))).toBe(true);
  });

  it('refuses UploadPartCopy from a source whose ETag changed (412) and a range past its end (416)', async () => {
    // Prepare
    await store.put('copy/changing.bin', source.subarray(0, 100));
    const id = await upload('copy/refused.bin');
    const copy = (range: string, ifMatch?: string) =>
      client
        .send(
          new UploadPartCopyCommand({
            Bucket: 'lake',
            Key: 'copy/refused.bin',
            UploadId: id,
            PartNumber: 1,
            CopySource: 'lake/copy/changing.bin',
            CopySourceRange: range,
            ...(ifMatch !== undefined && { CopySourceIfMatch: `"${ifMatch}"` }),
          }),
        )
        .catch((error: unknown) => error);

    // Act
    const stale = await copy('bytes=0-9', 'f'.repeat(32));
    const past = await copy('bytes=50-100');

    // Assess
    expect(stale).toMatchObject({ name: 'PreconditionFailed', $metadata: { httpStatusCode: 412 } });
    expect(past).toMatchObject({ $metadata: { httpStatusCode: 416 } });
  });

  it('refuses GetObject If-Match with a stale ETag (412) and serves the current one', async () => {
    // Prepare
    const { etag } = await store.put('copy/read.bin', 'v1');

    // Act
    const current = await client.send(
      new GetObjectCommand({
        Bucket: 'lake',
        Key: 'copy/read.bin',
        Range: 'bytes=0-1',
        IfMatch: `"${etag}"`,
      }),
    );
    const stale = await client
      .send(new GetObjectCommand({ Bucket: 'lake', Key: 'copy/read.bin', IfMatch: '"0123"' }))
      .catch((error: unknown) => error);

    // Assess
    expect(await current.Body?.transformToString()).toBe('v1');
    expect(stale).toMatchObject({ $metadata: { httpStatusCode: 412 } });
  });

  it('refuses to complete an upload with a part under 5 MiB that is not the last (EntityTooSmall), as S3', async () => {
    // Prepare
    const id = await upload('copy/small.bin');
    const small = await client.send(
      new UploadPartCommand({
        Bucket: 'lake',
        Key: 'copy/small.bin',
        UploadId: id,
        PartNumber: 1,
        Body: source.subarray(0, 10),
      }),
    );
    const large = await client.send(
      new UploadPartCommand({
        Bucket: 'lake',
        Key: 'copy/small.bin',
        UploadId: id,
        PartNumber: 2,
        Body: source.subarray(0, 5 * MiB),
      }),
    );

    // Act
    const refused = await client
      .send(
        new CompleteMultipartUploadCommand({
          Bucket: 'lake',
          Key: 'copy/small.bin',
          UploadId: id,
          MultipartUpload: {
            Parts: [
              { PartNumber: 1, ETag: small.ETag },
              { PartNumber: 2, ETag: large.ETag },
            ],
          },
        }),
      )
      .catch((error: unknown) => error);

    // Assess
    expect(refused).toMatchObject({ name: 'EntityTooSmall', $metadata: { httpStatusCode: 400 } });
    expect(await store.head('copy/small.bin')).toBeUndefined();
    await store.abortMultipartUpload('copy/small.bin', id);
    expect(await pendingUploads()).not.toContain('copy/small.bin');
  });

  it('composes an object of literal bytes and ranges, copying the large ranges, byte for byte', async () => {
    // Prepare
    const { etag } = (await store.head('copy/source.bin')) as { etag: string };
    const range = (start: number, length: number) =>
      ({ kind: 'range', key: 'copy/source.bin', etag, start, endInclusive: start + length - 1 }) as const;
    const literal = (text: string) => ({ kind: 'bytes', bytes: new TextEncoder().encode(text) }) as const;
    const pieces = [literal('head'), range(7, 100), range(1 * MiB, 10 * MiB), literal('tail')];
    const expected = Buffer.concat([
      Buffer.from('head'),
      Buffer.from(source.subarray(7, 107)),
      Buffer.from(source.subarray(1 * MiB, 11 * MiB)),
      Buffer.from('tail'),
    ]);
    commands.length = 0;

    // Act
    const written = await store.putComposed('copy/composed.bin', pieces, {
      contentType: 'application/octet-stream',
    });

    // Assess
    const stored = await store.get('copy/composed.bin');
    expect(written.size).toBe(expected.length);
    expect(Buffer.from(stored).equals(expected)).toBe(true);
    expect(written.etag).toBe((await store.head('copy/composed.bin'))?.etag);
    // The first part reads what it lacks of the large range; the rest of it is copied server-side.
    expect(commands.filter((c) => c.startsWith('UploadPart')).sort()).toEqual([
      'UploadPartCommand',
      'UploadPartCommand',
      'UploadPartCopyCommand',
    ]);
  });

  it('writes nothing and names the source when a composed range was replaced since it was planned', async () => {
    // Prepare
    const { etag } = await store.put('copy/replaced.bin', source);
    await store.put('copy/replaced.bin', source.subarray(1));
    const pieces = [
      { kind: 'bytes', bytes: new Uint8Array(4) },
      { kind: 'range', key: 'copy/replaced.bin', etag, start: 0, endInclusive: 11 * MiB },
    ] as const;

    // Act
    const error = await store.putComposed('copy/never.bin', pieces).catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(PreconditionFailedError);
    expect((error as PreconditionFailedError).key).toBe('copy/replaced.bin');
    expect(await store.head('copy/never.bin')).toBeUndefined();
    expect(await pendingUploads()).not.toContain('copy/never.bin');
  });

  it('aborts a failed composed upload only after its parts in flight have landed, and sends no queued part', async () => {
    // Prepare: part 1 copies a replaced source (fails at once), part 2 is held in flight, parts 3 and 4 wait in the
    // queue (two at a time). A part landing after the abort would store the upload again.
    const { etag: stale } = await store.put('copy/raced.bin', source);
    await store.put('copy/raced.bin', source.subarray(1));
    const { etag } = (await store.head('copy/source.bin')) as { etag: string };
    const copy = (key: string, tag: string, start: number) =>
      ({ kind: 'range', key, etag: tag, start, endInclusive: start + 6 * MiB - 1 }) as const;
    const pieces = [
      copy('copy/raced.bin', stale, 0),
      copy('copy/source.bin', etag, 0),
      copy('copy/source.bin', etag, 6 * MiB),
      copy('copy/source.bin', etag, 0),
    ];
    const racing = s3.client();
    const events: string[] = [];
    racing.middlewareStack.add(
      (next, context) => async (args) => {
        const input = args.input as { PartNumber?: number };
        const name = `${context.commandName ?? ''}${input.PartNumber === undefined ? '' : ` ${input.PartNumber}`}`;
        if (input.PartNumber === 2) await new Promise((resolve) => setTimeout(resolve, 500));
        events.push(`sent ${name}`);
        try {
          return await next(args);
        } finally {
          events.push(`done ${name}`);
        }
      },
      { step: 'initialize' },
    );
    const racingStore = new S3ObjectStore({ client: racing, bucket: 'lake' });
    const folder = s3.server.store.getResourcePath('lake', undefined, 'uploads');
    const uploadsBefore = await readdir(folder).catch(() => []);

    // Act
    const error = await racingStore
      .putComposed('copy/raced-out.bin', pieces, { queueSize: 2 })
      .catch((e: unknown) => e);

    // Assess
    expect(error).toBeInstanceOf(PreconditionFailedError);
    const abort = events.indexOf('sent AbortMultipartUploadCommand');
    expect(abort).toBeGreaterThan(-1);
    expect(events.slice(0, abort)).toContain('done UploadPartCopyCommand 2');
    expect(events.filter((e) => e.startsWith('sent UploadPart')).sort()).toEqual([
      'sent UploadPartCopyCommand 1',
      'sent UploadPartCopyCommand 2',
    ]);
    expect(await readdir(folder).catch(() => [])).toEqual(uploadsBefore);
    expect(await store.head('copy/raced-out.bin')).toBeUndefined();
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
