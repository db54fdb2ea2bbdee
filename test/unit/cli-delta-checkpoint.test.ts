// A compaction commit that crosses `delta.checkpointInterval` leaves the checkpoint a good Delta writer leaves:
// `<version>.checkpoint.parquet` and `_last_checkpoint` naming it, written by `lake-compactor compact --format delta`
// end to end; and a reader that starts from that checkpoint sees exactly the table the JSON commits define.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { MemoryObjectStore } from '../../functions/adapters/memory-object-store.js';
import { run } from '../../functions/cli/index.js';
import {
  checkpointKey,
  type DeltaSnapshot,
  readDeltaSnapshot,
} from '../../functions/core/formats/delta/index.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { captureIo } from '../support/cli-io.js';

const DAYS = ['2024-03-01', '2024-03-02'];
const BATCHES = 5;
const INTERVAL = 6;
const NOW = Date.UTC(2024, 2, 3);

let dir: string;
let store: LocalObjectStore;

/** Everything of a snapshot that is table state, not how it was read. */
function state(s: DeltaSnapshot): Omit<DeltaSnapshot, 'checkpoint' | 'commitInfo'> {
  const { checkpoint: _c, commitInfo: _i, ...rest } = s;
  return rest;
}

/** The table as only its JSON commits define it: a copy of the folder without any checkpoint or hint. */
async function replayJsonLog(version?: number): Promise<DeltaSnapshot> {
  const copy = new MemoryObjectStore();
  for await (const object of store.listAll('_delta_log/')) {
    if (!object.key.includes('checkpoint')) await copy.put(object.key, await store.get(object.key));
  }
  return readDeltaSnapshot(copy, '', version === undefined ? {} : { version });
}

async function checkpointFiles(): Promise<string[]> {
  return (await readdir(join(dir, '_delta_log'))).filter((n) => n.includes('checkpoint')).sort();
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'lc-delta-ckpt-'));
  store = new LocalObjectStore(dir);
  await createDeltaEventsTable(store, '', {
    now: NOW,
    configuration: { 'delta.checkpointInterval': String(INTERVAL) },
  });
  let seed = 1;
  for (const day of DAYS) {
    for (let b = 0; b < BATCHES; b += 1) {
      await appendDeltaEvents(store, '', { day, rows: 30 + b, seed: seed++, now: NOW });
    }
  }
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('compact --format delta across delta.checkpointInterval', () => {
  it('writes <version>.checkpoint.parquet and a _last_checkpoint naming it after the OPTIMIZE commit that crosses the interval', async () => {
    // Prepare: versions 1..10 are the appends (the sample writer leaves no checkpoint), so the two OPTIMIZE
    // versions are 11 and 12, and 12 is the first multiple of the interval a compaction commits.
    const io = captureIo();
    expect(await checkpointFiles()).toEqual([]);

    // Act
    const code = await run(['compact', dir, '--format', 'delta'], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    const latest = DAYS.length * BATCHES + DAYS.length;
    expect(latest % INTERVAL).toBe(0);
    expect(await checkpointFiles()).toEqual([
      checkpointKey('', latest).replace('_delta_log/', ''),
      '_last_checkpoint',
    ]);
    const hint = JSON.parse(await readFile(join(dir, '_delta_log', '_last_checkpoint'), 'utf8')) as {
      version: number;
      size: number;
    };
    expect(hint.version).toBe(latest);
    // One row per live file, per tombstone, plus protocol and metaData.
    expect(hint.size).toBe(DAYS.length + DAYS.length * BATCHES + 2);
  });

  it('a read that starts from our checkpoint gives the live files and tombstones of replaying the JSON commits', async () => {
    // Prepare: compact (OPTIMIZE at 11, then 12 with the checkpoint), then one more append after the checkpoint
    const io = captureIo();
    expect(await run(['compact', dir, '--format', 'delta'], io), io.stderr.join('\n')).toBe(0);
    const checkpointed = DAYS.length * BATCHES + DAYS.length;
    await appendDeltaEvents(store, '', { day: DAYS[0] ?? '', rows: 3, seed: 99, now: NOW });

    // Act
    const atCheckpoint = await readDeltaSnapshot(store, '', { version: checkpointed });
    const latest = await readDeltaSnapshot(store, '');
    const replayed = await replayJsonLog();
    const replayedAtCheckpoint = await replayJsonLog(checkpointed);

    // Assess: the reads really started from the checkpoint, and the state is the JSON log's
    expect(atCheckpoint.checkpoint?.version).toBe(checkpointed);
    expect(latest.checkpoint?.version).toBe(checkpointed);
    expect(replayed.checkpoint).toBeUndefined();
    expect(state(atCheckpoint)).toEqual(state(replayedAtCheckpoint));
    expect(state(latest)).toEqual(state(replayed));
    expect(latest.files).toHaveLength(DAYS.length + 1);
    expect(latest.tombstones).toHaveLength(DAYS.length * BATCHES);
  });
});
