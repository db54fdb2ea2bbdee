// `lake-compactor rewrite` dying at a store request of its run (every request from there on fails, as for a killed
// process: the journal and objects stay as they were left), then `lake-compactor settle`: the partition is the old
// one — every file byte for byte — or the new one — its three files packed into two, transformed, the rows those of
// the inputs cast — never a mix, whatever request the run died at.
import { cp, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../../functions/cli/index.js';
import { runRewrite } from '../../functions/cli/rewrite.js';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { captureIo } from '../support/cli-io.js';
import { dyingStore, observedStore, type StoreCall } from '../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';
import { folderContentSnapshot } from '../support/folder-snapshot.js';
import { missingRows } from '../support/multiset.js';

const PARTITION = 'date=2024-01-01';

let scratch: string;
let template: string;
let transform: string;
/** A target of half the template partition's bytes: its three files are packed into two outputs. */
let targetMb: number;
let db: DuckDb;
/** The template partition's files as they are (the "old" partition). */
let oldPartition: string[];
/** The rows of the template, user_id cast to BIGINT: what the "new" partition holds. */
let newRows: string[];
/** The requests of an undisturbed rewrite. */
let calls: StoreCall[];

/** The partition folder's files by path, size and content hash (a copied folder's modification times differ). */
async function partitionContent(table: string): Promise<string[]> {
  return (await folderContentSnapshot(join(table, PARTITION))).map((line) => {
    const [path, size, , hash] = line.split(' ');
    return hash === undefined ? line : `${path} ${size} ${hash}`;
  });
}

async function partitionFiles(table: string): Promise<string[]> {
  return (await readdir(join(table, PARTITION))).filter((n) => n.endsWith('.parquet')).sort();
}

/** Every row of the partition's data files with user_id as BIGINT, one JSON text each, sorted. */
async function rowsOf(table: string): Promise<string[]> {
  const files = (await partitionFiles(table)).map((n) => sqlString(join(table, PARTITION, n)));
  const rows = await db.rows(
    `SELECT user_id::BIGINT AS user_id, name, amount FROM read_parquet([${files.join(', ')}], hive_partitioning = false, union_by_name = true)`,
  );
  return rows.map((r) => JSON.stringify(r)).sort();
}

/** DuckDB's type of user_id in each data file of the partition. */
async function userIdTypes(table: string): Promise<string[]> {
  const types: string[] = [];
  for (const name of await partitionFiles(table)) {
    const columns = await db.columnTypes(
      `SELECT user_id FROM read_parquet(${sqlString(join(table, PARTITION, name))}, hive_partitioning = false)`,
    );
    types.push(columns[0]?.type ?? '?');
  }
  return types;
}

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'lc-rewrite-crash-'));
  template = join(scratch, 'template', 'events');
  await mkdir(join(template, PARTITION), { recursive: true });
  db = await openDuckDb();
  for (let i = 0; i < 3; i++)
    await db.writeParquet(
      `SELECT (range * 3 + ${i * 100})::VARCHAR AS user_id, 'u' || range || '-' || ${i} AS name, range * 0.5 AS amount FROM range(5)`,
      join(template, PARTITION, `part-${i}.parquet`),
    );
  let bytes = 0;
  for (const name of await partitionFiles(template))
    bytes += (await stat(join(template, PARTITION, name))).size;
  targetMb = Math.ceil(bytes / 2) / (1024 * 1024);
  transform = join(scratch, 'transform.json');
  await writeFile(transform, JSON.stringify({ steps: [{ op: 'cast', column: 'user_id', to: 'int64' }] }));
  oldPartition = await partitionContent(template);
  newRows = await rowsOf(template);
  // One undisturbed run on a copy: the requests a crash can land on.
  const probe = join(scratch, 'probe', 'events');
  await cp(template, probe, { recursive: true });
  const seen: StoreCall[] = [];
  await runRewrite(probe, { partition: PARTITION, transform, targetMb }, captureIo(), {
    wrapStore: (store: ObjectStore) => observedStore(store, { before: (call) => seen.push(call) }),
  });
  calls = seen;
}, 120_000);

afterAll(async () => {
  db.close();
  await rm(scratch, { recursive: true, force: true });
});

describe('lake-compactor rewrite killed mid-run, then settled', () => {
  it('an undisturbed run makes the new partition (the reference the trials compare with)', async () => {
    // Assess
    expect(calls.length).toBeGreaterThan(10);
    expect(calls.some((c) => c.method === 'copy' && c.key.includes('/trash/'))).toBe(true);
    // Two outputs staged, so the trials also die between the first output and the second
    const staged = new Set(
      calls.filter((c) => c.key.includes('/staging/') && c.key.endsWith('.parquet')).map((c) => c.key),
    );
    expect(staged.size).toBe(2);
    expect(newRows).toHaveLength(15);
  });

  it('leaves the old partition or the new one, never a mix, at every request it can die at', async () => {
    // Prepare: every request of the run (and a last trial past the end, which completes)
    const outcomes: { at: number; outcome: 'old' | 'new' }[] = [];
    for (let at = 1; at <= calls.length; at++) {
      const table = join(scratch, `trial-${at}`, 'events');
      await cp(template, table, { recursive: true });
      let count = 0;

      // Act
      await runRewrite(table, { partition: PARTITION, transform, targetMb }, captureIo(), {
        wrapStore: (store) => dyingStore(store, () => ++count >= at),
      }).catch(() => undefined);
      const settled = await run(['settle', table], captureIo());

      // Assess
      expect(settled, `trial ${at}: settle`).toBe(0);
      const types = await userIdTypes(table);
      const now = await partitionContent(table);
      if (now.join('\n') === oldPartition.join('\n')) outcomes.push({ at, outcome: 'old' });
      else {
        expect(types, `trial ${at} (${calls[at - 1]?.method} ${calls[at - 1]?.key}): every file new`).toEqual(
          ['BIGINT', 'BIGINT'],
        );
        const rows = await rowsOf(table);
        expect(missingRows(newRows, rows), `trial ${at}: rows lost`).toEqual([]);
        expect(missingRows(rows, newRows), `trial ${at}: rows added`).toEqual([]);
        outcomes.push({ at, outcome: 'new' });
      }
      await rm(join(scratch, `trial-${at}`), { recursive: true, force: true });
    }
    // Both ends were reached: early deaths roll back, deaths once publishing started roll forward.
    expect(outcomes[0]?.outcome).toBe('old');
    expect(outcomes.some((o) => o.outcome === 'new')).toBe(true);
  }, 600_000);
});
