// Test helper: an ObjectStore wrapper that sees every request (and every chunk a streamed upload sends)
// and can end the run right there — by throwing from then on (an in-process "crash") or by a real SIGKILL.
import type {
  ByteRange,
  DeleteRef,
  ObjectStore,
  PutStreamOptions,
} from '../../functions/ports/object-store.js';

/** One request as the wrapper sees it; `chunk` is a body chunk of a `putStream` in flight. */
export interface StoreCall {
  readonly method:
    | 'list'
    | 'listAll'
    | 'head'
    | 'getRange'
    | 'get'
    | 'put'
    | 'putStream'
    | 'chunk'
    | 'copy'
    | 'deleteMany';
  /** The key (prefix for listings, first key for deleteMany, destination for copy). */
  readonly key: string;
  readonly refs?: readonly DeleteRef[];
  /** The body of a `put` (journal entries, plans: small). */
  readonly body?: Uint8Array | string;
}

/**
 * Calls `before` ahead of every request and `after` once it completed; either may throw to fail it (the
 * request then did, or did not, happen). A streamed upload also reports each body chunk (`chunk`), so a
 * test can end the process while a temp file is half written.
 */
export function observedStore(
  store: ObjectStore,
  hooks: { before?: (call: StoreCall) => void; after?: (call: StoreCall) => void },
): ObjectStore {
  const run = async <R>(call: StoreCall, fn: () => Promise<R>): Promise<R> => {
    hooks.before?.(call);
    const result = await fn();
    hooks.after?.(call);
    return result;
  };
  return {
    description: store.description,
    list: (prefix, options) => run({ method: 'list', key: prefix }, () => store.list(prefix, options)),
    async *listAll(prefix) {
      hooks.before?.({ method: 'listAll', key: prefix });
      for await (const object of store.listAll(prefix)) yield object;
      hooks.after?.({ method: 'listAll', key: prefix });
    },
    head: (key) => run({ method: 'head', key }, () => store.head(key)),
    getRange: (key, start, end) => run({ method: 'getRange', key }, () => store.getRange(key, start, end)),
    get: (key) => run({ method: 'get', key }, () => store.get(key)),
    put: (key, body, options) => run({ method: 'put', key, body }, () => store.put(key, body, options)),
    putStream: (key, body, options?: PutStreamOptions) =>
      run({ method: 'putStream', key }, () =>
        store.putStream(
          key,
          (async function* () {
            for await (const chunk of body) {
              hooks.before?.({ method: 'chunk', key });
              yield chunk;
            }
          })(),
          options,
        ),
      ),
    copy: (source, destination, options) =>
      run({ method: 'copy', key: destination }, () => store.copy(source, destination, options)),
    deleteMany: (refs) =>
      run({ method: 'deleteMany', key: refs[0]?.key ?? '', refs }, () => store.deleteMany(refs)),
    ...(store.versioning === undefined ? {} : { versioning: store.versioning.bind(store) }),
    // The optional read (a GET that names the object it returned) is a request like get/getRange: seen, not bypassed.
    ...(store.read === undefined
      ? {}
      : {
          read: (key: string, range?: ByteRange) =>
            run({ method: range === undefined ? 'get' : 'getRange', key }, () =>
              (store.read as NonNullable<ObjectStore['read']>)(key, range),
            ),
        }),
  };
}

/**
 * A store that "dies" at the first request `dies(call)` picks (before it runs): that request and every
 * later one throw, so the run stops with its journal and objects exactly as a killed process leaves them.
 */
export function dyingStore(store: ObjectStore, dies: (call: StoreCall) => boolean): ObjectStore {
  let dead = false;
  return observedStore(store, {
    before: (call) => {
      if (!dead && dies(call)) dead = true;
      if (dead) throw new Error(`injected: the process died before ${call.method} ${call.key}`);
    },
  });
}
