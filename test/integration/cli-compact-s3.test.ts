// `lake-compactor compact s3://…` against s3rver on 127.0.0.1: the same run as on a folder, through the
// S3 adapter built from the CLI's env — partitions compacted, every row kept, inputs moved to the trash.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3ObjectStore } from '../../functions/adapters/s3-object-store.js';
import { run } from '../../functions/cli.js';
import { writeSampleLake } from '../../functions/tools/sample-lake.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { captureIo } from '../support/cli-io.js';

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
  it('compacts every partition of an S3 prefix, keeps every row and moves the inputs to the trash', async () => {
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
    expect(await keysUnder('_lake-compactor/trash/')).toHaveLength(10);
  });
});
