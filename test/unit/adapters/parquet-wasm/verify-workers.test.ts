// Proves verification on engine workers gives the same fingerprint with one worker or two and still
// catches a tampered output, and that a failed range read or an undecodable page fails with a typed error
// (the store's own, or CorruptInputError naming the output) instead of hanging on parquet-wasm's trap,
// with every worker that failed stopped and none left busy.
// node:worker_threads is wrapped only to count the real workers started and terminated.

import { beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import {
  closeIdleWorkers,
  engineWorkerStats,
} from '../../../../functions/adapters/parquet-wasm/worker-pool.js';
import { CorruptInputError } from '../../../../functions/core/errors.js';
import { problemsOf, rewritten, tamper } from '../../../support/verify-fixtures.js';

const threads = vi.hoisted(() => ({ started: 0, terminated: 0 }));

vi.mock('node:worker_threads', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:worker_threads')>();
  class CountedWorker extends actual.Worker {
    constructor(...args: ConstructorParameters<typeof actual.Worker>) {
      super(...args);
      threads.started++;
    }
    override terminate(): Promise<number> {
      threads.terminated++;
      return super.terminate();
    }
  }
  return { ...actual, Worker: CountedWorker };
});

/** A store whose ranged reads of `key` that stop short of its end (row group data, not the footer) fail. */
class FailingReads extends MemoryObjectStore {
  readonly failure = new Error('injected: the store refused a range read');
  failKey: string | undefined;
  override async getRange(key: string, start: number, end: number): Promise<Uint8Array> {
    const { size } = (await this.head(key)) ?? { size: 0 };
    if (key === this.failKey && end < size - 1) throw this.failure;
    return super.getRange(key, start, end);
  }
}

describe('verifyOutputs with worker threads', () => {
  // Each test counts the workers it starts: none is left idle by an earlier one.
  beforeEach(closeIdleWorkers);

  it('recomputes the one-worker fingerprint with two workers, and leaves both idle, not busy', async () => {
    // Prepare: three outputs, so both workers hash at least one.
    const { target, result } = await rewritten(3);
    expect(result.outputs).toHaveLength(3);
    const alone = await verifyOutputs(target, result.outputs, result.fingerprint);
    const before = { ...threads };

    // Act
    const parallel = await verifyOutputs(target, result.outputs, result.fingerprint, { workers: 2 });

    // Assess
    expect(parallel.fingerprint).toEqual(alone.fingerprint);
    expect(parallel.fingerprint.hash).toBe(result.fingerprint.hash);
    expect(parallel.rows).toBe(2_000);
    // The one-worker verify's worker is reused; a second one is started; both wait for the next verify.
    expect(threads.started - before.started).toBe(1);
    expect(threads.terminated - before.terminated).toBe(0);
    expect(engineWorkerStats().idle).toBe(2);
  });

  it('catches one changed value in one of several outputs', async () => {
    // Prepare
    const { target, result } = await rewritten(3);
    const [first, second, third] = result.outputs as unknown as [
      { key: string; size: number },
      { key: string; size: number },
      { key: string; size: number },
    ];
    const tampered = await tamper(target, second.key, (c) => {
      const ids = c.user_id as bigint[];
      ids[3] = (ids[3] as bigint) + 1n;
    });

    // Act
    const problems = await problemsOf(
      verifyOutputs(target, [first, tampered, third], result.fingerprint, { workers: 2 }),
    );

    // Assess
    expect(problems).toEqual([expect.stringMatching(/^row hash/)]);
  });

  it.each([
    { workers: 1, threads: 1 },
    { workers: 2, threads: 2 },
  ])(
    'fails with the store’s own error when a range read fails ($workers worker(s)), and verifies again after',
    async ({ workers, threads: expectedThreads }) => {
      // Prepare: copy the outputs into a store that refuses the data reads of the second one.
      const { target, result } = await rewritten(3);
      const store = new FailingReads();
      for (const o of result.outputs) await store.put(o.key, await target.get(o.key));
      store.failKey = result.outputs[1]?.key;
      const before = { ...threads };

      // Act
      const err = await verifyOutputs(store, result.outputs, result.fingerprint, { workers }).then(
        () => undefined,
        (e: unknown) => e,
      );
      store.failKey = undefined;
      const again = await verifyOutputs(store, result.outputs, result.fingerprint, { workers });

      // Assess: parquet-wasm traps on a rejected read; the engine must neither crash nor stay broken.
      expect(err).toBe(store.failure);
      expect(again.fingerprint.hash).toBe(result.fingerprint.hash);
      // The worker whose read failed is stopped, never reused; every other one is stopped or idle.
      expect(threads.started - before.started).toBeGreaterThan(expectedThreads);
      expect(threads.started - before.started).toBeLessThanOrEqual(2 * expectedThreads);
      expect(threads.terminated - before.terminated).toBeGreaterThanOrEqual(1);
      expect(threads.started - threads.terminated).toBe(engineWorkerStats().idle);
    },
  );

  it.each([1, 2])(
    'fails with a CorruptInputError naming an output whose pages do not decode (%i worker(s))',
    async (workers) => {
      // Prepare: garble the second output's first column chunk, leaving its footer intact.
      const { target, result } = await rewritten(3);
      const broken = result.outputs[1] as { key: string; size: number };
      const bytes = await target.get(broken.key);
      bytes.fill(0xff, 8, Math.min(bytes.length - 4096, 8 + 2048));
      await target.put(broken.key, bytes);

      // Act
      const err = await verifyOutputs(target, result.outputs, result.fingerprint, { workers }).then(
        () => undefined,
        (e: unknown) => e,
      );

      // Assess
      expect(err).toBeInstanceOf(CorruptInputError);
      expect((err as CorruptInputError).key).toBe(broken.key);
    },
  );
});
