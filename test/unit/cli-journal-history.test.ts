// `history <folder>` and `report <folder>` after a real `compact` on a sample lake: a folder keeps no state table, so
// both read the runs from the CLI's own journal in the folder (`_lake-compactor/journal/`). Each run shows its real
// inputs → outputs (the files the folder held before and holds after, read from disk, not through the code under
// test), their bytes, its rows (DuckDB's count) and its duration (planned → settled, as the journal's entries say),
// newest first and cut at --limit; an undone run says so.
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import type { JournalRun } from '../../functions/cli/journal-history.js';
import { formatBytes } from '../../functions/core/stats.js';
import type { Clock } from '../../functions/ports/clock.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { captureIo } from '../support/cli-io.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';

const DAYS = ['2024-01-01', '2024-01-02'];
const BATCHES = 6;

let db: DuckDb;
let root: string;
let table: string;

/** A clock that moves one second every time it is read: a run's entries are created and settled at different times. */
function tickingClock(start: number): Clock {
  let now = start;
  return {
    now: () => {
      now += 1000;
      return now;
    },
  };
}

/** An io for the CLI with {@link tickingClock}. */
function ticking() {
  return { ...captureIo(), clock: tickingClock(Date.UTC(2024, 1, 1)) };
}

/** The data files of a partition folder with their sizes, read from disk. */
async function files(day: string): Promise<{ name: string; size: number }[]> {
  const dir = join(table, `date=${day}`);
  const names = (await readdir(dir)).filter((n) => n.endsWith('.parquet')).sort();
  return Promise.all(names.map(async (name) => ({ name, size: (await stat(join(dir, name))).size })));
}

/** The journal entries of a run, read straight from the folder. */
async function entriesOf(runId: string): Promise<{ createdAt: number; updatedAt: number }[]> {
  const dir = join(table, '_lake-compactor', 'journal', 'runs', encodeURIComponent(runId));
  const names = (await readdir(dir)).filter((n) => n.endsWith('.json'));
  return Promise.all(names.map(async (n) => JSON.parse(await readFile(join(dir, n), 'utf8'))));
}

interface Compacted {
  readonly commandRunId: string;
  readonly before: Record<string, { files: number; bytes: number }>;
  readonly after: Record<string, { files: number; bytes: number; rows: number }>;
}

