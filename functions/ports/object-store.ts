// The ObjectStore port: the only way core code reads or writes objects. Implemented for S3 and a
// local folder; every method is safe to retry and conditional writes fail with PreconditionFailedError.

/** One object as a listing or HEAD sees it. */
export interface ObjectInfo {
  /** Key relative to the store's root (bucket for S3, folder for local). Never starts with `/`. */
  readonly key: string;
  readonly size: number;
  /** Entity tag without quotes. */
  readonly etag: string;
  readonly lastModified: Date;
  readonly versionId?: string;
  /** S3 storage class (`STANDARD` when the store does not say). */
  readonly storageClass?: string;
}

export interface ListOptions {
  /** Group keys by this delimiter into `commonPrefixes` (e.g. `/`). */
  readonly delimiter?: string;
  /** Continuation token from the previous page. */
  readonly token?: string;
  readonly maxKeys?: number;
}

export interface ListPage {
  readonly objects: readonly ObjectInfo[];
  readonly commonPrefixes: readonly string[];
  /** Present when there is another page. */
  readonly nextToken?: string;
}

export interface PutOptions {
  /** Put-if-absent: fail with PreconditionFailedError when the key exists. */
  readonly ifNoneMatch?: '*';
  /**
   * Compare-and-swap: replace the object only while its ETag is still this one, else
   * PreconditionFailedError; ObjectNotFoundError when the key does not exist (as S3 answers 404).
   * S3 and the in-memory store check and write atomically; a local folder does so only within one
   * process (see LocalObjectStore).
   */
  readonly ifMatch?: string;
  readonly contentType?: string;
  readonly storageClass?: string;
}

export interface PutStreamOptions extends PutOptions {
  /** Multipart part size in bytes (S3 minimum 5 MiB). */
  readonly partSize?: number;
  /** Parts uploaded concurrently. */
  readonly queueSize?: number;
}

export interface CopyOptions {
  /** Copy only when the source's ETag is still this one, else PreconditionFailedError. */
  readonly ifMatch?: string;
  /** Copy this version of the source (versioned buckets: restoring a retired input). */
  readonly sourceVersionId?: string;
  readonly storageClass?: string;
  /**
   * Copy only when nothing is at the destination (S3 CopyObject `If-None-Match: *`), else PreconditionFailedError:
   * a key another writer may take first is never overwritten, and the bytes never pass through this process.
   */
  readonly ifNoneMatch?: '*';
}

export interface DeleteRef {
  readonly key: string;
  readonly versionId?: string;
  /**
   * Conditional delete: only when the current ETag is this one (S3 `If-Match` / the `ETag` element
   * of DeleteObjects). A mismatch is reported in `errors` with code `PreconditionFailed`.
   */
  readonly ifMatch?: string;
}

export interface DeleteResult {
  readonly deleted: readonly DeleteRef[];
  readonly errors: readonly { readonly key: string; readonly code?: string; readonly message: string }[];
}

/** A multipart upload that was started and neither completed nor aborted. */
export interface MultipartUploadInfo {
  readonly key: string;
  readonly uploadId: string;
  readonly initiated: Date;
}

export interface MultipartUploadPage {
  readonly uploads: readonly MultipartUploadInfo[];
  /** Present when there is another page; pass it back as `token`. */
  readonly nextToken?: string;
}

/** Bytes the caller already holds, written as they are. */
export interface ComposedBytes {
  readonly kind: 'bytes';
  readonly bytes: Uint8Array;
}

/**
 * Bytes `start..endInclusive` of another object of the same store, as it is at `etag`: a composed write
 * copies them server-side where it can and reads them otherwise, in both cases conditioned on the ETag, so
 * what is written is the version the caller planned from or nothing at all.
 */
export interface ComposedRange {
  readonly kind: 'range';
  readonly key: string;
  readonly etag: string;
  readonly start: number;
  readonly endInclusive: number;
}

/** One piece of a composed object, in order: see `ObjectStore.putComposed`. */
export type ComposedPiece = ComposedBytes | ComposedRange;

export interface PutComposedOptions {
  /** Put-if-absent, as `PutOptions.ifNoneMatch` (applied when the object is completed). */
  readonly ifNoneMatch?: '*';
  readonly contentType?: string;
  readonly storageClass?: string;
  /** Parts sent concurrently (each at most ~10 MiB held in memory). */
  readonly queueSize?: number;
}

