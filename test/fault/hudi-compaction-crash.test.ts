// Crash injection into Merge-on-Read compaction (compaction-run.ts) of two tables Hudi wrote, versions 6 and 8,
// under Hudi's storage lock: the process dies before or after a step of the compaction (taking the lock, the
// requested plan, the inflight file, the staged log rows, an output's MERGE marker, the new base file, the
// completed commit, the markers' removal: every step on v6, the layout-dependent ones on v8), then again at a
// seeded-random request of the recovery run — several crashes in one trial — and a last plain re-run finishes. Between the crashes the table
// reads exactly the merged view it had before (base rows by DuckDB, an independent Parquet reader, less what the
// logs drop, plus what they keep): the old view while our instant is pending — no byte of the table Hudi wrote
// changed, our half-written files named by no completed instant — or the new view once its commit is written.
// After recovery: one completed compaction, the same row multiset from base files alone, nothing pending, no
// marker, no heartbeat (Hudi's compactor writes none), and no file in the partitions no completed instant names.
import { cp, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import type { HudiCoordination } from '../../functions/core/formats/hudi/clustering-commit.js';
import { mergeFileSlice } from '../../functions/core/formats/hudi/compaction-merge.js';
import {
  compactHudiMergeOnRead,
  compactionPolicy,
} from '../../functions/core/formats/hudi/compaction-run.js';
import { StorageBasedHudiLock } from '../../functions/core/formats/hudi/lock/index.js';
import { readHudiTable } from '../../functions/core/formats/hudi/table-state.js';
import { isCommitted } from '../../functions/core/formats/hudi/timeline.js';
import { ManualClock } from '../../functions/ports/clock.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { defaultParquetEngine } from '../../functions/shared/parquet-engine.js';
import { mulberry32 } from '../../functions/tools/sample-lake.js';
import { ageFiles } from '../support/age-files.js';
import type { StoreCall } from '../support/crash-store.js';
import { crashingStore } from '../support/crashing-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { HUDI_FIXTURES } from '../support/fixtures.js';

type Row = Record<string, unknown>;

const NOW = Date.UTC(2026, 11, 1);
/** Past the storage lock's 5-minute validity, which a dead process never released. */
const LATER = 10 * 60_000;
/**
 * How long ago a killed run's files are made to look written before the next run: past the 10 minutes after which a
 * run of ours is taken for dead by its plan's heartbeat (abandoned-plans.ts), judged by the store's own times.
 */
const DEAD_AFTER = 11 * 60_000;
const STORAGE_LOCK: HudiCoordination = {
  localZone: 'UTC',
  lockFor: (store, tableRoot, _name, clock) => new StorageBasedHudiLock({ store, tableRoot, clock }),
};
const COLUMNS = [
  '_hoodie_commit_time',
  '_hoodie_commit_seqno',
  '_hoodie_record_key',
  '_hoodie_partition_path',
  'ts',
  'uuid',
  'rider',
  'driver',
  'fare',
  'city',
];

/** The steps a crash is injected at: the first request of each, recognised by what it touches. */
const STEPS: readonly { readonly name: string; readonly matches: (c: StoreCall) => boolean }[] = [
  { name: 'take the lock', matches: (c) => c.method === 'put' && c.key.includes('.hoodie/.locks') },
  { name: 'write the plan', matches: (c) => c.method === 'put' && c.key.endsWith('.compaction.requested') },
  {
    name: 'write the inflight',
    matches: (c) => c.method === 'put' && c.key.endsWith('.compaction.inflight'),
  },
  {
    name: 'stage the log rows',
    matches: (c) => c.method === 'put' && c.key.includes('lake-compactor-staging'),
  },
  { name: 'write a marker', matches: (c) => c.method === 'put' && c.key.endsWith('.marker.MERGE') },
  {
    name: 'write the new base file',
    matches: (c) =>
      (c.method === 'put' || c.method === 'putStream') &&
      /\.parquet$/.test(c.key) &&
      !c.key.includes('.hoodie/'),
  },
  { name: 'write the completed commit', matches: (c) => c.method === 'put' && /\.commit$/.test(c.key) },
  { name: 'remove the markers', matches: (c) => c.method === 'deleteMany' && c.key.includes('.marker.') },
];

interface Template {
  readonly name: string;
  readonly version: 6 | 8;
  readonly dir: string;
  /** The merged view before compaction: the oracle. */
  readonly rows: string[];
  /** Every file of the table as Hudi wrote it, with its bytes. */
  readonly files: Map<string, Buffer>;
  /** Requests a clean compaction makes, and the 1-based request each step starts at. */
  readonly requests: number;
  readonly steps: ReadonlyMap<string, number>;
  /** File slices a clean compaction compacts. */
  readonly compacted: number;
}

let db: DuckDb;
const templates: Template[] = [];
const scratch: string[] = [];
/** What the crashes left, over all trials: proof the injections reach the states that matter. */
const covered = { pendingAfterCrash: 0, markersAfterCrash: 0, committedBeforeCrash: 0, secondCrashes: 0 };

function timelineDir(dir: string, version: number): string {
  return join(dir, version === 6 ? '.hoodie' : '.hoodie/timeline');
}

function plain(v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString();
  if (v instanceof Uint8Array) return Buffer.from(v).toString('hex');
  return v;
}

function canonical(rows: readonly Row[]): string[] {
  return rows.map((r) => JSON.stringify(COLUMNS.map((c) => plain(r[c])))).sort();
}

/** The merged view of every live slice, as a snapshot read sees it: DuckDB's base rows merged with the logs. */
async function mergedView(dir: string): Promise<string[]> {
  const store = new LocalObjectStore(dir);
  const state = await readHudiTable(store, '');
  const policy = compactionPolicy(state);
  const rows: Row[] = [];
  for (const p of state.partitions)
    for (const slice of p.liveSlices) {
      if (slice.baseFile === undefined) throw new Error(`log-only slice ${slice.fileId}`);
      const base = await db.rows(
        `SELECT ${COLUMNS.join(', ')} FROM read_parquet(${sqlString(join(dir, slice.baseFile.key))}, file_row_number = true) ORDER BY file_row_number`,
      );
      if (slice.logFiles.length === 0) {
        rows.push(...base);
        continue;
      }
      const merged = await mergeFileSlice(
        store,
        { baseKey: slice.baseFile.key, logKeys: slice.logFiles.map((l) => l.key) },
        policy,
        (i) => isCommitted(state.timeline, i),
        '99999999999999999',
      );
      const dropped = new Set(merged.merge.dropPositions);
      rows.push(...base.filter((_, i) => !dropped.has(i)), ...merged.merge.append);
    }
  return canonical(rows);
}

/**
 * The files Hudi wrote whose bytes differ now (a file gone throws): none is expected. Compared with Buffer.equals,
 * not toEqual per file: vitest's deep equality walks a Buffer byte by byte and then its entries, seconds per base
 * file, and the trials compare every file of the table twice.
 */
async function changedFiles(t: Template, dir: string): Promise<string[]> {
  const changed: string[] = [];
  for (const [f, bytes] of t.files) if (!(await readFile(join(dir, f))).equals(bytes)) changed.push(f);
  return changed;
}

async function filesUnder(dir: string, relative = ''): Promise<string[]> {
  return (await readdir(join(dir, relative), { recursive: true, withFileTypes: true }).catch(() => []))
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name).slice(dir.length + 1))
    .sort();
}

