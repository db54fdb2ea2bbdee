// Crash injection into `lake-compactor compact --format iceberg` on a path-catalog table: the process dies at a
// seeded-random request (before or after it ran; sometimes a second time during the recovery), and a plain re-run
// (or `settle --format iceberg`, then a re-run) completes. Between the crash and the recovery the table loads, its
// current metadata file is whole, and it is at the old snapshot or at one of our replace snapshots — never in
// between — reading exactly the original rows. At the end the original metadata files are untouched, there is
// exactly one replace snapshot per group (each with its own run/group tag), the live rows are the original
// multiset, and every file under data/ is one some snapshot references (an output copied but never committed is
// deleted by settling; the inputs the replaces removed stay, referenced by the older snapshots).
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { findCurrentMetadata, loadTable } from '../../functions/core/formats/iceberg/catalog.js';
import { GROUP_ID_PROPERTY, RUN_ID_PROPERTY } from '../../functions/core/formats/iceberg/group-commit.js';
import { parseJsonKeepingLongs } from '../../functions/core/formats/iceberg/json.js';
import { readSnapshotFiles } from '../../functions/core/formats/iceberg/live-files.js';
import { appendIcebergEvents, createIcebergEventsTable } from '../../functions/tools/sample-iceberg.js';
import { mulberry32 } from '../../functions/tools/sample-lake.js';
import { captureIo } from '../support/cli-io.js';
import type { StoreCall } from '../support/crash-store.js';
import { crashingStore } from '../support/crashing-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { trialCount } from '../support/trials.js';

const NOW = Date.UTC(2024, 2, 3);
/** Seeded trials: 24 in `npm test`, more in a soak run (test/support/trials.ts). */
const TRIALS = trialCount(24);
const IO = { out: () => {}, clock: { now: () => NOW }, env: {} };

/**
 * Two small table shapes (a group needs five inputs): one partition of five files (drawn four times as often: a
 * trial costs a compaction, with its verify worker, per partition), and two partitions of five each.
 */
const ONE_PARTITION = [{ day: '2024-03-01', files: 5 }] as const;
const SHAPES: readonly (readonly { day: string; files: number }[])[] = [
  ONE_PARTITION,
  ONE_PARTITION,
  ONE_PARTITION,
  ONE_PARTITION,
  [
    { day: '2024-03-01', files: 5 },
    { day: '2024-03-02', files: 5 },
  ],
];

interface Template {
  readonly dir: string;
  /** The snapshot ids of the table before any compaction, in order, as decimal text. */
  readonly snapshotIds: string[];
  /** The metadata files (names under metadata/) before any compaction. */
  readonly metadataFiles: string[];
  readonly rows: string[];
  /** Requests a clean compaction of the table makes (the range a crash point is drawn from). */
  readonly requests: number;
  /** The first request of the commit steps (the first copy of a staged output into the table), 1-based. */
  readonly commitStart: number;
  readonly partitions: number;
}

let db: DuckDb;
const templates: Template[] = [];
/** What the crashes left, over all trials: proof the draws reach the states that matter. */
const covered = {
  committedBeforeCrash: 0,
  strayOutputsAfterCrash: 0,
  secondCrashes: 0,
  viaSettle: 0,
};
const scratch: string[] = [];

interface TableState {
  readonly snapshotIds: string[];
  readonly currentId: string | undefined;
  /** The summaries of the snapshots, in order. */
  readonly summaries: Record<string, string>[];
  readonly rows: string[];
  /** Every data file key some snapshot of the table references (read only when asked for: every manifest). */
  readonly referenced: Set<string>;
}

/** The table as a reader finds it through the path catalog: its snapshots and the current one's live rows. */
async function tableState(dir: string, withReferenced = true): Promise<TableState> {
  const store = new LocalObjectStore(dir);
  const table = await loadTable(store, '');
  const current = await readSnapshotFiles(store, table);
  // A file the current snapshot lists but storage lacks is a lost row set (e.g. a committed group's outputs
  // deleted by a recovery that took it for aborted): named here rather than as DuckDB's IO error.
  const missing: string[] = [];
  for (const f of current.dataFiles)
    if ((await store.head(f.entry.file.key)) === undefined) missing.push(f.entry.file.key);
  expect(missing, 'data files the current snapshot lists that are not on storage').toEqual([]);
  const files = current.dataFiles.map((f) => sqlString(join(dir, f.entry.file.key))).join(', ');
  const rows = await db.rows(`SELECT * FROM read_parquet([${files}]) ORDER BY ALL`);
  const referenced = new Set<string>();
  for (const s of withReferenced ? table.metadata.snapshots : []) {
    const files = await readSnapshotFiles(store, table, { snapshotId: s.snapshotId });
    for (const f of files.dataFiles) referenced.add(f.entry.file.key);
  }
  return {
    snapshotIds: table.metadata.snapshots.map((s) => s.snapshotId.toString()),
    currentId: current.snapshot?.snapshotId.toString(),
    summaries: table.metadata.snapshots.map((s) => ({ ...s.summary })),
    rows: rows.map((r) => JSON.stringify(r)),
    referenced,
  };
}