/**
 * Bytes read from an object, with which object they are of as the read's own response names it (S3 returns the
 * ETag and, on a versioned bucket, the version id with every GetObject): see `ObjectStore.read`.
 */
export interface ReadBytes {
  readonly bytes: Uint8Array;
  /** Entity tag of the object read, without quotes. */
  readonly etag: string;
  /** Version id of the object read (versioned buckets); absent where the store has none. */
  readonly versionId?: string;
}

/** A byte range `start..endInclusive` of an object (explicit: see `ObjectStore.getRange`). */
export interface ByteRange {
  readonly start: number;
  readonly endInclusive: number;
}

/** A bucket's versioning status (S3 GetBucketVersioning); `disabled` = never enabled. */
export type BucketVersioning = 'enabled' | 'suspended' | 'disabled';

export interface ObjectStore {
  /** Human-readable location of the store root, e.g. `s3://bucket` or `/tmp/lake`. */
  readonly description: string;
  /** One page of keys under `prefix`, in lexicographic order. */
  list(prefix: string, options?: ListOptions): Promise<ListPage>;
  /** Every object under `prefix`, following pagination. */
  listAll(prefix: string): AsyncIterable<ObjectInfo>;
  /** Object metadata, or undefined when the key does not exist. */
  head(key: string): Promise<ObjectInfo | undefined>;
  /** Bytes `start..endInclusive` (explicit range; suffix ranges are unreliable on local servers). */
  getRange(key: string, start: number, endInclusive: number): Promise<Uint8Array>;
  /** The whole object. ObjectNotFoundError when missing. */
  get(key: string): Promise<Uint8Array>;
  /**
   * The whole object, or `range` of it, with the ETag and version id of what was read, in the one request `get`
   * or `getRange` would send: a caller that later acts on exactly the version it read (the commit retiring it,
   * an undo restoring it) learns that version without a HEAD. ObjectNotFoundError when missing. Optional: a
   * store without it is read with `get`/`getRange`, and the version is asked for later (a HEAD).
   */
  read?(key: string, range?: ByteRange): Promise<ReadBytes>;
  /** Writes a small object in one request. */
  put(key: string, body: Uint8Array | string, options?: PutOptions): Promise<{ etag: string }>;
  /** Streams a large object as a multipart upload while the producer is still producing. */
  putStream(
    key: string,
    body: AsyncIterable<Uint8Array>,
    options?: PutStreamOptions,
  ): Promise<{ etag: string; size: number }>;
  /**
   * Writes `key` as the concatenation of `pieces`, copying ranges of this store's objects server-side
   * (S3 UploadPartCopy) where multipart rules allow and reading the rest (core/parquet/compose.ts plans
   * which). Every range is read or copied only while its object's ETag is still the piece's `etag`, else
   * PreconditionFailedError naming that object, and nothing is written (the staged upload is aborted).
   * Optional: a store without it is written with `putStream` from bytes the caller reads itself.
   */
  putComposed?(
    key: string,
    pieces: readonly ComposedPiece[],
    options?: PutComposedOptions,
  ): Promise<{ etag: string; size: number }>;
  /** Server-side copy, optionally conditioned on the source ETag. */
  copy(sourceKey: string, destinationKey: string, options?: CopyOptions): Promise<{ etag: string }>;
  /** Deletes many keys (batched); missing keys count as deleted. */
  deleteMany(refs: readonly DeleteRef[]): Promise<DeleteResult>;
  /**
   * One page of unfinished multipart uploads under `prefix` (S3 ListMultipartUploads). Optional: local
   * stores and s3rver have no such thing; callers skip the work when it is missing.
   */
  listMultipartUploads?(
    prefix: string,
    options?: { readonly token?: string; readonly maxUploads?: number },
  ): Promise<MultipartUploadPage>;
  /** Discards an unfinished multipart upload and its parts; an unknown upload counts as aborted. Optional. */
  abortMultipartUpload?(key: string, uploadId: string): Promise<void>;
  /**
   * The store's versioning status. Optional: a store without it counts as not versioned, so delete-mode
   * retirement (which relies on restoring old versions) is never used on it.
   */
  versioning?(): Promise<BucketVersioning>;
}
