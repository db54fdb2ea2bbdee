// The operator CLI on a generated lake: `profile` and `plan` report what is on disk, `plan --json`
// is a valid, replayable plan, and bad input ends with a message and a non-zero exit code.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { partitionPlanSchema } from '../../functions/core/planning.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { captureIo } from '../support/cli-io.js';

function capture() {
  return captureIo();
}

let root: string;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-cli-'));
  await writeSampleLake(localFolderSink(root), { days: 3, batches: 6, seed: 7 });
  // Writer debris that must never be counted as data.
  await writeFile(join(root, 'events', 'date=2024-01-01', '_SUCCESS'), '');
  await writeFile(join(root, 'events', 'date=2024-01-02', '.part-00000.snappy.parquet.crc'), 'crc');
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('lake-compactor profile', () => {
  it('prints one row per partition with its file count, and ignores writer debris', async () => {
    // Prepare
    const io = capture();
    // Act
    const code = await run(['profile', join(root, 'events')], io);
    // Assess
    expect(code).toBe(0);
    const text = io.stdout.join('\n');
    for (const day of ['2024-01-01', '2024-01-02', '2024-01-03']) {
      expect(text).toMatch(new RegExp(`date=${day}\\s+6\\s`));
    }
    expect(text).toContain('3 partitions, 18 data files');
    expect(text).toContain('2 non-data objects ignored');
  });

  it('prints JSON with the profile figures when asked', async () => {
    // Prepare
    const io = capture();
    // Act
    const code = await run(['profile', join(root, 'events'), '--json'], io);
    // Assess
    expect(code).toBe(0);
    const parsed = JSON.parse(io.stdout.join('\n')) as {
      partitions: { count: number; smallFileRatio: number }[];
    };
    expect(parsed.partitions.map((p) => p.count)).toEqual([6, 6, 6]);
    expect(parsed.partitions.every((p) => p.smallFileRatio === 1)).toBe(true);
  });
});

describe('lake-compactor plan', () => {
  it('plans one group per partition holding all its small files', async () => {
    // Prepare
    const io = capture();
    // Act
    const code = await run(['plan', join(root, 'events'), '--json'], io);
    // Assess
    expect(code).toBe(0);
    const plan = JSON.parse(io.stdout.join('\n')) as { partitions: unknown[] };
    const partitions = plan.partitions.map((p) => partitionPlanSchema.parse(p));
    expect(partitions).toHaveLength(3);
    for (const p of partitions) {
      expect(p.groups).toHaveLength(1);
      expect(p.groups[0]?.files).toHaveLength(6);
      expect(p.groups[0]?.rows).toBeGreaterThanOrEqual(6 * 500);
      expect(p.table).toBe('events');
    }
  });

  it('reports a corrupt file as left alone instead of failing the plan', async () => {
    // Prepare
    const dir = await mkdtemp(join(tmpdir(), 'lc-cli-bad-'));
    await writeSampleLake(localFolderSink(dir), { days: 1, batches: 5, seed: 1 });
    await writeFile(
      join(dir, 'events', 'date=2024-01-01', 'part-broken.snappy.parquet'),
      'PAR1 this is not parquet',
    );
    const io = capture();
    // Act
    const code = await run(['plan', join(dir, 'events')], io);
    // Assess
    expect(code).toBe(0);
    expect(io.stdout.join('\n')).toMatch(/1 file left alone/);
    await rm(dir, { recursive: true, force: true });
  });

  it('fails with a message saying what to do when the location does not exist', async () => {
    // Prepare
    const io = capture();
    // Act
    const code = await run(['plan', join(root, 'nope')], io);
    // Assess
    expect(code).toBe(1);
    expect(io.stderr.join('\n')).toMatch(/does not exist; create it or fix the path/);
  });

  it('rejects a non-numeric target size as a usage error', async () => {
    // Prepare
    const io = capture();
    // Act
    const code = await run(['plan', root, '--target-mb', 'big'], io);
    // Assess
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toMatch(/positive number/);
  });
});