async function metadataFiles(dir: string): Promise<string[]> {
  return (await readdir(join(dir, 'metadata'))).filter((n) => /^v\d+\.metadata\.json$/.test(n)).sort();
}

async function dataKeys(dir: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of new LocalObjectStore(dir).listAll('data/')) keys.push(o.key);
  return keys.sort();
}

async function buildTemplate(shape: (typeof SHAPES)[number]): Promise<Template> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-iceberg-crash-tpl-'));
  scratch.push(dir);
  const store = new LocalObjectStore(dir);
  await createIcebergEventsTable(store, '', { now: NOW });
  let seed = 1;
  for (const { day, files } of shape) {
    for (let b = 0; b < files; b += 1)
      await appendIcebergEvents(store, '', { day, rows: 10 + b, seed: seed++, now: NOW });
  }
  const state = await tableState(dir);
  // Calibrate on a copy: how many requests a clean compaction makes.
  const probe = await copyOf(dir);
  const calls: StoreCall[] = [];
  await runCompact(probe, { format: 'iceberg' }, IO, {
    wrapStore: (inner) => crashingStore(inner, Number.POSITIVE_INFINITY, 'before', calls).store,
  });
  const commitStart = 1 + calls.findIndex((c) => c.method === 'copy');
  return {
    dir,
    snapshotIds: state.snapshotIds,
    metadataFiles: await metadataFiles(dir),
    rows: state.rows,
    requests: calls.length,
    commitStart,
    partitions: shape.length,
  };
}

async function copyOf(dir: string): Promise<string> {
  const target = await mkdtemp(join(tmpdir(), 'lc-iceberg-crash-'));
  scratch.push(target);
  await cp(dir, target, { recursive: true });
  return target;
}

/** Runs a compaction that dies at `at`; resolves once its last in-flight requests landed. */
async function compactDyingAt(dir: string, at: number, when: 'before' | 'after'): Promise<boolean> {
  let crashing: ReturnType<typeof crashingStore> | undefined;
  await runCompact(dir, { format: 'iceberg' }, IO, {
    wrapStore: (inner) => {
      crashing = crashingStore(inner, at, when);
      return crashing.store;
    },
  }).catch(() => undefined);
  await crashing?.quiesce();
  return crashing?.crashed() ?? false;
}

/** The run/group tags of the snapshots after the template's, and whether each is a replace. */
function ourSnapshots(template: Template, state: TableState): { tag: string; operation: string }[] {
  return state.summaries.slice(template.snapshotIds.length).map((s) => ({
    tag: `${s[RUN_ID_PROPERTY]}/${s[GROUP_ID_PROPERTY]}`,
    operation: s.operation ?? '?',
  }));
}

/**
 * What must hold whenever the process is not running: the current metadata file is whole JSON and loads; the
 * template's snapshots are all still there, followed only by tagged replace snapshots (at most one per partition,
 * each tag once), the current snapshot being the last of them (or the template's own current one); and the live
 * rows are exactly the original ones.
 */
async function expectOldOrNew(
  dir: string,
  template: Template,
  trace: string,
  withReferenced = false,
): Promise<TableState> {
  const current = await findCurrentMetadata(new LocalObjectStore(dir), '');
  const text = await readFile(join(dir, current.key), 'utf8');
  expect(() => parseJsonKeepingLongs(text), `${trace}: ${current.key} is whole JSON`).not.toThrow();
  const state = await tableState(dir, withReferenced);
  expect(state.snapshotIds.slice(0, template.snapshotIds.length), trace).toEqual(template.snapshotIds);
  const ours = ourSnapshots(template, state);
  expect(ours.length, trace).toBeLessThanOrEqual(template.partitions);
  for (const s of ours) {
    expect(s.operation, trace).toBe('replace');
    expect(s.tag, trace).not.toContain('undefined');
  }
  expect(new Set(ours.map((s) => s.tag)).size, trace).toBe(ours.length);
  expect(state.currentId, trace).toBe(state.snapshotIds.at(-1));
  expect(state.rows, trace).toEqual(template.rows);
  return state;
}

