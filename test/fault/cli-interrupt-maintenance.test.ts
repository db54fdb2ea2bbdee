// Ctrl-C during `lake-compactor vacuum` (SIGINT to the bin's own process, as a terminal sends it): the command exits
// 130 saying how many objects it deleted, how many a request under way may have taken, how many it left, and what
// to run next — and those counts are what the folder shows. The command it names then deletes the rest, and the
// table's data files are untouched throughout.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
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

/** Runs `vacuum --yes` in the bin's own process and sends it SIGINT once it has printed what it will delete. */
function vacuumInterrupted(): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'vacuum', table, '--yes'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let sent = false;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      // The candidates' table is printed, and the progress told the plan, in the same turn; deletes follow.
      if (!sent && /^kind +key +size +reason$/m.test(stdout)) {
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
    const { code, stdout } = await vacuumInterrupted();
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
