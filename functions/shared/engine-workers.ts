// How many Parquet worker threads a workflow function runs: a Lambda-runtime fact (memory buys vCPUs),
// kept at the edge and shared by the compact and verify handlers, which get the same memory.
import { availableParallelism } from 'node:os';

/**
 * Worker threads for the Parquet engine (encoding in compact, output hashing in verify): the vCPUs
 * Lambda gives (1 per 1,769 MB; the 3,008 MB default gets ~1.7, worth two threads), never more
 * than the cores the runtime sees — it reports 2 even when a small function gets a fraction of
 * one, and each worker holds its own wasm heap (~200 MB).
 */
export function engineWorkers(memoryMb: number, cores = availableParallelism()): number {
  return Math.max(1, Math.min(cores, Math.round(memoryMb / 1769)));
}
