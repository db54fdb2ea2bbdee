// Delta VACUUM over a table whose only record of a compaction's tombstones is a checkpoint (the JSON commits at and
// below it cleaned up, as log retention does): inside the deleted-file retention the rewritten inputs stay, because
// readers of the older versions still need them; past it they go; the live output never does. The data files are
// made old on disk first, so nothing but the checkpoint's tombstones can keep the inputs.
import { mkdtemp, rm, unlink, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../../../../functions/adapters/local-object-store.js';
import { runCompact } from '../../../../../functions/cli/compact.js';
import { writeCheckpoint } from '../../../../../functions/core/formats/delta/checkpoint-writer.js';
import { readCommitActions, readDeltaSnapshot } from '../../../../../functions/core/formats/delta/log.js';
import { vacuumDeltaTable } from '../../../../../functions/core/formats/delta/vacuum.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../../../../functions/tools/sample-delta.js';

const DAY = 24 * 3600 * 1000;
/** When the compaction committed (its tombstones' deletionTimestamp). */
const COMPACTED_AT = Date.UTC(2024, 2, 10);
const BATCHES = 5;

let dir: string;
let store: LocalObjectStore;
let inputs: string[];
let live: string[];
let checkpointVersion: number;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lc-delta-vacuum-cp-'));
  store = new LocalObjectStore(dir);
  await createDeltaEventsTable(store, '', { now: COMPACTED_AT - DAY });
  for (let b = 0; b < BATCHES; b += 1) {
    await appendDeltaEvents(store, '', {
      day: '2024-03-09',
      rows: 10 + b,
      seed: b + 1,
      now: COMPACTED_AT - DAY,
    });
  }
  inputs = (await readDeltaSnapshot(store, '')).files.map((f) => f.key ?? f.path).sort();
  await runCompact(dir, { format: 'delta' }, { out: () => {}, clock: { now: () => COMPACTED_AT }, env: {} });
  const compacted = await readDeltaSnapshot(store, '');
  live = compacted.files.map((f) => f.key ?? f.path).sort();
  checkpointVersion = compacted.version;
  // The checkpoint holds the tombstones (written inside their retention), then the commits it covers go.
  await writeCheckpoint(store, '', checkpointVersion, { now: COMPACTED_AT });
  for (let v = 0; v <= checkpointVersion; v += 1) {
    await unlink(join(dir, '_delta_log', `${String(v).padStart(20, '0')}.json`));
  }
  // Every data file old on disk: only a tombstone (or being live) can keep one now.
  const old = new Date(COMPACTED_AT - 30 * DAY);
  for (const key of [...inputs, ...live]) await utimes(join(dir, key), old, old);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function present(keys: readonly string[]): Promise<string[]> {
  const there: string[] = [];
  for (const key of keys) if ((await store.head(key)) !== undefined) there.push(key);
  return there;
}

describe('Delta VACUUM with tombstones only in a checkpoint', () => {
  it('reads the compaction tombstones from the checkpoint alone', async () => {
    // Act
    const snapshot = await readDeltaSnapshot(store, '');

    // Assess
    expect(inputs).toHaveLength(BATCHES);
    expect(live).toHaveLength(1);
    expect(await readCommitActions(store, '', checkpointVersion)).toBeUndefined();
    expect(snapshot.checkpoint?.version).toBe(checkpointVersion);
    expect(snapshot.version).toBe(checkpointVersion);
    expect(snapshot.tombstones.map((t) => t.key).sort()).toEqual(inputs);
    expect(snapshot.tombstones.every((t) => t.deletionTimestamp === COMPACTED_AT)).toBe(true);
  });

  it('keeps the rewritten inputs inside the retention: the checkpoint tombstones protect them', async () => {
    // Act: a day after the compaction, inside the default week
    const report = await vacuumDeltaTable(store, '', { now: COMPACTED_AT + DAY, dryRun: false });

    // Assess
    expect(report.totalRemoved.count).toBe(0);
    expect(report.kept['retained-tombstone']).toBe(BATCHES);
    expect(report.kept.live).toBe(1);
    expect(await present(inputs)).toEqual(inputs);
    expect(await present(live)).toEqual(live);
  });

  it('deletes the rewritten inputs once the retention has passed, and never the live output', async () => {
    // Act: eight days after the compaction, past the default week
    const report = await vacuumDeltaTable(store, '', { now: COMPACTED_AT + 8 * DAY, dryRun: false });

    // Assess
    expect(report.removed.tombstone.count).toBe(BATCHES);
    expect(report.removed.untracked.count).toBe(0);
    expect(report.candidates.map((c) => c.key).sort()).toEqual(inputs);
    expect(await present(inputs)).toEqual([]);
    expect(await present(live)).toEqual(live);
    expect((await readDeltaSnapshot(store, '')).files.map((f) => f.key)).toEqual(live);
  });
});
