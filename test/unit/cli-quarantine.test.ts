// Quarantined files are visible and releasable: `quarantine` lists and clears them (one-line errors, exit
// codes 0/1/2), `status` counts and lists a partition's, and the HTML report shows them in a table of their own.
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { MemoryQuarantine } from '../../functions/adapters/memory-quarantine.js';
import { StoreQuarantine } from '../../functions/adapters/store-quarantine.js';
import { run } from '../../functions/cli/index.js';
import { runStatus } from '../../functions/cli/status.js';
import type { PartitionSnapshot } from '../../functions/core/profiler/model.js';
import type { StatsStore } from '../../functions/ports/stats-store.js';
import { captureIo } from '../support/cli-io.js';
import { quarantined } from '../support/quarantine-contract.js';

const NOW = Date.UTC(2024, 1, 1, 12);
let root: string;
let store: LocalObjectStore;
const A = 'date=2024-01-01/part-1.parquet';
const B = 'date=2024-01-01/part-2.parquet';
const C = 'date=2024-01-02/part-1.parquet';

function capture() {
  return captureIo({ now: NOW });
}

/** A folder table `events` with three quarantined files in two partitions, as `compact` leaves them. */
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-quarantine-'));
  const table = join(root, 'events');
  for (const key of [A, B, C]) {
    await mkdir(join(table, key, '..'), { recursive: true });
    await writeFile(join(table, key), Buffer.alloc(300, 1));
  }
  store = new LocalObjectStore(table);
  const q = new StoreQuarantine(store);
  for (const key of [A, B, C]) {
    const etag = (await store.head(key))?.etag as string;
    await q.record(
      quarantined(key.slice(0, key.indexOf('/')), key, { etag, runId: 'cli-run-1', since: NOW }),
    );
  }
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('lake-compactor quarantine', () => {
  it('lists every quarantined file of the table with its partition, since, run, error and reason; --partition narrows it', async () => {
    // Prepare
    const all = capture();
    const one = capture();
    const json = capture();

    // Act
    const codes = [
      await run(['quarantine', join(root, 'events')], all),
      await run(['quarantine', join(root, 'events'), '--partition', 'date=2024-01-02'], one),
      await run(['quarantine', join(root, 'events'), '--json'], json),
    ];

    // Assess
    expect(codes).toEqual([0, 0, 0]);
    const text = all.stdout.join('\n');
    for (const key of [A, B, C]) expect(text).toContain(key);
    expect(text).toMatch(
      /date=2024-01-01 +date=2024-01-01\/part-1\.parquet +2024-02-01T12:00:00\.000Z +cli-run-1 +CorruptInputError +the decoder failed/,
    );
    expect(text).toContain('3 files quarantined in table events');
    expect(text).toContain('--clear <key>');
    expect(one.stdout.join('\n')).not.toContain(A);
    expect(one.stdout.join('\n')).toContain('1 file quarantined in table events partition "date=2024-01-02"');
    const parsed = JSON.parse(json.stdout.join('\n')) as { quarantined: { key: string }[]; source: string };
    expect(parsed.quarantined.map((r) => r.key)).toEqual([A, B, C]);
    expect(parsed.source).toBe(`${join(root, 'events')}/_lake-compactor/quarantine/`);
  });

  it('clears one key, then a partition’s, then says there is nothing to clear; the data files are never touched', async () => {
    // Prepare
    const outs = [capture(), capture(), capture()];
    const q = new StoreQuarantine(store);

    // Act
    const codes = [
      await run(['quarantine', join(root, 'events'), '--clear', B], outs[0]),
      await run(['quarantine', join(root, 'events'), '--partition', 'date=2024-01-01', '--clear'], outs[1]),
      await run(['quarantine', join(root, 'events'), '--partition', 'date=2024-01-01', '--clear'], outs[2]),
    ];

    // Assess
    expect(codes).toEqual([0, 0, 0]);
    expect(outs[0]?.stdout.join('\n')).toContain('cleared 1 file from the quarantine of table events');
    expect(outs[0]?.stdout.join('\n')).toContain('2 files still quarantined');
    expect(outs[1]?.stdout.join('\n')).toMatch(/cleared 1 file .*\n {2}date=2024-01-01\/part-1\.parquet/);
    expect(outs[2]?.stdout.join('\n')).toContain('nothing to clear');
    expect((await q.listTable('events')).map((r) => r.key)).toEqual([C]);
    for (const key of [A, B, C]) expect(await store.head(key)).toBeDefined();
  });

  it('exits 1 naming what is quarantined for a key that is not, and 2 on a usage error', async () => {
    // Prepare
    const unknown = capture();
    const usage = capture();
    const missing = capture();

    // Act
    const codes = [
      await run(['quarantine', join(root, 'events'), '--clear', 'date=2024-01-01/none.parquet'], unknown),
      await run(['quarantine'], usage),
      await run(['quarantine', join(root, 'no-such-table')], missing),
    ];

    // Assess
    expect(codes).toEqual([1, 2, 1]);
    expect(unknown.stderr).toEqual([
      expect.stringMatching(
        /^error: date=2024-01-01\/none\.parquet is not quarantined in table events .*; quarantined: date=2024-01-01\/part-1\.parquet, date=2024-01-01\/part-2\.parquet, date=2024-01-02\/part-1\.parquet\. Pass a key as the list shows it$/,
      ),
    ]);
    expect(usage.stderr.join('\n')).toMatch(/missing required argument 'uri'/);
    expect(missing.stderr.join('\n')).toMatch(/does not exist/);
    expect((await new StoreQuarantine(store).listTable('events')).length).toBe(3);
  });
});

