// An ObjectStore that refuses, before sending, every object request outside one table's scope (its prefix and the
// work root): the in-process twin of the per-table STS session policy, and the only enforcement where no STS exists.
//
// It mirrors IAM: listings and the bucket's versioning are bucket-level (granted per bucket, unscoped) and pass;
// every request naming a key is checked. A batch delete refuses only its out-of-scope keys, each as AccessDenied
// in the result, as S3 answers DeleteObjects for keys a policy denies.
import {
  describeScope,
  keyInScope,
  OutsideTableScopeError,
  type TableScope,
} from '../core/access/table-scope.js';
import type {
  BucketVersioning,
  ByteRange,
  ComposedPiece,
  CopyOptions,
  DeleteRef,
  DeleteResult,
  ListOptions,
  ListPage,
  ObjectInfo,
  ObjectStore,
  PutComposedOptions,
  PutOptions,
  PutStreamOptions,
} from '../ports/object-store.js';

export class ScopedObjectStore implements ObjectStore {
  readonly description: string;
  readonly listMultipartUploads?: ObjectStore['listMultipartUploads'];
  readonly abortMultipartUpload?: ObjectStore['abortMultipartUpload'];
  readonly putComposed?: ObjectStore['putComposed'];
  readonly versioning?: () => Promise<BucketVersioning>;
  readonly read?: ObjectStore['read'];
  private readonly scopeText: string;

  constructor(
    private readonly inner: ObjectStore,
    readonly scope: TableScope,
  ) {
    this.description = inner.description;
    this.scopeText = describeScope(scope);
    // Optional capabilities stay optional: a store without them keeps callers on their fallback paths.
    if (inner.listMultipartUploads !== undefined) {
      const list = inner.listMultipartUploads.bind(inner);
      this.listMultipartUploads = (prefix, options) => list(prefix, options);
    }
    if (inner.abortMultipartUpload !== undefined) {
      const abort = inner.abortMultipartUpload.bind(inner);
      this.abortMultipartUpload = async (key, uploadId) => {
        this.check(key, 'AbortMultipartUpload');
        return abort(key, uploadId);
      };
    }
    if (inner.putComposed !== undefined) {
      const compose = inner.putComposed.bind(inner);
      this.putComposed = async (
        key: string,
        pieces: readonly ComposedPiece[],
        options?: PutComposedOptions,
      ) => {
        this.check(key, 'PutObject');
        for (const piece of pieces) if (piece.kind === 'range') this.check(piece.key, 'GetObject');
        return compose(key, pieces, options);
      };
    }
    if (inner.versioning !== undefined) this.versioning = inner.versioning.bind(inner);
    if (inner.read !== undefined) {
      const read = inner.read.bind(inner);
      this.read = async (key: string, range?: ByteRange) => {
        this.check(key, 'GetObject');
        return read(key, range);
      };
    }
  }

  /** Throws {@link OutsideTableScopeError} unless `key` is in the scope. */
  private check(key: string, operation: string): void {
    if (!keyInScope(this.scope, key)) throw new OutsideTableScopeError(key, operation, this.scopeText);
  }

  list(prefix: string, options?: ListOptions): Promise<ListPage> {
    return this.inner.list(prefix, options);
  }

  listAll(prefix: string): AsyncIterable<ObjectInfo> {
    return this.inner.listAll(prefix);
  }

  async head(key: string): Promise<ObjectInfo | undefined> {
    this.check(key, 'HeadObject');
    return this.inner.head(key);
  }

  async getRange(key: string, start: number, endInclusive: number): Promise<Uint8Array> {
    this.check(key, 'GetObject');
    return this.inner.getRange(key, start, endInclusive);
  }

  async get(key: string): Promise<Uint8Array> {
    this.check(key, 'GetObject');
    return this.inner.get(key);
  }

  async put(key: string, body: Uint8Array | string, options?: PutOptions): Promise<{ etag: string }> {
    this.check(key, 'PutObject');
    return this.inner.put(key, body, options);
  }

  async putStream(
    key: string,
    body: AsyncIterable<Uint8Array>,
    options?: PutStreamOptions,
  ): Promise<{ etag: string; size: number }> {
    this.check(key, 'PutObject');
    return this.inner.putStream(key, body, options);
  }

  async copy(sourceKey: string, destinationKey: string, options?: CopyOptions): Promise<{ etag: string }> {
    this.check(sourceKey, options?.sourceVersionId === undefined ? 'GetObject' : 'GetObjectVersion');
    this.check(destinationKey, 'PutObject');
    return this.inner.copy(sourceKey, destinationKey, options);
  }

  async deleteMany(refs: readonly DeleteRef[]): Promise<DeleteResult> {
    const inScope = refs.filter((r) => keyInScope(this.scope, r.key));
    const refused = refs
      .filter((r) => !keyInScope(this.scope, r.key))
      .map((r) => ({
        key: r.key,
        code: 'AccessDenied',
        message: new OutsideTableScopeError(
          r.key,
          r.versionId === undefined ? 'DeleteObject' : 'DeleteObjectVersion',
          this.scopeText,
        ).message,
      }));
    const result = inScope.length === 0 ? { deleted: [], errors: [] } : await this.inner.deleteMany(inScope);
    return { deleted: result.deleted, errors: [...result.errors, ...refused] };
  }
}
