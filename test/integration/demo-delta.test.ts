// `npm run demo -- --format delta` in small: a writer commits micro-batches into a Delta table on the embedded local
// cloud while the real state machine compacts it; the latest version holds exactly the appended rows, the log has
// our OPTIMIZE versions, the demo exits 0 and removes its temp folders; a format it does not know is a usage error.
import { readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { describe, expect, it } from 'vitest';
import { type DemoIo, main } from '../../functions/tools/demo.js';
import type { DeltaDemoResult } from '../../functions/tools/demo-delta.js';
import { expectOneCompactionPerPartition } from '../support/demo-runs.js';

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
  return (await readdir(tmpdir())).filter((name) => name.startsWith('lake-compactor-delta-demo-'));
}

describe('npm run demo -- --format delta', () => {
  it('compacts every day of a 3-day × 6-commit Delta table into OPTIMIZE versions beside the writer, rows identical', async () => {
    // Prepare
    const io = capture();
    const foldersBefore = await demoFolders();

    // Act
    const code = await main(['--format', 'delta', '--days', '3', '--batches', '6', '--json'], io);

    // Assess
    expect(code, io.stderr()).toBe(0);
    const result = JSON.parse(io.stdout()) as DeltaDemoResult;
    expect(result.format).toBe('delta');
    expect(result.checks.map((c) => [c.name, c.ok])).toEqual([
      ['every partition compacted', true],
      ['every run verified', true],
      ['one OPTIMIZE version per group committed', true],
      ['every micro-batch committed', true],
      ['row count and revenue unchanged', true],
      ['same rows (EXCEPT ALL both ways)', true],
      ['no staging left', true],
      ['no dead letters', true],
    ]);
    expect(result.ok).toBe(true);
    expect(result.log.appends).toBe(18);
    expect(result.log.optimize).toBeGreaterThanOrEqual(1);
    // Version 0 creates the table; every other version is an append or one of our OPTIMIZE commits.
    expect(result.log.version).toBe(result.log.appends + result.log.optimize);
    expect(result.before).toMatchObject({ partitions: 3, files: 18 });
    expect(result.after).toMatchObject({ partitions: 3, files: 3 });
    expect(result.totals.after).toEqual(result.totals.before);
    expect(result.multiset).toEqual({ onlyBefore: 0, onlyAfter: 0 });
    // One run per day: a Delta log's versions are its commits, so the sweep waits for the profiler to read each run's
    // OPTIMIZE version and never starts a run on counters that predate it.
    const partitions = [...new Set(result.runs.map((r) => r.partition))];
    expect(partitions).toHaveLength(3);
    expectOneCompactionPerPartition(result.runs, partitions, 6);
    expect(result.runs, JSON.stringify(result.runs)).toHaveLength(3);
    expect(result.runs.reduce((n, r) => n + r.rows, 0)).toBe(result.totals.before.rows);
    expect(io.stderr()).toContain('profiler started');
    expect(await demoFolders()).toEqual(foldersBefore);
  }, 180_000);

  it('exits 2 without starting anything for a format the demo does not run', async () => {
    // Prepare
    const io = capture();

    // Act
    const code = await main(['--format', 'orc'], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr()).toContain('expected one of parquet, delta');
    expect(io.stdout()).toBe('');
  });
});
