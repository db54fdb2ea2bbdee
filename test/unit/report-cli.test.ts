// `lake-compactor report` in-process on a folder with a stored plan: the page is written with before/now
// figures, history is read for the listed partitions under the table's name, and bad usage exits 2 or 1.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { HistoryRow } from '../../functions/cli/history.js';
import { run } from '../../functions/cli/index.js';
import { runReport } from '../../functions/cli/report.js';
import { planPartition } from '../../functions/core/planning.js';
import { captureIo } from '../support/cli-io.js';

const NOW = Date.UTC(2024, 1, 1, 12);
let root: string;

function capture() {
  return captureIo({ now: NOW });
}

/**
 * A folder table after run `run1` compacted `date=2024-01-01`: the plan (six 1 KiB inputs, stored where
 * the workflow stores it) and one output; `date=2024-01-02` was never compacted (three files).
 */
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-report-cli-'));
  const inputs = Array.from({ length: 6 }, (_, i) => ({
    key: `date=2024-01-01/in-${i}.parquet`,
    size: 1024,
    etag: `e${i}`,
    rows: 10,
    schemaFingerprint: 'fp',
  }));
  const plan = planPartition(
    { table: 'events', partition: 'date=2024-01-01', files: inputs, snapshot: { listedAt: NOW - 3_600_000 } },
    { targetFileSizeBytes: 1024 * 1024 },
  );
  await mkdir(join(root, '_lake-compactor', 'plans'), { recursive: true });
  await writeFile(join(root, '_lake-compactor', 'plans', 'run1.json'), JSON.stringify(plan));
  await writeFile(join(root, '_lake-compactor', 'plans', 'run1.items.json'), '[]');
  await writeFile(join(root, '_lake-compactor', 'plans', 'broken.json'), '{ not json');
  await mkdir(join(root, 'date=2024-01-01'));
  await writeFile(join(root, 'date=2024-01-01', 'part-run1-0001-00000.zstd.parquet'), Buffer.alloc(5000, 1));
  await mkdir(join(root, 'date=2024-01-02'));
  for (const i of [0, 1, 2])
    await writeFile(join(root, 'date=2024-01-02', `f${i}.parquet`), Buffer.alloc(300, 1));
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('lake-compactor report', () => {
  it('writes an HTML page with the before/now figures of the stored plan and the listing, small meaning what it meant to the plan', async () => {
    // Prepare
    const io = capture();
    const out = join(root, 'report.html');

    // Act
    const code = await run(['report', root, '--html', out], io);

    // Assess
    expect(code).toBe(0);
    const html = await readFile(out, 'utf8');
    expect(html).toContain('data-partition="date=2024-01-01" data-files-now="1" data-files-before="6"');
    expect(html).toContain('data-partition="date=2024-01-02" data-files-now="3" data-files-before=""');
    expect(html).toContain('data-run-id="run1"');
    expect(html).toContain('small file = below 768.0 KiB');
    const text = io.stdout.join('\n');
    expect(text).toContain(
      `wrote ${out}: 2 partitions, 4 data files now (6 before → 1 now in 1 compacted partition), 1 run`,
    );
    expect(text).toMatch(/note: 1 stored plan was not valid plan JSON/);
    expect(text).toMatch(/note: No state table given/);
  });

  it('reads history for the listed partitions under --table and shows its bytes and cost; --target-mb wins over the plan', async () => {
    // Prepare
    const io = capture();
    const calls: unknown[] = [];
    const history: HistoryRow[] = [
      {
        runId: 'run1',
        table: 'events',
        partition: 'date=2024-01-01',
        outcome: 'compacted',
        status: 'SUCCEEDED',
        startedAt: NOW - 3_600_000,
        finishedAt: NOW - 3_500_000,
        groupsDone: 1,
        filesBefore: 6,
        filesAfter: 1,
        bytesRewritten: 6144,
        estimatedCost: { usd: 0.25 },
      },
    ];

    // Act
    const result = await runReport(
      root,
      { html: join(root, 'r.html'), table: 'events', limit: 50, targetMb: 2 },
      io,
      async (table, partitions, limit) => {
        calls.push([table, partitions, limit]);
        return history;
      },
    );

    // Assess
    expect(calls).toEqual([['events', ['date=2024-01-01', 'date=2024-01-02'], 50]]);
    expect(result.model.summary).toMatchObject({ bytesRewritten: 6144, estimatedCostUsd: 0.25, runs: 1 });
    const html = await readFile(join(root, 'r.html'), 'utf8');
    expect(html).toMatch(/id="card-cost" data-value="0.250000">.*?\$0.25/);
    expect(html).toContain('small file = below 1.5 MiB');
    expect(io.stdout.join('\n')).not.toMatch(/No state table given/);
  });

  it('exits 2 when --html is missing and 1 with a fix when the page cannot be written', async () => {
    // Prepare
    const missing = capture();
    const unwritable = capture();

    // Act
    const usage = await run(['report', root], missing);
    const failed = await run(
      ['report', root, '--html', join(root, 'no', 'such', 'dir', 'r.html')],
      unwritable,
    );

    // Assess
    expect(usage).toBe(2);
    expect(missing.stderr.join('\n')).toMatch(/--html <file>/);
    expect(failed).toBe(1);
    expect(unwritable.stderr.join('\n')).toMatch(
      /Cannot write the report to .*pass --html with a path in an existing, writable folder/,
    );
  });
});
