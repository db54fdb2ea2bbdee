// A local S3 for tests and demos: s3rver 3.7.1 in-process on 127.0.0.1, patched so that conditional
// writes, CopySourceIfMatch, URL-encoded copy sources and ListObjectsV2 pagination behave like S3.
//
// Findings (verified on Node 20.20 / OpenSSL 3 with s3rver 3.7.1):
// - ListObjectsV2 pagination: s3rver makes continuation tokens with `crypto.createCipheriv('des')`.
//   OpenSSL 3 moved DES to the legacy provider, so *every truncated page* (not only requests that
//   send a ContinuationToken) answers 500 `error:0308010C ... unsupported`, unless the process runs
//   with `--openssl-legacy-provider`. s3rver's listing has two more bugs: it walks the directory
//   tree, so keys come back in tree order rather than UTF-8 byte order (`a-c` vs `a/b`; a key vs the
//   same key plus `.x`), and pages resume "after the last key", which then skips keys; and common
//   prefixes repeat on every page. Instead of a process flag, the middleware below answers
//   `GET /bucket?list-type=2` itself: it reads the bucket folder, sorts by bytes, pages with the same
//   code as the local and in-memory stores (functions/adapters/listing.ts) and an opaque token that
//   needs no cipher. No vitest `execArgv` or NODE_OPTIONS is needed.
// - `If-None-Match: *` and `If-Match` on PutObject / CompleteMultipartUpload and
//   `x-amz-copy-source-if-match` on CopyObject are ignored by s3rver; the middleware enforces them
//   (412 PreconditionFailed, as S3) under a per-key lock, so concurrent conditional writers really
//   race and exactly one wins. Conditional DeleteObjects (`<ETag>` per object) is enforced too:
//   a changed object comes back as `<Error>` PreconditionFailed, a missing one as NoSuchKey.
// - s3rver decodes `x-amz-copy-source` with `decodeURI`, which leaves `%2B`, `%3D`, `%2F`... encoded,
//   while real S3 fully percent-decodes it (and botocore sends keys encoded per segment). The
//   middleware rewrites the header to what s3rver understands, so clients can send the S3-correct
//   encoding (see s3-object-store.ts).
// - SigV4 signatures are not checked by s3rver, so rewriting a signed header is harmless here.
// - UploadPartCopy does not exist in s3rver: its router takes a PUT with `partNumber`, `uploadId` and
//   `x-amz-copy-source` for an UploadPart and stores the (empty) request body as the part. The middleware
//   answers it: the source's `x-amz-copy-source-range` (whole object without one; 416 InvalidRange past its
//   end) written as the part, `x-amz-copy-source-if-match` enforced (412) under the source's lock, and S3's
//   `<CopyPartResult>` (ETag, LastModified); NoSuchUpload for an unknown upload id.
// - `If-Match` on GetObject is ignored by s3rver; the middleware answers 412 PreconditionFailed (NoSuchKey for
//   a missing object) before s3rver reads, under the key's lock.
// - s3rver rewrites an object's file in place as it writes it, so a GET racing a PUT of the same key could read a
//   torn mix (seen: two writers of a storage-based lock file, each reading it half-written). Every object GET and
//   HEAD therefore runs under the key's lock, which every PUT holds, and reads the body whole before releasing it.
// - AbortMultipartUpload is refused by s3rver (405), leaving the upload's parts on disk; the middleware
//   removes the upload (204), NoSuchUpload (404) for an unknown one, as S3.
// - CompleteMultipartUpload accepts parts of any size in s3rver; the middleware refuses a part under 5 MiB
//   that is not the last listed with 400 EntityTooSmall, as S3 does (lib-storage never sends one: its
//   minimum part size is 5 MiB; a one-part upload of any size stays valid).
// - s3rver's PutObject makes the key's folders, then opens the object's file with a write stream that has no error
//   listener, while its DeleteObject removes a key's folders once empty. A PUT racing a DELETE in the same folder
//   (seen: a rollback deleting one marker of `.temp/T/p/` while another marker is written there) then finds its
//   folder gone, and the stream's ENOENT is an uncaught exception that takes the whole process down. PutObject is
//   therefore replaced (`putObjectRaceFree`): the same files written with awaited writes, the folders made again
//   when a concurrent delete removed them.

