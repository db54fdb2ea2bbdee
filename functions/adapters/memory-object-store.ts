// An ObjectStore held in memory with S3's semantics (byte-order listing, md5 ETags, conditional
// writes), plus opt-in latency and fault injection so core code can be tested fast and under failure.

import { createHash } from 'node:crypto';
import { InvalidInputError, ObjectNotFoundError, PreconditionFailedError } from '../core/errors.js';
import type {
  BucketVersioning,
  ByteRange,
  CopyOptions,
  DeleteRef,
  DeleteResult,
  ListOptions,
  ListPage,
  MultipartUploadInfo,
  MultipartUploadPage,
  ObjectInfo,
  ObjectStore,
  PutOptions,
  PutStreamOptions,
  ReadBytes,
} from '../ports/object-store.js';
import { assertByteRange, followPages, listPage, sortByKey, unsatisfiableRange } from './listing.js';

/** The request kinds a fault can be attached to (one per ObjectStore method). */
export type StoreMethod =
  | 'list'
  | 'head'
  | 'getRange'
  | 'get'
  | 'put'
  | 'putStream'
  | 'copy'
  | 'deleteMany'
  | 'versioning';

/**
 * Called before every request with the method and the key (prefix for `list`, first key for
 * `deleteMany`). Throwing fails that request before it changes anything; returning lets it run.
 */
export type StoreInterceptor = (method: StoreMethod, key: string) => void | Promise<void>;

export interface MemoryObjectStoreOptions {
  /** Delay added to every request, e.g. ~20 ms to approximate S3 first-byte latency in benchmarks. */
  readonly latencyMs?: number;
  /** Hook run before every request (see {@link StoreInterceptor}). */
  readonly interceptor?: StoreInterceptor;
  /**
   * Keep every version, like a versioned S3 bucket: writes get a `versionId`, a delete without
   * one leaves a delete marker (the old versions stay), `copy({ sourceVersionId })` restores one,
   * and a delete with a `versionId` removes that version for good.
   */
  readonly versioned?: boolean;
  /**
   * Whether a listing names each object's version id. S3's ListObjectsV2 never does (only HEAD and GET responses
   * do): `false` lists as S3 does, for tests of who learns a version how. @default true
   */
  readonly listsVersionIds?: boolean;
  /** Clock for lastModified; the wall clock when omitted. */
  readonly now?: () => Date;
}

interface StoredObject {
  readonly body: Uint8Array;
  readonly etag: string;
  readonly lastModified: Date;
  readonly storageClass: string;
  readonly contentType?: string;
  readonly versionId?: string;
}

/** One entry of a key's history in a versioned store; no `object` means a delete marker. */
interface VersionEntry {
  readonly versionId: string;
  readonly object?: StoredObject;
}

function md5(body: Uint8Array): string {
  return createHash('md5').update(body).digest('hex');
}

function toBytes(body: Uint8Array | string): Uint8Array {
  return typeof body === 'string' ? new TextEncoder().encode(body) : Uint8Array.from(body);
}

/**
 * In-memory store for unit tests. ETag = md5 of the content (as S3 single-part); multipart
 * uploads get S3's `md5(concatenated part md5s)-N` form. Last-modified comes from an injectable
 * `now` so tests stay deterministic. Faults: `failNext(method, error)` queues an error for the
 * next request of that kind; `interceptor` sees every request; `requests` counts them.
 * Conditional deletes (`ifMatch`) report a changed object with code PreconditionFailed.
 */
export class MemoryObjectStore implements ObjectStore {
  readonly description = 'memory://';
  /** Number of requests per method, for tests that assert request counts (e.g. batching). */
  readonly requests: Record<StoreMethod, number> = {
    list: 0,
    head: 0,
    getRange: 0,
    get: 0,
    put: 0,
    putStream: 0,
    copy: 0,
    deleteMany: 0,
    versioning: 0,
  };
  /** The current version of every live key. */
  private readonly objects = new Map<string, StoredObject>();
  /** Every version of every key, oldest first (versioned stores only). */
  private readonly history = new Map<string, VersionEntry[]>();
  private versionCounter = 0;
  private readonly versioned: boolean;
  private readonly listsVersionIds: boolean;
  private sortedKeys: { key: string }[] | undefined;
  private readonly pendingFaults: { method: StoreMethod; error: Error }[] = [];
  private readonly latencyMs: number;
  private readonly interceptor: StoreInterceptor | undefined;
  private readonly now: () => Date;
  /** Unfinished multipart uploads, by upload id (only {@link startMultipartUpload} creates them). */
  private readonly uploads = new Map<string, MultipartUploadInfo>();

