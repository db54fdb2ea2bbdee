// `npm run demo` in small: the demo on the embedded local cloud compacts every partition of a 3-day lake,
// proves the rows unchanged, exits 0, removes its temp folders; failed checks and bad usage exit non-zero.
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { type DemoIo, main } from '../../functions/tools/demo.js';
import { formatDemoReport } from '../../functions/tools/demo-report.js';
import type { DemoResult } from '../../functions/tools/demo-run.js';

/** Collects what the demo writes. */
function capture(): DemoIo & { stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  return {
    out: (text) => {
      out += text;
    },
    err: (text) => {
      err += text;
    },
    tty: false,
    stdout: () => out,
    stderr: () => err,
  };
}

async function demoFolders(): Promise<string[]> {
  return (await readdir(tmpdir())).filter((name) => name.startsWith('lake-compactor-demo-'));
}

describe('npm run demo', () => {
  it('compacts every partition of a 3-day × 6-batch lake with identical rows, prints JSON and exits 0', async () => {
    // Prepare
    const io = capture();
    const foldersBefore = await demoFolders();

    // Act
    const code = await main(['--days', '3', '--batches', '6', '--json'], io);

    // Assess
    expect(code, io.stderr()).toBe(0);
    const result = JSON.parse(io.stdout()) as DemoResult;
    expect(result.ok).toBe(true);
    expect(result.checks.map((c) => [c.name, c.ok])).toEqual([
      ['every partition compacted', true],
      ['every run verified', true],
      ['row count and revenue unchanged', true],
      ['same rows (EXCEPT ALL both ways)', true],
      ['no staging left', true],
      ['no dead letters', true],
    ]);
    expect(result.before).toMatchObject({ partitions: 3, files: 18 });
    expect(result.after).toMatchObject({ partitions: 3, files: 3 });
    expect(result.runs).toHaveLength(3);
    for (const run of result.runs) {
      expect(run).toMatchObject({
        status: 'SUCCEEDED',
        outcome: 'compacted',
        filesBefore: 6,
        groupsVerified: 1,
      });
      expect(run.rowsVerified).toBe(run.rows);
    }
    expect(result.runs.reduce((n, r) => n + r.rows, 0)).toBe(result.totals.before.rows);
    expect(result.totals.after).toEqual(result.totals.before);
    expect(result.multiset).toEqual({ onlyBefore: 0, onlyAfter: 0 });
    expect(result.historyItems).toBe(3);
    expect(result.benchmark.map((q) => q.name)).toHaveLength(2);
    expect(result.dataDir).toBeUndefined();
    // Progress went to stderr, so stdout is one JSON document.
    expect(io.stderr()).toContain('profiler started');
    expect(await demoFolders()).toEqual(foldersBefore);
  }, 120_000);

  it('exits 2 without starting anything when an option is not a positive integer', async () => {
    // Prepare
    const io = capture();

    // Act
    const code = await main(['--days', '0'], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr()).toContain('expected a positive integer');
    expect(io.stdout()).toBe('');
  });

  it('reports FAILED and marks the failed check when one check did not hold', () => {
    // Prepare
    const layout = {
      partitions: 1,
      files: 2,
      bytes: 100,
      avgFileBytes: 50,
      smallFileRatio: 1,
      compressionRatio: 1.5,
    };
    const result: DemoResult = {
      ok: false,
      checks: [
        { name: 'every partition compacted', ok: true, detail: '1/1 partitions, 1 runs' },
        { name: 'same rows (EXCEPT ALL both ways)', ok: false, detail: '1 rows only before, 0 only after' },
      ],
      options: { days: 1, batches: 2, policy: {} },
      before: layout,
      after: layout,
      totals: { before: { rows: 2, revenueUsd: '1.00' }, after: { rows: 1, revenueUsd: '1.00' } },
      multiset: { onlyBefore: 1, onlyAfter: 0 },
      runs: [],
      historyItems: 0,
      benchmark: [],
      visibilityWindowMs: { max: 0, total: 0 },
      estimatedCostUsd: 0,
      stagingLeft: [],
      deadLetters: 0,
      timingsMs: { startup: 0, stream: 0, settle: 0, checks: 0, total: 0 },
    };

    // Act
    const report = formatDemoReport(result);

    // Assess
    expect(report).toContain('✘ same rows (EXCEPT ALL both ways): 1 rows only before, 0 only after');
    expect(report).toContain('✔ every partition compacted');
    expect(report).toContain('FAILED');
    expect(report).not.toContain('All checks held.');
  });
});
