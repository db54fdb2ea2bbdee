// Test helpers private to the rewrite/verify tests: group entries for stored objects, and a DuckDB
// workspace that writes inputs (an independent writer) and reads outputs back (an independent reader).

import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ObjectStore } from '../../../../functions/ports/object-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../../../support/duckdb.js';

/** The group entry for a stored object. */
export async function fileOf(
  store: ObjectStore,
  key: string,
): Promise<{ key: string; size: number; etag: string }> {
  const info = await store.head(key);
  if (info === undefined) throw new Error(`no object ${key}`);
  return { key, size: info.size, etag: info.etag };
}

/** A DuckDB session with a temp folder for Parquet files it writes or reads back. */
export interface DuckWorkspace {
  readonly db: DuckDb;
  readonly dir: string;
  /** Writes `select` as Parquet with DuckDB and returns the bytes. */
  parquet(
    select: string,
    options?: { compression?: 'snappy' | 'zstd'; rowGroupSize?: number; extraOptions?: readonly string[] },
  ): Promise<Uint8Array>;
  /** Copies stored objects to files and returns an SQL list literal of their paths. */
  materialise(store: ObjectStore, keys: readonly string[]): Promise<string>;
  close(): Promise<void>;
}

let counter = 0;

export async function duckWorkspace(): Promise<DuckWorkspace> {
  const db = await openDuckDb();
  const dir = await mkdtemp(join(tmpdir(), 'rewrite-test-'));
  const { writeFile } = await import('node:fs/promises');
  return {
    db,
    dir,
    async parquet(select, options = {}) {
      const path = join(dir, `in-${counter++}.parquet`);
      await db.writeParquet(select, path, {
        compression: options.compression ?? 'snappy',
        ...(options.rowGroupSize !== undefined && { rowGroupSize: options.rowGroupSize }),
        ...(options.extraOptions !== undefined && { extraOptions: options.extraOptions }),
      });
      return new Uint8Array(await readFile(path));
    },
    async materialise(store, keys) {
      const paths: string[] = [];
      for (const key of keys) {
        const path = join(dir, `obj-${counter++}.parquet`);
        await writeFile(path, await store.get(key));
        paths.push(sqlString(path));
      }
      return `[${paths.join(', ')}]`;
    },
    async close() {
      db.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The events table of the sample lake (user_id, event_type, event_timestamp ms UTC, session_id, revenue_usd). */
export function eventsSelect(rows: number, seed: number): string {
  return `SELECT (hash(i + ${seed}) % 100000)::BIGINT AS user_id,
    (['view','click','purchase','signup'])[(i % 4) + 1] AS event_type,
    make_timestamptz(1704067200000000 + (i + ${seed}) * 1000)::TIMESTAMPTZ::TIMESTAMP_MS AS event_timestamp,
    md5((i // 7 + ${seed})::VARCHAR) AS session_id,
    CASE WHEN i % 5 = 0 THEN NULL ELSE round((hash(i * 3 + ${seed}) % 10000) / 100.0, 2)::DOUBLE END AS revenue_usd
    FROM range(${rows}) t(i)`;
}