import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import type { Server } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, sep } from 'node:path';
import { Readable } from 'node:stream';
import { S3Client } from '@aws-sdk/client-s3';
import { listPage, sortByKey } from '../../functions/adapters/listing.js';

const require = createRequire(import.meta.url);

/** The parts of a Koa context the middleware uses (s3rver ships no types). */
interface KoaContext {
  req: NodeJS.ReadableStream;
  method: string;
  path: string;
  query: Record<string, string | string[] | undefined>;
  headers: Record<string, string | string[] | undefined>;
  status: number;
  type: string;
  body: unknown;
}
type KoaNext = () => Promise<void>;
type KoaMiddleware = (ctx: KoaContext, next: KoaNext) => Promise<void>;

/** s3rver's filesystem store: the methods used here. */
interface S3rverStore {
  getBucket(bucket: string): Promise<unknown>;
  existsObject(bucket: string, key: string): Promise<boolean>;
  deleteObject(bucket: string, key: string): Promise<void>;
  getMetadata(bucket: string, key: string): Promise<Record<string, string | number | undefined>>;
  /** `<bucket>/<key dirs>/<last segment>._S3rver_<resource>`; `(bucket, undefined, 'uploads')` holds multipart uploads. */
  getResourcePath(bucket: string, key: string | undefined, resource: string): string;
  putObject(object: S3rverObject): Promise<{ size: number; md5: string }>;
  putMetadata(bucket: string, key: string, metadata: Record<string, unknown>, md5: string): Promise<void>;
  putPart(
    bucket: string,
    uploadId: string,
    partNumber: number,
    content: NodeJS.ReadableStream,
  ): Promise<{ size: number; md5: string }>;
}

/** What s3rver hands its store's PutObject: the object's bytes (a buffer, or the request stream) and metadata. */
interface S3rverObject {
  readonly bucket: string;
  readonly key: string;
  readonly content: Buffer | NodeJS.ReadableStream;
  readonly metadata: Record<string, unknown>;
}

/** The subset of an s3rver instance (a Koa app) that this module and its callers rely on. */
export interface S3rver {
  readonly middleware: KoaMiddleware[];
  /** The listening HTTP server (set by `run()`). */
  readonly httpServer?: Server;
  readonly store: S3rverStore;
  run(): Promise<{ port: number; address: string }>;
  close(): Promise<void>;
  on(event: 'event', listener: (event: S3rverEvent) => void): unknown;
  off(event: 'event', listener: (event: S3rverEvent) => void): unknown;
}

/** An s3rver notification: AWS-shaped records (keys raw, not URL-encoded; see LOCAL-CLOUD.md). */
export interface S3rverEvent {
  readonly Records: readonly {
    readonly eventName: string;
    readonly eventTime: string;
    readonly s3: {
      readonly bucket: { readonly name: string };
      readonly object: {
        readonly key: string;
        readonly size?: number;
        readonly eTag?: string;
        readonly sequencer?: string;
      };
    };
  }[];
}

type S3rverConstructor = new (options: Record<string, unknown>) => S3rver;
type S3ErrorConstructor = new (code: string, message: string, detail?: Record<string, unknown>) => Error;

const S3rverClass = require('s3rver') as S3rverConstructor;
const S3Error = require('s3rver/lib/models/error.js') as S3ErrorConstructor;

export interface S3ServerOptions {
  /** Buckets created before the server starts. */
  readonly buckets: readonly string[];
  /** Where s3rver keeps objects; a fresh temp folder (removed on stop) when omitted. */
  readonly directory?: string;
}

