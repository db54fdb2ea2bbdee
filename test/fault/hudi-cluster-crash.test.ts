// Crash injection into `lake-compactor compact --format hudi` (clustering of a Copy-on-Write table, versions 6 and
// 8, under Hudi's storage lock): the process dies at a seeded-random request (before or after it ran; sometimes a
// second time during the recovery), and recovery — `settle` (the sweep's settle of a partition) and/or a plain
// re-run — completes. Between the crash and the recovery the live file slices, as the timeline defines them, read
// exactly the original rows (the old view, or the new one when the crash came after the completed replacecommit);
// after it, each partition was clustered by exactly one completed replacecommit, the rows are the original
// multiset, the original instant files are byte for byte unchanged, no instant of ours is pending (no requested or
// inflight file without its completion), no heartbeat or marker of ours is left, and the partition folders hold
// only files some completed instant wrote: nothing a Hudi reader listing the folders could take for data.
import { cp, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { mulberry32 } from '../../functions/tools/sample-lake.js';
import { captureIo } from '../support/cli-io.js';
import type { StoreCall } from '../support/crash-store.js';
import { crashingStore } from '../support/crashing-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { appendHudiInsert, createHudiTable } from '../support/hudi-appender.js';
import { completedWrites, liveFiles } from '../support/hudi-replay.js';
import { trialCount } from '../support/trials.js';

const NOW = Date.UTC(2024, 3, 1);
/** Past the storage lock's 5-minute validity, which a dead process never released. */
const LATER = 10 * 60_000;
/** Seeded trials: 12 in `npm test`, more in a soak run (test/support/trials.ts). */
const TRIALS = trialCount(12);
const FLAGS = { format: 'hudi', hudiLock: 'storage', hudiIndexType: 'BLOOM' } as const;
const CLI_FLAGS = ['--format', 'hudi', '--hudi-lock', 'storage', '--hudi-index-type', 'BLOOM'];
const ioAt = (now: number) => ({ out: () => {}, clock: { now: () => now }, env: {} });

/** Table shapes: version, and files per partition (one partition drawn twice as often: a trial costs less). */
const SHAPES = [
  { version: 6, partitions: { '10': 5 } },
  { version: 8, partitions: { '10': 5 } },
  { version: 6, partitions: { '10': 5, '20': 5 } },
  { version: 8, partitions: { '10': 5, '20': 5 } },
] as const;
type Shape = (typeof SHAPES)[number];

interface Template {
  readonly shape: Shape;
  readonly dir: string;
  readonly rows: string[];
  /** The timeline folder's files before any clustering, byte for byte. */
  readonly instantFiles: Map<string, Buffer>;
  /** Requests a clean clustering makes (the range a crash point is drawn from). */
  readonly requests: number;
  /** The first request writing to the table (the clustering plan), 1-based. */
  readonly planStart: number;
  /** The first copy of an output into the table (publishing), 1-based. */
  readonly publishStart: number;
}

let db: DuckDb;
const templates: Template[] = [];
const scratch: string[] = [];
/** What the crashes left, over all trials: proof the draws reach the states that matter. */
const covered = {
  committedBeforeCrash: 0,
  pendingAfterCrash: 0,
  markersAfterCrash: 0,
  secondCrashes: 0,
  viaSettle: 0,
  versions: new Set<number>(),
};

function timelineDir(dir: string, version: number): string {
  return join(dir, version === 6 ? '.hoodie' : '.hoodie/timeline');
}

/** The live rows by the independent replay, canonically ordered (`_hoodie_file_name` names the slice: dropped). */
async function liveRows(dir: string, version: 6 | 8): Promise<{ files: string[]; rows: string[] }> {
  const files = await liveFiles(dir, version);
  const list = files.map((f) => sqlString(join(dir, f))).join(', ');
  const rows = await db.rows(
    `SELECT * EXCLUDE (_hoodie_file_name) FROM read_parquet([${list}]) ORDER BY ALL`,
  );
  return { files, rows: rows.map((r) => JSON.stringify(r)) };
}

/** Requested or inflight files whose instant never completed. */
async function pendingInstants(dir: string, version: number): Promise<string[]> {
  const names = await readdir(timelineDir(dir, version));
  const completed = new Set(
    names.filter((n) => /^\d{17}(_\d{17})?\.[a-z]+$/.test(n)).map((n) => n.slice(0, 17)),
  );
  return names.filter((n) => /\.(requested|inflight)$/.test(n) && !completed.has(n.slice(0, 17))).sort();
}

async function filesUnder(dir: string, relative: string): Promise<string[]> {
  return (await readdir(join(dir, relative), { recursive: true, withFileTypes: true }).catch(() => []))
    .filter((d) => d.isFile())
    .map((d) => join(d.parentPath, d.name).slice(dir.length + 1))
    .sort();
}

/** Parquet files in the partition folders. */
async function partitionParquet(dir: string, shape: Shape): Promise<string[]> {
  const out: string[] = [];
  for (const p of Object.keys(shape.partitions))
    for (const n of await readdir(join(dir, p))) if (n.endsWith('.parquet')) out.push(`${p}/${n}`);
  return out.sort();
}

/** Every file some completed write names: what a listing of the partitions may hold. */
async function writtenByCompleted(dir: string, version: 6 | 8): Promise<string[]> {
  return [
    ...new Set((await completedWrites(dir, version)).flatMap((w) => w.stats.map((s) => s.path))),
  ].sort();
}

/** The Hudi instants our journal entries record (`formatState.hudiInstant`). */
async function journaledInstants(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const key of await filesUnder(dir, '_lake-compactor'))
    if (key.endsWith('.json')) {
      const text = (await readFile(join(dir, key))).toString('utf8');
      const instant = /"hudiInstant":"(\d{17})"/.exec(text)?.[1];
      if (instant !== undefined) out.push(instant);
    }
  return out;
}

