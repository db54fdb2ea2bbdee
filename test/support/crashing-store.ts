// Test helper: a store whose process "dies" at request N (1-based, every request counted; `before` it runs or
// `after` it ran): that request and every later one throw, as a killed process's would. The same injection as
// test/fault/delta-commit-crash.test.ts, shared by the crash trials of the formats that came after it.
import type { Journal } from '../../functions/ports/journal.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { observedStore, type StoreCall } from './crash-store.js';

/** Stands for the process dying: every request from the chosen one on fails. */
export class Crash extends Error {
  override name = 'Crash';
}

export interface CrashingStore {
  readonly store: ObjectStore;
  /** Requests counted so far. */
  requests(): number;
  /** Whether the process died. */
  crashed(): boolean;
  /** Waits for requests still in flight when it died (a dead process's last writes land before a retry starts). */
  quiesce(): Promise<void>;
}

/** Dies at request `at` (`before` or `after` it), logging each counted request into `log` when given. */
export function crashingStore(
  inner: ObjectStore,
  at: number,
  when: 'before' | 'after',
  log?: StoreCall[],
): CrashingStore {
  let count = 0;
  let dead = false;
  const pending = new Set<Promise<unknown>>();
  const observed = observedStore(inner, {
    before: (call: StoreCall) => {
      if (call.method === 'chunk') return;
      if (dead) throw new Crash(`dead before ${call.method} ${call.key}`);
      count += 1;
      log?.push(call);
      if (when === 'before' && count === at) {
        dead = true;
        throw new Crash(`crash before request ${at}: ${call.method} ${call.key}`);
      }
    },
    after: (call: StoreCall) => {
      if (dead) throw new Crash(`dead after ${call.method} ${call.key}`);
      if (when === 'after' && count >= at) {
        dead = true;
        throw new Crash(`crash after request ${at}: ${call.method} ${call.key}`);
      }
    },
  });
  const track =
    <A extends unknown[], R>(fn: (...args: A) => Promise<R>) =>
    (...args: A): Promise<R> => {
      const p = fn(...args);
      pending.add(p);
      void p.catch(() => {}).finally(() => pending.delete(p));
      return p;
    };
  const store: ObjectStore = {
    ...observed,
    list: track(observed.list),
    head: track(observed.head),
    getRange: track(observed.getRange),
    get: track(observed.get),
    put: track(observed.put),
    putStream: track(observed.putStream),
    copy: track(observed.copy),
    deleteMany: track(observed.deleteMany),
    ...(observed.read === undefined ? {} : { read: track(observed.read) }),
  };
  return {
    store,
    requests: () => count,
    crashed: () => dead,
    async quiesce() {
      while (pending.size > 0) await Promise.allSettled([...pending]);
      await new Promise((resolve) => setImmediate(resolve));
    },
  };
}

/** A journal that dies with the process: once `dead()`, every call throws. */
export function dyingJournal(inner: Journal, dead: () => boolean): Journal {
  return new Proxy(inner, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (dead()) return Promise.reject(new Crash('the process died (journal)'));
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}
