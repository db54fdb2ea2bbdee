// `lake-compactor history <folder> --format delta`: a Delta table compacted by the CLI keeps no state table, yet its
// log records every OPTIMIZE version our runs committed (commitInfo `lakeCompactor`). history reads them from the
// log: one run per partition the compact ran, its versions and file counts as the commits say, other writers'
// commits counted beside; a location given without --format delta shows the runs of the CLI's journal there and
// names --format delta for the log.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import type { TableHistory } from '../../functions/cli/history-table.js';
import { run } from '../../functions/cli/index.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { captureIo } from '../support/cli-io.js';

const DAYS = ['2024-03-01', '2024-03-02'];
const BATCHES = 5;
const NOW = Date.UTC(2024, 2, 3);

let dir: string;

/** The commitInfo of every JSON commit, read straight from the folder (not through the code under test). */
async function commitInfos(): Promise<{ version: number; info: Record<string, unknown> }[]> {
  const names = (await readdir(join(dir, '_delta_log'))).filter((n) => /^\d{20}\.json$/.test(n)).sort();
  const out: { version: number; info: Record<string, unknown> }[] = [];
  for (const name of names) {
    const lines = (await readFile(join(dir, '_delta_log', name), 'utf8')).split('\n').filter(Boolean);
    const info = lines
      .map((l) => JSON.parse(l) as { commitInfo?: Record<string, unknown> })
      .find((a) => a.commitInfo);
    out.push({ version: Number(name.slice(0, 20)), info: info?.commitInfo ?? {} });
  }
  return out;
}

async function history(args: readonly string[]): Promise<{ code: number; out: string; err: string }> {
  const io = captureIo();
  const code = await run(['history', dir, ...args], io);
  return { code, out: io.stdout.join('\n'), err: io.stderr.join('\n') };
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lc-delta-history-'));
  const store = new LocalObjectStore(dir);
  await createDeltaEventsTable(store, '', { now: NOW });
  let seed = 1;
  for (const day of DAYS) {
    for (let b = 0; b < BATCHES; b += 1) {
      await appendDeltaEvents(store, '', { day, rows: 20 + b, seed: seed++, now: NOW });
    }
  }
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('lake-compactor history <folder> --format delta', () => {
  it('lists the OPTIMIZE versions a CLI compact committed, by run, as the log records them', async () => {
    // Prepare
    const io = captureIo();
    expect(await run(['compact', dir, '--format', 'delta'], io), io.stderr.join('\n')).toBe(0);
    const optimize = (await commitInfos()).filter((c) => c.info.operation === 'OPTIMIZE');

    // Act
    const { code, out, err } = await history(['--format', 'delta', '--json']);

    // Assess: one run per partition, each with the version its tag names and the files its commit moved
    expect(code, err).toBe(0);
    const result = JSON.parse(out) as TableHistory;
    expect(optimize).toHaveLength(DAYS.length);
    expect(result.latestVersion).toBe(Math.max(...optimize.map((c) => c.version)));
    expect(result.earliestVersion).toBe(0);
    expect(result.otherCommits).toEqual({ 'CREATE TABLE': 1, WRITE: DAYS.length * BATCHES });
    const listed = result.runs
      .flatMap((r) => r.versions.map((v) => [v.version, r.runId, v.groupId, v.filesRemoved, v.filesAdded]))
      .sort((a, b) => Number(a[0]) - Number(b[0]));
    expect(listed).toEqual(
      optimize.map((c) => {
        const tag = c.info.lakeCompactor as { runId: string; groupId: string };
        return [c.version, tag.runId, tag.groupId, BATCHES, 1];
      }),
    );
    expect(result.runs.map((r) => r.versions[0]?.predicate).sort()).toEqual(
      DAYS.map((d) => `["(\`date\` = '${d}')"]`),
    );
  });

  it('prints a table of the versions and a line saying how many runs and other commits the log holds', async () => {
    // Prepare
    const io = captureIo();
    expect(await run(['compact', dir, '--format', 'delta', '--partition', `date=${DAYS[1]}`], io)).toBe(0);

    // Act
    const { code, out } = await history(['--format', 'delta']);

    // Assess
    expect(code).toBe(0);
    expect(out).toMatch(/^version +committed +operation +partition +files +bytes +run +group/m);
    expect(out).toContain(`${BATCHES} → 1`);
    expect(out).toContain(
      `1 run, 1 OPTIMIZE versions by lake-compactor; table at version ${DAYS.length * BATCHES + 1}, log from version 0; other commits: 1 CREATE TABLE, ${DAYS.length * BATCHES} WRITE`,
    );
  });

  it('shows no run for a table nobody compacted, and the --limit newest runs when there are more', async () => {
    // Prepare
    const { code: before, out: none } = await history(['--format', 'delta', '--json']);
    const io = captureIo();
    expect(await run(['compact', dir, '--format', 'delta'], io)).toBe(0);

    // Act
    const { code, out } = await history(['--format', 'delta', '--json', '--limit', '1']);

    // Assess: the newest run is the one with the highest version
    expect(before).toBe(0);
    expect((JSON.parse(none) as TableHistory).runs).toEqual([]);
    expect(code).toBe(0);
    const limited = JSON.parse(out) as TableHistory;
    expect(limited.runs).toHaveLength(1);
    expect(limited.runs[0]?.versions.map((v) => v.version)).toEqual([limited.latestVersion]);
  });

  it('lists the runs of the CLI journal beside the log’s: the same runs, with their files and state', async () => {
    // Prepare
    const io = captureIo();
    expect(await run(['compact', dir, '--format', 'delta'], io), io.stderr.join('\n')).toBe(0);

    // Act
    const { code, out, err } = await history(['--format', 'delta', '--json']);

    // Assess: one journal run per log run, committed, the files the log says it moved
    expect(code, err).toBe(0);
    const result = JSON.parse(out) as TableHistory;
    const fromLog = result.runs.map((r) => [r.runId, r.filesRemoved, r.filesAdded]).sort();
    const fromJournal = result.journalRuns.map((r) => [r.runId, r.inputFiles, r.outputFiles]).sort();
    expect(fromJournal).toEqual(fromLog);
    expect(fromJournal).toHaveLength(DAYS.length);
    expect(result.journalRuns.map((r) => [r.state, r.format])).toEqual(
      DAYS.map(() => ['committed', 'delta']),
    );
  });

  it('reads the CLI journal of a location given without --format delta (exit 0), naming --format delta for its log', async () => {
    // Act
    const { code, out, err } = await history([]);

    // Assess: no compact ran, so the journal holds no run; the Delta log is pointed at, not read
    expect(code, err).toBe(0);
    expect(out).toContain("0 runs in the CLI's journal (_lake-compactor/journal/)");
    expect(out).toContain('pass --format delta to read the runs its log records as well');
  });

  it('refuses --format delta without a location (exit 2): the state table holds no Delta log', async () => {
    // Prepare
    const io = captureIo();

    // Act
    const code = await run(['history', '--state-table', 'state', '--format', 'delta'], io);

    // Assess
    expect(code).toBe(2);
    expect(io.stderr.join('\n')).toContain(
      "--format delta names the format of a table location: pass the table's <uri> to read the runs its log records",
    );
  });

  it('refuses a location together with --state-table (exit 2): the two read different records', async () => {
    // Act
    const { code, err } = await history(['--format', 'delta', '--state-table', 'state']);

    // Assess
    expect(code).toBe(2);
    expect(err).toContain('with <uri> the runs come from the table’s own log');
  });
});