describe('quarantined files in status and in the report', () => {
  const snapshot = (partition: string): PartitionSnapshot => ({
    table: 'events',
    partition,
    fileCount: 6,
    totalBytes: 6000,
    smallCount: 6,
    smallBytes: 6000,
    histogram: [],
    state: 'idle',
    generation: 1,
    version: 1,
  });
  const stats = {
    listPartitions: async () => [
      snapshot('date=2024-01-01'),
      snapshot('date=2024-01-02'),
      snapshot('date=2024-01-03'),
    ],
  } as unknown as StatsStore;

  it('status counts each partition’s quarantined files, lists them with --quarantined, and carries them in --json', async () => {
    // Prepare
    const q = new MemoryQuarantine();
    for (const key of [A, B, C])
      await q.record(quarantined(key.slice(0, key.indexOf('/')), key, { since: NOW }));
    const text = capture();
    const json = capture();

    // Act
    await runStatus({ table: 'events', quarantined: true }, text, stats, q);
    const rows = await runStatus({ table: 'events', json: true }, json, stats, q);

    // Assess
    const out = text.stdout.join('\n');
    expect(out).toMatch(/quarantined/);
    expect(out).toMatch(/date=2024-01-01 +6 +6 +5\.9 KiB +2 /);
    expect(out).toMatch(/date=2024-01-03 +6 +6 +5\.9 KiB +LOW/);
    expect(out).toContain('3 files quarantined in 2 partitions');
    expect(out).toContain(
      `events date=2024-01-02 ${C} since 2024-02-01T12:00:00.000Z by run run-1: CorruptInputError`,
    );
    expect(rows.map((r) => [r.partition, r.quarantined.map((f) => f.key)])).toEqual([
      ['date=2024-01-01', [A, B]],
      ['date=2024-01-02', [C]],
      ['date=2024-01-03', []],
    ]);
    expect(JSON.parse(json.stdout.join('\n'))[1].quarantined[0]).toMatchObject({ key: C, runId: 'run-1' });
  });

  it('the report lists the quarantined files, shows a card while any is held, and says which were replaced since', async () => {
    // Prepare: part-2 was replaced after it was quarantined (its record names the old ETag)
    await writeFile(join(root, 'events', B), Buffer.alloc(400, 2));
    const io = capture();
    const out = join(root, 'report.html');

    // Act
    const code = await run(['report', join(root, 'events'), '--html', out], io);

    // Assess
    expect(code).toBe(0);
    const html = await readFile(out, 'utf8');
    expect(html).toContain('id="card-quarantined" data-value="2"');
    expect(html).toContain(`<tr data-partition="date=2024-01-01" data-key="${A}" data-held="true">`);
    expect(html).toContain(`<tr data-partition="date=2024-01-01" data-key="${B}" data-held="false">`);
    expect(html).toMatch(/replaced or removed since: released on the next run/);
    expect(html).toContain('the decoder failed (unreachable)');
  });
});
