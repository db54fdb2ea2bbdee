// How many Parquet worker threads a workflow function runs: a Lambda-runtime fact (memory buys vCPUs),
// kept at the edge and shared by the compact and verify handlers, and read once per cold start.
import { availableParallelism } from 'node:os';

/** Lambda's memory per vCPU: a function gets one vCPU per 1,769 MB (six at 10,240 MB). */
export const MB_PER_VCPU = 1769;

/**
 * Memory one engine worker is budgeted (MB): its own wasm heap (~200 MB at the engine's row-group and batch
 * defaults, see docs/engine.md) and V8 isolate, and the goal of ≤ 256 MB RSS per worker.
 */
export const WORKER_MEMORY_MB = 256;

/**
 * Share of the function's memory its workers may take together: the main thread keeps the rest for the inputs in
 * flight, its own decode and the runtime (the memory budget's shares, core/memory-budget.ts, are of the whole).
 */
export const WORKERS_MEMORY_SHARE = 0.5;

/**
 * The most worker threads a function of `memoryMb` may run, whatever is asked: never more than the cores the
 * runtime reports (it reports 2 even when a small function gets a fraction of one) and never more than its
 * memory holds at {@link WORKER_MEMORY_MB} each within {@link WORKERS_MEMORY_SHARE}; at least one.
 */
export function workerCeiling(memoryMb: number, cores = availableParallelism()): number {
  const byMemory = Math.floor((memoryMb * WORKERS_MEMORY_SHARE) / WORKER_MEMORY_MB);
  return Math.max(1, Math.min(cores, byMemory));
}

/**
 * Worker threads for the Parquet engine by default (encoding in compact, output hashing in verify): the vCPUs
 * Lambda gives (1 per 1,769 MB; the 3,008 MB default gets ~1.7, worth two threads, so two from 2,654 MB), within
 * {@link workerCeiling}.
 */
export function engineWorkers(memoryMb: number, cores = availableParallelism()): number {
  return Math.max(1, Math.min(workerCeiling(memoryMb, cores), Math.round(memoryMb / MB_PER_VCPU)));
}

/**
 * The memory (MB) this function runs with: what Lambda says of the running function
 * (`AWS_LAMBDA_FUNCTION_MEMORY_SIZE`), else the deployment's `COMPACT_MEMORY_MB` (a test importing a handler, a
 * local runtime without Lambda's variables). The variables are parsed once, with the runtime's.
 */
export function functionMemoryMb(env: {
  readonly AWS_LAMBDA_FUNCTION_MEMORY_SIZE?: number | undefined;
  readonly COMPACT_MEMORY_MB: number;
}): number {
  return env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE ?? env.COMPACT_MEMORY_MB;
}