export interface RunningS3Server {
  /** `http://127.0.0.1:<port>`. */
  readonly endpoint: string;
  readonly port: number;
  readonly directory: string;
  readonly server: S3rver;
  /** A new client configured for this server (path style, S3RVER credentials, checksums WHEN_REQUIRED). */
  client(): S3Client;
  /** Subscribes to s3rver's notifications; returns the unsubscribe function. */
  onEvent(listener: (event: S3rverEvent) => void): () => void;
  /** Closes the server and the clients made by `client()`, and removes the temp folder if it made one. */
  stop(): Promise<void>;
}

/** s3rver stores an object's bytes in `<bucket>/<key dirs>/<last segment>._S3rver_object`. */
const OBJECT_SUFFIX = '._S3rver_object';

/**
 * s3rver's PutObject without its crash (see the module comment): the object's bytes, then its MD5 and metadata
 * files, each write awaited, the key's folders made again (up to a few times) when a concurrent DeleteObject of a
 * neighbour removed them in between.
 */
async function putObjectRaceFree(
  store: S3rverStore,
  object: S3rverObject,
): Promise<{ size: number; md5: string }> {
  const content = Buffer.isBuffer(object.content)
    ? object.content
    : Buffer.concat(await Readable.from(object.content).toArray());
  const md5 = createHash('md5').update(content).digest('hex');
  const objectPath = store.getResourcePath(object.bucket, object.key, 'object');
  for (let attempt = 1; ; attempt += 1) {
    try {
      await mkdir(dirname(objectPath), { recursive: true });
      await writeFile(objectPath, content);
      await store.putMetadata(object.bucket, object.key, object.metadata, md5);
      return { size: content.length, md5 };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT' || attempt >= 5) throw error;
    }
  }
}

/** Starts s3rver on 127.0.0.1 with an OS-assigned port. */
export async function startS3Server(options: S3ServerOptions): Promise<RunningS3Server> {
  const directory = options.directory ?? (await mkdtemp(join(tmpdir(), 's3rver-')));
  const server = new S3rverClass({
    port: 0,
    address: '127.0.0.1',
    silent: true,
    directory,
    configureBuckets: options.buckets.map((name) => ({ name, configs: [] })),
  });
  server.middleware.unshift(s3CompatibilityMiddleware(server, directory));
  server.store.putObject = (object) => putObjectRaceFree(server.store, object);
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  const clients: S3Client[] = [];
  return {
    endpoint,
    port,
    directory,
    server,
    client() {
      const client = new S3Client({
        endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
        // As the deployed client (open-store.ts `defaultS3ClientConfig`), so tests run the same SDK path.
        cacheMiddleware: true,
      });
      clients.push(client);
      return client;
    },
    onEvent(listener) {
      server.on('event', listener);
      return () => {
        server.off('event', listener);
      };
    },
    async stop() {
      for (const client of clients.splice(0)) client.destroy();
      await server.close();
      if (options.directory === undefined) await rm(directory, { recursive: true, force: true });
    },
  };
}

/**
 * The Koa middleware that makes s3rver behave like S3 where the project depends on it. It runs
 * before s3rver's own middleware (including its XML encoder), so it writes XML itself.
 */