/** Requested or inflight files whose instant never completed. */
async function pendingInstants(dir: string, version: number): Promise<string[]> {
  const names = await readdir(timelineDir(dir, version));
  const completed = new Set(
    names.filter((n) => /^\d{17}(_\d{17})?\.[a-z]+$/.test(n)).map((n) => n.slice(0, 17)),
  );
  return names.filter((n) => /\.(requested|inflight)$/.test(n) && !completed.has(n.slice(0, 17))).sort();
}

/** Completed compaction commits we wrote: `.commit` files the table did not hold. */
async function newCommits(t: Template, dir: string): Promise<string[]> {
  const rel = t.version === 6 ? '.hoodie' : '.hoodie/timeline';
  return (await readdir(timelineDir(dir, t.version)))
    .filter((n) => n.endsWith('.commit') && !t.files.has(`${rel}/${n}`))
    .sort();
}

/**
 * The rows a reader sees now: the new base files once our commit completed; before, the old slices — the table
 * as if our pending instant's timeline files were not there (a reader sets a pending compaction's new base files
 * aside; they are named by no completed instant).
 */
async function visibleRows(t: Template, dir: string): Promise<string[]> {
  if ((await newCommits(t, dir)).length > 0) return mergedView(dir);
  const view = await copyOf(dir);
  const rel = t.version === 6 ? '.hoodie' : '.hoodie/timeline';
  for (const name of await pendingInstants(view, t.version))
    if (!t.files.has(`${rel}/${name}`)) await rm(join(timelineDir(view, t.version), name));
  return mergedView(view);
}

