// Engine worker threads kept warm across calls within a process. Starting one costs a wasm instance and,
// under tsx (tests, the CLI, benchmarks), re-transpiling the engine's modules inside it: ~1.5–2 s of CPU.
// A warm Lambda compacting many small groups, or a test running dozens of verifies, would pay that on
// every verify and every parallel rewrite; here a worker that finished its tasks cleanly waits for the next.

import { Worker } from 'node:worker_threads';

/** Idle workers, each with the function that removes the listeners it has while idle. */
const idle = new Map<Worker, () => void>();
/** Idle workers kept at most: the most any one call has asked for so far (never more than were busy at once). */
let cap = 0;
let spawned = 0;

/** Starts an engine worker (worker.ts): encoding for the parallel rewrite, output hashing for verify. */
function spawn(): Worker {
  spawned++;
  // Bundles ship worker.js next to this file. Under tsx (tests, benchmarks, the CLI) the worker
  // is TypeScript: a tiny bootstrap registers tsx inside the worker before importing it.
  if (!import.meta.url.endsWith('.ts')) return new Worker(new URL('./worker.js', import.meta.url));
  // The test run's global setup bundles worker.ts once (test/support/engine-worker-bundle.ts) and names the
  // bundle here: each of the suite's hundreds of worker starts then skips re-transpiling the engine under
  // tsx (~1 s of CPU each). Read only when running from TypeScript sources: shipped bundles return above.
  const prebuilt = process.env.LAKE_COMPACTOR_TEST_ENGINE_WORKER;
  if (prebuilt !== undefined && prebuilt !== '') return new Worker(prebuilt);
  const url = new URL('./worker.ts', import.meta.url).href;
  return new Worker(
    `import('tsx/esm/api').then(({ register }) => { register(); return import(${JSON.stringify(url)}); });`,
    { eval: true },
  );
}

/**
 * An engine worker for one caller: an idle one when there is one, else a new one. `upTo` is how many
 * workers the caller may hold at once; it raises how many idle ones are kept, so a caller that runs
 * `upTo` workers again finds them warm.
 */
export function takeWorker(upTo: number): Worker {
  cap = Math.max(cap, upTo);
  for (const [worker, detach] of idle) {
    idle.delete(worker);
    detach();
    // Node sets threadId to -1 once a worker has exited: one that died unseen is never handed out.
    if (worker.threadId === -1) continue;
    worker.ref();
    return worker;
  }
  return spawn();
}

/**
 * Gives back a worker taken with {@link takeWorker}. Only a `healthy` one — every task it was given
 * finished cleanly and none is in progress — is kept, unref'd so an idle worker never keeps the process
 * (the CLI, a Lambda, a test runner) alive. Any other (it failed, trapped, stalled, or is mid-task, so it
 * may hold a task's state or be dead), and any beyond the cap, is terminated: a worker is never reused
 * unless it is known to be clean.
 */
export async function releaseWorker(worker: Worker, healthy: boolean): Promise<void> {
  if (!healthy || worker.threadId === -1 || idle.size >= cap) {
    await worker.terminate();
    return;
  }
  // A worker that dies while idle (nothing should make it) is dropped, never handed out.
  const drop = () => {
    if (!idle.has(worker)) return;
    idle.delete(worker);
    detach();
    void worker.terminate();
  };
  const detach = () => {
    worker.off('exit', drop);
    worker.off('error', drop);
  };
  worker.on('exit', drop);
  worker.on('error', drop);
  worker.unref();
  idle.set(worker, detach);
}

/** Workers started so far in this process, and how many are idle now: what tests observe reuse by. */
export function engineWorkerStats(): { readonly spawned: number; readonly idle: number } {
  return { spawned, idle: idle.size };
}

/** Terminates every idle worker (tests start from none; a caller may free their wasm heaps). */
export async function closeIdleWorkers(): Promise<void> {
  const workers = [...idle.keys()];
  for (const [, detach] of idle) detach();
  idle.clear();
  await Promise.all(workers.map((w) => w.terminate()));
}