function s3CompatibilityMiddleware(server: S3rver, directory: string): KoaMiddleware {
  const locks = new KeyedLock();
  return async (ctx, next) => {
    const target = parsePath(ctx.path);
    if (target === undefined) return next();
    const { bucket, key } = target;
    const queryKeys = Object.keys(ctx.query).filter((name) => name !== 'x-id');

    if (ctx.method === 'GET' && key === '' && ctx.query['list-type'] === '2') {
      return listObjectsV2(ctx, server, directory, bucket);
    }
    if (ctx.method === 'POST' && key === '' && 'delete' in ctx.query) {
      return deleteObjects(ctx, next, server, bucket, locks);
    }
    const copySourceHeader = header(ctx, 'x-amz-copy-source');
    if (
      ctx.method === 'PUT' &&
      key !== '' &&
      'partNumber' in ctx.query &&
      'uploadId' in ctx.query &&
      copySourceHeader !== undefined
    ) {
      return uploadPartCopy(ctx, server, bucket, parseCopySource(copySourceHeader), locks);
    }
    if (ctx.method === 'DELETE' && key !== '' && 'uploadId' in ctx.query) {
      return abortMultipartUpload(ctx, server, bucket);
    }
    const getIfMatch = header(ctx, 'if-match');
    if (ctx.method === 'GET' && key !== '' && getIfMatch !== undefined) {
      return locks.run(`${bucket}/${key}`, async () => {
        const etag = await currentEtag(server, bucket, key);
        if (etag === undefined)
          throw new S3Error('NoSuchKey', 'The specified key does not exist.', { Key: key });
        if (!etagMatches(getIfMatch, etag)) throw preconditionFailed('If-Match');
        await next();
        await bufferBody(ctx);
      });
    }
    if ((ctx.method === 'GET' || ctx.method === 'HEAD') && key !== '' && queryKeys.length === 0) {
      // s3rver rewrites an object's file in place; read it whole under the key's lock, which every write holds,
      // so a read sees the object before or after a write, never a torn mix (S3 PUTs are atomic).
      return locks.run(`${bucket}/${key}`, async () => {
        await next();
        await bufferBody(ctx);
      });
    }
    const isPut = ctx.method === 'PUT' && key !== '' && queryKeys.length === 0;
    const isComplete =
      ctx.method === 'POST' && key !== '' && queryKeys.length === 1 && 'uploadId' in ctx.query;
    if (!isPut && !isComplete) return next();
    if (isComplete) await refuseSmallParts(ctx, server, bucket);

    const copySource = isPut ? header(ctx, 'x-amz-copy-source') : undefined;
    const source = copySource === undefined ? undefined : parseCopySource(copySource);
    // Lock the source of a copy too, so its ETag check and the copy see the same version.
    const lockKeys = [`${bucket}/${key}`, ...(source ? [`${source.bucket}/${source.key}`] : [])];
    return locks.runAll(lockKeys, async () => {
      if (source !== undefined) {
        // s3rver applies decodeURI; hand it a value that decodes back to the raw key.
        ctx.headers['x-amz-copy-source'] = encodeURI(`${source.bucket}/${source.key}`);
        const ifMatch = header(ctx, 'x-amz-copy-source-if-match');
        if (ifMatch !== undefined) {
          const etag = await currentEtag(server, source.bucket, source.key);
          if (etag === undefined) {
            throw new S3Error('NoSuchKey', 'The specified key does not exist.', { Key: source.key });
          }
          if (!etagMatches(ifMatch, etag)) {
            throw preconditionFailed('x-amz-copy-source-If-Match');
          }
        }
      }
      const ifNoneMatch = header(ctx, 'if-none-match');
      const ifMatch = header(ctx, 'if-match');
      if (ifNoneMatch !== undefined || ifMatch !== undefined) {
        const etag = await currentEtag(server, bucket, key);
        if (
          ifNoneMatch !== undefined &&
          etag !== undefined &&
          (ifNoneMatch.trim() === '*' || etagMatches(ifNoneMatch, etag))
        ) {
          throw preconditionFailed('If-None-Match');
        }
        if (ifMatch !== undefined) {
          if (etag === undefined)
            throw new S3Error('NoSuchKey', 'The specified key does not exist.', { Key: key });
          if (!etagMatches(ifMatch, etag)) throw preconditionFailed('If-Match');
        }
      }
      await next();
    });
  };
}

/** Reads a streamed response body into memory, so the object's file is read while the caller holds its lock. */
async function bufferBody(ctx: KoaContext): Promise<void> {
  const body = ctx.body;
  if (!(body instanceof Readable)) return;
  const chunks: Buffer[] = [];
  for await (const chunk of body)
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as Uint8Array));
  ctx.body = Buffer.concat(chunks);
}

