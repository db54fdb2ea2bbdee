// Ctrl-C during `lake-compactor compact` (SIGINT to the bin's own process, as a terminal sends it): the command
// exits 130 after saying what it committed, what it rolled back, what was in flight and what to run next; the
// command it names then finishes the table with every row exactly once.
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';

// The sources' runner, not the bin's launcher: the launcher would run dist/, which the package test rebuilds meanwhile.
const BIN = join(import.meta.dirname, '..', '..', 'bin', 'from-source.js');
const DAYS = 12;

let root: string;
let table: string;
let db: DuckDb;

beforeAll(async () => {
  db = await openDuckDb();
  root = await mkdtemp(join(tmpdir(), 'lc-interrupt-'));
  await writeSampleLake(localFolderSink(root), { days: DAYS, batches: 6, seed: 17, startDate: '2024-03-01' });
  table = join(root, 'events');
});

afterAll(async () => {
  db?.close();
  await rm(root, { recursive: true, force: true });
});

async function rowMultiset(): Promise<string[]> {
  const rows = await db.rows(
    `SELECT * FROM read_parquet(${sqlString(join(table, 'date=*', '*.parquet'))}) ORDER BY ALL`,
  );
  return rows.map((r) => JSON.stringify(r));
}

/** Runs `compact` in the bin's own process and sends it SIGINT once it has committed its first group. */
function compactInterrupted(): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'compact', table], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let sent = false;
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
      if (!sent && /committed\n/.test(stdout)) {
        sent = true;
        child.kill('SIGINT');
      }
    });
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout }));
  });
}

describe('compact interrupted by Ctrl-C', () => {
  it('exits 130 saying what was committed, rolled back and in flight and what to run next; that command ends the table exact', async () => {
    // Prepare
    const rowsBefore = await rowMultiset();

    // Act
    const { code, stdout } = await compactInterrupted();
    const again = captureIo();
    const againCode = await run(['compact', table], again);

    // Assess: the report counts exactly the groups whose commit the run printed.
    expect(code).toBe(130);
    const printedCommits = stdout.split('\n').filter((l) => /: \d+ files → \d+, .* committed$/.test(l));
    expect(printedCommits.length).toBeGreaterThan(0);
    const report = stdout.slice(stdout.indexOf('interrupted (Ctrl-C):'));
    const committed = new RegExp(`committed: ${printedCommits.length} groups? \\(`);
    expect(report).toMatch(committed);
    expect(report).toContain('rolled back: nothing');
    expect(report).toMatch(/not started: \d+ partitions? \(/);
    expect(report).toContain(`lake-compactor settle ${table}`);
    // Assess: the command named finishes the table, every partition one file, every row once.
    expect(againCode).toBe(0);
    expect(await rowMultiset()).toEqual(rowsBefore);
    for (const day of await readdir(table)) {
      if (!day.startsWith('date=')) continue;
      expect((await readdir(join(table, day))).filter((n) => n.endsWith('.parquet'))).toHaveLength(1);
    }
  });
});
