// `lake-compactor compact s3://…` against s3rver on 127.0.0.1: the same run as on a folder, through the
// S3 adapter built from the CLI's env — partitions compacted, every row kept, inputs retired without copies —
// and a run that dies with a group published (outputs in, inputs not retired) is rolled forward by the next.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { runCompact } from '../../functions/cli/compact.js';
import { run } from '../../functions/cli/index.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { captureIo } from '../support/cli-io.js';
import { dyingStore } from '../support/crash-store.js';
import { type DuckDb, openDuckDb, sqlString } from '../support/duckdb.js';

let s3: RunningS3Server;
let store: S3ObjectStore;
let rowsWritten: number;

function capture() {
  return captureIo({
    env: {
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_REGION: 'us-east-1',
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    },
  });
}

async function keysUnder(prefix: string): Promise<string[]> {
  const keys: string[] = [];
  for await (const o of store.listAll(prefix)) keys.push(o.key);
  return keys.sort();
}

beforeAll(async () => {
  s3 = await startS3Server({ buckets: ['lake'] });
  store = new S3ObjectStore({ client: s3.client(), bucket: 'lake' });
  const summary = await writeSampleLake(
    async (key, bytes) => {
      await store.put(`warehouse/${key}`, bytes);
    },
    { days: 2, batches: 5, seed: 5, startDate: '2024-01-01', minRows: 20, maxRows: 60 },
  );
  rowsWritten = summary.rows;
});

afterAll(async () => {
  await s3?.stop();
});

describe('lake-compactor compact on S3', () => {
  it('compacts every partition of an S3 prefix, keeps every row and retires the inputs without a trash copy', async () => {
    // Prepare
    const io = capture();
    const dryRun = capture();
    const before = await keysUnder('');

    // Act
    const dryCode = await run(['compact', 's3://lake/warehouse/events', '--dry-run'], dryRun);
    const afterDryRun = await keysUnder('');
    const code = await run(['compact', 's3://lake/warehouse/events'], io);

    // Assess
    expect(dryRun.stderr).toEqual([]);
    expect(dryCode).toBe(0);
    expect(afterDryRun).toEqual(before);
    expect(code).toBe(0);
    for (const day of ['2024-01-01', '2024-01-02']) {
      const data = (await keysUnder(`warehouse/events/date=${day}/`)).filter((k) => k.endsWith('.parquet'));
      expect(data).toHaveLength(1);
    }
    expect(io.stdout.join('\n')).toContain(
      `2 partitions: 10 → 2 files, ${rowsWritten} rows rewritten and verified`,
    );
    expect(await keysUnder('_lake-compactor/trash/')).toEqual([]);
  });
});

/** Every row of the Parquet objects under `prefix` (downloaded), canonically ordered: a multiset. */
async function rowsUnder(db: DuckDb, prefix: string): Promise<string[]> {
  const keys = (await keysUnder(prefix)).filter((k) => k.endsWith('.parquet') && !k.includes('/_'));
  const dir = await mkdtemp(join(tmpdir(), 'rows-'));
  try {
    const files: string[] = [];
    for (const [i, key] of keys.entries()) {
      const file = join(dir, `${i}.parquet`);
      await writeFile(file, await store.get(key));
      files.push(file);
    }
    const rows = await db.rows(
      `SELECT * FROM read_parquet([${files.map(sqlString).join(', ')}]) ORDER BY ALL`,
    );
    return rows.map((r) => JSON.stringify(r));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('lake-compactor compact on S3 after a crash', () => {
  it('rolls forward a group whose run died published (outputs in, inputs not retired) and ends with the exact rows', async () => {
    // Prepare: a second table; its first run dies as it retires the inputs of date=2024-02-02
    const db = await openDuckDb();
    try {
      await writeSampleLake(
        async (key, bytes) => {
          await store.put(`crash/${key}`, bytes);
        },
        { days: 2, batches: 5, seed: 9, startDate: '2024-02-01', minRows: 20, maxRows: 60 },
      );
      const uri = 's3://lake/crash/events';
      const rowsBefore = await rowsUnder(db, 'crash/events/');
      const died = await runCompact(uri, {}, capture(), {
        wrapStore: (s) =>
          dyingStore(
            s,
            (call) =>
              call.method === 'deleteMany' &&
              (call.refs ?? []).some(
                (r) => r.ifMatch !== undefined && r.key.startsWith('crash/events/date=2024-02-02/'),
              ),
          ),
      }).then(
        () => 'finished',
        (err: unknown) => err,
      );
      const rowsAfterCrash = await rowsUnder(db, 'crash/events/');
      const io = capture();

      // Act
      const code = await run(['compact', uri], io);

      // Assess
      expect(String(died)).toMatch(/injected: the process died/);
      expect(rowsAfterCrash.length).toBeGreaterThan(rowsBefore.length);
      expect(code).toBe(0);
      expect(io.stdout.join('\n')).toMatch(
        /date=2024-02-02 g0001 of run cli-\S+: rolled forward \(published → done\)/,
      );
      expect(await rowsUnder(db, 'crash/events/')).toEqual(rowsBefore);
      for (const day of ['2024-02-01', '2024-02-02']) {
        const data = (await keysUnder(`crash/events/date=${day}/`)).filter((k) => k.endsWith('.parquet'));
        expect(data).toHaveLength(1);
      }
      expect(await keysUnder('_lake-compactor/staging/')).toEqual([]);
      expect(await keysUnder('_lake-compactor/journal/open/')).toEqual([]);
      const entries = await keysUnder('_lake-compactor/journal/runs/');
      for (const key of entries) {
        expect(JSON.parse(new TextDecoder().decode(await store.get(key))).state).toMatch(/^(done|aborted)$/);
      }
    } finally {
      db.close();
    }
  });
});
