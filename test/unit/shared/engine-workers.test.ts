// How many Parquet worker threads the compact and verify Lambdas use: Lambda's vCPUs follow memory (one per 1,769 MB), and
// the threads never exceed the cores the runtime reports nor drop below one.
import { describe, expect, it } from 'vitest';
import { engineWorkers, functionMemoryMb, workerCeiling } from '../../../functions/shared/engine-workers.js';

describe('engineWorkers', () => {
  it('gives the default 3,008 MB function two threads and a small one a single thread', () => {
    // Prepare / Act / Assess
    expect(engineWorkers(3008, 2)).toBe(2);
    expect(engineWorkers(1024, 2)).toBe(1);
    expect(engineWorkers(128, 2)).toBe(1);
  });

  it('follows memory up to the cores the runtime reports, never beyond', () => {
    // Prepare / Act / Assess
    expect(engineWorkers(10_240, 6)).toBe(6);
    expect(engineWorkers(10_240, 4)).toBe(4);
    expect(engineWorkers(7_076, 6)).toBe(4);
  });

  it('never gives workers more memory than half the function’s, at 256 MB each', () => {
    // Prepare / Act / Assess: 1,024 MB holds two, 512 MB one, whatever the cores.
    expect(workerCeiling(1024, 8)).toBe(2);
    expect(workerCeiling(512, 8)).toBe(1);
    expect(workerCeiling(128, 8)).toBe(1);
    expect(workerCeiling(10_240, 6)).toBe(6);
    expect(engineWorkers(2654, 8)).toBe(2);
    expect(engineWorkers(2600, 8)).toBe(1);
  });

  it('follows the running function’s own memory, else the deployment’s compact memory', () => {
    // Prepare / Act / Assess
    expect(functionMemoryMb({ AWS_LAMBDA_FUNCTION_MEMORY_SIZE: 5308, COMPACT_MEMORY_MB: 3008 })).toBe(5308);
    expect(functionMemoryMb({ COMPACT_MEMORY_MB: 3008 })).toBe(3008);
  });
});