  constructor(options: MemoryObjectStoreOptions = {}) {
    this.versioned = options.versioned ?? false;
    this.listsVersionIds = options.listsVersionIds ?? true;
    this.latencyMs = options.latencyMs ?? 0;
    this.interceptor = options.interceptor;
    this.now = options.now ?? (() => new Date());
  }

  /** Makes the next request of `method` fail with `error` (queued: call twice to fail two requests). */
  failNext(method: StoreMethod, error: Error): void {
    this.pendingFaults.push({ method, error });
  }

  /** All keys currently stored, in byte order (test helper). */
  keys(): string[] {
    return this.sorted().map((entry) => entry.key);
  }

  async list(prefix: string, options: ListOptions = {}): Promise<ListPage> {
    await this.enter('list', prefix);
    const page = listPage(this.sorted(), {
      prefix,
      delimiter: options.delimiter,
      token: options.token,
      maxKeys: options.maxKeys,
    });
    const objects = page.objects.flatMap(({ key }) => {
      const info = this.info(key);
      if (info === undefined) return [];
      if (this.listsVersionIds) return [info];
      const { versionId: _unlisted, ...listed } = info;
      return [listed];
    });
    return page.nextToken === undefined
      ? { objects, commonPrefixes: page.commonPrefixes }
      : { objects, commonPrefixes: page.commonPrefixes, nextToken: page.nextToken };
  }

  listAll(prefix: string): AsyncIterable<ObjectInfo> {
    return followPages((token) => this.list(prefix, token === undefined ? {} : { token }));
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    await this.enter('head', key);
    return this.info(key);
  }

  /** `enabled` for a store built with `versioned: true`, else `disabled`. */
  async versioning(): Promise<BucketVersioning> {
    await this.enter('versioning', '');
    return this.versioned ? 'enabled' : 'disabled';
  }

  async getRange(key: string, start: number, endInclusive: number): Promise<Uint8Array> {
    await this.enter('getRange', key);
    assertByteRange(key, start, endInclusive);
    const body = this.require(key).body;
    if (start >= body.byteLength) throw unsatisfiableRange(key, start, body.byteLength);
    return body.slice(start, endInclusive + 1);
  }

  async get(key: string): Promise<Uint8Array> {
    await this.enter('get', key);
    return this.require(key).body.slice();
  }

  /** `get` or `getRange` (counted and intercepted as such), with the ETag and version id of the object read. */
  async read(key: string, range?: ByteRange): Promise<ReadBytes> {
    await this.enter(range === undefined ? 'get' : 'getRange', key);
    const object = this.require(key);
    let bytes: Uint8Array;
    if (range === undefined) bytes = object.body.slice();
    else {
      assertByteRange(key, range.start, range.endInclusive);
      if (range.start >= object.body.byteLength)
        throw unsatisfiableRange(key, range.start, object.body.byteLength);
      bytes = object.body.slice(range.start, range.endInclusive + 1);
    }
    return { bytes, etag: object.etag, ...(object.versionId ? { versionId: object.versionId } : {}) };
  }

  async put(key: string, body: Uint8Array | string, options: PutOptions = {}): Promise<{ etag: string }> {
    await this.enter('put', key);
    const bytes = toBytes(body);
    return this.store(key, bytes, md5(bytes), options);
  }

