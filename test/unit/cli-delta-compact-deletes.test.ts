// `lake-compactor compact --format delta` on a Delta table whose files carry deletion vectors (a DELETE-style
// commit with inline DVs, as Databricks writes them by default): the live rows — each file's rows minus the
// positions its DV deletes, read back by DuckDB and the test's own positions — are the same multiset after the
// OPTIMIZE, the new version has no DV left, the removes carry the DVs, and the outputs' stats are exact again.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../functions/adapters/local-object-store.js';
import { run } from '../../functions/cli/index.js';
import { readCommitActions, readDeltaSnapshot } from '../../functions/core/formats/delta/log.js';
import { ConditionalPutLogStore } from '../../functions/core/formats/delta/log-store.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { appendDeltaEvents, createDeltaEventsTable } from '../../functions/tools/sample-delta.js';
import { captureIo } from './../support/cli-io.js';
import { inlineDeletionVector } from './../support/delta-dv.js';
import { type DuckDb, openDuckDb, sqlString } from './../support/duckdb.js';

const DAY = '2024-03-01';
const NOW = Date.UTC(2024, 2, 3);

let db: DuckDb;
let dir: string;
let store: LocalObjectStore;
/** What the test's DELETE deleted, by key: the reference the rows before are computed with. */
let deletedByKey: Map<string, number[]>;

/** Every live row of the latest version: each live file's rows minus the positions the test deleted from it. */
async function liveRows(): Promise<{ version: number; rows: string[]; withDv: number }> {
  const snapshot = await readDeltaSnapshot(store, '');
  const rows: string[] = [];
  for (const file of snapshot.files) {
    const key = file.key ?? file.path;
    const gone = file.deletionVector === undefined ? [] : (deletedByKey.get(key) ?? []);
    const found = await db.rows(
      `SELECT * EXCLUDE (file_row_number) FROM read_parquet(${sqlString(join(dir, key))}, file_row_number = true)
       ${gone.length === 0 ? '' : `WHERE file_row_number NOT IN (${gone.join(',')})`}`,
    );
    rows.push(...found.map((r) => JSON.stringify(r)));
  }
  return {
    version: snapshot.version,
    rows: rows.sort(),
    withDv: snapshot.files.filter((f) => f.deletionVector !== undefined).length,
  };
}

/**
 * Commits a DELETE the way a DV-writing engine does: the protocol gains `deletionVectors`, and each hit file is
 * removed and added again with the same path, its stats' bounds marked wide, and an inline DV of `positions`.
 */
async function deleteWithDvs(hits: ReadonlyMap<string, readonly number[]>): Promise<void> {
  const snapshot = await readDeltaSnapshot(store, '');
  const actions: unknown[] = [
    {
      commitInfo: {
        timestamp: NOW,
        operation: 'DELETE',
        readVersion: snapshot.version,
        isBlindAppend: false,
      },
    },
    {
      protocol: {
        minReaderVersion: 3,
        minWriterVersion: 7,
        readerFeatures: ['deletionVectors'],
        writerFeatures: ['deletionVectors'],
      },
    },
  ];
  for (const file of snapshot.files) {
    const positions = hits.get(file.key ?? '');
    if (positions === undefined) continue;
    const stats = { ...JSON.parse(file.statsJson ?? '{}'), tightBounds: false };
    actions.push(
      {
        remove: {
          path: file.path,
          deletionTimestamp: NOW,
          dataChange: true,
          extendedFileMetadata: true,
          partitionValues: file.physicalPartitionValues,
          size: file.size,
        },
      },
      {
        add: {
          path: file.path,
          partitionValues: file.physicalPartitionValues,
          size: file.size,
          modificationTime: file.modificationTime,
          dataChange: true,
          stats: JSON.stringify(stats),
          deletionVector: inlineDeletionVector(positions),
        },
      },
    );
  }
  const body = new TextEncoder().encode(`${actions.map((a) => JSON.stringify(a)).join('\n')}\n`);
  const written = await new ConditionalPutLogStore(store).writeCommit('', snapshot.version + 1, body);
  if (written !== 'written') throw new Error('the DELETE commit lost a race in a test');
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
  dir = await mkdtemp(join(tmpdir(), 'lc-delta-dv-'));
  store = new LocalObjectStore(dir);
  await createDeltaEventsTable(store, '', { now: NOW });
  const keys: string[] = [];
  for (let b = 0; b < 6; b += 1) {
    keys.push((await appendDeltaEvents(store, '', { day: DAY, rows: 40 + b, seed: b + 1, now: NOW })).key);
  }
  // First and last rows of one file, a run in another, every row of a third; the other three untouched.
  deletedByKey = new Map([
    [keys[0] as string, [0, 7, 39]],
    [keys[2] as string, Array.from({ length: 10 }, (_, i) => 12 + i)],
    [keys[4] as string, Array.from({ length: 44 }, (_, i) => i)],
  ]);
  await deleteWithDvs(deletedByKey);
});

