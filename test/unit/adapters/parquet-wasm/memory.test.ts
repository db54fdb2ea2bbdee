// Proves the rewrite's memory does not grow with the group's size: peak RSS of a ~2 GB group stays
// within 30% (goal 20%) of a ~100 MB group, each measured in a fresh child process (not timed).

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
  it('keeps peak RSS of a ~2 GB group within 30% of a ~100 MB group (goal 20%, figures printed)', async () => {
    // Prepare: the 2 GB group is synthesised in the child by listing one ~1 MB incompressible
    // file under ~1,900 keys, so neither the disk nor the heap ever holds 2 GB; outputs are
    // streamed to a sink that counts and discards, as a multipart upload would.
    const small = 100 * 1000 * 1000;
    const large = 2000 * 1000 * 1000;

    // Act: each size three times, interleaved. One measurement varies by about ±10% from run to
    // run (when V8 frees transient buffers, and what else the machine is doing), so each
    // workload is represented by the median of its three peaks.
    const smallRuns: ChildReport[] = [];
    const largeRuns: ChildReport[] = [];
    for (let i = 0; i < 3; i++) {
      smallRuns.push(await rewriteInChild(small));
      largeRuns.push(await rewriteInChild(large));
    }

    // Assess
    const [a] = smallRuns as [ChildReport];
    const [b] = largeRuns as [ChildReport];
    expect(b.inputBytes).toBeGreaterThan(19 * a.inputBytes);
    expect(b.rows).toBeGreaterThan(19 * a.rows);
    expect(b.outputs).toBeGreaterThan(a.outputs);
    const median = (runs: ChildReport[]) =>
      [...runs.map((r) => r.peakRssBytes)].sort((x, y) => x - y)[1] as number;
    const smallPeak = median(smallRuns);
    const largePeak = median(largeRuns);
    console.log(
      `peak RSS MB: 100 MB group ${smallRuns.map((r) => (r.peakRssBytes / 1e6).toFixed(0)).join('/')}, 2 GB group ${largeRuns.map((r) => (r.peakRssBytes / 1e6).toFixed(0)).join('/')}`,
    );
    // The goal is 20 %. Both groups write 32 MiB outputs, so both reach the steady state
    // of rolling outputs over (a 100 MB group writing one 128 MiB output never did and sat 15–35 %
    // lower, which failed CI once at 36 %); medians then sit at 8–15 % here. 30 % still proves that
    // 20× the input does not grow memory with it, without failing on noise; figures are printed.
    expect(largePeak).toBeLessThanOrEqual(smallPeak * 1.3);
  }, 900_000); // six child processes rewriting up to 2 GB each on a shared machine: a hang guard, nothing is timed
});
