// What Ctrl-C prints for `settle` and `tier` (vacuum's is proved end to end in test/fault/cli-interrupt-maintenance):
// the counts come from what the command did through its store and journal, never from what it planned, and the
// report names the command that finishes the work.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { MaintenanceProgress } from '../../functions/cli/maintenance-shared.js';
import { type SettledPartition, SettleProgress } from '../../functions/cli/settle.js';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lc-interrupt-report-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('Ctrl-C reports', () => {
  it('tier: counts the in-place copies made through the store, and the rest as left', async () => {
    // Prepare
    for (const name of ['a', 'b', 'c']) await writeFile(join(dir, `${name}.parquet`), name);
    const progress = new MaintenanceProgress('s3://lake/events', false, {
      command: 'tier',
      past: 'moved',
      safe: 'Each move is one in-place copy.',
    });
    progress.listed(3);
    const store = progress.counting(new LocalObjectStore(dir));

    // Act
    await store.copy('a.parquet', 'a.parquet');
    await store.copy('b.parquet', 'b.parquet');
    await store.deleteMany([{ key: 'c.parquet' }]);
    const report = progress.interruptedReport();

    // Assess: a delete is not a move; the proxy is still the store's class
    expect(store).toBeInstanceOf(LocalObjectStore);
    expect(report).toEqual([
      '\ninterrupted (Ctrl-C): 2 of 3 objects moved, 1 left as they were. Each move is one in-place copy.',
      'next: run the same lake-compactor tier s3://lake/events again: it lists again and does only what is still due.',
    ]);
  });

  it('settle: names the partitions settled, the one in flight and those not started', () => {
    // Prepare
    const progress = new SettleProgress('/lake/events');
    progress.listed(['date=1', 'date=2', 'date=3']);
    progress.started('date=1');
    progress.settled({
      partition: 'date=1',
      report: {
        settled: [
          { runId: 'r', groupId: 'g1', from: 'publishing', to: 'done' },
          { runId: 'r', groupId: 'g2', from: 'staged', to: 'aborted' },
        ],
        unsettled: [],
      } as unknown as SettledPartition['report'], // only the counts and ids are read
    });
    progress.started('date=2');

    // Act
    const report = progress.interruptedReport();

    // Assess
    expect(report[1]).toBe('  settled: 2 groups in 1 partition (date=1)');
    expect(report[2]).toMatch(/^ {2}in flight: date=2: .*no row is lost or kept twice$/);
    expect(report[3]).toBe('  not started: 1 partition (date=3)');
    expect(report[4]).toBe(
      'next: run lake-compactor settle /lake/events again (the same options): it settles what is still open.',
    );
  });

  it('settle of a deployed partition: names the partition in flight and the lease the next settle waits for', () => {
    // Prepare: as settleDeployedPartition tells it, up to the lease taken
    const progress = new SettleProgress('s3://lake/events');
    progress.listed(['date=2024-01-15']);
    progress.started('date=2024-01-15');
    progress.leased({ runId: 'cli-settle-20240115T100000Z-1a2b3c4d', stateTable: 'state' });

    // Act
    const report = progress.interruptedReport();

    // Assess
    expect(report[1]).toBe('  settled: nothing');
    expect(report[2]).toMatch(/^ {2}in flight: date=2024-01-15: /);
    expect(report[3]).toBe(
      '  the partition stays leased to cli-settle-20240115T100000Z-1a2b3c4d in state table state (no workflow run compacts it meanwhile) until the sweep releases it: at its first run 5 minutes or more after this command last renewed it (at most a minute ago); a settle run before then is refused (LeaseHeld), nothing changed.',
    );
    expect(report[4]).toMatch(/^next: run lake-compactor settle s3:\/\/lake\/events again/);
  });
});
