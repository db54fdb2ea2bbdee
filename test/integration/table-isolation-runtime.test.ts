// A workflow function composed from the environment the construct gives it with `tableIsolation: "session-policy"`:
// its runtime asks STS for the data-access role the template names, with the session policy of the run's table,
// and signs that table's S3 requests (on a local S3 server) with the issued session; the local cloud's environment
// for the same function keeps the in-process scope check and asks STS nothing.
//
// No local STS server exists (LocalStack and moto need Docker or Python): STS is the loopback stand-in of
// test/support/fake-sts.ts, which records each AssumeRole and issues credentials the test chooses.
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import {
  OutsideTableScopeError,
  sessionPolicyFor,
  tableScopeOf,
} from '../../functions/core/access/table-scope.js';
import { parseTableConfigs } from '../../functions/core/table-config.js';
import { createWorkflowRuntime } from '../../functions/shared/workflow-runtime.js';
import { LakeCompactorStack } from '../../infra/app.js';
import { tablesJsonOf } from '../../infra/function-config.js';
import type { LakeCompactorTable } from '../../infra/lake-compactor.js';
import { functionsFromTemplate } from '../../infra/local/functions.js';
import { type RunningS3Server, startS3Server } from '../../infra/local/s3-server.js';
import { type CfnTemplate, TemplateModel } from '../../infra/local/template.js';
import { type FakeSts, startFakeSts } from '../support/fake-sts.js';

const REGION = 'eu-west-1';
const TABLES: LakeCompactorTable[] = [
  { name: 'events', bucketName: 'lake', prefix: 'events/', partitionColumns: ['date'] },
  { name: 'orders', bucketName: 'lake', prefix: 'sales/orders', partitionColumns: ['date'] },
];

/** The Commit function's environment and its data-access role's ARN, as the local template model resolves them. */
function commitFunctionOfIsolatedStack(): { env: Record<string, string>; dataRoleArn: string } {
  const app = new App({ context: { 'aws:cdk:bundling-stacks': [] } });
  const stack = new LakeCompactorStack(app, 'IsolatedRuntime', {
    compactor: { tables: TABLES, tableIsolation: 'session-policy' },
  });
  const model = new TemplateModel(Template.fromStack(stack).toJSON() as CfnTemplate, { region: REGION });
  const commit = [...functionsFromTemplate(model, new Map(), {}).values()].find((f) =>
    f.logicalId.startsWith('CompactorWorkflowCommit'),
  );
  if (commit === undefined) throw new Error('no Commit function in the template');
  const dataRoleArn = commit.env.DATA_ACCESS_ROLE_ARN;
  if (dataRoleArn === undefined) throw new Error('the Commit function has no DATA_ACCESS_ROLE_ARN');
  return { env: { ...commit.env }, dataRoleArn };
}

describe('a workflow function with tableIsolation: "session-policy"', () => {
  let s3: RunningS3Server;
  let sts: FakeSts;
  const { env: templateEnv, dataRoleArn } = commitFunctionOfIsolatedStack();
  /** The table config as the construct ships it to the function (tables.json, here as TABLES). */
  const tablesJson = tablesJsonOf(TABLES, '');
  const tables = parseTableConfigs(tablesJson);
  const workRoot = templateEnv.WORK_ROOT ?? '';
  /** The function's environment on AWS (no local-cloud marker), pointed at the loopback servers. */
  const awsEnv = () => {
    const { DATA_ACCESS_CREDENTIALS: _local, TABLES_FILE: _file, ...rest } = templateEnv;
    return {
      ...rest,
      TABLES: tablesJson,
      AWS_REGION: REGION,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_ENDPOINT_URL_S3: s3.endpoint,
      AWS_ENDPOINT_URL_STS: sts.endpoint,
    };
  };

  beforeAll(async () => {
    [s3, sts] = await Promise.all([startS3Server({ buckets: ['lake'] }), startFakeSts()]);
  });
  afterAll(async () => {
    await Promise.all([s3?.stop(), sts?.close()]);
  });
  beforeEach(() => {
    sts.requests.length = 0;
    sts.issue.accessKeyId = 'S3RVER';
    sts.issue.secretAccessKey = 'S3RVER';
  });

  it("assumes the template's data-access role with the run's table policy and writes the table with that session", async () => {
    // Prepare
    const runtime = createWorkflowRuntime({ env: awsEnv() });
    const run = { bucket: 'lake', table: 'orders' };
    // Act: what every step does with its run's store
    const store = runtime.storeFor(run.bucket, run.table);
    await store.put('sales/orders/date=2024-01-01/part-0.parquet', 'rows');
    const read = await store.get('sales/orders/date=2024-01-01/part-0.parquet');
    // Assess
    expect(new TextDecoder().decode(read)).toBe('rows');
    const orders = tables.find((t) => t.name === 'orders');
    expect(orders).toBeDefined();
    expect(sts.requests.map((r) => [r.roleArn, r.policy, r.callerKeyId])).toEqual([
      [
        dataRoleArn,
        sessionPolicyFor(tableScopeOf(orders as (typeof tables)[number], 'lake', workRoot), {
          region: REGION,
        }),
        'S3RVER',
      ],
    ]);
    expect(dataRoleArn).toMatch(/^arn:aws:iam::\d{12}:role\//);
    expect(workRoot).toBe('_lake-compactor/');
  });

  it('signs with the issued session, not its own credentials: a session S3 does not accept fails the write', async () => {
    // Prepare: s3rver accepts only the S3RVER key id, which the function's own credentials carry
    sts.issue.accessKeyId = 'ASIANOTKNOWN';
    const runtime = createWorkflowRuntime({ env: awsEnv() });
    // Act
    const error = await runtime
      .storeFor('lake', 'events')
      .put('events/date=2024-01-01/part-0.parquet', 'rows')
      .catch((e: unknown) => e);
    // Assess
    expect((error as Error).name).toBe('InvalidAccessKeyId');
    expect(sts.requests.map((r) => r.roleArn)).toEqual([dataRoleArn]);
  });

  it("in the local cloud's environment asks STS nothing and still refuses another table's key", async () => {
    // Prepare: the local cloud runs the same function with DATA_ACCESS_CREDENTIALS=caller (no STS locally)
    expect(templateEnv.DATA_ACCESS_CREDENTIALS).toBe('caller');
    const runtime = createWorkflowRuntime({
      env: { ...awsEnv(), DATA_ACCESS_CREDENTIALS: templateEnv.DATA_ACCESS_CREDENTIALS },
    });
    const store = runtime.storeFor('lake', 'events');
    // Act
    await store.put('events/date=2024-01-02/part-0.parquet', 'rows');
    const refused = await store.get('sales/orders/date=2024-01-01/part-0.parquet').catch((e: unknown) => e);
    // Assess
    expect(refused).toBeInstanceOf(OutsideTableScopeError);
    expect(sts.requests).toEqual([]);
  });
});