/** S3's smallest part but the last of a multipart upload. */
const MIN_PART_BYTES = 5 * 1024 * 1024;

function queryText(ctx: KoaContext, name: string): string {
  const value = ctx.query[name];
  return (Array.isArray(value) ? value[0] : value) ?? '';
}

/** UploadPartCopy, which s3rver lacks: a range of the source written as the part, under the source's lock. */
async function uploadPartCopy(
  ctx: KoaContext,
  server: S3rver,
  bucket: string,
  source: { bucket: string; key: string },
  locks: KeyedLock,
): Promise<void> {
  const uploadId = queryText(ctx, 'uploadId');
  const partNumber = Number(queryText(ctx, 'partNumber'));
  if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > 10_000) {
    throw new S3Error('InvalidArgument', 'Part number must be an integer between 1 and 10000, inclusive');
  }
  const uploads = server.store.getResourcePath(bucket, undefined, 'uploads');
  if (!(await stat(join(uploads, uploadId)).catch(() => undefined))) {
    throw new S3Error('NoSuchUpload', 'The specified upload does not exist.', { UploadId: uploadId });
  }
  await locks.run(`${source.bucket}/${source.key}`, async () => {
    const etag = await currentEtag(server, source.bucket, source.key);
    if (etag === undefined) {
      throw new S3Error('NoSuchKey', 'The specified key does not exist.', { Key: source.key });
    }
    const ifMatch = header(ctx, 'x-amz-copy-source-if-match');
    if (ifMatch !== undefined && !etagMatches(ifMatch, etag)) {
      throw preconditionFailed('x-amz-copy-source-If-Match');
    }
    const size = Number((await server.store.getMetadata(source.bucket, source.key))['content-length']);
    const rangeHeader = header(ctx, 'x-amz-copy-source-range');
    let start = 0;
    let end = size - 1;
    if (rangeHeader !== undefined) {
      const match = /^bytes=(\d+)-(\d+)$/.exec(rangeHeader.trim());
      if (!match)
        throw new S3Error(
          'InvalidArgument',
          'The x-amz-copy-source-range value must be of the form bytes=first-last',
        );
      start = Number(match[1]);
      end = Number(match[2]);
      if (start > end || end >= size) {
        throw new S3Error('InvalidRange', 'The requested range is not satisfiable', {
          RangeRequested: rangeHeader,
        });
      }
    }
    const content =
      end < start
        ? Readable.from([])
        : createReadStream(server.store.getResourcePath(source.bucket, source.key, 'object'), { start, end });
    const { md5 } = await server.store.putPart(bucket, uploadId, partNumber, content);
    ctx.status = 200;
    ctx.type = 'application/xml';
    ctx.body = [
      '<?xml version="1.0" encoding="UTF-8"?>',
      '<CopyPartResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
      `<LastModified>${new Date().toISOString()}</LastModified>`,
      `<ETag>&quot;${md5}&quot;</ETag>`,
      '</CopyPartResult>',
    ].join('');
  });
}

/** AbortMultipartUpload, which s3rver refuses: the upload's folder (its parts) removed. */
async function abortMultipartUpload(ctx: KoaContext, server: S3rver, bucket: string): Promise<void> {
  const uploadId = queryText(ctx, 'uploadId');
  const folder = join(server.store.getResourcePath(bucket, undefined, 'uploads'), uploadId);
  if (uploadId === '' || !(await stat(folder).catch(() => undefined))) {
    throw new S3Error('NoSuchUpload', 'The specified upload does not exist.', { UploadId: uploadId });
  }
  await rm(folder, { recursive: true, force: true });
  ctx.status = 204;
  ctx.body = '';
}

