// `lake-compactor compact --format delta --delta-log-store quiet-window` on a Delta table in a temp folder that a
// Spark-style writer with no coordination commits to: outside the declared window, or before the log has been quiet
// for --delta-quiet-minutes, nothing is planned or committed and each partition says why; inside a quiet window the
// partitions are compacted, rows unchanged; a commit by the writer inside the window refuses the table (exit 1,
// nothing committed); and one that lands between the plan and the put is caught by the re-check right before it.
// Commit times are the commit files' mtimes, set explicitly (never the wall clock).
import { mkdtemp, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { readCommitActions, readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import { ConditionalPutLogStore, commitKey } from '../../functions/core/formats/delta/log-store.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { captureIo } from '../support/cli-io.js';
import { observedStore } from '../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';

const DAYS = ['2024-03-01', '2024-03-02'];
const BATCHES = 6;
/** Sunday 2024-03-03, 00:00 UTC. */
const SUNDAY = Date.UTC(2024, 2, 3);
const at = (hour: number, minute = 0) => Date.UTC(2024, 2, 3, hour, minute);
const SPARK = 'Apache-Spark/3.5.1 Delta-Lake/3.2.0';
const QUIET_WINDOW = [
  '--format',
  'delta',
  '--delta-log-store',
  'quiet-window',
  '--delta-quiet-window',
  '02:00-05:00',
  '--delta-quiet-minutes',
  '60',
  '--delta-accept-uncoordinated-writers',
];

let db: DuckDb;
let dir: string;
let store: LocalObjectStore;

/** A writer that commits like Spark's single-driver log store would leave the log: engineInfo says Spark. */
function spark(target: ObjectStore) {
  const log = new ConditionalPutLogStore(target);
  return { engineInfo: SPARK, writeCommit: log.writeCommit.bind(log) };
}

/** Sets the mtime (what a listing calls lastModified) of commit `version` to `time`. */
async function committedAt(version: number, time: number): Promise<void> {
  await utimes(join(dir, commitKey('', version)), time / 1000, time / 1000);
}

/** The live files of the latest version, and every row they hold, canonically ordered. */
async function liveTable(): Promise<{ version: number; keys: string[]; rows: string[] }> {
  const snapshot = await readDeltaSnapshot(store, '');
  const keys = snapshot.files.map((f) => f.key ?? f.path).sort();
  const files = keys.map((k) => sqlString(join(dir, k))).join(', ');
  const rows = await db.rows(
    `SELECT * EXCLUDE (filename), regexp_extract(filename, 'date=([0-9-]+)', 1) AS date FROM read_parquet([${files}], filename = true) ORDER BY ALL`,
  );
  return { version: snapshot.version, keys, rows: rows.map((r) => JSON.stringify(r)) };
}

/** The operations of every commit from `from` on, in order. */
async function operationsFrom(from: number): Promise<string[]> {
  const ops: string[] = [];
  for (let v = from; ; v += 1) {
    const actions = await readCommitActions(store, '', v);
    if (actions === undefined) return ops;
    const info = actions.find((a) => a.kind === 'commitInfo');
    ops.push(info?.kind === 'commitInfo' ? (info.commitInfo.operation ?? '?') : '?');
  }
}

beforeAll(async () => {
  db = await openDuckDb();
});

afterAll(async () => {
  db.close();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

beforeEach(async () => {
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = await mkdtemp(join(tmpdir(), 'lc-delta-quiet-'));
  store = new LocalObjectStore(dir);
  // The nightly Spark job wrote the table and its batches; its last commit was at 01:00, an hour before the window.
  await createDeltaEventsTable(store, '', { now: SUNDAY, writer: spark(store) });
  let seed = 1;
  for (const day of DAYS) {
    for (let b = 0; b < BATCHES; b += 1) {
      await appendDeltaEvents(store, '', {
        day,
        rows: 40 + b,
        seed: seed++,
        now: SUNDAY,
        writer: spark(store),
      });
    }
  }
  const latest = await readDeltaSnapshot(store, '');
  for (let v = 0; v <= latest.version; v += 1) await committedAt(v, at(1));
});

describe('lake-compactor compact --delta-log-store quiet-window', () => {
  it('plans and commits nothing outside the declared window, saying so for each partition', async () => {
    // Prepare
    const before = await liveTable();
    const io = captureIo({ now: at(12) });

    // Act
    const code = await run(['compact', dir, ...QUIET_WINDOW], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    for (const day of DAYS) {
      expect(io.stdout).toContain(
        `date=${day}: nothing to do (2024-03-03T12:00:00.000Z is outside the table's declared quiet windows (02:00-05:00, UTC); nothing is committed outside them)`,
      );
    }
    expect(await liveTable()).toEqual(before);
  });

  it('waits while the last commit is younger than --delta-quiet-minutes, even inside the window', async () => {
    // Prepare: 02:30 is inside the window, but the writer's 01:45 commit is only 45 minutes old
    await appendDeltaEvents(store, '', {
      day: DAYS[0] ?? '',
      rows: 5,
      seed: 50,
      now: SUNDAY,
      writer: spark(store),
    });
    const before = await liveTable();
    await committedAt(before.version, at(1, 45));
    const io = captureIo({ now: at(2, 30) });

    // Act
    const code = await run(['compact', dir, ...QUIET_WINDOW], io);

    // Assess
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(io.stdout).toContain(
      `date=${DAYS[0]}: nothing to do (version ${before.version} was committed 45 min ago, less than the declared quietMinutes (60) before now: its writer may still be committing)`,
    );
    expect(await liveTable()).toEqual(before);
  });

  it('compacts every partition inside a quiet window, one OPTIMIZE commit each, every row kept', async () => {
    // Prepare
    const before = await liveTable();
    const io = captureIo({ now: at(3) });

    // Act
    const code = await run(['compact', dir, ...QUIET_WINDOW], io);

    // Assess: the second partition's plan does not take the first partition's OPTIMIZE for another writer's
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(await operationsFrom(before.version + 1), io.stdout.join('\n')).toEqual(['OPTIMIZE', 'OPTIMIZE']);
    const after = await liveTable();
    expect(after.rows).toEqual(before.rows);
    expect(after.keys).toHaveLength(DAYS.length);
  });

  it('refuses the table (exit 1, nothing committed) when the writer committed inside the window: the declared window is wrong', async () => {
    // Prepare: the "stopped" writer committed at 02:10
    await appendDeltaEvents(store, '', {
      day: DAYS[1] ?? '',
      rows: 5,
      seed: 60,
      now: SUNDAY,
      writer: spark(store),
    });
    const before = await liveTable();
    await committedAt(before.version, at(2, 10));
    const io = captureIo({ now: at(3, 30) });

    // Act
    const code = await run(['compact', dir, ...QUIET_WINDOW], io);

    // Assess
    expect(code).toBe(1);
    const stderr = io.stderr.join('\n');
    expect(stderr).toContain(
      `is declared to coordinate its commits through quiet-window 02:00-05:00 UTC, but version ${before.version} was committed at 2024-03-03T02:10:00.000Z by ${SPARK}, inside the quiet window that opened at 2024-03-03T02:00:00.000Z`,
    );
    expect(stderr).toContain('Fix the windows (deltaLogStore.windows)');
    expect(await liveTable()).toEqual(before);
  });

  it('re-checks the log right before the put: a commit by the writer after the plan aborts the group and fails the command, its rows kept', async () => {
    // Prepare: when the compaction is about to put its commit, the writer commits an append (at 03:05)
    const before = await liveTable();
    let appended: { key: string; version: number } | undefined;
    const hooks = {
      wrapStore: (inner: ObjectStore) => {
        const observed = observedStore(inner, {});
        return {
          ...observed,
          listAll: (prefix: string) => inner.listAll(prefix),
          put: async (...args: Parameters<ObjectStore['put']>) => {
            const [key] = args;
            if (appended === undefined && key.startsWith('_delta_log/') && key.endsWith('.json')) {
              appended = await appendDeltaEvents(inner, '', {
                day: DAYS[0] ?? '',
                rows: 7,
                seed: 99,
                now: SUNDAY,
                writer: spark(inner),
              });
              await committedAt(appended.version, at(3, 5));
            }
            return inner.put(...args);
          },
        };
      },
    };
    const out: string[] = [];

    // Act
    const compacting = runCompact(
      dir,
      {
        format: 'delta',
        partition: `date=${DAYS[0]}`,
        deltaLogStore: 'quiet-window',
        deltaQuietWindow: ['02:00-05:00'],
        deltaQuietMinutes: 60,
        deltaAcceptUncoordinatedWriters: true,
      },
      { out: (t) => out.push(t), clock: { now: () => at(3, 10) }, env: {} },
      hooks,
    );

    // Assess: the command fails naming the writer; no OPTIMIZE reached the log; the writer's append did, rows live
    await expect(compacting).rejects.toMatchObject({
      name: 'CoordinationMismatchError',
      message: expect.stringContaining(
        `version ${before.version + 1} was committed at 2024-03-03T03:05:00.000Z by ${SPARK}, inside the quiet window that opened at 2024-03-03T02:00:00.000Z`,
      ),
    });
    expect(appended?.version).toBe(before.version + 1);
    expect(await operationsFrom(before.version + 1)).toEqual(['WRITE']);
    expect(out.join('\n')).toContain(`date=${DAYS[0]} g0001:`);
    const after = await liveTable();
    expect(after.keys).toEqual([...before.keys, appended?.key ?? ''].sort());
    const appendedRows = await db.rows(
      `SELECT *, '${DAYS[0]}' AS date FROM read_parquet(${sqlString(join(dir, appended?.key ?? ''))})`,
    );
    expect([...after.rows].sort()).toEqual(
      [...before.rows, ...appendedRows.map((r) => JSON.stringify(r))].sort(),
    );
  });
});