beforeAll(async () => {
  db = await openDuckDb();
  const built = new Map<(typeof SHAPES)[number], Template>();
  for (const shape of SHAPES) {
    const template = built.get(shape) ?? (await buildTemplate(shape));
    built.set(shape, template);
    templates.push(template);
  }
}, 60_000);

afterAll(async () => {
  db.close();
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
});

describe('Iceberg compaction killed at a random request', () => {
  it('calibration found requests to crash at, the commit steps among them', () => {
    for (const t of templates) {
      expect(t.requests).toBeGreaterThan(10);
      expect(t.commitStart).toBeGreaterThan(1);
      expect(t.commitStart).toBeLessThan(t.requests);
    }
  });

  for (let trial = 1; trial <= TRIALS; trial += 1) {
    const seed = 0x1ce00000 + trial;
    it(`seed ${seed}: the table is at the old or a new snapshot after each crash, and a re-run ends with one replace per partition, the original rows and no stray data file`, async () => {
      // Prepare: the table, and where (and how) the run dies, drawn from the seed
      const rng = mulberry32(seed);
      const template = templates[Math.floor(rng() * templates.length)] as Template;
      // Half the crashes fall anywhere, half in the commit steps (a small share of all requests, the one that matters).
      const from = rng() < 0.5 ? 1 : template.commitStart;
      const at = from + Math.floor(rng() * (template.requests - from + 1));
      const when = rng() < 0.5 ? 'before' : 'after';
      const viaSettle = rng() < 0.5;
      const secondAt = rng() < 0.25 ? 1 + Math.floor(rng() * template.requests) : undefined;
      const secondWhen = rng() < 0.5 ? 'before' : 'after';
      const dir = await copyOf(template.dir);
      const trace = `seed ${seed}: crash ${when} request ${at}/${template.requests} (commit from ${template.commitStart}), recovery ${viaSettle ? 'settle+compact' : 'compact'}${secondAt === undefined ? '' : `, second crash ${secondWhen} ${secondAt}`}`;

      // Act: the crashed run; between crash and recovery the table is at the old or a new snapshot, rows unchanged
      await compactDyingAt(dir, at, when);
      const between = await expectOldOrNew(dir, template, trace, true);
      if (between.snapshotIds.length > template.snapshotIds.length) covered.committedBeforeCrash += 1;
      if ((await dataKeys(dir)).some((k) => !between.referenced.has(k))) covered.strayOutputsAfterCrash += 1;
      // Each metadata file the crashed run wrote is one of its replace snapshots: none half-done, none besides.
      expect(await metadataFiles(dir), trace).toHaveLength(
        template.metadataFiles.length + between.snapshotIds.length - template.snapshotIds.length,
      );

      if (viaSettle) {
        covered.viaSettle += 1;
        const io = captureIo();
        expect(
          await run(['settle', dir, '--format', 'iceberg'], io),
          `${trace}\n${io.stderr.join('\n')}`,
        ).toBe(0);
        await expectOldOrNew(dir, template, `${trace} (after settle)`);
      }
      if (secondAt !== undefined) {
        if (await compactDyingAt(dir, secondAt, secondWhen)) covered.secondCrashes += 1;
        await expectOldOrNew(dir, template, `${trace} (after the second crash)`);
      }
      await runCompact(dir, { format: 'iceberg' }, IO);

      // Assess: the original metadata untouched, then one tagged replace per partition, each group committed once
      for (const name of template.metadataFiles)
        expect(await readFile(join(dir, 'metadata', name)), `${trace}: ${name}`).toEqual(
          await readFile(join(template.dir, 'metadata', name)),
        );
      const after = await expectOldOrNew(dir, template, `${trace} (after recovery)`, true);
      expect(ourSnapshots(template, after), trace).toHaveLength(template.partitions);
      expect(await metadataFiles(dir), trace).toHaveLength(
        template.metadataFiles.length + template.partitions,
      );
      // One live data file per partition, the same rows
      const store = new LocalObjectStore(dir);
      const live = await readSnapshotFiles(store, await loadTable(store, ''));
      expect(live.dataFiles, trace).toHaveLength(template.partitions);
      expect(after.rows, trace).toEqual(template.rows);
      // Every data file some snapshot references is there, and nothing else is under data/
      expect(await dataKeys(dir), trace).toEqual([...after.referenced].sort());
    }, 30_000);
  }

  it('the trials crashed after a commit, with outputs copied but uncommitted, and again during recovery', () => {
    expect(covered.committedBeforeCrash).toBeGreaterThan(0);
    expect(covered.strayOutputsAfterCrash).toBeGreaterThan(0);
    expect(covered.secondCrashes).toBeGreaterThan(0);
    expect(covered.viaSettle).toBeGreaterThan(0);
  });
});
