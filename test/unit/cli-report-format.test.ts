// `lake-compactor report <folder> --format delta`: a Delta table's files on storage are not the table — an OPTIMIZE
// removes its inputs from the log and leaves them on disk until VACUUM — so the report's "now" is the live files the
// log names, read through the format (as plan and compact read it), not the folder's listing. The same folder read as
// plain Parquet is refused, as plan refuses it, naming --format delta.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { run } from '../../functions/cli/index.js';
import { runReport } from '../../functions/cli/report.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { captureIo } from '../support/cli-io.js';

const DAYS = ['2024-03-01', '2024-03-02'];
const BATCHES = 5;
const NOW = Date.UTC(2024, 2, 3);

let dir: string;

/** Parquet files on disk in a partition folder, whatever the log says of them. */
async function onDisk(day: string): Promise<number> {
  return (await readdir(join(dir, `date=${day}`))).filter((n) => n.endsWith('.parquet')).length;
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lc-report-delta-'));
  const store = new LocalObjectStore(dir);
  await createDeltaEventsTable(store, '', { now: NOW });
  let seed = 1;
  for (const day of DAYS) {
    for (let b = 0; b < BATCHES; b += 1) {
      await appendDeltaEvents(store, '', { day, rows: 20 + b, seed: seed++, now: NOW });
    }
  }
  const io = captureIo();
  expect(await run(['compact', dir, '--format', 'delta'], io), io.stderr.join('\n')).toBe(0);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('lake-compactor report --format delta', () => {
  it('counts the live files the log names, not the files a compaction removed but left on disk', async () => {
    // Prepare: every partition holds its five removed inputs and its one output on disk
    for (const day of DAYS) expect(await onDisk(day)).toBe(BATCHES + 1);
    const io = captureIo({ now: NOW });

    // Act
    const result = await runReport(dir, { html: join(dir, 'r.html'), format: 'delta' }, io);

    // Assess: one live file per partition; the runs come from the CLI's journal with their real files
    expect(result.model.summary.filesNow).toBe(DAYS.length);
    expect(result.model.partitions.map((p) => [p.partition, p.now.files]).sort()).toEqual(
      DAYS.map((d) => [`date=${d}`, 1]),
    );
    expect(
      result.model.runs.filter((r) => r.source === 'journal').map((r) => [r.filesBefore, r.filesAfter]),
    ).toEqual(DAYS.map(() => [BATCHES, 1]));
  });

  it('takes --format from the command line, and refuses the Delta folder read as plain Parquet (naming --format delta)', async () => {
    // Prepare
    const html = join(dir, 'cli.html');
    const withFormat = captureIo({ now: NOW });
    const without = captureIo({ now: NOW });

    // Act
    const code = await run(['report', dir, '--html', html, '--format', 'delta'], withFormat);
    const refused = await run(['report', dir, '--html', html], without);

    // Assess
    expect(code, withFormat.stderr.join('\n')).toBe(0);
    expect(withFormat.stdout.join('\n')).toContain(`wrote ${html}: 2 partitions, 2 data files now`);
    expect(refused).not.toBe(0);
    expect(without.stderr.join('\n')).toContain('--format delta');
  });
});