  async putStream(
    key: string,
    body: AsyncIterable<Uint8Array>,
    options: PutStreamOptions = {},
  ): Promise<{ etag: string; size: number }> {
    await this.enter('putStream', key);
    const partSize = options.partSize ?? 8 * 1024 * 1024;
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of body) {
      chunks.push(Uint8Array.from(chunk));
      size += chunk.byteLength;
    }
    const bytes = Buffer.concat(chunks, size);
    const { etag } = this.store(key, new Uint8Array(bytes), multipartEtag(bytes, partSize), options);
    return { etag, size };
  }

  async copy(
    sourceKey: string,
    destinationKey: string,
    options: CopyOptions = {},
  ): Promise<{ etag: string }> {
    await this.enter('copy', sourceKey);
    const source =
      options.sourceVersionId === undefined
        ? this.require(sourceKey)
        : this.version(sourceKey, options.sourceVersionId);
    if (options.ifMatch !== undefined && options.ifMatch.replaceAll('"', '') !== source.etag) {
      throw new PreconditionFailedError(
        sourceKey,
        `Precondition failed for ${sourceKey}: its ETag is ${source.etag}, not ${options.ifMatch}. It changed since it was planned; re-plan.`,
      );
    }
    if (options.ifNoneMatch === '*' && this.objects.has(destinationKey)) {
      throw new PreconditionFailedError(
        destinationKey,
        `Precondition failed for ${destinationKey}: it already exists (If-None-Match: *). Re-read it and decide again.`,
      );
    }
    this.setCurrent(destinationKey, {
      ...source,
      lastModified: this.now(),
      storageClass: options.storageClass ?? source.storageClass,
    });
    return { etag: source.etag };
  }

  async deleteMany(refs: readonly DeleteRef[]): Promise<DeleteResult> {
    await this.enter('deleteMany', refs[0]?.key ?? '');
    const deleted: DeleteRef[] = [];
    const errors: { key: string; code: string; message: string }[] = [];
    for (const ref of refs) {
      if (ref.versionId !== undefined && this.versioned) {
        this.removeVersion(ref.key, ref.versionId);
        deleted.push(ref);
        continue;
      }
      const current = this.objects.get(ref.key);
      if (current && ref.ifMatch !== undefined && ref.ifMatch.replaceAll('"', '') !== current.etag) {
        errors.push({
          key: ref.key,
          code: 'PreconditionFailed',
          message: `${ref.key} changed since it was read (ETag ${current.etag}, expected ${ref.ifMatch}); it was not deleted`,
        });
        continue;
      }
      if (current) this.deleteCurrent(ref.key);
      deleted.push(ref);
    }
    return { deleted, errors };
  }

  /**
   * Test helper: leaves a multipart upload unfinished, as a writer that died mid-upload does
   * (`putStream` here always completes). Returns its upload id.
   */
  startMultipartUpload(key: string): string {
    const uploadId = `upload-${this.uploads.size + 1}-${key.length}`;
    this.uploads.set(uploadId, { key, uploadId, initiated: this.now() });
    return uploadId;
  }

  async listMultipartUploads(
    prefix: string,
    options: { readonly token?: string; readonly maxUploads?: number } = {},
  ): Promise<MultipartUploadPage> {
    const all = [...this.uploads.values()]
      .filter((upload) => upload.key.startsWith(prefix))
      .sort((a, b) => (a.key === b.key ? cmp(a.uploadId, b.uploadId) : cmp(a.key, b.key)));
    const start = options.token === undefined ? 0 : Number(options.token);
    const end = start + (options.maxUploads ?? 1000);
    const uploads = all.slice(start, end);
    return end < all.length ? { uploads, nextToken: String(end) } : { uploads };
  }

  async abortMultipartUpload(_key: string, uploadId: string): Promise<void> {
    this.uploads.delete(uploadId);
  }

  private store(key: string, body: Uint8Array, etag: string, options: PutOptions): { etag: string } {
    if (options.ifNoneMatch === '*' && this.objects.has(key)) {
      throw new PreconditionFailedError(key);
    }
    if (options.ifMatch !== undefined) {
      const current = this.objects.get(key);
      if (current === undefined) throw new ObjectNotFoundError(key);
      if (options.ifMatch.replaceAll('"', '') !== current.etag) {
        throw new PreconditionFailedError(
          key,
          `Precondition failed for ${key}: its ETag is ${current.etag}, not ${options.ifMatch}. Re-read it and decide again.`,
        );
      }
    }
    this.setCurrent(key, {
      body,
      etag,
      lastModified: this.now(),
      storageClass: options.storageClass ?? 'STANDARD',
      ...(options.contentType ? { contentType: options.contentType } : {}),
    });
    return { etag };
  }

  /** Makes `object` the current version of `key` (a new version in a versioned store). */
  private setCurrent(key: string, object: StoredObject): void {
    const { versionId: _previous, ...content } = object;
    if (this.versioned) {
      const versioned = { ...content, versionId: this.nextVersionId() };
      this.objects.set(key, versioned);
      this.historyOf(key).push({ versionId: versioned.versionId, object: versioned });
    } else {
      this.objects.set(key, content);
    }
    this.sortedKeys = undefined;
  }

  /** Deletes the current version: gone when unversioned, hidden behind a delete marker when versioned. */
  private deleteCurrent(key: string): void {
    this.objects.delete(key);
    if (this.versioned) this.historyOf(key).push({ versionId: this.nextVersionId() });
    this.sortedKeys = undefined;
  }

  /** Permanently removes one version; the newest remaining one (if not a marker) becomes current. */
  private removeVersion(key: string, versionId: string): void {
    const versions = this.historyOf(key).filter((entry) => entry.versionId !== versionId);
    this.history.set(key, versions);
    const latest = versions.at(-1)?.object;
    if (latest) this.objects.set(key, latest);
    else this.objects.delete(key);
    this.sortedKeys = undefined;
  }

  private version(key: string, versionId: string): StoredObject {
    if (!this.versioned) {
      throw new InvalidInputError(
        `Cannot read version ${versionId} of ${key}: this store is not versioned; create it with { versioned: true }`,
      );
    }
    const found = this.historyOf(key).find((entry) => entry.versionId === versionId)?.object;
    if (!found) throw new ObjectNotFoundError(`${key}?versionId=${versionId}`);
    return found;
  }

  private historyOf(key: string): VersionEntry[] {
    let versions = this.history.get(key);
    if (!versions) {
      versions = [];
      this.history.set(key, versions);
    }
    return versions;
  }

  private nextVersionId(): string {
    this.versionCounter++;
    return `v${String(this.versionCounter).padStart(8, '0')}`;
  }

  private info(key: string): ObjectInfo | undefined {
    const object = this.objects.get(key);
    if (!object) return undefined;
    return {
      key,
      size: object.body.byteLength,
      etag: object.etag,
      lastModified: object.lastModified,
      ...(object.versionId ? { versionId: object.versionId } : {}),
      storageClass: object.storageClass,
    };
  }

  private require(key: string): StoredObject {
    const object = this.objects.get(key);
    if (!object) throw new ObjectNotFoundError(key);
    return object;
  }

  private sorted(): { key: string }[] {
    this.sortedKeys ??= sortByKey([...this.objects.keys()].map((key) => ({ key })));
    return this.sortedKeys;
  }

  /** Counts the request, waits the simulated latency, then runs queued faults and the interceptor. */
  private async enter(method: StoreMethod, key: string): Promise<void> {
    this.requests[method]++;
    if (this.latencyMs > 0) await new Promise((resolve) => setTimeout(resolve, this.latencyMs));
    const index = this.pendingFaults.findIndex((fault) => fault.method === method);
    if (index !== -1) {
      const [fault] = this.pendingFaults.splice(index, 1);
      if (fault) throw fault.error;
    }
    if (this.interceptor) await this.interceptor(method, key);
  }
}

/** S3's multipart ETag: md5 of the concatenated binary md5s of each part, then `-<part count>`. */
function multipartEtag(bytes: Uint8Array, partSize: number): string {
  if (bytes.byteLength <= partSize) return md5(bytes);
  const digests: Buffer[] = [];
  for (let offset = 0; offset < bytes.byteLength; offset += partSize) {
    digests.push(
      createHash('md5')
        .update(bytes.subarray(offset, offset + partSize))
        .digest(),
    );
  }
  return `${md5(Buffer.concat(digests))}-${digests.length}`;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
