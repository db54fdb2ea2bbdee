// A function's object stores with per-table isolation, on loopback servers: each table's store signs with
// credentials STS issued for that table's session policy and refuses other tables' keys before sending; the local
// cloud's mode (DATA_ACCESS_CREDENTIALS=caller) keeps the check on the caller's credentials; isolation off is one
// store per bucket, as before. No local STS server exists: STS is a loopback fake (test/support/fake-sts.ts).
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  OutsideTableScopeError,
  sessionPolicyFor,
  type TableScope,
  tableScopeOf,
} from '../../functions/core/access/table-scope.js';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { tableStores } from '../../functions/shared/table-stores.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { type FakeSts, startFakeSts } from '../support/fake-sts.js';

const WORK_ROOT = '_lake-compactor/';
const ROLE = 'arn:aws:iam::111122223333:role/lake-CommitDataAccess';
const tables = parseTableConfigs(
  JSON.stringify([
    { name: 'events', bucket: 'lake', prefix: 'events' },
    { name: 'orders', bucket: 'lake', prefix: 'sales/orders' },
  ]),
);

/** The scope of a configured table in `lake`. */
function scopeOf(name: string): TableScope {
  const table = tables.find((t) => t.name === name);
  if (table === undefined) throw new Error(`no table ${name}`);
  return tableScopeOf(table, 'lake', WORK_ROOT);
}

describe('tableStores', () => {
  let s3: RunningS3Server;
  let sts: FakeSts;
  const env = (extra: Record<string, string> = {}) => ({
    AWS_REGION: 'eu-west-1',
    AWS_ACCESS_KEY_ID: 'S3RVER',
    AWS_SECRET_ACCESS_KEY: 'S3RVER',
    AWS_ENDPOINT_URL_S3: s3.endpoint,
    AWS_ENDPOINT_URL_STS: sts.endpoint,
    AWS_LAMBDA_FUNCTION_NAME: 'lake-Commit',
    ...extra,
  });

  beforeAll(async () => {
    [s3, sts] = await Promise.all([startS3Server({ buckets: ['lake'] }), startFakeSts()]);
    await s3.client(); // warm
  });
  afterAll(async () => {
    await Promise.all([s3?.stop(), sts?.close()]);
  });
  beforeEach(() => {
    sts.requests.length = 0;
    sts.issue.accessKeyId = 'S3RVER';
    sts.issue.secretAccessKey = 'S3RVER';
  });

  it("signs a table's requests with the session STS issued for that table's policy, one AssumeRole per table", async () => {
    // Prepare
    const storeFor = tableStores({ env: env({ DATA_ACCESS_ROLE_ARN: ROLE }), tables, workRoot: WORK_ROOT });
    // Act
    await storeFor('lake', 'events').put('events/date=2024-01-01/a.parquet', 'a');
    await storeFor('lake', 'events').put(`${WORK_ROOT}staging/r/g/out.parquet`, 'staged');
    const read = await storeFor('lake', 'events').get('events/date=2024-01-01/a.parquet');
    await storeFor('lake', 'orders').put('sales/orders/date=2024-01-01/b.parquet', 'b');
    // Assess
    expect(new TextDecoder().decode(read)).toBe('a');
    expect(sts.requests.map((r) => [r.roleArn, r.roleSessionName, r.policy, r.callerKeyId])).toEqual([
      [ROLE, 'lake-Commit@events', sessionPolicyFor(scopeOf('events'), { region: 'eu-west-1' }), 'S3RVER'],
      [ROLE, 'lake-Commit@orders', sessionPolicyFor(scopeOf('orders'), { region: 'eu-west-1' }), 'S3RVER'],
    ]);
  });

  it('uses only the issued session to sign: a session s3rver does not accept fails the request', async () => {
    // Prepare: the caller's own keys would be accepted; the session's key id is not (s3rver checks a SigV4
    // request's access key id, not its signature)
    sts.issue.accessKeyId = 'ASIANOTKNOWN';
    const storeFor = tableStores({ env: env({ DATA_ACCESS_ROLE_ARN: ROLE }), tables, workRoot: WORK_ROOT });
    // Act
    const error = await storeFor('lake', 'events')
      .put('events/date=2024-01-02/a.parquet', 'a')
      .catch((err: unknown) => err);
    // Assess
    expect((error as Error).name).toBe('InvalidAccessKeyId');
    expect(sts.requests).toHaveLength(1);
  });

  it("refuses another table's key and a work-root store's table key before any request", async () => {
    // Prepare
    const storeFor = tableStores({ env: env({ DATA_ACCESS_ROLE_ARN: ROLE }), tables, workRoot: WORK_ROOT });
    // Act
    const crossTable = await storeFor('lake', 'events')
      .get('sales/orders/date=2024-01-01/b.parquet')
      .catch((err: unknown) => err);
    const fromWorkRoot = await storeFor('lake').deleteMany([{ key: 'events/date=2024-01-01/a.parquet' }]);
    // Assess
    expect(crossTable).toBeInstanceOf(OutsideTableScopeError);
    expect(fromWorkRoot.errors.map((e) => e.code)).toEqual(['AccessDenied']);
    expect(sts.requests).toEqual([]);
    expect(() => storeFor('lake', 'nope')).toThrow(/No configured table named "nope"/);
  });

  it('with the caller credentials (the local cloud: no STS) still checks the scope, and asks STS nothing', async () => {
    // Prepare
    const storeFor = tableStores({
      env: env({ DATA_ACCESS_ROLE_ARN: ROLE, DATA_ACCESS_CREDENTIALS: 'caller' }),
      tables,
      workRoot: WORK_ROOT,
    });
    // Act
    await storeFor('lake', 'orders').put('sales/orders/date=2024-01-03/c.parquet', 'c');
    const refused = await storeFor('lake', 'orders')
      .head('events/date=2024-01-01/a.parquet')
      .catch((e: unknown) => e);
    // Assess
    expect(refused).toBeInstanceOf(OutsideTableScopeError);
    expect(sts.requests).toEqual([]);
  });

  it('without isolation is one unchecked store per bucket, whatever the table', async () => {
    // Prepare
    const storeFor = tableStores({ env: env(), tables, workRoot: WORK_ROOT });
    // Act
    const head = await storeFor('lake', 'events').head('sales/orders/date=2024-01-03/c.parquet');
    // Assess
    expect(head?.size).toBe(1);
    expect(storeFor('lake', 'events')).toBe(storeFor('lake'));
    expect(sts.requests).toEqual([]);
  });
});
