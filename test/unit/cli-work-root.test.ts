// `--work-root`: the CLI keeps its plans, staging, trash, journal, quarantine and temp files under the work root
// it is given (a deployment's, beside one), its vacuum judges only that work root, and an invalid one exits 2.
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import type { VacuumCliReport } from '../../functions/cli/vacuum.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { captureIo } from '../support/cli-io.js';
import { folderSnapshot } from '../support/folder-snapshot.js';

const HOUR = 3_600_000;

let root: string;
let table: string;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-work-root-'));
  await writeSampleLake(localFolderSink(root), { days: 2, batches: 6, seed: 5, startDate: '2024-01-01' });
  table = join(root, 'events');
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** The keys of the table folder, relative to it. */
async function keys(): Promise<string[]> {
  return (await folderSnapshot(table)).map((line) => line.split(' ')[0] as string);
}

/** `vacuum --dry-run --json` at `hours` past the files' times, with `args`. */
async function vacuumDryRun(hours: number, ...args: string[]): Promise<VacuumCliReport> {
  const io = captureIo({ now: Date.now() + hours * HOUR });
  const code = await run(['vacuum', table, '--dry-run', '--json', ...args], io);
  expect(code).toBe(0);
  return JSON.parse(io.stdout.join('\n')) as VacuumCliReport;
}

/** A sorted run copies its inputs to trash (a bin-pack deletes them), so there is trash to find. */
const SORTED = ['--strategy', 'sort', '--columns', 'user_id'];

describe('lake-compactor --work-root', () => {
  it('compact keeps plans, trash and its journal under the given work root, and nothing under the default', async () => {
    // Act
    const code = await run(['compact', table, '--work-root', '_team-b/', ...SORTED], captureIo());

    // Assess
    expect(code).toBe(0);
    const work = (await keys()).filter((k) => k.startsWith('_'));
    expect(work.filter((k) => !k.startsWith('_team-b/'))).toEqual([]);
    for (const folder of ['plans/', 'trash/', 'journal/runs/']) {
      expect(work.some((k) => k.startsWith(`_team-b/${folder}`))).toBe(true);
    }
    expect(await readdir(table)).not.toContain('_lake-compactor');
  });

  it('vacuum judges only the work root it is given: the default one leaves another work root’s trash alone', async () => {
    // Prepare: a compact beside a deployment whose work root is `_team-b/`
    await run(['compact', table, '--work-root', '_team-b/', ...SORTED], captureIo());
    const trash = (await keys()).filter((k) => k.startsWith('_team-b/trash/'));

    // Act
    const other = await vacuumDryRun(200);
    const own = await vacuumDryRun(200, '--work-root', '_team-b/');

    // Assess
    expect(trash).toHaveLength(12);
    const judged = (r: VacuumCliReport) => [...r.candidates, ...r.kept].map((c) => c.key);
    expect(judged(other).filter((k) => k.startsWith('_team-b/'))).toEqual([]);
    expect(own.candidates.map((c) => c.key)).toEqual(expect.arrayContaining(trash));
  });

  it('settle, plan, quarantine and report read the given work root', async () => {
    // Prepare
    await run(['compact', table, '--work-root', '_team-b/'], captureIo());
    const [settle, plan, quarantine, report] = [captureIo(), captureIo(), captureIo(), captureIo()];

    // Act
    const codes = [
      await run(['settle', table, '--work-root', '_team-b/'], settle),
      await run(['plan', table, '--work-root', '_team-b/'], plan),
      await run(['quarantine', table, '--json', '--work-root', '_team-b/'], quarantine),
      await run(['report', table, '--html', join(root, 'r.html'), '--work-root', '_team-b/'], report),
    ];

    // Assess: the report found the compact runs' stored plans there ("before" of both partitions)
    expect(codes).toEqual([0, 0, 0, 0]);
    expect(settle.stdout.join('\n')).toMatch(/nothing to settle: no group is open/);
    expect(JSON.parse(quarantine.stdout.join('\n')).source).toMatch(/\/_team-b\/quarantine\/$/);
    expect(report.stdout.join('\n')).toMatch(/in 2 compacted partitions/);
  });

  it('exits 2 on an invalid work root, saying what a work root must be, and changes nothing', async () => {
    // Prepare
    const before = await folderSnapshot(table);
    const io = captureIo();

    // Act
    const code = await run(['compact', table, '--work-root', 'team-b'], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toMatch(
      /option '--work-root <prefix>' argument 'team-b' is invalid\. the work root "team-b" does not end with "\/"/,
    );
    expect(await folderSnapshot(table)).toEqual(before);
  });
});