/** Compacts the table with a real `compact`, noting what the folder held before and after. */
async function compact(): Promise<Compacted> {
  const sum = (list: { size: number }[]) => list.reduce((n, f) => n + f.size, 0);
  const before: Compacted['before'] = {};
  for (const day of DAYS) {
    const list = await files(day);
    before[`date=${day}`] = { files: list.length, bytes: sum(list) };
  }
  const io = ticking();
  const code = await run(['compact', table], io);
  expect(code, io.stderr.join('\n')).toBe(0);
  const printed = io.stdout.join('\n').match(/^run (cli-\S+): lake-compactor undo/m)?.[1];
  expect(printed).toBeDefined();
  const after: Compacted['after'] = {};
  for (const day of DAYS) {
    const list = await files(day);
    const [count] = await db.rows(
      `SELECT count(*)::INTEGER AS n FROM read_parquet(${sqlString(join(table, `date=${day}`, '*.parquet'))})`,
    );
    after[`date=${day}`] = { files: list.length, bytes: sum(list), rows: Number(count?.n) };
  }
  return { commandRunId: printed as string, before, after };
}

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(() => {
  db.close();
});

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'lc-journal-history-'));
  await writeSampleLake(localFolderSink(root), {
    days: DAYS.length,
    batches: BATCHES,
    seed: 23,
    startDate: DAYS[0],
  });
  table = join(root, 'events');
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('lake-compactor history <folder>', () => {
  it('shows each run of a CLI compact with its real files, bytes, rows and duration from the folder’s journal', async () => {
    // Prepare
    const compacted = await compact();

    // Act
    const io = captureIo();
    const code = await run(['history', table, '--json'], io);

    // Assess: one run per partition, each the command's, with what the folder held before and holds after
    expect(code, io.stderr.join('\n')).toBe(0);
    const runs = (JSON.parse(io.stdout.join('\n')) as { journalRuns: JournalRun[] }).journalRuns;
    expect(runs.map((r) => r.partition).sort()).toEqual(DAYS.map((d) => `date=${d}`));
    for (const r of runs) {
      const before = compacted.before[r.partition];
      const after = compacted.after[r.partition];
      expect(r).toMatchObject({
        commandRunId: compacted.commandRunId,
        table: 'events',
        format: 'parquet',
        state: 'committed',
        inputFiles: BATCHES,
        bytesBefore: before?.bytes,
        outputFiles: 1,
        bytesAfter: after?.bytes,
        rows: after?.rows,
      });
      expect(before?.files).toBe(BATCHES);
      expect(after?.files).toBe(1);
      const entries = await entriesOf(r.runId);
      const took =
        Math.max(...entries.map((e) => e.updatedAt)) - Math.min(...entries.map((e) => e.createdAt));
      expect(took).toBeGreaterThan(0);
      expect(r.durationMs).toBe(took);
      expect(r.estimatedCostUsd).toBeGreaterThan(0);
    }
    // Newest first: the second partition's run started after the first's.
    expect(runs.map((r) => r.partition)).toEqual([`date=${DAYS[1]}`, `date=${DAYS[0]}`]);
  });

  it('prints the runs as a table with inputs → outputs, bytes and duration, and --limit cuts to the newest', async () => {
    // Prepare
    const compacted = await compact();
    const newest = `date=${DAYS[1]}`;

    // Act
    const io = captureIo();
    const code = await run(['history', table, '--limit', '1'], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    const out = io.stdout.join('\n');
    expect(out).toMatch(/^started +partition +state +files +rows +bytes +took +format +run/m);
    const line = out.split('\n').find((l) => l.includes(newest));
    expect(line).toBeDefined();
    expect(line).toContain(`${BATCHES} → 1`);
    expect(line).toContain(
      `${formatBytes(compacted.before[newest]?.bytes ?? 0)} → ${formatBytes(compacted.after[newest]?.bytes ?? 0)}`,
    );
    expect(line).toMatch(/ committed .* \d+\.\d s /);
    expect(out).not.toContain(`date=${DAYS[0]}`);
    expect(out).toContain(
      "1 run in the CLI's journal (_lake-compactor/journal/) (newest 1; --limit shows more)",
    );
  });

  it('marks the runs of an undone compact as undone', async () => {
    // Prepare
    const compacted = await compact();
    const undo = captureIo();
    expect(await run(['undo', table, compacted.commandRunId], undo), undo.stderr.join('\n')).toBe(0);

    // Act
    const io = captureIo();
    const code = await run(['history', table, '--json'], io);

    // Assess
    expect(code).toBe(0);
    const runs = (JSON.parse(io.stdout.join('\n')) as { journalRuns: JournalRun[] }).journalRuns;
    expect(runs).toHaveLength(DAYS.length);
    for (const r of runs) expect(r.undoneAt).toEqual(expect.any(Number));
  });
});

describe('lake-compactor report <folder>', () => {
  it('shows each CLI run with its real inputs → outputs, bytes, cost and duration instead of “6 → ?” and “—”', async () => {
    // Prepare
    const compacted = await compact();
    const history = captureIo();
    expect(await run(['history', table, '--json'], history)).toBe(0);
    const runs = (JSON.parse(history.stdout.join('\n')) as { journalRuns: JournalRun[] }).journalRuns;
    const html = join(root, 'report.html');

    // Act
    const io = captureIo();
    const code = await run(['report', table, '--html', html], io);

    // Assess: each run's row, from the journal
    expect(code, io.stderr.join('\n')).toBe(0);
    const page = await readFile(html, 'utf8');
    for (const day of DAYS) {
      const partition = `date=${day}`;
      const r = runs.find((x) => x.partition === partition);
      const row = page.match(
        new RegExp(
          `<tr data-run-id="${r?.runId}" data-partition="${partition}" data-source="journal"[^]*?</tr>`,
        ),
      )?.[0];
      expect(row).toBeDefined();
      expect(row).toContain(`data-files-before="${BATCHES}" data-files-after="1"`);
      expect(row).toContain(`<td class="num">${BATCHES} → 1</td>`);
      expect(row).toContain(
        `<td class="num">${formatBytes(compacted.before[partition]?.bytes ?? 0)} → ${formatBytes(compacted.after[partition]?.bytes ?? 0)}</td>`,
      );
      expect(row).toContain(`<td class="num">${(((r?.durationMs ?? 0) as number) / 1000).toFixed(1)} s</td>`);
      expect(row).toMatch(/<td class="num">\$[\d.]+<\/td>/);
      expect(row).not.toContain('?');
    }
    expect(page).toMatch(/id="card-cost" data-value="[\d.]+">/);
    expect(io.stdout.join('\n')).toContain('the runs the CLI made come from its journal in the location');
  });
});