describe('lake-compactor compact --format delta, files with deletion vectors', () => {
  it('drops the rows the DVs delete: the live rows are the same multiset and the new version has no DV', async () => {
    // Prepare
    const before = await liveRows();
    const io = captureIo();

    // Act
    const code = await run(['compact', dir, '--format', 'delta'], io);

    // Assess: the same live rows, read without any DV now
    expect(code, io.stderr.join('\n')).toBe(0);
    expect(before.withDv).toBe(3);
    expect(before.rows).toHaveLength(6 * 40 + 15 - 3 - 10 - 44);
    const after = await liveRows();
    expect(after.version).toBe(before.version + 1);
    expect(after.withDv).toBe(0);
    expect(after.rows).toEqual(before.rows);
    // The OPTIMIZE removed every input with its DV, counted them, and wrote exact stats for the live rows.
    const actions = (await readCommitActions(store, '', after.version)) ?? [];
    const info = actions.find((a) => a.kind === 'commitInfo');
    expect(info?.kind === 'commitInfo' && info.commitInfo).toMatchObject({
      operation: 'OPTIMIZE',
      operationMetrics: { numRemovedFiles: '6', numDeletionVectorsRemoved: '3' },
    });
    const removes = actions.flatMap((a) => (a.kind === 'remove' ? [a.remove] : []));
    expect(
      removes
        .filter((r) => r.deletionVector !== undefined)
        .map((r) => r.deletionVector?.cardinality)
        .sort(),
    ).toEqual([10, 3, 44]);
    const adds = actions.flatMap((a) => (a.kind === 'add' ? [a.add] : []));
    expect(adds.map((a) => [a.deletionVector, JSON.parse(a.stats ?? '{}')])).toEqual([
      [undefined, expect.objectContaining({ numRecords: before.rows.length, tightBounds: true })],
    ]);
  });

  it('leaves the table alone when an input’s DV changes between planning and commit', async () => {
    // Prepare: a second DELETE on a file that already has a DV lands after the plan (at the first log write)
    const before = await liveRows();
    const [firstKey] = [...deletedByKey.keys()];
    const io = captureIo();
    let raced = false;
    const { runCompact } = await import('../../functions/cli/compact.js');
    const hooks = {
      wrapStore: (inner: ObjectStore): ObjectStore =>
        new Proxy(inner, {
          get(target, prop, receiver) {
            if (prop !== 'put') return Reflect.get(target, prop, receiver);
            return async (key: string, ...rest: unknown[]) => {
              if (!raced && key.startsWith('_delta_log/') && key.endsWith('.json')) {
                raced = true;
                deletedByKey.set(firstKey as string, [0, 1, 7, 39]);
                await deleteWithDvs(new Map([[firstKey as string, [0, 1, 7, 39]]]));
              }
              return (target.put as (...a: unknown[]) => unknown).call(target, key, ...rest);
            };
          },
        }),
    };

    // Act
    await runCompact(dir, { format: 'delta' }, { out: io.out, clock: { now: () => NOW }, env: {} }, hooks);

    // Assess: no OPTIMIZE; the rows are the earlier ones minus the second DELETE's extra row
    expect(raced).toBe(true);
    const after = await liveRows();
    expect(after.version).toBe(before.version + 1);
    expect(after.withDv).toBe(3);
    expect(after.rows).toHaveLength(before.rows.length - 1);
    const last = (await readCommitActions(store, '', after.version)) ?? [];
    expect(last.find((a) => a.kind === 'commitInfo')).toMatchObject({ commitInfo: { operation: 'DELETE' } });
  });
});