/**
 * CompleteMultipartUpload as S3 checks it: every listed part but the last at least 5 MiB, else 400
 * EntityTooSmall. Reads the request body and hands s3rver an identical one.
 */
async function refuseSmallParts(ctx: KoaContext, server: S3rver, bucket: string): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  const body = Buffer.concat(chunks);
  ctx.req = Readable.from([body]);
  const numbers = [...body.toString('utf8').matchAll(/<PartNumber>\s*(\d+)\s*<\/PartNumber>/g)].map((m) =>
    Number(m[1]),
  );
  const upload = join(server.store.getResourcePath(bucket, undefined, 'uploads'), queryText(ctx, 'uploadId'));
  for (const number of numbers.slice(0, -1)) {
    const part = await stat(join(upload, String(number))).catch(() => undefined);
    // A missing part is s3rver's to report.
    if (part !== undefined && part.size < MIN_PART_BYTES) {
      throw new S3Error(
        'EntityTooSmall',
        'Your proposed upload is smaller than the minimum allowed object size.',
        {
          ProposedSize: part.size,
          MinSizeAllowed: MIN_PART_BYTES,
          PartNumber: number,
        },
      );
    }
  }
}

function preconditionFailed(condition: string): Error {
  return new S3Error('PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', {
    Condition: condition,
  });
}

