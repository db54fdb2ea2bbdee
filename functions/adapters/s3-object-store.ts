// ObjectStore over one S3 bucket with AWS SDK v3: explicit byte ranges, conditional writes and copies,
// streamed multipart uploads and batched deletes; every failure is mapped to a typed error.

import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectsCommand,
  GetBucketVersioningCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
  type StorageClass,
  UploadPartCommand,
  UploadPartCopyCommand,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import pLimit from 'p-limit';
import { CorruptInputError, InvalidInputError, ObjectNotFoundError } from '../core/errors.js';
import { printable } from '../core/keys.js';
import { type PlannedPart, planParts } from '../core/parquet/compose.js';
import type {
  BucketVersioning,
  ByteRange,
  ComposedPiece,
  ComposedRange,
  CopyOptions,
  DeleteRef,
  DeleteResult,
  ListOptions,
  ListPage,
  MultipartUploadPage,
  ObjectInfo,
  ObjectStore,
  PutComposedOptions,
  PutOptions,
  PutStreamOptions,
  ReadBytes,
} from '../ports/object-store.js';
import { assertByteRange, followPages } from './listing.js';
import { mapS3Error } from './s3-errors.js';

/** DeleteObjects accepts at most this many keys per request. */
const DELETE_BATCH = 1000;
/** Delete batches in flight at once: keeps the "both old and new visible" window to about one round. */
const DELETE_CONCURRENCY = 4;
const DEFAULT_PART_SIZE = 8 * 1024 * 1024;
const DEFAULT_QUEUE_SIZE = 4;

export interface S3ObjectStoreOptions {
  readonly client: S3Client;
  readonly bucket: string;
}

/**
 * Encodes `x-amz-copy-source` the way S3 decodes it: `bucket/key` with every byte outside the RFC 3986
 * unreserved set percent-encoded per path segment, `/` kept (the same as botocore). `encodeURI` is
 * not enough for real S3: it leaves `+` (which S3 may read as a space), `?` (read as the start of
 * `?versionId=`), `#`, `=`, `&` raw. The local s3rver decodes with `decodeURI`, which would not
 * undo `%2B`/`%3D`; infra/local/s3-server.ts rewrites the header so this one encoding works on both.
 * A `versionId` selects a noncurrent version (restoring a retired input on a versioned bucket).
 */
export function encodeCopySource(bucket: string, key: string, versionId?: string): string {
  const path = `${bucket}/${key}`.split('/').map(encodeRfc3986).join('/');
  return versionId === undefined ? path : `${path}?versionId=${encodeRfc3986(versionId)}`;
}

