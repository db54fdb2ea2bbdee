// A store in which one table is poison, the ways its metadata can fail a reader: every request under its prefix
// throws (an error deep in a format read), or never answers (a read that outlasts any budget; the process that
// made it, as far as the caller can tell, dead in it). Every request is logged, so a test can tell which table an
// invocation served first.
import type { ObjectStore } from '../../functions/ports/object-store.js';

export interface PoisonedStore {
  readonly store: ObjectStore;
  /** Every request's first argument (a key or prefix), in order. */
  readonly requests: string[];
  /** Resolves at the next poisoned request (call again for the one after). */
  reached(): Promise<string>;
}

/** Wraps `store`: requests whose key or prefix starts with `prefix` throw `error` or hang, per `mode`. */
export function poisonedStore(
  store: ObjectStore,
  prefix: string,
  mode: { readonly hang: true } | { readonly throws: Error },
): PoisonedStore {
  const requests: string[] = [];
  let waiting: ((key: string) => void)[] = [];
  const never = new Promise<never>(() => {});
  const poisoned = (key: string) => {
    for (const resolve of waiting) resolve(key);
    waiting = [];
    return 'hang' in mode ? never : Promise.reject(mode.throws);
  };
  const wrapped = new Proxy(store, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const first = args[0];
        if (typeof first === 'string') requests.push(first);
        if (typeof first !== 'string' || !first.startsWith(prefix)) {
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        }
        if (property === 'listAll') {
          return (async function* () {
            yield* [];
            await poisoned(first);
          })();
        }
        return poisoned(first);
      };
    },
  });
  return {
    store: wrapped,
    requests,
    reached: () => new Promise<string>((resolve) => waiting.push(resolve)),
  };
}
