// `lake-compactor undo <uri> <run>` on local folders: a finished compact run is reverted so the table's live file
// set and row multiset (read back by DuckDB) are those of before the run — a Hive-style bin-pack's inputs rebuilt
// from the outputs' rows, a sorted run's from their trash copies byte for byte, a Delta run by one RESTORE-like
// version — a second undo changes nothing, --dry-run changes nothing, and every refusal (an output replaced, a file
// at an input's key again, the journal vacuumed, a later Delta version rewrote the outputs, an Iceberg table)
// leaves every byte of the folder as it was.
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { SIGINT_EXIT_CODE, withInterruptReport } from '../../functions/cli/compact-progress.js';
import { run } from '../../functions/cli/index.js';
import { runUndo, undoInterruptedReport } from '../../functions/cli/undo.js';
import { readCommitActions, readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import { PathCatalog } from '../../functions/core/formats/iceberg/catalog.js';
import { readSnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import { localFolderSink } from '../../functions/tools/generate.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { appendIcebergEvents, createIcebergEventsTable } from '../../functions/tools/sample-iceberg.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { captureIo } from '../support/cli-io.js';
import { dyingStore, type StoreCall } from '../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';
import { missingRows } from '../support/multiset.js';

const NOW = Date.UTC(2024, 2, 3);
const DAY_MS = 24 * 3600 * 1000;

let db: DuckDb;
let root: string;
let table: string;

/** The run id `compact` printed for reverting it. */
function runIdOf(stdout: readonly string[]): string {
  const line = stdout.find((l) => /^run cli-\S+: lake-compactor undo /.test(l));
  const id = line?.split(' ')[1]?.replace(/:$/, '');
  if (id === undefined) throw new Error(`compact printed no run id:\n${stdout.join('\n')}`);
  return id;
}

/** Every Parquet file of the table's partitions (relative path → sha256 of its bytes), sorted by path. */
async function dataFiles(): Promise<Map<string, string>> {
  const files = new Map<string, string>();
  for (const day of (await readdir(table)).filter((d) => d.startsWith('date=')).sort()) {
    for (const name of (await readdir(join(table, day))).filter((n) => n.endsWith('.parquet')).sort()) {
      const sha = createHash('sha256')
        .update(await readFile(join(table, day, name)))
        .digest('hex');
      files.set(`${day}/${name}`, sha);
    }
  }
  return files;
}

async function rowMultiset(): Promise<string[]> {
  const rows = await db.rows(
    `SELECT * FROM read_parquet(${sqlString(join(table, 'date=*', '*.parquet'))}) ORDER BY ALL`,
  );
  return rows.map((r) => JSON.stringify(r));
}

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(() => {
  db.close();
});

afterEach(async () => {
  if (root !== undefined) await rm(root, { recursive: true, force: true });
});

async function hiveLake(): Promise<void> {
  root = await mkdtemp(join(tmpdir(), 'lc-undo-'));
  await writeSampleLake(localFolderSink(root), { days: 2, batches: 6, seed: 5, startDate: '2024-01-01' });
  table = join(root, 'events');
}

async function compact(args: readonly string[] = []): Promise<string> {
  const io = captureIo({ now: NOW });
  const code = await run(['compact', table, ...args], io);
  expect(code, io.stderr.join('\n')).toBe(0);
  return runIdOf(io.stdout);
}

describe('lake-compactor undo on a Hive-style table', () => {
  it('reverts a bin-pack run: the inputs rebuilt from the outputs’ rows at their keys, the outputs gone, every row once', async () => {
    // Prepare
    await hiveLake();
    const filesBefore = await dataFiles();
    const rowsBefore = await rowMultiset();
    const runId = await compact();
    expect([...(await dataFiles()).keys()]).toHaveLength(2);
    const io = captureIo({ now: NOW + 1000 });

    // Act
    const code = await run(['undo', table, runId], io);

    // Assess: the same live file set (row-identical rebuilds, not byte-identical) and the same rows
    expect(code, io.stderr.join('\n')).toBe(0);
    expect([...(await dataFiles()).keys()]).toEqual([...filesBefore.keys()]);
    expect(await rowMultiset()).toEqual(rowsBefore);
    const text = io.stdout.join('\n');
    expect(text).toContain("rebuilt from the outputs' rows");
    expect(text).toMatch(new RegExp(`run ${runId} undone: 2 groups, 14 changes`));
  });

  it('reverts a sorted run byte for byte from its trash copies, and a second undo changes nothing', async () => {
    // Prepare
    await hiveLake();
    const filesBefore = await dataFiles();
    const runId = await compact(['--strategy', 'sort', '--columns', 'user_id']);
    const first = captureIo({ now: NOW + 1000 });
    expect(await run(['undo', table, runId], first), first.stderr.join('\n')).toBe(0);
    const afterFirst = await folderContentSnapshot(root);
    const second = captureIo({ now: NOW + 2000 });

    // Act
    const code = await run(['undo', table, runId], second);

    // Assess
    expect(await dataFiles()).toEqual(filesBefore);
    expect(code, second.stderr.join('\n')).toBe(0);
    expect(second.stdout.join('\n')).toMatch(/nothing to do: it was undone at /);
    expect(await folderContentSnapshot(root)).toEqual(afterFirst);
  });

  it('--dry-run lists every input it would restore and output it would remove, and changes nothing', async () => {
    // Prepare
    await hiveLake();
    const runId = await compact();
    const before = await folderContentSnapshot(root);
    const io = captureIo({ now: NOW + 1000 });

    // Act
    const code = await run(['undo', table, runId, '--dry-run'], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(io.stdout.filter((l) => l.startsWith('would restore '))).toHaveLength(12);
    expect(io.stdout.filter((l) => l.startsWith('would remove '))).toHaveLength(2);
    expect(await folderContentSnapshot(root)).toEqual(before);
  });

  it('refuses, changing no byte, when an output was replaced since the run', async () => {
    // Prepare: a writer rewrote one of the run's outputs
    await hiveLake();
    const runId = await compact();
    const [output] = [...(await dataFiles()).keys()];
    await writeFile(join(table, output ?? ''), 'not the run’s output');
    const before = await folderContentSnapshot(root);
    const io = captureIo({ now: NOW + 1000 });

    // Act
    const code = await run(['undo', table, runId], io);

    // Assess
    expect(code).toBe(1);
    expect(io.stderr.join('\n')).toMatch(/cannot undo run .* was replaced since the run/);
    expect(await folderContentSnapshot(root)).toEqual(before);
  });

  it('refuses, changing no byte, when a writer put a file at an input’s key again', async () => {
    // Prepare
    await hiveLake();
    const [input] = [...(await dataFiles()).keys()];
    const runId = await compact();
    await writeFile(join(table, input ?? ''), 'a new file at an old name');
    const before = await folderContentSnapshot(root);
    const io = captureIo({ now: NOW + 1000 });

    // Act
    const code = await run(['undo', table, runId], io);

    // Assess
    expect(code).toBe(1);
    expect(io.stderr.join('\n')).toMatch(/exists again: a writer put a file at its key/);
    expect(await folderContentSnapshot(root)).toEqual(before);
  });

  it('refuses, changing no byte, once vacuum has removed the run’s journal and trash', async () => {
    // Prepare
    await hiveLake();
    const runId = await compact(['--strategy', 'sort', '--columns', 'user_id']);
    const vacuumed = captureIo({ now: NOW + 30 * DAY_MS });
    expect(await run(['vacuum', table, '--yes'], vacuumed), vacuumed.stderr.join('\n')).toBe(0);
    const before = await folderContentSnapshot(root);
    const io = captureIo({ now: NOW + 30 * DAY_MS });

    // Act
    const code = await run(['undo', table, runId], io);

    // Assess
    expect(code).toBe(1);
    expect(io.stderr.join('\n')).toMatch(/is not in the journal of .* removed by vacuum after its retention/);
    expect(await folderContentSnapshot(root)).toEqual(before);
  });
});

describe('lake-compactor undo killed half-way', () => {
  /** A put of a restored input into a partition folder (not the work area). */
  const restorePut = (call: StoreCall) => call.method === 'put' && call.key.startsWith('date=');
  const crashes: [string, () => (call: StoreCall) => boolean][] = [
    [
      'after 5 of its 12 inputs were restored',
      () => {
        let puts = 0;
        return (call) => restorePut(call) && ++puts === 6;
      },
    ],
    [
      'with every input restored, before the outputs were deleted',
      () => (call) => call.method === 'deleteMany',
    ],
  ];

  it.each(crashes)(
    'killed %s, no row is missing meanwhile, and the same undo run again finishes it exactly',
    async (_when, dies) => {
      // Prepare
      await hiveLake();
      const filesBefore = await dataFiles();
      const rowsBefore = await rowMultiset();
      const runId = await compact(['--strategy', 'sort', '--columns', 'user_id']);
      const killed = await runUndo(table, runId, {}, captureIo({ now: NOW + 1000 }), {
        wrapStore: (s) => dyingStore(s, dies()),
      }).then(
        () => 'finished',
        (err: unknown) => String(err),
      );
      expect(killed).toMatch(/injected: the process died/);
      expect(missingRows(rowsBefore, await rowMultiset())).toEqual([]);
      const io = captureIo({ now: NOW + 2000 });

      // Act
      const code = await run(['undo', table, runId], io);

      // Assess
      expect(code, io.stderr.join('\n')).toBe(0);
      expect(await dataFiles()).toEqual(filesBefore);
      expect(await rowMultiset()).toEqual(rowsBefore);
    },
  );
});

describe('lake-compactor undo --format delta', () => {
  async function deltaTable(): Promise<LocalObjectStore> {
    root = await mkdtemp(join(tmpdir(), 'lc-undo-delta-'));
    table = root;
    const store = new LocalObjectStore(root);
    await createDeltaEventsTable(store, '', { now: NOW });
    let seed = 1;
    for (const day of ['2024-03-01', '2024-03-02'])
      for (let b = 0; b < 6; b += 1)
        await appendDeltaEvents(store, '', { day, rows: 30 + b, seed: seed++, now: NOW });
    return store;
  }

  async function liveTable(
    store: LocalObjectStore,
  ): Promise<{ version: number; keys: string[]; rows: string[] }> {
    const snapshot = await readDeltaSnapshot(store, '');
    const keys = snapshot.files.map((f) => f.key ?? f.path).sort();
    const files = keys.map((k) => sqlString(join(root, k))).join(', ');
    const rows = await db.rows(
      `SELECT * EXCLUDE (filename), regexp_extract(filename, 'date=([0-9-]+)', 1) AS date FROM read_parquet([${files}], filename = true) ORDER BY ALL`,
    );
    return { version: snapshot.version, keys, rows: rows.map((r) => JSON.stringify(r)) };
  }

  it('commits one RESTORE version putting the run’s inputs back and its outputs out (dataChange false); a second undo commits nothing', async () => {
    // Prepare
    const store = await deltaTable();
    const before = await liveTable(store);
    const runId = await compact(['--format', 'delta']);
    const compacted = await liveTable(store);
    expect(compacted.keys).toHaveLength(2);
    const io = captureIo({ now: NOW + 1000 });

    // Act
    const code = await run(['undo', table, runId, '--format', 'delta'], io);
    const again = captureIo({ now: NOW + 2000 });
    const secondCode = await run(['undo', table, runId, '--format', 'delta'], again);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    const after = await liveTable(store);
    expect(after.keys).toEqual(before.keys);
    expect(after.rows).toEqual(before.rows);
    expect(after.version).toBe(compacted.version + 1);
    const actions = (await readCommitActions(store, '', after.version)) ?? [];
    const info = actions.find((a) => a.kind === 'commitInfo');
    expect(info?.kind === 'commitInfo' && info.commitInfo.operation).toBe('RESTORE');
    const adds = actions.flatMap((a) => (a.kind === 'add' ? [a.add] : []));
    const removes = actions.flatMap((a) => (a.kind === 'remove' ? [a.remove] : []));
    expect(adds).toHaveLength(12);
    expect(removes).toHaveLength(2);
    expect([...adds, ...removes].every((a) => a.dataChange === false)).toBe(true);
    expect(secondCode, again.stderr.join('\n')).toBe(0);
    expect(again.stdout.join('\n')).toMatch(/nothing to do/);
    expect((await liveTable(store)).version).toBe(after.version);
  });

  it('refuses, changing no byte, when a later OPTIMIZE rewrote the run’s outputs', async () => {
    // Prepare: more batches arrive and a second compaction rewrites the first one's outputs with them
    const store = await deltaTable();
    const runId = await compact(['--format', 'delta']);
    let seed = 50;
    for (const day of ['2024-03-01', '2024-03-02'])
      for (let b = 0; b < 6; b += 1)
        await appendDeltaEvents(store, '', { day, rows: 40 + b, seed: seed++, now: NOW });
    await compact(['--format', 'delta']);
    const before = await folderContentSnapshot(root);
    const io = captureIo({ now: NOW + 1000 });

    // Act
    const code = await run(['undo', table, runId, '--format', 'delta'], io);

    // Assess
    expect(code).toBe(1);
    expect(io.stderr.join('\n')).toMatch(/\(OPTIMIZE\) removed .*, an output of the run/);
    expect(await folderContentSnapshot(root)).toEqual(before);
  });
});

describe('lake-compactor undo --format iceberg', () => {
  /** The table's current snapshot and the rows of its live data files (sample tables have no delete files). */
  async function live(): Promise<{ snapshot: string; rows: string[] }> {
    const store = new LocalObjectStore(root);
    const loaded = await new PathCatalog(store).load('');
    const files = await readSnapshotFiles(store, loaded);
    const paths = files.dataFiles.map((f) => sqlString(join(root, f.entry.file.key)));
    const rows = await db.rows(`SELECT * FROM read_parquet([${paths.join(', ')}]) ORDER BY ALL`);
    return { snapshot: String(loaded.metadata.currentSnapshotId), rows: rows.map((r) => JSON.stringify(r)) };
  }

  async function icebergLake(): Promise<void> {
    root = await mkdtemp(join(tmpdir(), 'lc-undo-iceberg-'));
    table = root;
    const store = new LocalObjectStore(root);
    await createIcebergEventsTable(store, '', { now: NOW });
    for (let b = 0; b < 6; b += 1)
      await appendIcebergEvents(store, '', { day: '2024-03-01', rows: 40 + b, seed: b + 1, now: NOW });
  }

  it('rolls main back to the snapshot the run started from, in one metadata version; a second undo changes nothing', async () => {
    // Prepare
    await icebergLake();
    const before = await live();
    const runId = await compact(['--format', 'iceberg']);
    const compacted = await live();
    expect(compacted.snapshot).not.toBe(before.snapshot);
    const io = captureIo({ now: NOW + 1000 });

    // Act
    const code = await run(['undo', table, runId, '--format', 'iceberg'], io);

    // Assess: the current snapshot is the one of before the run, with exactly its rows
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(io.stdout.join('\n')).toMatch(new RegExp(`main rolled back to snapshot ${before.snapshot}`));
    const after = await live();
    expect(after.snapshot).toBe(before.snapshot);
    expect(after.rows).toEqual(before.rows);
    const metadata = await readdir(join(root, 'metadata'));
    expect(metadata.filter((f) => f.endsWith('.metadata.json'))).toHaveLength(
      1 + 6 + 1 + 1, // create, six appends, the run's replace, the rollback
    );

    // Act / Assess: the same undo again finds its record, and changes nothing
    const between = await folderContentSnapshot(root);
    const again = captureIo({ now: NOW + 2000 });
    expect(await run(['undo', table, runId, '--format', 'iceberg'], again)).toBe(0);
    expect(again.stdout.join('\n')).toMatch(/nothing to do: it was undone at /);
    expect(await folderContentSnapshot(root)).toEqual(between);
  });

  it('refuses, changing no byte, when a writer committed a snapshot after the run (a rollback would drop it)', async () => {
    // Prepare
    await icebergLake();
    const runId = await compact(['--format', 'iceberg']);
    await appendIcebergEvents(new LocalObjectStore(root), '', {
      day: '2024-03-01',
      rows: 7,
      seed: 99,
      now: NOW,
    });
    const before = await folderContentSnapshot(root);
    const io = captureIo({ now: NOW + 1000 });

    // Act
    const code = await run(['undo', table, runId, '--format', 'iceberg'], io);

    // Assess
    expect(code).toBe(1);
    expect(io.stderr.join('\n')).toMatch(
      /snapshot -?\d+ \(append\) was committed after the run: rolling back to snapshot -?\d+ would drop it/,
    );
    expect(await folderContentSnapshot(root)).toEqual(before);
  });
});

describe('Ctrl-C during lake-compactor undo', () => {
  it('prints that no row is missing and that the same undo finishes it, then exits 130', async () => {
    // Prepare: process.exit stubbed so the test process survives the handler
    const exit = vi.spyOn(process, 'exit').mockImplementation(() => undefined as never);
    const printed: string[] = [];
    let exitCodes: unknown[] = [];

    // Act
    try {
      await withInterruptReport(
        { interruptedReport: () => undoInterruptedReport('/data/events', 'cli-run-1') },
        (line) => printed.push(line),
        async () => {
          process.emit('SIGINT');
        },
      );
    } finally {
      exitCodes = exit.mock.calls.map((call) => call[0]);
      exit.mockRestore();
    }

    // Assess
    expect(exitCodes).toEqual([SIGINT_EXIT_CODE]);
    expect(SIGINT_EXIT_CODE).toBe(130);
    expect(printed.join('\n')).toContain('so no row is missing');
    expect(printed.at(-1)).toBe(
      'next: run lake-compactor undo /data/events cli-run-1 again (the same options): it takes what is done as done and finishes.',
    );
  });

  it("a deployed run's interrupted undo also says its partition stays leased until the same undo runs again", () => {
    // Act
    const lines = undoInterruptedReport('s3://lake/events', 'events-g1', 'state');

    // Assess
    expect(lines).toContain(
      'the partition may stay leased to undo-events-g1 in state table state (no workflow run compacts it) until the undo is run again.',
    );
    expect(lines.at(-1)).toBe(
      'next: run lake-compactor undo s3://lake/events events-g1 again (the same options): it takes what is done as done and finishes.',
    );
  });
});