async function copyOf(dir: string): Promise<string> {
  const target = await mkdtemp(join(tmpdir(), 'lc-hudi-crash-'));
  scratch.push(target);
  await cp(dir, target, { recursive: true });
  return target;
}

async function buildTemplate(shape: Shape): Promise<Template> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-hudi-crash-tpl-'));
  scratch.push(dir);
  const store = new LocalObjectStore(dir);
  const table = await createHudiTable(store, '', shape.version);
  for (const [partition, files] of Object.entries(shape.partitions))
    for (let b = 0; b < files; b += 1) await appendHudiInsert(table, partition, 3 + b);
  const { rows } = await liveRows(dir, shape.version);
  const instantFiles = new Map<string, Buffer>();
  for (const name of await readdir(timelineDir(dir, shape.version)))
    if (/^\d{17}/.test(name))
      instantFiles.set(name, await readFile(join(timelineDir(dir, shape.version), name)));
  // Calibrate on a copy: how many requests a clean clustering makes, and where it starts writing to the table.
  const probe = await copyOf(dir);
  const calls: StoreCall[] = [];
  await runCompact(probe, { ...FLAGS }, ioAt(NOW), {
    wrapStore: (inner) => crashingStore(inner, Number.POSITIVE_INFINITY, 'before', calls).store,
  });
  const planStart =
    1 + calls.findIndex((c) => c.method === 'put' && /\.(replacecommit|clustering)\.requested$/.test(c.key));
  const publishStart = 1 + calls.findIndex((c) => c.method === 'copy');
  return { shape, dir, rows, instantFiles, requests: calls.length, planStart, publishStart };
}

/** Runs a clustering that dies at `at`; resolves once its last in-flight requests landed. */
async function compactDyingAt(
  dir: string,
  at: number,
  when: 'before' | 'after',
  now: number,
): Promise<boolean> {
  let crashing: ReturnType<typeof crashingStore> | undefined;
  await runCompact(dir, { ...FLAGS }, ioAt(now), {
    wrapStore: (inner) => {
      crashing = crashingStore(inner, at, when);
      return crashing.store;
    },
  }).catch(() => undefined);
  await crashing?.quiesce();
  return crashing?.crashed() ?? false;
}

beforeAll(async () => {
  db = await openDuckDb();
  for (const shape of SHAPES) templates.push(await buildTemplate(shape));
}, 240_000);

afterAll(async () => {
  db.close();
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
});

