// Proves a worker that dies while encoding its part of a split output (one output's row groups on several workers)
// fails the group with a typed error, and that nothing is left staged. Kept apart from split-output.test.ts: it
// replaces the worker pool's `takeWorker` (a module mock), so it runs in a process of its own.

import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { RewriteStalledError } from '../../../../functions/core/errors.js';
import { type DuckWorkspace, duckWorkspace, eventsSelect, fileOf } from './helpers.js';

/** Whether the next call's second worker is terminated after its first message (mid-task: it has started its part). */
const kill = { next: false, killed: 0 };

vi.mock('../../../../functions/adapters/parquet-wasm/worker-pool.js', async (importOriginal) => {
  const original =
    await importOriginal<typeof import('../../../../functions/adapters/parquet-wasm/worker-pool.js')>();
  let taken = 0;
  return {
    ...original,
    takeWorker: (upTo: number) => {
      const worker = original.takeWorker(upTo);
      if (kill.next && ++taken === 2) {
        kill.next = false;
        worker.once('message', () => {
          kill.killed++;
          void worker.terminate();
        });
      }
      return worker;
    },
  };
});

let duck: DuckWorkspace;
beforeAll(async () => {
  duck = await duckWorkspace();
});
afterAll(async () => {
  await duck.close();
});

describe('a split output whose worker dies', () => {
  it('fails the group with RewriteStalledError and leaves nothing staged', async () => {
    // Prepare: one output of 8 row groups on 2 workers (4 parts); the second worker is killed once it has started.
    const source = new MemoryObjectStore();
    const target = new MemoryObjectStore();
    const keys = Array.from({ length: 4 }, (_, f) => `in/${f}.parquet`);
    for (const [f, key] of keys.entries())
      await source.put(key, await duck.parquet(eventsSelect(4_000, f * 7)));
    const files = await Promise.all(keys.map((key) => fileOf(source, key)));
    kill.next = true;

    // Act
    const outcome = await rewriteGroup(
      { source, target },
      { groupId: 'dies', files, expectedOutputFiles: 1 },
      { outputKey: (i) => `out/${i}.parquet`, rowGroupRows: 2_000, batchRows: 1_000, workers: 2 },
    ).then(
      () => undefined,
      (err: unknown) => err,
    );

    // Assess
    expect(kill.killed).toBe(1);
    expect(outcome).toBeInstanceOf(RewriteStalledError);
    expect((outcome as Error).message).toMatch(/out\/0\.parquet#part-\d+ stopped \(exited with code/);
    expect(target.keys()).toEqual([]);
  });
});
