// Ctrl-C during `lake-compactor vacuum` and `tier` (SIGINT to the bin's own process, as a terminal sends it): the
// command exits 130 saying how many objects it deleted (moved), how many a request under way may have taken, how many
// it left, and what to run next — and those counts are what the folder (the bucket's storage classes) shows. The
// command it names then finishes, and the table's data is untouched throughout (tier: every object's bytes equal).
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pLimit from 'p-limit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { run } from '../../functions/cli/index.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { startS3Server } from '../../infra/local/s3-server.js';
import { captureIo } from '../support/cli-io.js';
import { folderSnapshot } from '../support/folder-snapshot.js';

// The sources' runner, not the bin's launcher: the launcher would run dist/, which the package test rebuilds meanwhile.
const BIN = join(import.meta.dirname, '..', '..', 'bin', 'from-source.js');
/** Writer scratch older than the debris age: every file is due, and deleting them takes a while. */
const DEBRIS = 4000;
const TEN_DAYS_S = 10 * 24 * 3600;

let root: string;
let table: string;

/** The writer scratch files still on disk. */
async function debrisLeft(): Promise<number> {
  const dir = join(table, '_temporary');
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries.filter((e) => e.isFile()).length;
}

/** The table's data files (everything but the scratch and the work area), with sizes and times. */
async function dataFiles(): Promise<string[]> {
  return (await folderSnapshot(table)).filter((l) => l.startsWith('date='));
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-interrupt-vacuum-'));
  await writeSampleLake(localFolderSink(root), { days: 2, batches: 3, seed: 5, startDate: '2024-03-01' });
  table = join(root, 'events');
  const old = Date.now() / 1000 - TEN_DAYS_S;
  for (let i = 0; i < DEBRIS; i += 1) {
    const dir = join(table, '_temporary', '0', `task_${i % 40}`);
    await mkdir(dir, { recursive: true });
    const file = join(dir, `part-${i}.parquet`);
    await writeFile(file, 'scratch');
    await utimes(file, old, old);
  }
});

afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/**
 * Runs the bin with `args` in its own process and sends it SIGINT once its output matches `ready` (what it will
 * change is printed, and the progress told the plan, in the same turn; the changes follow).
 */
function interrupted(
  args: readonly string[],
  ready: RegExp,
  env: Record<string, string> = {},
): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let stdout = '';
    let sent = false;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (!sent && ready.test(stdout)) {
        sent = true;
        child.kill('SIGINT');
      }
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
  });
}

describe('vacuum interrupted by Ctrl-C', () => {
  it('exits 130 saying what it deleted and left, as the folder shows; the command it names deletes the rest', async () => {
    // Prepare
    const dataBefore = await dataFiles();
    expect(await debrisLeft()).toBe(DEBRIS);

    // Act
    const { code, stdout } = await interrupted(['vacuum', table, '--yes'], /^kind +key +size +reason$/m);
    const left = await debrisLeft();
    const again = captureIo({ now: Date.now() });
    const againCode = await run(['vacuum', table, '--yes'], again);

    // Assess: the report's counts bound what is on disk
    expect(code).toBe(130);
    const report = stdout.slice(stdout.indexOf('interrupted (Ctrl-C)'));
    const counts = report.match(
      /^interrupted \(Ctrl-C\): (\d+) of (\d+) objects deleted(?:, (\d+) in a request under way \(deleted or not, each whole\))?, (\d+) left as they were\./m,
    );
    expect(counts, report).not.toBeNull();
    const count = (i: number) => Number(counts?.[i] ?? 0);
    const [deleted, planned, inFlight, untouched] = [count(1), count(2), count(3), count(4)];
    expect(planned).toBe(DEBRIS);
    expect(deleted + inFlight + untouched).toBe(DEBRIS);
    expect(left).toBeLessThanOrEqual(DEBRIS - deleted);
    expect(left).toBeGreaterThanOrEqual(untouched);
    expect(report).toContain(`next: run the same lake-compactor vacuum ${table} again`);
    // Assess: the command named finishes it, and no data file was touched
    expect(againCode, again.stderr.join('\n')).toBe(0);
    expect(await debrisLeft()).toBe(0);
    expect(await dataFiles()).toEqual(dataBefore);
  });
});

describe('tier interrupted by Ctrl-C', () => {
  it("exits 130 saying what it moved and left, as the objects' storage classes show; the command it names moves the rest, every byte kept", async () => {
    // Prepare: a bucket on the local S3 with 200 data files of partitions years old
    const s3 = await startS3Server({ buckets: ['lake'] });
    try {
      const store = new S3ObjectStore({ client: s3.client(), bucket: 'lake' });
      const files = 200;
      const limit = pLimit(16);
      const bodyOf = (i: number) => new TextEncoder().encode(`object ${i} `.repeat(8 + (i % 7)));
      const keys = Array.from(
        { length: files },
        (_, i) => `cold/events/date=2021-0${1 + (i % 9)}-1${i % 10}/part-${i}.parquet`,
      );
      await Promise.all(keys.map((key, i) => limit(() => store.put(key, bodyOf(i)))));
      const env = {
        AWS_ENDPOINT_URL_S3: s3.endpoint,
        AWS_REGION: 'us-east-1',
        AWS_ACCESS_KEY_ID: 'S3RVER',
        AWS_SECRET_ACCESS_KEY: 'S3RVER',
      };
      const args = [
        'tier',
        's3://lake/cold/events',
        '--yes',
        '--min-object-kb',
        '0',
        '--rule',
        '1:STANDARD_IA',
      ];
      const classes = async () =>
        Promise.all(
          keys.map((key) => limit(async () => (await store.head(key))?.storageClass ?? 'STANDARD')),
        );

      // Act
      const { code, stdout } = await interrupted(args, /^will move: /m, env);
      const movedOnS3 = (await classes()).filter((c) => c === 'STANDARD_IA').length;
      const again = captureIo({ now: Date.now(), env });
      const againCode = await run(args, again);

      // Assess: the report's counts bound what the bucket shows
      expect(code).toBe(130);
      const report = stdout.slice(stdout.indexOf('interrupted (Ctrl-C)'));
      const counts = report.match(
        /^interrupted \(Ctrl-C\): (\d+) of (\d+) objects moved(?:, (\d+) in a request under way \(moved or not, each whole\))?, (\d+) left as they were\./m,
      );
      expect(counts, report).not.toBeNull();
      const count = (i: number) => Number(counts?.[i] ?? 0);
      const [moved, planned, inFlight, untouched] = [count(1), count(2), count(3), count(4)];
      expect(planned).toBe(files);
      expect(moved + inFlight + untouched).toBe(files);
      expect(movedOnS3).toBeGreaterThanOrEqual(moved);
      expect(movedOnS3).toBeLessThanOrEqual(moved + inFlight);
      expect(report).toContain('next: run the same lake-compactor tier s3://lake/cold/events again');
      // Assess: the command named moves the rest, and every object keeps its bytes
      expect(againCode, again.stderr.join('\n')).toBe(0);
      expect(new Set(await classes())).toEqual(new Set(['STANDARD_IA']));
      const bodies = await Promise.all(
        keys.map((key) => limit(async () => Buffer.from(await store.get(key)))),
      );
      expect(bodies.every((body, i) => body.equals(bodyOf(i)))).toBe(true);
    } finally {
      await s3.stop();
    }
  });
});
