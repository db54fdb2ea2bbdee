// Proves the rewrite's memory does not grow with the group's size: peak RSS of a ~2 GB group stays
// within 20% of a ~100 MB group, each measured in a fresh child process (not timed).

import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const CHILD = fileURLToPath(new URL('./memory-child.ts', import.meta.url));

interface ChildReport {
  readonly inputBytes: number;
  readonly rows: number;
  readonly outputs: number;
  readonly peakRssBytes: number;
}

async function rewriteInChild(totalBytes: number): Promise<ChildReport> {
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', CHILD, String(totalBytes)],
    {
      maxBuffer: 1024 * 1024,
    },
  );
  return JSON.parse(stdout.trim().split('\n').at(-1) as string) as ChildReport;
}

describe('rewrite memory', () => {
  it('keeps peak RSS of a ~2 GB group within 20% of a ~100 MB group', async () => {
    // Prepare: the 2 GB group is synthesised in the child by listing one ~1 MB incompressible
    // file under ~1,900 keys, so neither the disk nor the heap ever holds 2 GB; outputs are
    // streamed to a sink that counts and discards, as a multipart upload would.
    const small = 100 * 1000 * 1000;
    const large = 2000 * 1000 * 1000;

    // Act: each size twice, interleaved. One measurement varies by about ±10% from run to run
    // (depending on when V8 frees transient buffers), so each workload's peak is the higher of two.
    const runs: ChildReport[] = [];
    for (const size of [small, large, small, large]) runs.push(await rewriteInChild(size));
    const [a1, b1, a2, b2] = runs as [ChildReport, ChildReport, ChildReport, ChildReport];

    // Assess
    expect(b1.inputBytes).toBeGreaterThan(19 * a1.inputBytes);
    expect(b1.rows).toBeGreaterThan(19 * a1.rows);
    expect(b1.outputs).toBeGreaterThan(a1.outputs);
    const smallPeak = Math.max(a1.peakRssBytes, a2.peakRssBytes);
    const largePeak = Math.max(b1.peakRssBytes, b2.peakRssBytes);
    expect(largePeak).toBeLessThanOrEqual(smallPeak * 1.2);
  }, 300_000);
});
