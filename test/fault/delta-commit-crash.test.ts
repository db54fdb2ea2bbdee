// Crash injection into `lake-compactor compact --format delta`: the process dies at a seeded-random request
// (before or after it ran; sometimes a second time during the recovery), and a plain re-run completes. The log
// then holds the original versions plus exactly one OPTIMIZE per partition (one per group, never two with the
// same tag), the live rows are the original multiset, every file the log names exists, and the partition
// folders hold exactly the files some version added: an aborted group's outputs, and outputs copied before
// `published`, are deleted by settling. Between the crash and the recovery the latest version reads exactly
// the original rows.
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { COMMIT_TAG } from '../../functions/core/formats/delta/commit.js';
import { readCommitActions, readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
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
 * Two small table shapes (a group needs five inputs): one partition of five files (drawn three times as often: a
 * trial costs a compaction per partition), and two partitions of five each.
 */
const ONE_PARTITION = [{ day: '2024-03-01', files: 5 }] as const;
const SHAPES: readonly (readonly { day: string; files: number }[])[] = [
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
  readonly version: number;
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
const covered = { committedBeforeCrash: 0, strayOutputsAfterCrash: 0, secondCrashes: 0, viaSettle: 0 };
const scratch: string[] = [];

async function rowsAt(dir: string, version?: number): Promise<{ version: number; rows: string[] }> {
  const store = new LocalObjectStore(dir);
  const snapshot = await readDeltaSnapshot(store, '', version === undefined ? {} : { version });
  const files = snapshot.files.map((f) => sqlString(join(dir, f.key ?? f.path))).join(', ');
  const rows = await db.rows(
    `SELECT * EXCLUDE (filename), regexp_extract(filename, 'date=([0-9-]+)', 1) AS date FROM read_parquet([${files}], filename = true) ORDER BY ALL`,
  );
  return { version: snapshot.version, rows: rows.map((r) => JSON.stringify(r)) };
}

async function buildTemplate(shape: (typeof SHAPES)[number]): Promise<Template> {
  const dir = await mkdtemp(join(tmpdir(), 'lc-delta-crash-tpl-'));
  scratch.push(dir);
  const store = new LocalObjectStore(dir);
  await createDeltaEventsTable(store, '', { now: NOW });
  let seed = 1;
  for (const { day, files } of shape) {
    for (let b = 0; b < files; b += 1)
      await appendDeltaEvents(store, '', { day, rows: 10 + b, seed: seed++, now: NOW });
  }
  const { version, rows } = await rowsAt(dir);
  // Calibrate on a copy: how many requests a clean compaction makes.
  const probe = await copyOf(dir);
  const calls: StoreCall[] = [];
  await runCompact(probe, { format: 'delta' }, IO, {
    wrapStore: (inner) => crashingStore(inner, Number.POSITIVE_INFINITY, 'before', calls).store,
  });
  const commitStart = 1 + calls.findIndex((c) => c.method === 'copy');
  return { dir, version, rows, requests: calls.length, commitStart, partitions: shape.length };
}

async function copyOf(dir: string): Promise<string> {
  const target = await mkdtemp(join(tmpdir(), 'lc-delta-crash-'));
  scratch.push(target);
  await cp(dir, target, { recursive: true });
  return target;
}

/** Runs a compaction that dies at `at`; resolves once its last in-flight requests landed. */
async function compactDyingAt(dir: string, at: number, when: 'before' | 'after'): Promise<boolean> {
  let crashing: ReturnType<typeof crashingStore> | undefined;
  await runCompact(dir, { format: 'delta' }, IO, {
    wrapStore: (inner) => {
      crashing = crashingStore(inner, at, when);
      return crashing.store;
    },
  }).catch(() => undefined);
  await crashing?.quiesce();
  return crashing?.crashed() ?? false;
}

interface LogFacts {
  readonly versions: number;
  readonly optimizeTags: string[];
  readonly optimizePartitions: string[];
  /** Every key any version adds or removes. */
  readonly named: Set<string>;
  readonly added: Set<string>;
}

async function logFacts(store: ObjectStore): Promise<LogFacts> {
  const optimizeTags: string[] = [];
  const optimizePartitions: string[] = [];
  const named = new Set<string>();
  const added = new Set<string>();
  let v = 0;
  for (; ; v += 1) {
    const actions = await readCommitActions(store, '', v);
    if (actions === undefined) break;
    const info = actions.find((a) => a.kind === 'commitInfo');
    for (const a of actions) {
      if (a.kind === 'add') {
        named.add(decodeURIComponent(a.add.path));
        added.add(decodeURIComponent(a.add.path));
      }
      if (a.kind === 'remove') named.add(decodeURIComponent(a.remove.path));
    }
    if (info?.kind === 'commitInfo' && info.commitInfo.operation === 'OPTIMIZE') {
      const tag = (info.commitInfo as Record<string, unknown>)[COMMIT_TAG] as
        | { runId?: string; groupId?: string }
        | undefined;
      optimizeTags.push(`${tag?.runId}/${tag?.groupId}`);
      const adds = actions.flatMap((a) => (a.kind === 'add' ? [a.add.path.split('/')[0] ?? ''] : []));
      optimizePartitions.push(...new Set(adds));
    }
  }
  return { versions: v, optimizeTags, optimizePartitions, named, added };
}

async function partitionFolderKeys(store: ObjectStore): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.listAll('')) if (o.key.startsWith('date=')) keys.push(o.key);
  return keys.sort();
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

describe('Delta compaction killed at a random request', () => {
  it('calibration found requests to crash at', () => {
    for (const t of templates) {
      expect(t.requests).toBeGreaterThan(10);
      expect(t.commitStart).toBeGreaterThan(1);
    }
  });

  for (let trial = 1; trial <= TRIALS; trial += 1) {
    const seed = 0x5eed0000 + trial;
    it(`seed ${seed}: a re-run completes with one OPTIMIZE per partition, the original rows, and no stray file`, async () => {
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
      const store = new LocalObjectStore(dir);
      const trace = `seed ${seed}: crash ${when} request ${at}/${template.requests}, recovery ${viaSettle ? 'settle+compact' : 'compact'}${secondAt === undefined ? '' : `, second crash ${secondWhen} ${secondAt}`}`;

      // Act: the crashed run; the table between crash and recovery reads exactly the original rows
      await compactDyingAt(dir, at, when);
      const between = await rowsAt(dir);
      expect(between.rows, trace).toEqual(template.rows);
      expect(between.version, trace).toBeGreaterThanOrEqual(template.version);
      expect(between.version, trace).toBeLessThanOrEqual(template.version + template.partitions);
      if (between.version > template.version) covered.committedBeforeCrash += 1;
      const addedSoFar = (await logFacts(store)).added;
      if ((await partitionFolderKeys(store)).some((k) => !addedSoFar.has(k)))
        covered.strayOutputsAfterCrash += 1;

      if (viaSettle) {
        covered.viaSettle += 1;
        const io = captureIo();
        expect(await run(['settle', dir, '--format', 'delta'], io), `${trace}\n${io.stderr.join('\n')}`).toBe(
          0,
        );
        const settled = await rowsAt(dir);
        expect(settled.rows, trace).toEqual(template.rows);
      }
      if (secondAt !== undefined) {
        if (await compactDyingAt(dir, secondAt, secondWhen)) covered.secondCrashes += 1;
        expect((await rowsAt(dir)).rows, trace).toEqual(template.rows);
      }
      await runCompact(dir, { format: 'delta' }, IO);

      // Assess: original versions untouched, then one OPTIMIZE per partition, each group committed once
      const facts = await logFacts(store);
      for (let v = 0; v <= template.version; v += 1) {
        const name = `_delta_log/${String(v).padStart(20, '0')}.json`;
        expect(await readFile(join(dir, name)), `${trace}: ${name}`).toEqual(
          await readFile(join(template.dir, name)),
        );
      }
      expect(facts.versions, trace).toBe(template.version + 1 + template.partitions);
      expect(facts.optimizeTags, trace).toHaveLength(template.partitions);
      expect(new Set(facts.optimizeTags).size, trace).toBe(template.partitions);
      expect(
        facts.optimizeTags.some((t) => t.includes('undefined')),
        trace,
      ).toBe(false);
      expect(new Set(facts.optimizePartitions).size, trace).toBe(template.partitions);
      // The same rows, read from the files the latest version names
      const after = await rowsAt(dir);
      expect(after.rows, trace).toEqual(template.rows);
      // Every file the log names is there; nothing it never added is left in the partition folders
      const present = await partitionFolderKeys(store);
      for (const key of facts.named) expect(present, `${trace}: ${key}`).toContain(key);
      expect(present, trace).toEqual([...facts.added].sort());
    }, 30_000);
  }

  it('the trials crashed after a commit, with outputs copied but uncommitted, and again during recovery', () => {
    expect(covered.committedBeforeCrash).toBeGreaterThan(0);
    expect(covered.strayOutputsAfterCrash).toBeGreaterThan(0);
    expect(covered.secondCrashes).toBeGreaterThan(0);
    expect(covered.viaSettle).toBeGreaterThan(0);
  });
});