function header(ctx: KoaContext, name: string): string | undefined {
  const value = ctx.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** Path-style request path → bucket and (decoded) key; undefined for the service root. */
function parsePath(rawPath: string): { bucket: string; key: string } | undefined {
  const match = /^\/([^/]+)(?:\/(.*))?$/s.exec(rawPath);
  if (!match?.[1]) return undefined;
  try {
    return { bucket: decodeURIComponent(match[1]), key: decodeURIComponent(match[2] ?? '') };
  } catch {
    return undefined;
  }
}

/** `x-amz-copy-source` as S3 reads it: optional leading `/`, fully percent-decoded, `?versionId=` dropped. */
function parseCopySource(value: string): { bucket: string; key: string } {
  const withoutQuery = value.split('?')[0] ?? '';
  const trimmed = withoutQuery.startsWith('/') ? withoutQuery.slice(1) : withoutQuery;
  const slash = trimmed.indexOf('/');
  if (slash <= 0) throw new S3Error('InvalidArgument', 'Copy Source must mention the source bucket and key');
  return {
    bucket: decodeURIComponent(trimmed.slice(0, slash)),
    key: decodeURIComponent(trimmed.slice(slash + 1)),
  };
}

async function currentEtag(server: S3rver, bucket: string, key: string): Promise<string | undefined> {
  try {
    const metadata = await server.store.getMetadata(bucket, key);
    return String(metadata.etag).replaceAll('"', '');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/** HTTP entity-tag list match (`"a", "b"` or `*`), ignoring quotes and weak markers. */
function etagMatches(condition: string, etag: string): boolean {
  return condition
    .split(',')
    .map((part) => part.trim().replace(/^W\//, '').replaceAll('"', ''))
    .some((candidate) => candidate === '*' || candidate === etag);
}

/**
 * DeleteObjects with per-object `<ETag>` conditions (conditional deletes), which s3rver ignores.
 * Without any ETag the request goes to s3rver unchanged. With one, the middleware answers it:
 * under the keys' locks, an object whose ETag differs gets `<Error>` PreconditionFailed, a missing
 * one NoSuchKey (as S3), the rest are deleted and listed as `<Deleted>` — also when Quiet, as
 * s3rver does (infra/local/s3-events.ts reads deletions from that response).
 */
async function deleteObjects(
  ctx: KoaContext,
  next: KoaNext,
  server: S3rver,
  bucket: string,
  locks: KeyedLock,
): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
  const body = Buffer.concat(chunks);
  const objects = [...body.toString('utf8').matchAll(/<Object>([\s\S]*?)<\/Object>/g)].map((match) => ({
    key: xmlDecode(/<Key>([\s\S]*?)<\/Key>/.exec(match[1] ?? '')?.[1] ?? ''),
    etag: /<ETag>([\s\S]*?)<\/ETag>/.exec(match[1] ?? '')?.[1],
  }));
  if (!objects.some((object) => object.etag !== undefined)) {
    ctx.req = Readable.from([body]);
    return next();
  }
  if (!(await server.store.getBucket(bucket))) {
    throw new S3Error('NoSuchBucket', 'The specified bucket does not exist', { BucketName: bucket });
  }
  const parts: string[] = [];
  await locks.runAll(
    objects.map((object) => `${bucket}/${object.key}`),
    async () => {
      for (const { key, etag: condition } of objects) {
        if (condition !== undefined) {
          const etag = await currentEtag(server, bucket, key);
          if (etag === undefined || !etagMatches(xmlDecode(condition), etag)) {
            const [code, message] =
              etag === undefined
                ? ['NoSuchKey', 'The specified key does not exist.']
                : ['PreconditionFailed', 'At least one of the pre-conditions you specified did not hold'];
            parts.push(
              `<Error><Key>${xmlEscape(key)}</Key><Code>${code}</Code><Message>${message}</Message></Error>`,
            );
            continue;
          }
        }
        if (await server.store.existsObject(bucket, key)) await server.store.deleteObject(bucket, key);
        parts.push(`<Deleted><Key>${xmlEscape(key)}</Key></Deleted>`);
      }
    },
  );
  ctx.status = 200;
  ctx.type = 'application/xml';
  ctx.body = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<DeleteResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
    ...parts,
    '</DeleteResult>',
  ].join('');
}

/** ListObjectsV2 answered from the bucket folder, in byte order, with tokens that need no cipher. */
async function listObjectsV2(
  ctx: KoaContext,
  server: S3rver,
  directory: string,
  bucket: string,
): Promise<void> {
  if (!(await server.store.getBucket(bucket))) {
    throw new S3Error('NoSuchBucket', 'The specified bucket does not exist', { BucketName: bucket });
  }
  const query = (name: string): string | undefined => {
    const value = ctx.query[name];
    return Array.isArray(value) ? value[0] : value;
  };
  const prefix = query('prefix') ?? '';
  const delimiter = query('delimiter') || undefined;
  const token = query('continuation-token') || undefined;
  const startAfter = query('start-after') || undefined;
  const maxKeysText = query('max-keys');
  const maxKeys = maxKeysText === undefined ? 1000 : Number(maxKeysText);
  if (!Number.isInteger(maxKeys) || maxKeys < 0) {
    throw new S3Error('InvalidArgument', 'Provided max-keys not an integer or within integer range', {
      ArgumentName: 'max-keys',
      ArgumentValue: maxKeysText,
    });
  }
  const urlEncode = query('encoding-type') === 'url';

  const keys = sortByKey((await walkKeys(join(directory, bucket), prefix)).map((key) => ({ key })));
  let page: ReturnType<typeof listPage<{ key: string }>>;
  try {
    page = listPage(keys, { prefix, delimiter, token, startAfter, maxKeys });
  } catch {
    throw new S3Error('InvalidArgument', 'The continuation token provided is incorrect', {
      ArgumentName: 'continuation-token',
    });
  }
  const contents = (
    await Promise.all(
      page.objects.map(async ({ key }) => {
        try {
          return { key, metadata: await server.store.getMetadata(bucket, key) };
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
          throw error;
        }
      }),
    )
  ).filter((entry) => entry !== undefined);

  const text = (value: string): string =>
    xmlEscape(urlEncode ? encodeURIComponent(value).replaceAll('%2F', '/') : value);
  const parts: string[] = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
    `<Name>${xmlEscape(bucket)}</Name>`,
    `<Prefix>${text(prefix)}</Prefix>`,
    `<KeyCount>${contents.length + page.commonPrefixes.length}</KeyCount>`,
    `<MaxKeys>${maxKeys}</MaxKeys>`,
    delimiter === undefined ? '' : `<Delimiter>${text(delimiter)}</Delimiter>`,
    urlEncode ? '<EncodingType>url</EncodingType>' : '',
    `<IsTruncated>${page.nextToken !== undefined}</IsTruncated>`,
    token === undefined ? '' : `<ContinuationToken>${xmlEscape(token)}</ContinuationToken>`,
    page.nextToken === undefined
      ? ''
      : `<NextContinuationToken>${xmlEscape(page.nextToken)}</NextContinuationToken>`,
    startAfter === undefined ? '' : `<StartAfter>${text(startAfter)}</StartAfter>`,
  ];
  for (const { key, metadata } of contents) {
    const lastModified = new Date(String(metadata['last-modified'])).toISOString();
    const storageClass = String(metadata['x-amz-storage-class'] ?? 'STANDARD');
    parts.push(
      `<Contents><Key>${text(key)}</Key><LastModified>${lastModified}</LastModified>`,
      `<ETag>${xmlEscape(String(metadata.etag))}</ETag><Size>${Number(metadata['content-length'])}</Size>`,
      `<StorageClass>${xmlEscape(storageClass)}</StorageClass></Contents>`,
    );
  }
  for (const commonPrefix of page.commonPrefixes) {
    parts.push(`<CommonPrefixes><Prefix>${text(commonPrefix)}</Prefix></CommonPrefixes>`);
  }
  parts.push('</ListBucketResult>');
  ctx.status = 200;
  ctx.type = 'application/xml';
  ctx.body = parts.join('');
}

/** Every key stored under `prefix`, read from s3rver's folder layout (POSIX key encoding). */
async function walkKeys(bucketDir: string, prefix: string): Promise<string[]> {
  const prefixDir = prefix.slice(0, prefix.lastIndexOf('/') + 1);
  let entries: string[];
  try {
    entries = await readdir(join(bucketDir, prefixDir), { recursive: true });
  } catch (error) {
    if (
      (error as NodeJS.ErrnoException).code === 'ENOENT' ||
      (error as NodeJS.ErrnoException).code === 'ENOTDIR'
    ) {
      return [];
    }
    throw error;
  }
  const keys: string[] = [];
  for (const entry of entries) {
    if (!entry.endsWith(OBJECT_SUFFIX)) continue;
    const key = prefixDir + entry.slice(0, -OBJECT_SUFFIX.length).split(sep).join('/');
    if (key.startsWith(prefix)) keys.push(key);
  }
  return keys;
}

function xmlDecode(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|amp|lt|gt|quot|apos);/gi, (_match, entity: string) => {
    const lower = entity.toLowerCase();
    if (lower.startsWith('#x')) return String.fromCodePoint(Number.parseInt(lower.slice(2), 16));
    if (lower.startsWith('#')) return String.fromCodePoint(Number.parseInt(lower.slice(1), 10));
    return { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'" }[lower] ?? '';
  });
}

function xmlEscape(value: string): string {
  return value
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&quot;')
    .replaceAll("'", '&apos;');
}

/** Runs async sections one at a time per key, so check-then-write is atomic within this server. */
class KeyedLock {
  private readonly tails = new Map<string, Promise<void>>();

  /** Holds every key's lock while `section` runs; takes them in sorted order so two sections cannot deadlock. */
  async runAll<T>(keys: readonly string[], section: () => Promise<T>): Promise<T> {
    const ordered = [...new Set(keys)].sort();
    const nest = (index: number): Promise<T> =>
      index === ordered.length ? section() : this.run(ordered[index] as string, () => nest(index + 1));
    return nest(0);
  }

  async run<T>(key: string, section: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    let release: () => void = () => {};
    const current = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = previous.then(() => current);
    this.tails.set(key, tail);
    await previous;
    try {
      return await section();
    } finally {
      release();
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
