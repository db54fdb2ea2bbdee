// Proves engine workers are reused across calls in one process: a second verify (or parallel rewrite)
// takes the idle worker the first one left instead of starting another, a worker that trapped on a
// corrupt output is never handed out again (the next verify starts a fresh one and is correct), and a
// process whose only workers are idle exits by itself.

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { beforeEach, describe, expect, it } from 'vitest';
import { MemoryObjectStore } from '../../../../functions/adapters/memory-object-store.js';
import { rewriteGroup } from '../../../../functions/adapters/parquet-wasm/rewrite.js';
import { verifyOutputs } from '../../../../functions/adapters/parquet-wasm/verify.js';
import {
  closeIdleWorkers,
  engineWorkerStats,
} from '../../../../functions/adapters/parquet-wasm/worker-pool.js';
import { CorruptInputError } from '../../../../functions/core/errors.js';
import { writeSampleLake } from '../../../../functions/tools/sample-lake.js';
import { rewritten } from '../../../support/verify-fixtures.js';

const CHILD = fileURLToPath(new URL('./warm-workers-child.ts', import.meta.url));

describe('warm engine workers', () => {
  beforeEach(closeIdleWorkers);

  it('reuses the worker of one verify for the next, and keeps it idle after', async () => {
    // Prepare
    const { target, result } = await rewritten(2);
    const first = await verifyOutputs(target, result.outputs, result.fingerprint);
    const before = engineWorkerStats();

    // Act
    const second = await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess
    expect(before.idle).toBe(1);
    expect(engineWorkerStats().spawned).toBe(before.spawned);
    expect(engineWorkerStats().idle).toBe(1);
    expect(second.fingerprint).toEqual(first.fingerprint);
    expect(second.fingerprint.hash).toBe(result.fingerprint.hash);
  });

  it('never reuses a worker that trapped on a corrupt output: the next verify starts one and is correct', async () => {
    // Prepare: a warm worker, then a copy of the outputs with the first one's first column chunk garbled.
    const { target, result } = await rewritten(2);
    await verifyOutputs(target, result.outputs, result.fingerprint);
    const broken = new MemoryObjectStore();
    for (const o of result.outputs) await broken.put(o.key, await target.get(o.key));
    const bad = result.outputs[0] as { key: string; size: number };
    const bytes = await target.get(bad.key);
    bytes.fill(0xff, 8, Math.min(bytes.length - 4096, 8 + 2048));
    await broken.put(bad.key, bytes);
    const warm = engineWorkerStats();

    // Act
    const err = await verifyOutputs(broken, result.outputs, result.fingerprint).then(
      () => undefined,
      (e: unknown) => e,
    );
    const afterTrap = engineWorkerStats();
    const again = await verifyOutputs(target, result.outputs, result.fingerprint);

    // Assess: the corrupt output ran on the warm worker, which died and was not kept; the next verify
    // started a new one and recomputed the right fingerprint.
    expect(err).toBeInstanceOf(CorruptInputError);
    expect((err as CorruptInputError).key).toBe(bad.key);
    expect(afterTrap).toEqual({ spawned: warm.spawned, idle: 0 });
    expect(engineWorkerStats().spawned).toBe(warm.spawned + 1);
    expect(again.fingerprint.hash).toBe(result.fingerprint.hash);
  });

  it('reuses the workers of a parallel rewrite for the next one', async () => {
    // Prepare: a group that gives several outputs, rewritten on two workers once.
    const source = new MemoryObjectStore();
    const files: { key: string; size: number; etag: string }[] = [];
    await writeSampleLake(
      async (key, bytes) => {
        const { etag } = await source.put(key, bytes);
        files.push({ key, size: bytes.length, etag });
      },
      { files: 4, rows: 500, partitions: 'single', seed: 3 },
    );
    const rewrite = () =>
      rewriteGroup(
        { source, target: new MemoryObjectStore() },
        { groupId: 'w', files, expectedOutputFiles: 3 },
        { outputKey: (i) => `out/${i}.parquet`, workers: 2 },
      );
    const first = await rewrite();
    const before = engineWorkerStats();

    // Act
    const second = await rewrite();

    // Assess
    expect(first.outputs).toHaveLength(3);
    expect(before.idle).toBe(2);
    expect(engineWorkerStats()).toEqual(before);
    expect(second.fingerprint).toEqual(first.fingerprint);
  });

  it('lets a process whose only engine worker is idle exit by itself', async () => {
    // Act: the child verifies once and returns from its module; nothing terminates its worker.
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', CHILD], {
      timeout: 120_000,
    });

    // Assess: it exited (execFile resolved, code 0) while its worker was idle.
    expect(JSON.parse(stdout.trim())).toEqual({ rows: 400, idle: 1 });
  });
});