async function copyOf(dir: string): Promise<string> {
  const target = await mkdtemp(join(tmpdir(), 'lc-hudi-mor-crash-'));
  scratch.push(target);
  await cp(dir, target, { recursive: true });
  return target;
}

/** The table as if written with hoodie.metadata.enable=false (lake-compactor refuses a metadata table). */
async function dropMetadataTable(dir: string): Promise<void> {
  await rm(join(dir, '.hoodie', 'metadata'), { recursive: true, force: true });
  await rm(join(dir, '.hoodie', '.index_defs'), { recursive: true, force: true });
  const props = join(dir, '.hoodie', 'hoodie.properties');
  const text = await readFile(props, 'utf8');
  await writeFile(
    props,
    text
      .split('\n')
      .filter(
        (l) =>
          !l.startsWith('hoodie.table.metadata.partitions') && !l.startsWith('hoodie.table.index.defs.path'),
      )
      .join('\n'),
  );
}

function deps(store: ObjectStore, now: number) {
  return { store, engine: defaultParquetEngine, clock: new ManualClock(now), coordination: STORAGE_LOCK };
}

/** Runs a compaction that dies at request `at`; resolves once its last in-flight requests landed. */
async function compactDyingAt(
  dir: string,
  at: number,
  when: 'before' | 'after',
  now: number,
): Promise<boolean> {
  const crashing = crashingStore(new LocalObjectStore(dir), at, when);
  await compactHudiMergeOnRead(deps(crashing.store, now), '', { deltaCommits: 1 }).catch(() => undefined);
  await crashing.quiesce();
  return crashing.crashed();
}

async function buildTemplate(name: string, version: 6 | 8, withoutMetadataTable: boolean): Promise<Template> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-mor-crash-tpl-'));
  scratch.push(dir);
  await cp(join(HUDI_FIXTURES, name), dir, { recursive: true });
  if (withoutMetadataTable) await dropMetadataTable(dir);
  const files = new Map<string, Buffer>();
  for (const f of await filesUnder(dir)) files.set(f, await readFile(join(dir, f)));
  const rows = await mergedView(dir);
  // Calibrate on a copy: the requests of a clean compaction, and where each step starts.
  const probe = await copyOf(dir);
  const calls: StoreCall[] = [];
  const observed = crashingStore(new LocalObjectStore(probe), Number.POSITIVE_INFINITY, 'before', calls);
  const result = await compactHudiMergeOnRead(deps(observed.store, NOW), '', { deltaCommits: 1 });
  if (result.kind !== 'compacted') throw new Error(`${name}: calibration compacted nothing`);
  const steps = new Map<string, number>();
  for (const step of STEPS) {
    const index = calls.findIndex(step.matches);
    if (index >= 0) steps.set(step.name, index + 1);
  }
  return { name, version, dir, rows, files, requests: calls.length, steps, compacted: result.slices.length };
}

beforeAll(async () => {
  db = await openDuckDb();
  templates.push(await buildTemplate('mor_v6_trips_8i1u', 6, false));
  templates.push(await buildTemplate('mor_v8_trips_8i3u1d', 8, true));
}, 240_000);

afterAll(async () => {
  db.close();
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
});