describe('Hudi clustering killed at a random request', () => {
  it('calibration found requests to crash at, the plan before the first copy', () => {
    for (const t of templates) {
      expect(t.requests).toBeGreaterThan(20);
      expect(t.planStart).toBeGreaterThan(1);
      expect(t.publishStart).toBeGreaterThan(t.planStart);
    }
  });

  for (let trial = 1; trial <= TRIALS; trial += 1) {
    const seed = 0x4d0d0000 + trial;
    it(`seed ${seed}: recovery ends with one replacecommit per partition, the original rows, nothing pending or stray`, async () => {
      // Prepare: the table, and where (and how) the run dies, drawn from the seed
      const rng = mulberry32(seed);
      const template = templates[Math.floor(rng() * templates.length)] as Template;
      const { version } = template.shape;
      const partitions = Object.keys(template.shape.partitions).length;
      // A third of the crashes fall anywhere, two thirds while our instant is pending (plan → completion).
      const from = rng() < 1 / 3 ? 1 : template.planStart;
      const at = from + Math.floor(rng() * (template.requests - from + 1));
      const when = rng() < 0.5 ? 'before' : 'after';
      const viaSettle = rng() < 0.5;
      const secondAt = rng() < 0.3 ? 1 + Math.floor(rng() * template.requests) : undefined;
      const secondWhen = rng() < 0.5 ? 'before' : 'after';
      const dir = await copyOf(template.dir);
      const trace = `seed ${seed} (v${version}, ${partitions} partition(s)): crash ${when} request ${at}/${template.requests}, recovery ${viaSettle ? 'settle+compact' : 'compact'}${secondAt === undefined ? '' : `, second crash ${secondWhen} ${secondAt}`}`;
      covered.versions.add(version);

      // Act: the crashed run; the table between crash and recovery reads exactly the original rows
      await compactDyingAt(dir, at, when, NOW);
      const between = await liveRows(dir, version);
      expect(between.rows, trace).toEqual(template.rows);
      const clusteredBefore = (await completedWrites(dir, version)).filter((w) =>
        w.name.endsWith('.replacecommit'),
      ).length;
      if (clusteredBefore > 0) covered.committedBeforeCrash += 1;
      const pending = await pendingInstants(dir, version);
      if (pending.length > 0) {
        covered.pendingAfterCrash += 1;
        // Every pending instant of ours is in the journal, so a settle or re-run can find and undo it.
        const journaled = await journaledInstants(dir);
        for (const p of pending) expect(journaled, `${trace}: ${p}`).toContain(p.slice(0, 17));
      }
      if ((await filesUnder(dir, '.hoodie/.temp')).length > 0) covered.markersAfterCrash += 1;

      let now = NOW + LATER;
      if (viaSettle) {
        covered.viaSettle += 1;
        const io = captureIo({ now });
        expect(await run(['settle', dir, ...CLI_FLAGS], io), `${trace}\n${io.stderr.join('\n')}`).toBe(0);
        expect((await liveRows(dir, version)).rows, trace).toEqual(template.rows);
        expect(await pendingInstants(dir, version), `${trace}: pending after settle`).toEqual([]);
        now += LATER;
      }
      if (secondAt !== undefined) {
        if (await compactDyingAt(dir, secondAt, secondWhen, now)) covered.secondCrashes += 1;
        expect((await liveRows(dir, version)).rows, trace).toEqual(template.rows);
        now += LATER;
      }
      await runCompact(dir, { ...FLAGS }, ioAt(now));

      // Assess: the original instant files untouched, one completed clustering per partition
      for (const [name, bytes] of template.instantFiles)
        expect(await readFile(join(timelineDir(dir, version), name)), `${trace}: ${name}`).toEqual(bytes);
      const clusterings = (await completedWrites(dir, version)).filter((w) =>
        w.name.endsWith('.replacecommit'),
      );
      expect(clusterings, trace).toHaveLength(partitions);
      // The same rows, from one live file per partition
      const after = await liveRows(dir, version);
      expect(after.rows, trace).toEqual(template.rows);
      expect(after.files, trace).toHaveLength(partitions);
      // Nothing of ours pending, no heartbeat or marker left, no file no completed instant wrote
      expect(await pendingInstants(dir, version), trace).toEqual([]);
      expect(await filesUnder(dir, '.hoodie/.heartbeat'), trace).toEqual([]);
      expect(await filesUnder(dir, '.hoodie/.temp'), trace).toEqual([]);
      expect(await partitionParquet(dir, template.shape), trace).toEqual(
        await writtenByCompleted(dir, version),
      );
    }, 120_000);
  }

  it('the trials crashed with our instant pending, with markers, after a commit, again during recovery', () => {
    expect(covered.pendingAfterCrash).toBeGreaterThan(0);
    expect(covered.markersAfterCrash).toBeGreaterThan(0);
    expect(covered.committedBeforeCrash).toBeGreaterThan(0);
    expect(covered.secondCrashes).toBeGreaterThan(0);
    expect(covered.viaSettle).toBeGreaterThan(0);
    expect([...covered.versions].sort()).toEqual([6, 8]);
  });
});
