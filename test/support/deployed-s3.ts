// What the CLI tests of a deployment on S3 (s3rver + DynamoDB Local: compact, settle and undo with --state-table)
// share: the CLI's environment pointing at the local servers, a partition's rows by DuckDB, and the bucket's bytes.
import { mkdtemp, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { ObjectStore } from '../../functions/ports/object-store.js';
import { captureIo } from './cli-io.js';
import { type DuckDb, sqlString } from './duckdb.js';

/** A captured CLI io whose AWS clients reach the local S3 and DynamoDB at these endpoints. */
export function localAwsIo(endpoints: { readonly s3: string; readonly dynamodb: string }) {
  return captureIo({
    now: Date.now(),
    env: {
      AWS_ENDPOINT_URL_S3: endpoints.s3,
      AWS_ENDPOINT_URL_DYNAMODB: endpoints.dynamodb,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    },
  });
}

/** The rows of the Parquet files under `prefix` (DuckDB over a download into `scratch`), canonically sorted. */
export async function rowsUnder(
  store: ObjectStore,
  db: DuckDb,
  scratch: string,
  prefix: string,
): Promise<string[]> {
  const folder = await mkdtemp(join(scratch, 'rows-'));
  const files: string[] = [];
  for await (const o of store.listAll(prefix)) {
    const file = join(folder, `${files.length}.parquet`);
    await writeFile(file, await store.get(o.key));
    files.push(file);
  }
  const found = await db.rows(
    `SELECT * FROM read_parquet([${files.map(sqlString).join(', ')}]) ORDER BY ALL`,
  );
  return found.map((r) => JSON.stringify(r)).sort();
}

/** Every object of the store with its ETag and size, sorted: equal before and after means no byte changed. */
export async function storeBytes(store: ObjectStore): Promise<string[]> {
  const objects: string[] = [];
  for await (const o of store.listAll('')) objects.push(`${o.key} ${o.etag} ${o.size}`);
  return objects.sort();
}
