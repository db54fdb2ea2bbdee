// A fault-injecting ObjectStore wrapper for crash and permission tests: a request can be denied every time
// (a missing permission), and the process can "die" right after any request took effect.
import type { StoreMethod } from '../../functions/adapters/memory-object-store.js';
import type { DeleteResult, ObjectStore } from '../../functions/ports/object-store.js';

/** The port's requests, by method (the in-memory store's names, plus the paginating `listAll`). */
export type StoreOp = StoreMethod | 'listAll';

/** S3's answer to a request the caller's policy does not allow (what the SDK throws, by name and status). */
export class AccessDenied extends Error {
  override readonly name = 'AccessDenied';
  readonly $metadata = { httpStatusCode: 403 };
  constructor(op: StoreOp, key: string) {
    super(`Access Denied (injected: ${op} ${key})`);
  }
}

/** Stands for the Lambda (or process) dying right after a request: its effect stays, nothing after runs. */
export class Killed extends Error {
  override readonly name = 'Killed';
}

export interface StoreFaults {
  /** Runs before every request; throwing fails it before it reaches the store (e.g. a dead process). */
  before?(op: StoreOp): void;
  /**
   * Whether a request on `key` is denied (AccessDenied, every time it is asked). The key is the object's
   * (a copy's destination; each key of a batched delete, which reports it as a per-key error, as S3 does).
   */
  denied?(op: StoreOp, key: string): boolean;
  /**
   * Runs after every request that took effect, before the caller sees its result (awaited: an observer
   * may look at the store between two requests); throwing (e.g. `Killed`) ends the caller there.
   */
  after?(op: StoreOp): void | Promise<void>;
}

/** Wraps `store`; every method of the port goes through the faults. */
export function faultyStore(store: ObjectStore, faults: StoreFaults): ObjectStore {
  const deny = (op: StoreOp, key: string) => {
    faults.before?.(op);
    if (faults.denied?.(op, key) === true) throw new AccessDenied(op, key);
  };
  const done = async (op: StoreOp) => faults.after?.(op);
  const wrapped: ObjectStore = {
    description: store.description,
    async list(prefix, options) {
      deny('list', prefix);
      const page = await store.list(prefix, options);
      await done('list');
      return page;
    },
    async *listAll(prefix) {
      deny('listAll', prefix);
      for await (const object of store.listAll(prefix)) yield object;
      await done('listAll');
    },
    async head(key) {
      deny('head', key);
      const info = await store.head(key);
      await done('head');
      return info;
    },
    async getRange(key, start, end) {
      deny('getRange', key);
      const bytes = await store.getRange(key, start, end);
      await done('getRange');
      return bytes;
    },
    async get(key) {
      deny('get', key);
      const bytes = await store.get(key);
      await done('get');
      return bytes;
    },
    async put(key, body, options) {
      deny('put', key);
      const result = await store.put(key, body, options);
      await done('put');
      return result;
    },
    async putStream(key, body, options) {
      deny('putStream', key);
      const result = await store.putStream(key, body, options);
      await done('putStream');
      return result;
    },
    async copy(source, destination, options) {
      deny('copy', destination);
      const result = await store.copy(source, destination, options);
      await done('copy');
      return result;
    },
    async deleteMany(refs): Promise<DeleteResult> {
      faults.before?.('deleteMany');
      const refused = refs.filter((r) => faults.denied?.('deleteMany', r.key) === true);
      const allowed = refs.filter((r) => !refused.includes(r));
      const result = allowed.length === 0 ? { deleted: [], errors: [] } : await store.deleteMany(allowed);
      await done('deleteMany');
      return {
        deleted: result.deleted,
        errors: [
          ...result.errors,
          ...refused.map((r) => ({ key: r.key, code: 'AccessDenied', message: 'Access Denied (injected)' })),
        ],
      };
    },
  };
  if (store.versioning !== undefined) {
    const versioning = store.versioning.bind(store);
    wrapped.versioning = async () => {
      deny('versioning', '');
      const status = await versioning();
      await done('versioning');
      return status;
    };
  }
  return wrapped;
}

/** A kill switch: the `after`-th request (1-based) of whoever uses it is the last one; fires once. */
export class KillAfter {
  seen = 0;
  fired = false;
  constructor(readonly after: number) {}

  tick(): void {
    if (this.fired) return;
    this.seen += 1;
    if (this.seen === this.after) {
      this.fired = true;
      throw new Killed(`killed after store request ${this.after}`);
    }
  }
}