function encodeRfc3986(segment: string): string {
  return encodeURIComponent(segment).replace(
    /[!'()*]/g,
    (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`,
  );
}

function rangeLength(range: ComposedRange): number {
  return range.endInclusive - range.start + 1;
}

/**
 * Why `key` is not sent to S3, or undefined: an empty key, a leading `/`, or an empty, `.` or `..` segment (a
 * trailing `/` of a folder marker aside). AWS S3 takes such a key literally, but S3-compatible servers that map keys
 * onto a filesystem resolve the dot segments (s3rver does: `t/../x` is `x` there), and some collapse `//`, so the
 * same request names another object. The core never builds such a key for a table (core/keys.ts); this store
 * refuses it as well, as LocalObjectStore does, so no caller can reach another table's object through it.
 */
export function unportableKey(key: string): string | undefined {
  if (key === '') return 'is empty';
  const segments = (key.endsWith('/') ? key.slice(0, -1) : key).split('/');
  const bad = segments.find((s) => s === '' || s === '.' || s === '..');
  if (bad === undefined) return undefined;
  return bad === '' ? 'has an empty path segment (a leading "/" or a "//")' : `has a "${bad}" segment`;
}

function checked(key: string, operation: string): string {
  const why = unportableKey(key);
  if (why !== undefined)
    throw new InvalidInputError(
      `Key "${printable(key)}" was not sent to S3 (${operation}): it ${why}, which S3-compatible servers may resolve to another object; no lake-compactor key has one`,
    );
  return key;
}

/** S3 returns ETags in quotes; the port speaks unquoted ones. */
function unquote(etag: string | undefined): string {
  return (etag ?? '').replaceAll('"', '');
}

export class S3ObjectStore implements ObjectStore {
  readonly description: string;
  private readonly client: S3Client;
  private readonly bucket: string;

  constructor(options: S3ObjectStoreOptions) {
    this.client = options.client;
    this.bucket = options.bucket;
    this.description = `s3://${options.bucket}`;
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    try {
      const response = await this.client.send(
        new ListObjectsV2Command({
          Bucket: this.bucket,
          Prefix: prefix === '' ? undefined : prefix,
          Delimiter: options.delimiter,
          ContinuationToken: options.token,
          MaxKeys: options.maxKeys,
        }),
      );
      const objects: ObjectInfo[] = (response.Contents ?? []).map((item) => ({
        key: item.Key ?? '',
        size: item.Size ?? 0,
        etag: unquote(item.ETag),
        lastModified: item.LastModified ?? new Date(0),
        storageClass: item.StorageClass ?? 'STANDARD',
      }));
      const commonPrefixes = (response.CommonPrefixes ?? []).flatMap((entry) =>
        entry.Prefix === undefined ? [] : [entry.Prefix],
      );
      return response.IsTruncated && response.NextContinuationToken
        ? { objects, commonPrefixes, nextToken: response.NextContinuationToken }
        : { objects, commonPrefixes };
    } catch (error) {
      throw mapS3Error(error, `${this.description}/${prefix}`, 'ListObjectsV2');
    }
  }

  listAll(prefix: string): AsyncIterable<ObjectInfo> {
    return followPages((token) => this.list(prefix, token === undefined ? {} : { token }));
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    try {
      const response = await this.client.send(
        new HeadObjectCommand({ Bucket: this.bucket, Key: checked(key, 'HeadObject') }),
      );
      return {
        key,
        size: response.ContentLength ?? 0,
        etag: unquote(response.ETag),
        lastModified: response.LastModified ?? new Date(0),
        ...(response.VersionId ? { versionId: response.VersionId } : {}),
        storageClass: response.StorageClass ?? 'STANDARD',
      };
    } catch (error) {
      const mapped = mapS3Error(error, key, 'HeadObject');
      if (mapped instanceof ObjectNotFoundError) return undefined;
      throw mapped;
    }
  }

  async getRange(key: string, start: number, endInclusive: number): Promise<Uint8Array> {
    assertByteRange(key, start, endInclusive);
    return (await this.getBody(key, `bytes=${start}-${endInclusive}`)).bytes;
  }

  async get(key: string): Promise<Uint8Array> {
    return (await this.getBody(key, undefined)).bytes;
  }

  /** One GetObject, as `get`/`getRange` send it, with the ETag and version id its response names. */
  async read(key: string, range?: ByteRange): Promise<ReadBytes> {
    if (range === undefined) return this.getBody(key, undefined);
    assertByteRange(key, range.start, range.endInclusive);
    return this.getBody(key, `bytes=${range.start}-${range.endInclusive}`);
  }

  private async getBody(key: string, range: string | undefined, ifMatch?: string): Promise<ReadBytes> {
    checked(key, 'GetObject');
    try {
      const response = await this.client.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Range: range,
          IfMatch: ifMatch === undefined ? undefined : `"${unquote(ifMatch)}"`,
        }),
      );
      const bytes = response.Body ? await response.Body.transformToByteArray() : new Uint8Array();
      return {
        bytes,
        etag: unquote(response.ETag),
        ...(response.VersionId ? { versionId: response.VersionId } : {}),
      };
    } catch (error) {
      throw mapS3Error(error, key, 'GetObject');
    }
  }

  async put(key: string, body: Uint8Array | string, options: PutOptions = {}): Promise<{ etag: string }> {
    checked(key, 'PutObject');
    try {
      const response = await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Body: body,
          IfNoneMatch: options.ifNoneMatch,
          IfMatch: options.ifMatch === undefined ? undefined : `"${unquote(options.ifMatch)}"`,
          ContentType: options.contentType,
          StorageClass: options.storageClass as StorageClass | undefined,
        }),
      );
      return { etag: unquote(response.ETag) };
    } catch (error) {
      throw mapS3Error(error, key, 'PutObject');
    }
  }

  /**
   * Multipart upload via lib-storage `Upload`: parts of `partSize` (default 8 MiB) are sent
   * `queueSize` (default 4) at a time while the producer keeps producing, so memory stays near
   * partSize × queueSize. A body smaller than one part becomes a single PutObject. `ifNoneMatch`
   * is applied by S3 at CompleteMultipartUpload. On failure the multipart upload is aborted (best
   * effort; a bucket lifecycle rule for incomplete uploads is the backstop) and the mapped error
   * is thrown.
   */
  async putStream(
    key: string,
    body: AsyncIterable<Uint8Array>,
    options: PutStreamOptions = {},
  ): Promise<{ etag: string; size: number }> {
    checked(key, 'multipart upload');
    let size = 0;
    async function* counted(): AsyncGenerator<Uint8Array> {
      for await (const chunk of body) {
        size += chunk.byteLength;
        yield chunk;
      }
    }
    const upload = new Upload({
      client: this.client,
      partSize: options.partSize ?? DEFAULT_PART_SIZE,
      queueSize: options.queueSize ?? DEFAULT_QUEUE_SIZE,
      // We abort ourselves: lib-storage's own abort would replace the real error if the abort fails.
      leavePartsOnError: true,
      params: {
        Bucket: this.bucket,
        Key: key,
        Body: Readable.from(counted()),
        IfNoneMatch: options.ifNoneMatch,
        IfMatch: options.ifMatch === undefined ? undefined : `"${unquote(options.ifMatch)}"`,
        ContentType: options.contentType,
        StorageClass: options.storageClass as StorageClass | undefined,
      },
    });
    try {
      const result = await upload.done();
      return { etag: unquote(result.ETag), size };
    } catch (error) {
      await this.abortUpload(key, upload.uploadId);
      throw mapS3Error(error, key, 'multipart upload');
    }
  }

  /**
   * A multipart upload of the parts `planParts` gives: UploadPartCopy (CopySourceRange, CopySourceIfMatch)
   * for each large range, UploadPart for the rest, whose ranges are read with GetObject IfMatch, a few parts
   * at a time. S3 checks each condition as it copies or reads, so every byte written is of the version named.
   * The ranges name objects of this bucket. On any failure the upload is aborted (nothing becomes visible)
   * and the mapped error thrown: a changed source is PreconditionFailedError naming that source.
   */
  async putComposed(
    key: string,
    pieces: readonly ComposedPiece[],
    options: PutComposedOptions = {},
  ): Promise<{ etag: string; size: number }> {
    checked(key, 'composed multipart upload');
    for (const piece of pieces) if ('key' in piece) checked(piece.key, 'UploadPartCopy source');
    const parts = planParts(pieces);
    if (parts.length === 0) return { ...(await this.put(key, new Uint8Array(), options)), size: 0 };
    const size = parts.reduce((n, p) => n + (p.kind === 'copy' ? rangeLength(p.range) : p.size), 0);
    let uploadId: string | undefined;
    try {
      const created = await this.client.send(
        new CreateMultipartUploadCommand({
          Bucket: this.bucket,
          Key: key,
          ContentType: options.contentType,
          StorageClass: options.storageClass as StorageClass | undefined,
        }),
      );
      uploadId = created.UploadId;
      if (uploadId === undefined) throw new Error('CreateMultipartUpload returned no upload id');
      const etags = await this.sendParts(key, uploadId, parts, options.queueSize ?? DEFAULT_QUEUE_SIZE);
      const completed = await this.client.send(
        new CompleteMultipartUploadCommand({
          Bucket: this.bucket,
          Key: key,
          UploadId: uploadId,
          IfNoneMatch: options.ifNoneMatch,
          MultipartUpload: { Parts: etags.map((ETag, i) => ({ ETag, PartNumber: i + 1 })) },
        }),
      );
      return { etag: unquote(completed.ETag), size };
    } catch (error) {
      await this.abortUpload(key, uploadId);
      throw mapS3Error(error, key, 'composed multipart upload');
    }
  }

  /**
   * Sends every part, `queueSize` at a time, and returns their ETags in part order. On the first failure it starts
   * no further part and waits for those already sent before it rethrows: the abort that follows must come after the
   * last part lands. A part that lands after an abort is stored again (S3: "it might be necessary to abort a given
   * multipart upload multiple times"; the local server re-creates the upload's folder without its key), and a
   * queued part sent after it is a request paid for nothing.
   */
  private async sendParts(
    key: string,
    uploadId: string,
    parts: readonly PlannedPart[],
    queueSize: number,
  ): Promise<string[]> {
    const limit = pLimit(queueSize);
    let failure: { readonly error: unknown } | undefined;
    const sent = await Promise.allSettled(
      parts.map((part, i) =>
        limit(async () => {
          if (failure !== undefined) return '';
          try {
            return await this.sendPart(key, uploadId, i + 1, part);
          } catch (error) {
            failure ??= { error };
            throw error;
          }
        }),
      ),
    );
    if (failure !== undefined) throw failure.error;
    return sent.map((s) => (s.status === 'fulfilled' ? s.value : ''));
  }

  /** Sends part `number` of upload `uploadId`; returns its ETag as S3 gave it. */
  private async sendPart(key: string, uploadId: string, number: number, part: PlannedPart): Promise<string> {
    if (part.kind === 'copy') {
      const { range } = part;
      try {
        const response = await this.client.send(
          new UploadPartCopyCommand({
            Bucket: this.bucket,
            Key: key,
            UploadId: uploadId,
            PartNumber: number,
            CopySource: encodeCopySource(this.bucket, range.key),
            CopySourceRange: `bytes=${range.start}-${range.endInclusive}`,
            CopySourceIfMatch: `"${unquote(range.etag)}"`,
          }),
        );
        return response.CopyPartResult?.ETag ?? '';
      } catch (error) {
        throw mapS3Error(error, range.key, `UploadPartCopy into ${key}`);
      }
    }
    const chunks = await Promise.all(
      part.pieces.map((p) => (p.kind === 'bytes' ? p.bytes : this.getAtEtag(p))),
    );
    const body = new Uint8Array(part.size);
    let at = 0;
    for (const chunk of chunks) {
      body.set(chunk, at);
      at += chunk.length;
    }
    try {
      const response = await this.client.send(
        new UploadPartCommand({
          Bucket: this.bucket,
          Key: key,
          UploadId: uploadId,
          PartNumber: number,
          Body: body,
        }),
      );
      return response.ETag ?? '';
    } catch (error) {
      throw mapS3Error(error, key, `UploadPart ${number}`);
    }
  }

  /** A range's bytes, read only while its object is at the range's ETag (GetObject IfMatch). */
  private async getAtEtag(range: ComposedRange): Promise<Uint8Array> {
    const { bytes } = await this.getBody(range.key, `bytes=${range.start}-${range.endInclusive}`, range.etag);
    if (bytes.length !== rangeLength(range)) {
      throw new CorruptInputError(
        range.key,
        `bytes ${range.start}-${range.endInclusive} came back as ${bytes.length} bytes: the object is shorter than planned`,
      );
    }
    return bytes;
  }

  private async abortUpload(key: string, uploadId: string | undefined): Promise<void> {
    if (uploadId === undefined) return;
    try {
      await this.client.send(
        new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }),
      );
    } catch {
      // Best effort: the original failure matters more; AbortIncompleteMultipartUpload cleans up later.
    }
  }

  /**
   * Server-side copy keeping the source's metadata; `ifMatch` becomes CopySourceIfMatch and
   * `sourceVersionId` copies that version (copying a key onto itself from an old version restores it).
   */
  async copy(
    sourceKey: string,
    destinationKey: string,
    options: CopyOptions = {},
  ): Promise<{ etag: string }> {
    checked(sourceKey, 'CopyObject source');
    checked(destinationKey, 'CopyObject');
    if (
      sourceKey === destinationKey &&
      options.storageClass !== undefined &&
      options.sourceVersionId === undefined
    ) {
      return this.changeStorageClass(sourceKey, options.storageClass, options.ifMatch);
    }
    try {
      const response = await this.client.send(
        new CopyObjectCommand({
          Bucket: this.bucket,
          Key: destinationKey,
          CopySource: encodeCopySource(this.bucket, sourceKey, options.sourceVersionId),
          CopySourceIfMatch: options.ifMatch === undefined ? undefined : `"${unquote(options.ifMatch)}"`,
          IfNoneMatch: options.ifNoneMatch,
          StorageClass: options.storageClass as StorageClass | undefined,
          MetadataDirective: 'COPY',
        }),
      );
      return { etag: unquote(response.CopyObjectResult?.ETag) };
    } catch (error) {
      throw mapS3Error(error, sourceKey, `CopyObject to ${destinationKey}`);
    }
  }

  /**
   * Re-writes an object onto itself in another storage class (tiering). The copy says REPLACE and carries
   * the source's system and user metadata over from a HEAD: S3 accepts a storage-class-only change with
   * COPY, but s3rver (the local cloud) refuses any self-copy without REPLACE, and REPLACE behaves the same
   * on both. CopySourceIfMatch makes sure the metadata carried over is that of the copied version.
   */
  private async changeStorageClass(
    key: string,
    storageClass: string,
    ifMatch?: string,
  ): Promise<{ etag: string }> {
    try {
      const head = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      const response = await this.client.send(
        new CopyObjectCommand({
          Bucket: this.bucket,
          Key: key,
          CopySource: encodeCopySource(this.bucket, key),
          CopySourceIfMatch: `"${unquote(ifMatch ?? head.ETag)}"`,
          StorageClass: storageClass as StorageClass,
          MetadataDirective: 'REPLACE',
          ContentType: head.ContentType,
          ContentEncoding: head.ContentEncoding,
          ContentDisposition: head.ContentDisposition,
          ContentLanguage: head.ContentLanguage,
          CacheControl: head.CacheControl,
          Expires: head.Expires,
          Metadata: head.Metadata,
        }),
      );
      return { etag: unquote(response.CopyObjectResult?.ETag) };
    } catch (error) {
      throw mapS3Error(error, key, `CopyObject onto itself as ${storageClass}`);
    }
  }

  /**
   * One page of ListMultipartUploads. The continuation token carries S3's two markers (key and upload
   * id) as JSON, because a page can end in the middle of one key's uploads.
   */
  /** GetBucketVersioning: `Enabled`, `Suspended`, or no status at all (never enabled). */
  async versioning(): Promise<BucketVersioning> {
    try {
      const result = await this.client.send(new GetBucketVersioningCommand({ Bucket: this.bucket }));
      return result.Status === 'Enabled'
        ? 'enabled'
        : result.Status === 'Suspended'
          ? 'suspended'
          : 'disabled';
    } catch (error) {
      throw mapS3Error(error, this.description, 'GetBucketVersioning');
    }
  }

  async listMultipartUploads(
    prefix: string,
    options: { readonly token?: string; readonly maxUploads?: number } = {},
  ): Promise<MultipartUploadPage> {
    const markers =
      options.token === undefined ? {} : (JSON.parse(options.token) as { key?: string; uploadId?: string });
    try {
      const response = await this.client.send(
        new ListMultipartUploadsCommand({
          Bucket: this.bucket,
          Prefix: prefix === '' ? undefined : prefix,
          KeyMarker: markers.key,
          UploadIdMarker: markers.uploadId,
          MaxUploads: options.maxUploads,
        }),
      );
      const uploads = (response.Uploads ?? []).flatMap((upload) =>
        upload.Key === undefined || upload.UploadId === undefined
          ? []
          : [{ key: upload.Key, uploadId: upload.UploadId, initiated: upload.Initiated ?? new Date(0) }],
      );
      return response.IsTruncated
        ? {
            uploads,
            nextToken: JSON.stringify({ key: response.NextKeyMarker, uploadId: response.NextUploadIdMarker }),
          }
        : { uploads };
    } catch (error) {
      throw mapS3Error(error, `${this.description}/${prefix}`, 'ListMultipartUploads');
    }
  }

  /** AbortMultipartUpload; an upload that is already gone (NoSuchUpload) counts as aborted. */
  async abortMultipartUpload(key: string, uploadId: string): Promise<void> {
    checked(key, 'AbortMultipartUpload');
    try {
      await this.client.send(
        new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }),
      );
    } catch (error) {
      if ((error as { name?: string }).name === 'NoSuchUpload') return;
      throw mapS3Error(error, key, 'AbortMultipartUpload');
    }
  }

  /**
   * DeleteObjects in batches of 1000 (Quiet: only failures come back), a few batches at a time.
   * `ifMatch` becomes the object's ETag element (conditional delete): a changed object is reported
   * with code PreconditionFailed and kept; a missing one counts as deleted, as the port promises.
   */
  async deleteMany(refs: readonly DeleteRef[]): Promise<DeleteResult> {
    const refused = refs.flatMap((ref) => {
      const why = unportableKey(ref.key);
      return why === undefined
        ? []
        : [{ key: ref.key, code: 'InvalidKey', message: `not sent to S3: the key ${why}` }];
    });
    const sendable = refused.length === 0 ? refs : refs.filter((ref) => unportableKey(ref.key) === undefined);
    const limit = pLimit(DELETE_CONCURRENCY);
    const batches: DeleteRef[][] = [];
    for (let i = 0; i < sendable.length; i += DELETE_BATCH) batches.push(sendable.slice(i, i + DELETE_BATCH));
    const results = await Promise.all(batches.map((batch) => limit(() => this.deleteBatch(batch))));
    return {
      deleted: results.flatMap((result) => result.deleted),
      errors: [...refused, ...results.flatMap((result) => result.errors)],
    };
  }

  private async deleteBatch(batch: readonly DeleteRef[]): Promise<DeleteResult> {
    try {
      const response = await this.client.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: {
            Quiet: true,
            Objects: batch.map((ref) => ({
              Key: ref.key,
              ...(ref.versionId ? { VersionId: ref.versionId } : {}),
              ...(ref.ifMatch ? { ETag: `"${unquote(ref.ifMatch)}"` } : {}),
            })),
          },
        }),
      );
      const failed = new Set<string>();
      const errors: { key: string; code: string; message: string }[] = [];
      for (const entry of response.Errors ?? []) {
        const key = entry.Key ?? '';
        const code = entry.Code ?? 'Error';
        // A conditional delete of a missing key answers NoSuchKey; the port counts missing keys as deleted.
        if (code === 'NoSuchKey') continue;
        failed.add(`${key}\u0000${entry.VersionId ?? ''}`);
        errors.push({
          key,
          code,
          message:
            code === 'PreconditionFailed'
              ? `${key} changed since it was read (ETag is no longer ${batch.find((r) => r.key === key)?.ifMatch}); it was not deleted`
              : `${code}: ${entry.Message ?? 'delete failed'}; retry the delete`,
        });
      }
      const deleted = batch.filter(
        (ref) => !failed.has(`${ref.key}\u0000${ref.versionId ?? ''}`) && !failed.has(`${ref.key}\u0000`),
      );
      return { deleted, errors };
    } catch (error) {
      throw mapS3Error(error, batch[0]?.key ?? this.description, `DeleteObjects (${batch.length} keys)`);
    }
  }
}