describe('Hudi Merge-on-Read compaction killed at each step', () => {
  it('calibration found every step of the compaction, in protocol order', () => {
    for (const t of templates) {
      expect([...t.steps.keys()], t.name).toEqual(STEPS.map((s) => s.name));
      const order = STEPS.map((s) => t.steps.get(s.name) ?? 0);
      expect(order.slice(1), t.name).toEqual([...order.slice(1)].sort((a, b) => a - b));
    }
  });

  // Every step on the v6 table, before and after in turn; on v8 (same code, other timeline layout) the steps whose
  // files differ by layout: the plan and the completed commit (markers live in .hoodie/.temp/ in both layouts).
  // A trial is three compactions: few, each chosen, as npm test runs them all.
  const V8_STEPS = new Set(['write the plan', 'write the completed commit']);
  const trials = [
    ...STEPS.map((step, si) => ({
      name: 'mor_v6_trips_8i1u',
      step: step.name,
      when: si % 2 === 0 ? ('before' as const) : ('after' as const),
      seed: 0x6d0c0000 + si,
    })),
    ...STEPS.filter((step) => V8_STEPS.has(step.name)).map((step, si) => ({
      name: 'mor_v8_trips_8i3u1d',
      step: step.name,
      when: si % 2 === 0 ? ('after' as const) : ('before' as const),
      seed: 0x6d0c0100 + si,
    })),
  ];
  for (const trial of trials)
    it(`${trial.name}: a crash ${trial.when} "${trial.step}", another during recovery, then a re-run: the same rows, one compaction, nothing left over`, async () => {
      // Prepare: the table, where the first crash falls, and a seeded second crash in the recovery run
      const t = templates.find((x) => x.name === trial.name) as Template;
      const at = t.steps.get(trial.step) as number;
      const rng = mulberry32(trial.seed);
      const secondAt = 1 + Math.floor(rng() * t.requests);
      const secondWhen = rng() < 0.5 ? 'before' : 'after';
      const dir = await copyOf(t.dir);
      const trace = `${trial.name}: crash ${trial.when} request ${at}/${t.requests} (${trial.step}), then ${secondWhen} ${secondAt}`;

      // Act: the crashed run; every byte Hudi wrote is intact and a reader sees the same rows
      expect(await compactDyingAt(dir, at, trial.when, NOW), trace).toBe(true);
      expect(await changedFiles(t, dir), trace).toEqual([]);
      expect(await visibleRows(t, dir), trace).toEqual(t.rows);
      if ((await pendingInstants(dir, t.version)).length > 0) covered.pendingAfterCrash += 1;
      if ((await filesUnder(dir, '.hoodie/.temp')).some((f) => f.includes('.marker.')))
        covered.markersAfterCrash += 1;
      if ((await newCommits(t, dir)).length > 0) covered.committedBeforeCrash += 1;
      // The recovery run dies too (the killed run's files as time would leave them: it is dead)
      await ageFiles(dir, DEAD_AFTER);
      if (await compactDyingAt(dir, secondAt, secondWhen, NOW + LATER)) covered.secondCrashes += 1;
      expect(await visibleRows(t, dir), trace).toEqual(t.rows);
      await ageFiles(dir, DEAD_AFTER);
      const last = await compactHudiMergeOnRead(deps(new LocalObjectStore(dir), NOW + 2 * LATER), '', {
        deltaCommits: 1,
      });

      // Assess: one completed compaction, its base files alone hold the rows; Hudi's files byte for byte
      const commits = await newCommits(t, dir);
      expect(commits, `${trace}: ${JSON.stringify(last)}`).toHaveLength(1);
      const state = await readHudiTable(new LocalObjectStore(dir), '');
      const slices = state.partitions.flatMap((p) => p.liveSlices);
      for (const s of slices) expect(s.logFiles, trace).toEqual([]);
      expect(
        slices.filter((s) => s.baseInstantTime === commits[0]?.slice(0, 17)),
        trace,
      ).toHaveLength(t.compacted);
      expect(await mergedView(dir), trace).toEqual(t.rows);
      expect(await changedFiles(t, dir), trace).toEqual([]);
      // Nothing pending, no marker, staging or heartbeat, no file in the partitions but Hudi's and our outputs
      expect(await pendingInstants(dir, t.version), trace).toEqual([]);
      expect(await filesUnder(dir, '.hoodie/.temp'), trace).toEqual([]);
      expect(await filesUnder(dir, '.hoodie/.heartbeat'), trace).toEqual([]);
      const outputs = slices.map((s) => s.baseFile?.key ?? '').filter((k) => !t.files.has(k));
      const dataFiles = (await filesUnder(dir)).filter((f) => !f.startsWith('.hoodie/') && !t.files.has(f));
      expect(dataFiles, trace).toEqual([...outputs].sort());
    }, 300_000);

  it('the crashes left our instant pending, markers behind, a commit written, and recoveries crashed again', () => {
    expect(covered.pendingAfterCrash).toBeGreaterThan(0);
    expect(covered.markersAfterCrash).toBeGreaterThan(0);
    expect(covered.committedBeforeCrash).toBeGreaterThan(0);
    expect(covered.secondCrashes).toBeGreaterThan(0);
  });
});
