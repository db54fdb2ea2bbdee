// A request-counting ObjectStore wrapper: counts what each call of the port would cost on S3, by billing
// class, so tests (and the benchmark) can hold the cost model to what the code really sends.
import { followPages } from '../../functions/adapters/listing.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';

/** S3 requests by billing class (the shape of `CostEstimate.requests`). */
export interface S3RequestCounts {
  /** GET class: GetObject (whole or ranged), HeadObject, GetBucketVersioning. */
  get: number;
  /** PUT class without COPY: PutObject, multipart create / part / complete, ListObjectsV2 pages, ListMultipartUploads. */
  put: number;
  /** CopyObject (billed as PUT class, counted apart because trash mode adds one per input). */
  copy: number;
  /** DeleteObjects requests (one per batch of up to 1,000 keys) and AbortMultipartUpload: free on S3. */
  delete: number;
}

/** S3's limits that turn one port call into several requests (the S3 adapter's defaults). */
export interface CountingOptions {
  /** Multipart part size of `putStream` when the caller gives none. @default 8 MiB (S3ObjectStore's default) */
  readonly partSize?: number;
  /** Keys per DeleteObjects request. @default 1000 */
  readonly deleteBatch?: number;
}

/** One request as the wrapper saw it: the port call and the key (or prefix, for a listing) it named. */
export interface LoggedRequest {
  readonly op: 'list' | 'head' | 'get' | 'put' | 'copy' | 'delete' | 'upload';
  readonly key: string;
}

export interface CountingStore {
  readonly store: ObjectStore;
  /** Requests counted since the start or the last `reset`. */
  counts(): S3RequestCounts;
  /** Every request since the start or the last `reset`, in order, with the key it named (a copy names both). */
  requests(): readonly LoggedRequest[];
  reset(): void;
}

const DEFAULT_PART_SIZE = 8 * 1024 * 1024;

/**
 * Wraps `inner`; every request passes through unchanged and is counted as S3 would bill it. `listAll` is
 * followed page by page through the wrapper's `list`, so each ListObjectsV2 page counts; a `putStream` is one
 * PutObject when its body fits in one part (as lib-storage sends it), else create + parts + complete.
 */
export function countingStore(inner: ObjectStore, options: CountingOptions = {}): CountingStore {
  const partSize = options.partSize ?? DEFAULT_PART_SIZE;
  const deleteBatch = options.deleteBatch ?? 1000;
  let counts: S3RequestCounts = { get: 0, put: 0, copy: 0, delete: 0 };
  let log: LoggedRequest[] = [];
  const store: ObjectStore = {
    description: inner.description,
    async list(prefix, listOptions) {
      counts.put++;
      log.push({ op: 'list', key: prefix });
      return inner.list(prefix, listOptions);
    },
    listAll(prefix) {
      return followPages((token) => store.list(prefix, token === undefined ? {} : { token }));
    },
    async head(key) {
      counts.get++;
      log.push({ op: 'head', key });
      return inner.head(key);
    },
    async getRange(key, start, endInclusive) {
      counts.get++;
      log.push({ op: 'get', key });
      return inner.getRange(key, start, endInclusive);
    },
    async get(key) {
      counts.get++;
      log.push({ op: 'get', key });
      return inner.get(key);
    },
    async put(key, body, putOptions) {
      counts.put++;
      log.push({ op: 'put', key });
      return inner.put(key, body, putOptions);
    },
    async putStream(key, body, streamOptions) {
      const part = streamOptions?.partSize ?? partSize;
      log.push({ op: 'put', key });
      const result = await inner.putStream(key, body, streamOptions);
      const parts = Math.ceil(result.size / part);
      counts.put += parts <= 1 ? 1 : parts + 2;
      return result;
    },
    async copy(sourceKey, destinationKey, copyOptions) {
      counts.copy++;
      log.push({ op: 'copy', key: sourceKey }, { op: 'copy', key: destinationKey });
      return inner.copy(sourceKey, destinationKey, copyOptions);
    },
    async deleteMany(refs) {
      counts.delete += Math.ceil(refs.length / deleteBatch);
      for (const ref of refs) log.push({ op: 'delete', key: ref.key });
      return inner.deleteMany(refs);
    },
  };
  const listUploads = inner.listMultipartUploads?.bind(inner);
  if (listUploads !== undefined) {
    store.listMultipartUploads = async (prefix, listOptions) => {
      counts.put++;
      return listUploads(prefix, listOptions);
    };
  }
  const abort = inner.abortMultipartUpload?.bind(inner);
  if (abort !== undefined) {
    store.abortMultipartUpload = async (key, uploadId) => {
      counts.delete++;
      log.push({ op: 'upload', key });
      return abort(key, uploadId);
    };
  }
  const versioning = inner.versioning?.bind(inner);
  if (versioning !== undefined) {
    store.versioning = async () => {
      counts.get++;
      return versioning();
    };
  }
  const read = inner.read?.bind(inner);
  if (read !== undefined) {
    // One GetObject, as `get`/`getRange` (a store without `read` is read through those instead).
    store.read = async (key, range) => {
      counts.get++;
      log.push({ op: 'get', key });
      return read(key, range);
    };
  }
  return {
    store,
    counts: () => ({ ...counts }),
    requests: () => [...log],
    reset() {
      counts = { get: 0, put: 0, copy: 0, delete: 0 };
      log = [];
    },
  };
}
